#!/usr/bin/env bash
# Peak resident memory per rank of a data-parallel zpp-train run of GPT-2 124M (12 layers, width 768,
# vocabulary 50257; one step, B=1, T=64, byte-tokenized text) under mpirun: ZeRO stage 0 (every rank holds
# weights, gradients and AdamW moments: 16 bytes a parameter, ~2 GB) against stage 3. A stage 3 run that
# built the whole model on every rank before partitioning it peaks at stage 0's memory however many ranks
# share it; building the state group by group (zero.Init, attach_fresh) peaks at about 16/N bytes a
# parameter plus a layer. Prints per binary and stage the largest and smallest rank peak, the engine's own
# startup_bytes, and stage 3 / stage 0 (measured in the same run).
#   scripts/bench/zpp_train_zero_init.sh NEW_BIN [BASE_BIN]      (env RANKS, default 2; ~4 GB, a few minutes)
#   STAGES=3 RANKS=4 ...    stage 3 only (stage 0's peak does not depend on the number of ranks)
set -euo pipefail
new=${1:?zpp-train binary (e.g. build/default/bin/zpp-train)}
base=${2:-}
ranks=${RANKS:-2}
stages=${STAGES:-0 3}
work=$(mktemp -d "${TMPDIR:-/tmp}/zpp_zero_init.XXXXXX")
trap 'rm -rf "$work"' EXIT
head -c 200000 /usr/share/common-licenses/GPL-3 > "$work/text.txt"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

# Runs each rank under a Python wrapper that reports the rank's peak RSS (getrusage of its child).
# Prints "max_rank_peak_mib min_rank_peak_mib startup_mib seconds" for binary $1 at stage $2.
measure() {
  local bin=$1 stage=$2 out=$work/run.$RANDOM
  local start=$SECONDS
  mpirun -np "$ranks" python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
sys.stdout.write(r.stdout.decode())
print(f"RANK_PEAK_MIB {peak:.0f}", flush=True)
sys.exit(r.returncode)' "$bin" train "data.input=$work/text.txt" model.n_layer=12 model.n_head=12 model.n_embd=768 \
    model.n_positions=1024 model.vocab_size=50257 data.seq_len=64 train_micro_batch_size_per_gpu=1 train_iters=1 \
    eval_iters=1 "zero_optimization.stage=$stage" zero_optimization.reduce_bucket_size=5000000 \
    zero_optimization.allgather_bucket_size=5000000 bf16.enabled=false --out "$out" -q > "$work/stdout"
  python3 - "$work/stdout" $((SECONDS - start)) <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
peaks = [float(l.split()[1]) for l in lines if l.startswith("RANK_PEAK_MIB")]
summary = next(json.loads(l) for l in lines if l.startswith("{"))
startup = summary.get("zero", {}).get("startup_bytes", float("nan")) / 2**20
print(f"{max(peaks):.0f} {min(peaks):.0f} {startup:.0f} {sys.argv[2]}")
PY
}

declare -A peak3
printf '%-6s %6s %16s %16s %12s %8s\n' binary stage max_rank_MiB min_rank_MiB startup_MiB seconds
for which in new base; do
  bin=$new
  [[ $which == base ]] && { [[ -n $base ]] || continue; bin=$base; }
  p0=
  for stage in $stages; do
    read -r p q st t < <(measure "$bin" "$stage")
    printf '%-6s %6s %16s %16s %12s %8s\n' "$which" "$stage" "$p" "$q" "$st" "$t"
    [[ $stage == 0 ]] && p0=$p
    [[ $stage == 3 ]] && peak3[$which]=$p
    if [[ $stage == 3 && -n $p0 ]]; then
      printf '%s: on %s ranks the largest rank peak of stage 3 / stage 0 = %.3f\n' "$which" "$ranks" \
        "$(echo "$p / $p0" | bc -l)"
    fi
  done
done
if [[ -n ${peak3[new]:-} && -n ${peak3[base]:-} ]]; then
  printf 'stage 3 on %s ranks, largest rank peak new / base = %.3f\n' "$ranks" "$(echo "${peak3[new]} / ${peak3[base]}" | bc -l)"
fi

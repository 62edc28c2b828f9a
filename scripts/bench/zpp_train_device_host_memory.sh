#!/usr/bin/env bash
# Host memory of zpp-train's device ZeRO engine (device=cuda, distributed.backend=shared_gpu: RANKS thread ranks
# of one process on one GPU, or on the SIMT emulator with the simt-bin build): the process's peak resident memory
# (/usr/bin/time -v) per stage for a baseline binary and a new one, side by side in the same run, with the
# engine's own host_startup_bytes / host_state_bytes (per rank) and each rank's share of the peak. A device
# engine that kept the whole host state after uploading it holds 16 bytes a parameter per rank on the host
# (weights, gradients, AdamW moments); one that frees each group once uploaded holds none (a fresh run makes
# one group's fp32 weights resident at a time). Also checks that both binaries give the same run to the last
# bit: the losses of every step, and the checkpoint's files (device=cuda), and the host engine's losses
# (device=cpu, distributed.backend=threads, stage 3).
# START=init_from or START=resume starts every run from a whole model instead of fresh weights: a one-rank CPU
# run of one step (made once, with NEW_BIN) as init_from, or its full checkpoint resumed (--resume, copied into
# each run's --out), which rank 0 reads and hands on group by group where the engine does so.
#   scripts/bench/zpp_train_device_host_memory.sh BASE_BIN NEW_BIN
#     env RANKS (default 4), STAGES (default "0 3"), STEPS (default 1), START (fresh | init_from | resume;
#     default fresh), MODEL (model keys; default a 4-layer, 128-wide GPT with GPT-2's vocabulary, 7.2M
#     parameters: on the emulator a step takes ~30 s of CPU)
set -euo pipefail
base=${1:?baseline zpp-train binary (e.g. build/default/simt-bin/zpp-train of main)}
new=${2:?new zpp-train binary}
ranks=${RANKS:-4}
stages=${STAGES:-0 3}
steps=${STEPS:-1}
start=${START:-fresh}
model=${MODEL:-model.n_layer=4 model.n_head=2 model.n_embd=128 model.n_positions=64 model.vocab_size=50257}
work=$(mktemp -d "${TMPDIR:-/tmp}/zpp_device_host_mem.XXXXXX")
trap 'rm -rf "$work"' EXIT
head -c 200000 /usr/share/common-licenses/GPL-3 > "$work/text.txt"
common="data.input=$work/text.txt $model data.seq_len=16 train_micro_batch_size_per_gpu=1"
common+=" eval_iters=1 eval_interval=1000"
from=()  # the start's extra arguments
iters=$steps
case $start in
  fresh) ;;
  init_from|resume)
    # shellcheck disable=SC2086
    "$new" train $common train_iters=1 --device cpu --out "$work/source" -q > /dev/null
    if [[ $start == init_from ]]; then
      from=("init_from=$work/source")
    else
      from=(--resume)
      iters=$((steps + 1))
    fi ;;
  *) echo "START=$start: fresh, init_from or resume" >&2; exit 2 ;;
esac

# Runs binary $1 at stage $2 on device $3 (cuda: shared_gpu ranks; cpu: thread ranks) into $work/$4; prints
# "peak_rss_mib host_startup_mib host_state_mib final_loss".
run() {
  local bin=$1 stage=$2 device=$3 out=$work/$4 backend=shared_gpu
  [[ $device == cpu ]] && backend=threads
  if [[ $start == resume ]]; then mkdir -p "$out" && cp -r "$work/source/checkpoints" "$out/"; fi
  # shellcheck disable=SC2086
  /usr/bin/time -v -o "$out.time" "$bin" train $common "train_iters=$iters" "${from[@]}" \
    "zero_optimization.stage=$stage" "distributed.backend=$backend" "distributed.thread_ranks=$ranks" \
    --device "$device" --out "$out" -q > "$out.stdout"
  python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
rss = next(int(l.split()[-1]) for l in open(out + ".time") if "Maximum resident set size" in l) / 1024
summary = json.loads(open(out + ".stdout").read().splitlines()[-1])
zero = summary.get("zero", {})
mib = lambda key: zero[key] / 2**20 if key in zero else float("nan")
print(f"{rss:.1f} {mib('host_startup_bytes'):.1f} {mib('host_state_bytes'):.1f} {summary['final_loss']!r}")
PY
}

# "identical" when runs $1 and $2 logged the same loss at every step (the JSON's shortest round-trip doubles).
same_losses() {
  python3 - "$work/$1/metrics.jsonl" "$work/$2/metrics.jsonl" <<'PY'
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p) if '"loss"' in l] for p in sys.argv[1:])
print("identical" if a == b and a else f"DIFFERENT {a} {b}")
PY
}

# "identical" when the last checkpoints of runs $1 and $2 hold the same shard files byte for byte.
same_checkpoint() {
  local a b
  a=$(ls -d "$work/$1"/checkpoints/step_* | tail -1)
  b=$(ls -d "$work/$2"/checkpoints/step_* | tail -1)
  if diff -rq -x state.json -x DONE "$a" "$b" > /dev/null; then echo identical; else echo DIFFERENT; fi
}

printf '%-6s %5s %6s %12s %14s %17s %15s %s\n' binary stage ranks peak_rss_MiB peak_per_rank host_startup_MiB \
  host_state_MiB final_loss
for stage in $stages; do
  declare -A peak=()
  for which in base new; do
    bin=$base
    [[ $which == new ]] && bin=$new
    read -r p hs hh loss < <(run "$bin" "$stage" cuda "$which.s$stage")
    peak[$which]=$p
    printf '%-6s %5s %6s %12s %14.1f %17s %15s %s\n' "$which" "$stage" "$ranks" "$p" "$(echo "$p / $ranks" | bc -l)" \
      "$hs" "$hh" "$loss"
  done
  printf 'stage %s: peak RSS new / base = %.3f, (base - new) / rank = %.1f MiB; losses %s; checkpoint shards %s\n' \
    "$stage" "$(echo "${peak[new]} / ${peak[base]}" | bc -l)" "$(echo "(${peak[base]} - ${peak[new]}) / $ranks" | bc -l)" \
    "$(same_losses "base.s$stage" "new.s$stage")" "$(same_checkpoint "base.s$stage" "new.s$stage")"
done
# The host engine (device=cpu, thread ranks, stage 3): its peak RSS and the same losses.
declare -A peak=()
for which in base new; do
  bin=$base
  [[ $which == new ]] && bin=$new
  read -r p _ < <(run "$bin" 3 cpu "$which.host")
  peak[$which]=$p
done
printf 'host engine (device=cpu, thread ranks, stage 3): peak RSS base %s MiB, new %s MiB, new / base = %.3f; %s\n' \
  "${peak[base]}" "${peak[new]}" "$(echo "${peak[new]} / ${peak[base]}" | bc -l)" "losses $(same_losses base.host new.host)"

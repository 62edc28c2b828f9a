#!/usr/bin/env bash
# Peak memory of zpp-train's final checkpoint at GPT-2 124M (12 layers, width 768, vocabulary 50257): one
# training step (B=1, T=64, byte-tokenized text), then the checkpoint (model.safetensors + optimizer.safetensors,
# 1.5 GB). Per binary: the peak resident memory when the step's metrics record is written (before the checkpoint:
# the baseline, measured in the same run), the process's peak at exit (getrusage), and their difference: what
# writing the checkpoint added. The safetensors writer that copied each tensor added ~0.9 GiB; the streaming one
# (add_view: tensors written from their buffers) should add next to nothing.
#   scripts/bench/zpp_train_checkpoint_rss.sh NEW_BIN [BASE_BIN]     (~3 GB of memory and ~1 min per binary)
set -euo pipefail
new=${1:?zpp-train binary (e.g. build/default/bin/zpp-train)}
base=${2:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/zpp_ckpt_rss.XXXXXX")
trap 'rm -rf "$work"' EXIT
head -c 200000 /usr/share/common-licenses/GPL-3 > "$work/text.txt"

# Prints "step_peak_mib exit_peak_mib added_mib seconds" for one run of binary $1.
measure() {
  local bin=$1 out=$work/run.$RANDOM
  python3 - "$bin" "$work/text.txt" "$out" <<'PY'
import json, resource, subprocess, sys, time
bin, text, out = sys.argv[1:4]
t0 = time.time()
subprocess.run([bin, "train", "data.input=" + text, "model.n_layer=12", "model.n_head=12", "model.n_embd=768",
                "model.n_positions=1024", "model.vocab_size=50257", "data.seq_len=64",
                "train_micro_batch_size_per_gpu=1", "train_iters=1", "eval_iters=1", "--out", out, "-q"],
               check=True, stdout=subprocess.DEVNULL)
secs = time.time() - t0
exit_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
step_peak = [json.loads(l) for l in open(out + "/metrics.jsonl")][-1]["peak_rss_mib"]
print(f"{step_peak:.0f} {exit_peak:.0f} {exit_peak - step_peak:.0f} {secs:.1f}")
PY
}

printf '%-6s %14s %14s %12s %9s\n' binary step_peak_MiB exit_peak_MiB added_MiB seconds
read -r s e a t < <(measure "$new")
printf '%-6s %14s %14s %12s %9s\n' new "$s" "$e" "$a" "$t"
printf 'new: the checkpoint adds %s MiB = %.3f x the peak before it\n' "$a" "$(echo "$a / $s" | bc -l)"
if [[ -n $base ]]; then
  read -r bs be ba bt < <(measure "$base")
  printf '%-6s %14s %14s %12s %9s\n' base "$bs" "$be" "$ba" "$bt"
  printf 'base: the checkpoint adds %s MiB = %.3f x the peak before it; new / base added: %.3f\n' "$ba" \
    "$(echo "$ba / $bs" | bc -l)" "$(echo "($a + 1) / ($ba + 1)" | bc -l)"
fi

#!/usr/bin/env bash
# CPU training throughput of zpp-train against the machine's float32 GEMM peak, measured in the
# same run with the same library (core::train::gemm over Eigen) and the same thread count.
#   scripts/bench/zpp_train_cpu.sh [BUILD_DIR]      (env: STEPS=6 THREADS=0 (all cores) PEAK_N=2048)
# Configs: a 6-layer, 384-wide, context-256 GPT (batch 8, byte vocabulary) and GPT-2 124M
# (12 layers, 768 wide, vocab 50257, batch 4, context 64). Data: tinyshakespeare from
# ../shared/datasets when present, else the GPL-3 text of Debian's base-files.
# The step GFLOP/s counts matmul FLOPs (3x forward: projections, MLP, attention, LM head); the
# first step is excluded from the mean. Then `zpp-train eval` (forward only) of the GPT-2 124M
# checkpoint over EVAL_TOKENS (default 2048) val tokens in windows of 1024, batch 1. The peak is the best of two measurements (before/after),
# so the ratio is conservative.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
ZPP="$BUILD/bin/zpp-train"
STEPS="${STEPS:-6}"
PEAK_N="${PEAK_N:-2048}"
[[ -x "$ZPP" ]] || { echo "zpp-train not built at $ZPP (cmake --build $BUILD --target zpp-train)" >&2; exit 66; }
DATA="$ROOT/../shared/datasets/text/tinyshakespeare.txt"
[[ -f "$DATA" ]] || DATA=/usr/share/common-licenses/GPL-3
THREADS_KV=("threads=${THREADS:-0}")
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

peak() { "$ZPP" peak "n=$PEAK_N" "${THREADS_KV[@]}" -q | python3 -c 'import json,sys; print(json.load(sys.stdin)["gemm_gflops_per_s"])'; }

run() {  # name, overrides...
  local name="$1"; shift
  "$ZPP" train -q --progress never --out "$TMP/$name" "data.input=$DATA" "train_iters=$STEPS" eval_interval=100000 \
    eval_iters=1 "${THREADS_KV[@]}" "$@" > "$TMP/$name.json"
}

P1="$(peak)"
run gpt6x384 model.n_layer=6 model.n_head=6 model.n_embd=384 model.n_positions=256 data.seq_len=256 \
  train_micro_batch_size_per_gpu=8
run gpt2_124m model.n_layer=12 model.n_head=12 model.n_embd=768 model.n_positions=1024 model.vocab_size=50257 \
  model.vocab_pad_to=128 data.seq_len=64 train_micro_batch_size_per_gpu=4
"$ZPP" eval -q --progress never --checkpoint "$TMP/gpt2_124m" "data.input=$DATA" seq_len=1024 batch=1 \
  "max_tokens=${EVAL_TOKENS:-2048}" "${THREADS_KV[@]}" > "$TMP/eval_gpt2_124m.json"
P2="$(peak)"

python3 - "$P1" "$P2" "$TMP" "$PEAK_N" <<'PY'
import json, sys
p1, p2, tmp, n = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
peak = max(p1, p2)
print(f"float32 GEMM peak (n={n}): {peak:.1f} GFLOP/s  (before {p1:.1f}, after {p2:.1f})")
print(f"{'config':<12} {'threads':>7} {'step_s':>8} {'tokens/s':>10} {'GFLOP/s':>9} {'% of peak':>10} {'RSS MiB':>8}")
for name in ("gpt6x384", "gpt2_124m"):
    s = json.load(open(f"{tmp}/{name}.json"))
    ratio = s["gflops_per_s"] / peak
    print(f"{name:<12} {s['threads']:>7} {s['mean_step_s']:>8.3f} {s['tokens_per_s']:>10.1f} "
          f"{s['gflops_per_s']:>9.1f} {100 * ratio:>9.1f}% {s['peak_rss_mib']:>8.0f}")
    print(json.dumps({"bench": "zpp_train_cpu", "config": name, "peak_gflops_per_s": peak, "ratio_to_peak": ratio,
                      **{k: s[k] for k in ("threads", "mean_step_s", "tokens_per_s", "gflops_per_s", "flops_per_step")}}))
e = json.load(open(f"{tmp}/eval_gpt2_124m.json"))
ratio = e["gflops_per_s"] / peak
print(f"{'eval':<12} {'threads':>7} {'seconds':>8} {'tokens/s':>10} {'GFLOP/s':>9} {'% of peak':>10}")
print(f"{'gpt2_124m':<12} {e['threads']:>7} {e['seconds']:>8.2f} {e['tokens_per_s']:>10.1f} {e['gflops_per_s']:>9.1f} "
      f"{100 * ratio:>9.1f}%   ({e['tokens']} tokens, windows of {e['seq_len']})")
print(json.dumps({"bench": "zpp_train_cpu", "config": "eval_gpt2_124m", "peak_gflops_per_s": peak, "ratio_to_peak": ratio,
                  **{k: e[k] for k in ("threads", "seconds", "tokens", "tokens_per_s", "gflops_per_s")}}))
PY

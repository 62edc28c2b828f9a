#!/usr/bin/env bash
# Size on disk and CPU batch-1 latency of packed nxm models against the same weights as dense fp32
# (the trainer's Eigen GEMM) and dense int8 (the same AVX2 int8 kernel without sparsity), measured in
# the same process by `nxm-compress eval` (baselines=true), one thread by default.
#   scripts/bench/nxm_compress_latency.sh [BUILD_DIR]
#   env: LAYERS=4 WIDTH=768 HEADS=12 SEQ=128 EXAMPLES=50 THREADS=1 PLANS="2:4:8 2:4:4 dense:8"
# The model is a BERT of LAYERS x WIDTH (FFN 4 WIDTH) with random (one-step) weights: latency does not
# depend on training. Inputs are SST-2's test sentences (bytes: median ~100 tokens, at most SEQ), so a
# "batch-1" forward multiplies SEQ-long token blocks; SEQ=1 gives the memory-bound single-token case.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build/default}"
NXM="$BUILD/bin/nxm-compress"; ZPP="$BUILD/bin/zpp-train"
[[ -x "$NXM" && -x "$ZPP" ]] || { echo "build nxm-compress and zpp-train in $BUILD first" >&2; exit 66; }
SST2="$ROOT/../shared/datasets/glue/SST-2"
[[ -f "$SST2/test.tsv" ]] || { echo "SST-2 not found at $SST2" >&2; exit 66; }
LAYERS="${LAYERS:-4}"; WIDTH="${WIDTH:-768}"; HEADS="${HEADS:-12}"; SEQ="${SEQ:-128}"
EXAMPLES="${EXAMPLES:-50}"; THREADS="${THREADS:-1}"; PLANS="${PLANS:-2:4:8 2:4:4 dense:8}"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
POS=$(( SEQ > 64 ? SEQ : 64 ))
"$ZPP" train -q --progress never --out "$TMP/pre" model.arch=bert "model.n_layer=$LAYERS" "model.n_head=$HEADS" \
  "model.n_embd=$WIDTH" "model.n_positions=$POS" model.vocab_size=257 data.seq_len=16 \
  train_micro_batch_size_per_gpu=1 train_iters=1 eval_iters=1 > /dev/null
"$NXM" finetune -q --progress never --out "$TMP/ft" "teacher.init_from=$TMP/pre" "task.train=$SST2/train.tsv" \
  "task.test=$SST2/test.tsv" task.max_train_examples=4 "task.max_seq_len=$SEQ" teacher.train.steps=1 \
  teacher.train.batch_size=1 > /dev/null
echo "# nxm-compress batch-1 latency: BERT ${LAYERS}x${WIDTH} (FFN $((4*WIDTH))), SST-2 test sentences (<= $SEQ tokens), $EXAMPLES examples, threads=$THREADS"
echo "# host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
printf "%-10s %12s %12s %10s %14s %14s %12s %12s\n" plan packed_MB dense_MB size_x packed_ms fp32_ms vs_fp32 vs_int8
for S in $PLANS; do
  "$NXM" compress -q --progress never --out "$TMP/c_$S" --teacher "$TMP/ft" \
    "plan=qkv=$S,ao=$S,ffn1=$S,ffn2=$S" admm.rounds=1 admm.steps_per_round=1 finetune.steps=1 finetune.batch_size=1 \
    distill.alpha=0 "task.max_seq_len=$SEQ" task.max_train_examples=4 task.max_test_examples=2 \
    "task.train=$SST2/train.tsv" "task.test=$SST2/test.tsv" > /dev/null
  "$NXM" eval -q --model "$TMP/c_$S/artifacts/model.nxm.safetensors" "latency_examples=$EXAMPLES" latency_repeats=2 \
    "threads=$THREADS" "task.max_test_examples=$EXAMPLES" > "$TMP/e_$S.json"
  python3 - "$S" "$TMP/e_$S.json" <<'PY'
import json, sys
s, e = sys.argv[1], json.load(open(sys.argv[2]))
print("%-10s %12.2f %12.2f %10.2f %14.3f %14.3f %11.2fx %11.2fx" % (s, e["size_bytes"] / 1e6, e["dense_fp32_bytes"] / 1e6,
      e["size_ratio_vs_dense_fp32"], e["latency_ms_median"], e["dense_fp32_latency_ms_median"],
      e["speedup_vs_dense_fp32"], e["speedup_vs_dense_int8"]))
PY
done

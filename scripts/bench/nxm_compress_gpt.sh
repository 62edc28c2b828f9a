#!/usr/bin/env bash
# Validation loss of nxm-compress's methods on a GPT (causal LM) at reduced scale, all from one dense teacher
# in one run: a byte-level GPT pretrained here with zpp-train on tinyshakespeare (the teacher), then
#   admm 2:4 fp32 weights (NxMTransformer)  vs  magnitude 2:4 then fine-tune (ASP's recipe), same steps;
#   admm 2:4 + int8 jointly with QAT (NxMiFormer; 87.5 % compression), also through the packed int8 kernels;
#   admm 2:4 fp32 with hidden-state distillation added (distill.hidden_weight=HIDDEN);
#   the dense teacher trained on for the same number of steps with the same distillation (plan dense:32: the
#   reference at equal training, since a briefly pretrained teacher still improves with more steps);
#   search --target-ratio TARGET (NxMiFormer's search with the LM loss: per-component probes on the validation
#   windows, the greedy plan, then ADMM + joint QAT with it; its predicted and real validation loss);
# every compressed run distills the teacher's logits (alpha 0.5, T 2); the task loss is the next-token loss on
# the text's first 90 %, the validation loss that of its last 10 % (VAL_WINDOWS windows of SEQ tokens).
#   scripts/bench/nxm_compress_gpt.sh [BUILD_DIR] [OUT_DIR]
#   env: LAYERS=4 WIDTH=128 HEADS=4 SEQ=64 PRETRAIN_STEPS=400 ROUNDS=4 ROUND_STEPS=25 MASKED_STEPS=100
#        BATCH=16 VAL_WINDOWS=100 HIDDEN=1.0 TARGET=87.5 THREADS=1
# OUT_DIR keeps every run directory (a rerun skips the runs that have their result.json).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build/default}"
OUT="${2:-$(mktemp -d)}"
NXM="$BUILD/bin/nxm-compress"; ZPP="$BUILD/bin/zpp-train"
[[ -x "$NXM" && -x "$ZPP" ]] || { echo "build nxm-compress and zpp-train in $BUILD first" >&2; exit 66; }
TEXT="$ROOT/../shared/datasets/text/tinyshakespeare.txt"
[[ -f "$TEXT" ]] || { echo "tinyshakespeare missing: $TEXT" >&2; exit 66; }
LAYERS="${LAYERS:-4}"; WIDTH="${WIDTH:-128}"; HEADS="${HEADS:-4}"; SEQ="${SEQ:-64}"; THREADS="${THREADS:-1}"
mkdir -p "$OUT"
[[ -d "$OUT/pretrain" ]] || "$ZPP" train -q --progress never --out "$OUT/pretrain" model.arch=gpt \
  "model.n_layer=$LAYERS" "model.n_head=$HEADS" "model.n_embd=$WIDTH" "model.n_positions=$SEQ" model.vocab_size=256 \
  "data.input=$TEXT" data.tokenizer=bytes "data.seq_len=$SEQ" "train_micro_batch_size_per_gpu=${BATCH:-16}" \
  "train_iters=${PRETRAIN_STEPS:-400}" optimizer.params.lr=0.003 eval_interval=100000 "threads=$THREADS" > "$OUT/pretrain.json"
COMMON=("task.train=$TEXT" "task.max_seq_len=$SEQ" "task.max_test_examples=${VAL_WINDOWS:-100}" task.val_fraction=0.1
        "admm.rounds=${ROUNDS:-4}" "admm.steps_per_round=${ROUND_STEPS:-25}" "finetune.steps=${MASKED_STEPS:-100}"
        "finetune.batch_size=${BATCH:-16}" finetune.lr=0.001 distill.alpha=0.5 distill.temperature=2 "threads=$THREADS")
run() {  # name, overrides...
  local name="$1"; shift
  [[ -f "$OUT/$name/result.json" ]] || "$NXM" compress -q --progress never --out "$OUT/$name" --teacher "$OUT/pretrain" \
    "${COMMON[@]}" "$@" > /dev/null
}
FP32=plan=qkv=2:4:32,ao=2:4:32,ffn1=2:4:32,ffn2=2:4:32
run admm_24_fp32 method=admm qat=none "$FP32"
run magnitude_24_fp32 method=magnitude qat=none "$FP32"
run admm_24_int8 method=admm qat=joint plan=qkv=2:4:8,ao=2:4:8,ffn1=2:4:8,ffn2=2:4:8
run admm_24_fp32_hidden method=admm qat=none "$FP32" "distill.hidden_weight=${HIDDEN:-1.0}"
run dense_same_steps method=magnitude qat=none plan=qkv=dense:32,ao=dense:32,ffn1=dense:32,ffn2=dense:32
SEARCH_COMMON=()
for o in "${COMMON[@]}"; do [[ "$o" == threads=* ]] && SEARCH_COMMON+=("$o") || SEARCH_COMMON+=("compress.$o"); done
[[ -f "$OUT/search/result.json" ]] || "$NXM" search -q --progress never --out "$OUT/search" --teacher "$OUT/pretrain" \
  --target-ratio "${TARGET:-87.5}" "probe_examples=${VAL_WINDOWS:-100}" "${SEARCH_COMMON[@]}" > /dev/null
[[ -f "$OUT/eval_int8.json" ]] || "$NXM" eval -q --progress never --model "$OUT/admm_24_int8/artifacts/model.nxm.safetensors" \
  latency_examples=20 "threads=$THREADS" > "$OUT/eval_int8.json"
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
runs = ["dense_same_steps", "admm_24_fp32", "magnitude_24_fp32", "admm_24_int8", "admm_24_fp32_hidden"]
rs = {n: json.load(open(os.path.join(out, n, "result.json"))) for n in runs if os.path.exists(os.path.join(out, n, "result.json"))}
t = next(iter(rs.values()))
print("# byte-level GPT on tinyshakespeare; validation loss (nats/token) over %d windows; teacher (dense fp32) %.4f"
      % (t["val_windows"], t["teacher_loss"]))
print("%-22s %-40s %8s %8s %10s %10s %10s %10s" % ("run", "plan", "cr_paper", "cr_hw", "hard_prune", "val_loss", "vs_teacher",
                                                  "vs_dense_same_steps"))
print("%-22s %-40s %8.2f %8.2f %10s %10.4f %+10.4f" % ("dense_teacher", "dense fp32", 0, 0, "-", t["teacher_loss"], 0))
d = rs.get("dense_same_steps", {}).get("loss", float("nan"))
for n, r in rs.items():
    print("%-22s %-40s %8.2f %8.2f %10.4f %10.4f %+10.4f %+10.4f" % (n, r["plan"], r["cr_paper"], r["cr_hardware"],
          r["hard_prune_loss"], r["loss"], r["loss"] - r["teacher_loss"], r["loss"] - d))
p = os.path.join(out, "search", "result.json")
if os.path.exists(p):
    r = json.load(open(p))
    s = r["search"]
    print("search --target-ratio %.2f: %s (cr_paper %.2f, cr_hw %.2f): predicted val_loss %.4f, real %.4f (teacher %.4f; "
          "probes over %d windows)" % (s["target_ratio"], r["plan"], r["cr_paper"], r["cr_hardware"], s["predicted_loss"],
                                       r["loss"], r["teacher_loss"], s["probe_examples"]))
p = os.path.join(out, "eval_int8.json")
if os.path.exists(p):
    lines = [l for l in open(p).read().splitlines() if l.strip().startswith("{")]
    e = json.loads(lines[-1])
    print("admm_24_int8 through the packed kernels: val_loss %.4f (dense fp32 path of the same weights %.4f, dense int8 %.4f);"
          " batch-1 latency %.3f ms vs dense fp32 %.3f ms (%.2fx), size %d vs %d bytes"
          % (e["loss"], e["dense_fp32_loss"], e["dense_int8_loss"], e["latency_ms_median"], e["dense_fp32_latency_ms_median"],
             e["speedup_vs_dense_fp32"], e["size_bytes"], e["dense_fp32_bytes"]))
PY

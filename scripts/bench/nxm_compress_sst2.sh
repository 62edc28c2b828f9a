#!/usr/bin/env bash
# SST-2 accuracy of nxm-compress's methods at reduced scale, all from one dense teacher in one run:
# a BERT with GPT-2's BPE tokens pretrained here with zpp-train (masked LM on tinyshakespeare), fine-tuned on SST-2's
# training split (the teacher), then
#   admm 2:4 fp32 weights (NxMTransformer)  vs  magnitude 2:4 then fine-tune (ASP's recipe), same steps, for
#   each seed of SEEDS (the batches; run names get _sN for a seed other than the first);
#   admm 2:4 + int8 and 2:4 + int4 jointly with QAT (NxMiFormer; 87.5 % and 93.75 % compression);
#   search --target-ratio 87.5 (probes on dev.tsv);
# accuracy on test.tsv (GLUE's labelled dev set, the split papers report), relative to the teacher.
#   scripts/bench/nxm_compress_sst2.sh [BUILD_DIR] [OUT_DIR]
#   env: LAYERS=2 WIDTH=128 HEADS=4 PRETRAIN_STEPS=600 FT_STEPS=1200 TRAIN_EXAMPLES=0 (all; 10 % held out) SEQ=64
#        ROUNDS=6 ROUND_STEPS=50 MASKED_STEPS=300 SEEDS="1 2" THREADS=1 (ADMM's rho schedule: the tool's defaults;
#        the int8/int4/search runs use the first seed)
# (A byte-level BERT this small stays near chance on SST-2 after minutes of pretraining; GPT-2's tokens
# make the task learnable at this scale. SST-2 sentences are at most 64 GPT-2 tokens.)
# OUT_DIR keeps every run directory (scripts/plot/nxm_compress.py OUT_DIR draws accuracy against ratio).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build/default}"
OUT="${2:-$(mktemp -d)}"
NXM="$BUILD/bin/nxm-compress"; ZPP="$BUILD/bin/zpp-train"
[[ -x "$NXM" && -x "$ZPP" ]] || { echo "build nxm-compress and zpp-train in $BUILD first" >&2; exit 66; }
DATA="$ROOT/../shared/datasets"
SST2="$DATA/glue/SST-2"; TEXT="$DATA/text/tinyshakespeare.txt"; TOK="$DATA/tokenizers/gpt2"
[[ -f "$SST2/test.tsv" && -f "$TEXT" && -f "$TOK/vocab.bpe" ]] || { echo "SST-2, tinyshakespeare or the GPT-2 tokenizer missing under $DATA" >&2; exit 66; }
LAYERS="${LAYERS:-2}"; WIDTH="${WIDTH:-128}"; HEADS="${HEADS:-4}"; SEQ="${SEQ:-64}"; THREADS="${THREADS:-1}"
mkdir -p "$OUT"
TASK=("task.train=$SST2/train.tsv" "task.test=$SST2/test.tsv" "task.max_seq_len=$SEQ"
      "task.max_train_examples=${TRAIN_EXAMPLES:-0}")
SEEDS=(${SEEDS:-1 2})
SCHED=("admm.rounds=${ROUNDS:-6}" "admm.steps_per_round=${ROUND_STEPS:-50}" "finetune.steps=${MASKED_STEPS:-300}"
       "seed=${SEEDS[0]}" "threads=$THREADS")
[[ -d "$OUT/pretrain" ]] || "$ZPP" train -q --progress never --out "$OUT/pretrain" model.arch=bert \
  "model.n_layer=$LAYERS" "model.n_head=$HEADS" "model.n_embd=$WIDTH" "model.n_positions=$SEQ" model.vocab_size=50258 \
  "data.input=$TEXT" "data.tokenizer=gpt2:$TOK" "data.seq_len=$SEQ" train_micro_batch_size_per_gpu=16 "train_iters=${PRETRAIN_STEPS:-600}" \
  optimizer.params.lr=0.002 eval_interval=100000 "threads=$THREADS" > "$OUT/pretrain.json"
[[ -f "$OUT/teacher/result.json" ]] || "$NXM" finetune -q --progress never --out "$OUT/teacher" \
  "teacher.init_from=$OUT/pretrain" "${TASK[@]}" "teacher.train.steps=${FT_STEPS:-1200}" "threads=$THREADS" > /dev/null
run() {  # name, overrides...
  local name="$1"; shift
  [[ -f "$OUT/$name/result.json" ]] || "$NXM" compress -q --progress never --out "$OUT/$name" --teacher "$OUT/teacher" \
    "${TASK[@]}" "${SCHED[@]}" "$@" > /dev/null
}
for seed in "${SEEDS[@]}"; do
  sfx=$([[ "$seed" == "${SEEDS[0]}" ]] || echo "_s$seed")
  run "admm_24_fp32$sfx" method=admm plan=qkv=2:4:32,ao=2:4:32,ffn1=2:4:32,ffn2=2:4:32 "seed=$seed"
  run "magnitude_24_fp32$sfx" method=magnitude plan=qkv=2:4:32,ao=2:4:32,ffn1=2:4:32,ffn2=2:4:32 "seed=$seed"
done
run admm_24_int8 method=admm qat=joint plan=qkv=2:4:8,ao=2:4:8,ffn1=2:4:8,ffn2=2:4:8
run admm_24_int4 method=admm qat=joint plan=qkv=2:4:4,ao=2:4:4,ffn1=2:4:4,ffn2=2:4:4
SEARCH=()  # the compression keys under compress., the command's own threads= as it is
for o in "${TASK[@]}" "${SCHED[@]}"; do [[ "$o" == threads=* ]] && SEARCH+=("$o") || SEARCH+=("compress.$o"); done
[[ -f "$OUT/search_875/result.json" ]] || "$NXM" search -q --progress never --out "$OUT/search_875" --target-ratio 87.5 \
  --teacher "$OUT/teacher" "probe=$SST2/dev.tsv" probe_examples=500 "${SEARCH[@]}" > /dev/null
python3 - "$OUT" "${SEEDS[@]}" <<'PY'
import json, os, sys
out, seeds = sys.argv[1], sys.argv[2:]
sfx = [""] + ["_s" + s for s in seeds[1:]]
t = json.load(open(os.path.join(out, "teacher", "result.json")))
print("# SST-2 test.tsv (872), BERT (GPT-2 tokens) pretrained here; teacher (dense fp32) accuracy %.4f" % t["accuracy"])
print("%-20s %-44s %8s %8s %9s %9s" % ("run", "plan", "cr_paper", "cr_hw", "accuracy", "retained"))
print("%-20s %-44s %8.2f %8.2f %9.4f %9.4f" % ("dense_teacher", "dense fp32", 0, 0, t["accuracy"], 1.0))
pairs = [n + x for x in sfx for n in ["admm_24_fp32", "magnitude_24_fp32"]]
for name in pairs + ["admm_24_int8", "admm_24_int4", "search_875"]:
    p = os.path.join(out, name, "result.json")
    if not os.path.exists(p): continue
    r = json.load(open(p))
    print("%-20s %-44s %8.2f %8.2f %9.4f %9.4f" % (name, r["plan"], r["cr_paper"], r["cr_hardware"], r["accuracy"],
                                                 r["accuracy"] / t["accuracy"]))
    if name == "search_875":
        s = r["search"]
        print("  search: target %.2f, achieved cr_paper %.2f (closest reachable %s), predicted accuracy %.4f, real %.4f"
              % (s["target_ratio"], r["cr_paper"], "%.2f" % s["closest_reachable_cr_paper"]
                 if "closest_reachable_cr_paper" in s else "not reported", s["predicted_accuracy"], r["accuracy"]))
for line in open(os.path.join(out, "admm_24_fp32", "metrics.jsonl")):
    m = json.loads(line)
    if m["stage"] == "admm_round":
        print("  admm round %d: rho %.3g, relative primal residual %.4f, dual residual %.4f, mask flip rate %.5f" %
              (m["round"], m["rho"], m["relative_primal_residual"], m["dual_residual"], m["mask_flip_rate"]))
acc = lambda n: json.load(open(os.path.join(out, n, "result.json")))["accuracy"]
diffs = [100 * (acc("admm_24_fp32" + x) - acc("magnitude_24_fp32" + x)) for x in sfx]
print("ADMM - magnitude (2:4 fp32), seeds %s: %s points, mean %+.2f (the paper reports +1.7 GLUE points at BERT-base scale)"
      % (" ".join(seeds), " ".join("%+.2f" % d for d in diffs), sum(diffs) / len(diffs)))
PY

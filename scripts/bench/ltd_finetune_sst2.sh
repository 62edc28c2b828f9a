#!/usr/bin/env bash
# ltd-pretrain finetune (BERT classification with random-LTD) on SST-2 with GPT-2's tokens: per seed the process
# CPU time, the CPU time of the training steps (train_cpu_s), the padding share of the training batches and the
# accuracy on test.tsv (GLUE's labelled dev set), optionally against a baseline binary run on the same checkpoint
# with the same settings in the same run (BASE: another build's ltd-pretrain, e.g. one that padded every batch to
# data.seq_len), each pair side by side (both at once; CPU time is each process's own).
#   scripts/bench/ltd_finetune_sst2.sh [LTD_PRETRAIN_BINARY (build/default's)] [OUT_DIR]
#   env: BASE= (none) SEEDS="1 2" STEPS=200 LAYERS=4 WIDTH=128 HEADS=4 SEQ=64 BATCH=32 LR=0.001 THREADS=1
#        PRETRAIN_STEPS=1 NEW_ARGS= BASE_ARGS= (more key=value for the run of the binary / of BASE)
# 1 vs 2 thread ranks on the same global batches (rank r takes micro batch 2 k + r, as one rank accumulating 2):
#   BASE=build/default/bin/ltd-pretrain BASE_ARGS=gradient_accumulation_steps=2 NEW_ARGS=distributed.thread_ranks=2
# The checkpoint: a BERT with GPT-2's tokens (vocabulary 50,259: [MASK] and [CLS] after the tokenizer's 50,257)
# after PRETRAIN_STEPS of masked LM on tinyshakespeare (1: about as initialised; the finetuning learns SST-2 from
# scratch, the same start for both binaries). Random-LTD in the middle layers keeps
# SEQ/4 tokens at first and all from 70% of the steps on; the lr follows the LayerTokens.
# A baseline without train_padding in its summary padded every batch to SEQ: its share is estimated as
# 1 - (mean example length of this build's run) / SEQ.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LTD="${1:-$ROOT/build/default/bin/ltd-pretrain}" BASE="${BASE:-}"
OUT="${2:-$ROOT/runs/bench/ltd_finetune_sst2-$(date -u +%Y%m%dT%H%M%S)}"
for bin in "$LTD" $BASE; do
  [[ -x "$bin" ]] || { echo "$bin: not an executable (cmake --build build/default --target ltd-pretrain)" >&2; exit 66; }
done
DATA="$ROOT/../shared/datasets"
SST2="$DATA/glue/SST-2"; TEXT="$DATA/text/tinyshakespeare.txt"; TOK="$DATA/tokenizers/gpt2"
[[ -f "$SST2/train.tsv" && -f "$TEXT" && -f "$TOK/vocab.bpe" ]] || { echo "SST-2, tinyshakespeare or the GPT-2 tokenizer missing under $DATA" >&2; exit 66; }
SEEDS=(${SEEDS:-1 2}); STEPS="${STEPS:-200}"; SEQ="${SEQ:-64}"; BATCH="${BATCH:-32}"; THREADS="${THREADS:-1}"
LAYERS="${LAYERS:-4}"
mkdir -p "$OUT"
R=data_efficiency.data_routing.random_ltd
S=$R.random_ltd_schedule
[[ -d "$OUT/pretrain" ]] || "$LTD" train -q --progress never --out "$OUT/pretrain" model.arch=bert \
  "model.n_layer=$LAYERS" "model.n_head=${HEADS:-4}" "model.n_embd=${WIDTH:-128}" "model.n_positions=$SEQ" \
  model.vocab_size=50259 "data.input=$TEXT" "data.tokenizer=gpt2:$TOK" "data.seq_len=$SEQ" \
  train_micro_batch_size_per_gpu=8 "train_iters=${PRETRAIN_STEPS:-1}" eval_interval=100000 eval_iters=1 \
  $R.layer_token_lr_schedule.enabled=false "threads=$THREADS" > "$OUT/pretrain.json"
FT=("glue.train_file=$SST2/train.tsv" "glue.eval_file=$SST2/test.tsv" "data.seq_len=$SEQ"
    "train_micro_batch_size_per_gpu=$BATCH" "train_iters=$STEPS" "eval_interval=$STEPS" "optimizer.params.lr=${LR:-0.001}"
    $R.layer_token_lr_schedule.min_lr=0.0001 "$S.min_value=$((SEQ / 4))" "$S.schedule_config.require_steps=$((STEPS * 7 / 10))"
    "$S.schedule_config.seq_per_step=16"
    "$R.layer_token_lr_schedule.warmup_layer_tokens=$((STEPS * BATCH * LAYERS * SEQ / 20))" "threads=$THREADS")
finetune() {  # binary, run name, seed, extra key=value words
  [[ -f "$OUT/$2.json" ]] || /usr/bin/time -f "%U %S %e" -o "$OUT/$2.time" "$1" finetune -q --progress never \
    --checkpoint "$OUT/pretrain" --out "$OUT/$2" "seed=$3" "${FT[@]}" $4 > "$OUT/$2.json"
}
for seed in "${SEEDS[@]}"; do
  echo "seed $seed: finetuning${BASE:+ (and the baseline beside it)}" >&2
  finetune "$LTD" "new_s$seed" "$seed" "${NEW_ARGS:-}" &
  [[ -z "$BASE" ]] || finetune "$BASE" "base_s$seed" "$seed" "${BASE_ARGS:-}" &
  wait
done
python3 - "$OUT" "$SEQ" "$STEPS" "$BATCH" "${SEEDS[@]}" <<'PY'
import json, os, sys
out, seq, steps, batch, seeds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
def load(name):
    p = os.path.join(out, name + ".json")
    if not os.path.exists(p): return None
    s = json.loads(open(p).read().strip().splitlines()[-1])
    u, k, e = open(os.path.join(out, name + ".time")).read().split()[-3:]
    s["process_cpu_s"], s["wall_s"] = float(u) + float(k), float(e)
    return s
print("# SST-2 finetuning: %d steps of %d, seq_len %d; accuracy on test.tsv (872)" % (steps, batch, seq))
print("%-10s %12s %12s %8s %9s %9s %10s %12s %10s" % ("run", "process_cpu", "train_cpu", "wall", "padding", "accuracy",
      "flops_save", "layer_tokens", "final_loss"))
rows = {}
for seed in seeds:
    new, base = load("new_s" + seed), load("base_s" + seed)
    for name, s in (("base_s" + seed, base), ("new_s" + seed, new)):
        if s is None: continue
        if "train_padding" in s:
            pad, note = s["train_padding"]["padding_share"], ""
        else:  # padded to seq_len: estimated from the other run's mean example length (its short batches ignored)
            tp = new["train_padding"]
            pad, note = 1 - tp["example_tokens"] / (steps * batch) / seq, "~"
        rows[name] = s
        print("%-10s %12.1f %12.1f %8.1f %8s%.3f %9.4f %10.3f %12d %10.6f" % (name, s["process_cpu_s"], s["train_cpu_s"],
              s["wall_s"], note, pad, s["accuracy"], s["flops_saving"], s["layer_tokens"], s["final_loss"]))
    if base is not None and new is not None:
        print("  seed %s: new / base process CPU %.3f, training CPU %.3f, wall %.3f, accuracy %+.4f" % (seed,
              new["process_cpu_s"] / base["process_cpu_s"], new["train_cpu_s"] / base["train_cpu_s"],
              new["wall_s"] / base["wall_s"], new["accuracy"] - base["accuracy"]))
json.dump(rows, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY

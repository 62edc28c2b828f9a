#!/usr/bin/env bash
# Random-LTD at equal data against the full-length baseline measured in the same run (interleaved, same
# thread count), as Yao et al. 2022 compare them:
#   scripts/bench/ltd_pretrain.sh [BUILD_DIR] [OUT_DIR]
#   env: SEEDS=3 STEPS=300 BERT=1 (0: GPT only) BERT_SEEDS=2 BERT_STEPS=200 FT_STEPS=200 THREADS=1
#        DEVICE=cpu (cuda: the pretraining runs, baseline and random-LTD, on the device; finetuning stays on
#        the host; scripts/bench/zpp_train_gpu.sh with ONLY=ltd measures the device's wall saving at GPT-2 size)
# GPT: 6 layers, 128 wide, context 256, batch 8, bytes of tinyshakespeare; random-LTD in layers 1-4 keeping
# 32 of 256 tokens at first, all from 70% of the steps on; both runs use the LayerToken lr schedule
# (the baseline's is then token-based). BERT: the same shape at context 128 pretrained (MLM) on the SST-2
# training sentences, then finetuned on SST-2 without dropping and scored on GLUE's dev set (test.tsv).
# Per pair: final validation loss ratio (random-LTD / baseline), LayerToken saving (the formula), measured
# GEMM FLOP saving, wall-clock saving of the training steps (validation excluded) and its ratio to the
# LayerToken saving (paper: 25.6 / 33.3 = 0.77 for GPT-3 1.3B), and the same for the process CPU time of
# the training steps (train_cpu_s: on a machine shared with other jobs the wall clock measures them too).
# Writes OUT_DIR/summary.json and the run directories; scripts/plot/ltd_pretrain.py OUT_DIR/gpt_* -o
# loss.png plots the loss against LayerTokens.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build/default}"
OUT="${2:-$ROOT/runs/bench/ltd_pretrain-$(date -u +%Y%m%dT%H%M%S)}"
LTD="$BUILD/bin/ltd-pretrain"
[[ -x "$LTD" ]] || { echo "ltd-pretrain not built at $LTD (cmake --build $BUILD --target ltd-pretrain)" >&2; exit 66; }
SEEDS="${SEEDS:-3}" STEPS="${STEPS:-300}" BERT="${BERT:-1}" BERT_SEEDS="${BERT_SEEDS:-2}"
BERT_STEPS="${BERT_STEPS:-200}" FT_STEPS="${FT_STEPS:-200}" THREADS="${THREADS:-1}" DEVICE="${DEVICE:-cpu}"
DATASETS="$ROOT/../shared/datasets"
TEXT="$DATASETS/text/tinyshakespeare.txt"
SST2="$DATASETS/glue/SST-2"
[[ -f "$TEXT" ]] || { echo "missing $TEXT" >&2; exit 66; }
mkdir -p "$OUT"
R=data_efficiency.data_routing.random_ltd
S=$R.random_ltd_schedule

train() {  # dir, overrides...
  local dir="$1"; shift
  "$LTD" train -q --progress never --out "$OUT/$dir" "threads=$THREADS" "device=$DEVICE" "$@" > "$OUT/$dir.json"
}

schedule() {  # steps, layers, n, batch: the shared random-LTD and lr settings
  local steps="$1" layers="$2" n="$3" batch="$4"
  echo "$S.min_value=$((n / 8))" "$S.schedule_config.require_steps=$((steps * 7 / 10))" \
       "$S.schedule_config.seq_per_step=16" \
       "$R.layer_token_lr_schedule.warmup_layer_tokens=$((steps * batch * layers * n / 20))"
}

GPT=(model.n_layer=6 model.n_head=4 model.n_embd=128 model.n_positions=256 data.seq_len=256
     train_micro_batch_size_per_gpu=8 "data.input=$TEXT" "train_iters=$STEPS" "eval_interval=$((STEPS / 10))"
     eval_iters=16 optimizer.params.lr=0.002 $R.layer_token_lr_schedule.min_lr=0.0002
     $(schedule "$STEPS" 6 256 8))
for seed in $(seq 1 "$SEEDS"); do
  echo "gpt seed $seed: baseline, random-LTD" >&2
  train "gpt_base_s$seed" "${GPT[@]}" "seed=$seed" "$R.enabled=false"
  train "gpt_ltd_s$seed" "${GPT[@]}" "seed=$seed"
done

if [[ "$BERT" == 1 && -f "$SST2/train.tsv" ]]; then
  tail -n +2 "$SST2/train.tsv" | cut -f1 > "$OUT/sst2_sentences.txt"
  BERTCFG=(model.arch=bert model.vocab_size=258 model.n_layer=6 model.n_head=4 model.n_embd=128
           model.n_positions=128 data.seq_len=128 train_micro_batch_size_per_gpu=8
           "data.input=$OUT/sst2_sentences.txt" "train_iters=$BERT_STEPS" "eval_interval=$((BERT_STEPS / 10))"
           eval_iters=16 optimizer.params.lr=0.002 $R.layer_token_lr_schedule.min_lr=0.0002
           $(schedule "$BERT_STEPS" 6 128 8))
  FT=(data.seq_len=64 train_micro_batch_size_per_gpu=32 "train_iters=$FT_STEPS" "eval_interval=$FT_STEPS"
      optimizer.params.lr=0.001 "glue.train_file=$SST2/train.tsv" "glue.eval_file=$SST2/test.tsv"
      "$R.enabled=false" "$R.layer_token_lr_schedule.warmup_layer_tokens=$((FT_STEPS * 32 * 6 * 64 / 10))")
  for seed in $(seq 1 "$BERT_SEEDS"); do
    for kind in base ltd; do
      echo "bert seed $seed: $kind pretraining, finetuning" >&2
      extra=(); [[ $kind == base ]] && extra=("$R.enabled=false")
      train "bert_${kind}_s$seed" "${BERTCFG[@]}" "seed=$seed" "${extra[@]}"
      "$LTD" finetune -q --progress never --checkpoint "$OUT/bert_${kind}_s$seed" --out "$OUT/bert_${kind}_s${seed}_ft" \
        "threads=$THREADS" "seed=$seed" "${FT[@]}" > "$OUT/bert_${kind}_s${seed}_ft.json"
    done
  done
fi

python3 - "$OUT" <<'PY'
import json, os, statistics, sys, platform
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name + ".json")
    return json.load(open(p)) if os.path.exists(p) else None
rows, pairs = [], {}
for model in ("gpt", "bert"):
    s = 1
    while (b := load(f"{model}_base_s{s}")) and (l := load(f"{model}_ltd_s{s}")):
        wall_b, wall_l = b["mean_step_s"] * b["steps"], l["mean_step_s"] * l["steps"]
        row = {"model": model, "seed": s, "val_loss_base": b["val_loss"], "val_loss_ltd": l["val_loss"],
               "val_loss_ratio": l["val_loss"] / b["val_loss"], "layer_token_saving": l["layer_token_saving"],
               "flops_saving": l["flops_saving"], "wall_saving": 1 - wall_l / wall_b,
               "cpu_saving": 1 - l["train_cpu_s"] / b["train_cpu_s"], "wall_s_base": wall_b, "wall_s_ltd": wall_l}
        row["wall_over_theory"] = row["wall_saving"] / row["layer_token_saving"]
        row["cpu_over_theory"] = row["cpu_saving"] / row["layer_token_saving"]
        fb, fl = load(f"{model}_base_s{s}_ft"), load(f"{model}_ltd_s{s}_ft")
        if fb and fl:
            row["accuracy_base"], row["accuracy_ltd"] = fb["accuracy"], fl["accuracy"]
        rows.append(row)
        s += 1
print(f"machine: {platform.node()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; threads per run: "
      f"{os.environ.get('THREADS', '1')}; device {os.environ.get('DEVICE', 'cpu')}")
cols = ["model", "seed", "val_loss_base", "val_loss_ltd", "val_loss_ratio", "layer_token_saving", "flops_saving",
        "wall_saving", "wall_over_theory", "cpu_saving", "cpu_over_theory", "accuracy_base", "accuracy_ltd"]
print(" ".join(f"{c:>15}" for c in cols))
for r in rows:
    print(" ".join(f"{r[c]:>15.4f}" if isinstance(r.get(c), float) else f"{str(r.get(c, '-')):>15}" for c in cols))
summary = {"runs": rows}
for model in ("gpt", "bert"):
    rs = [r for r in rows if r["model"] == model]
    if not rs: continue
    agg = {k: statistics.mean(r[k] for r in rs) for k in ("val_loss_ratio", "layer_token_saving", "flops_saving",
                                                           "wall_saving", "cpu_saving")}
    agg["wall_over_theory"] = agg["wall_saving"] / agg["layer_token_saving"]
    agg["cpu_over_theory"] = agg["cpu_saving"] / agg["layer_token_saving"]
    if all("accuracy_base" in r for r in rs):
        agg["accuracy_base"] = statistics.mean(r["accuracy_base"] for r in rs)
        agg["accuracy_ltd"] = statistics.mean(r["accuracy_ltd"] for r in rs)
    summary[model] = agg
    print(f"{model} mean over {len(rs)} seeds: " + ", ".join(f"{k} {v:.4f}" for k, v in agg.items()))
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(f"run directories and summary.json in {out}")
PY

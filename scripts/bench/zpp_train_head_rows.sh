#!/usr/bin/env bash
# The LM / MLM head on the rows that have a target only: a baseline zpp-train binary and a new one
# side by side, on tinyshakespeare prepared with GPT-2 (the head is large: 50k columns).
#   BERT 6 x 384, context 128, batch 8 (masked LM: ~15% of the rows have a target): training tokens/s;
#   GPT 6 x 384, context 256: eval with stride 64 (each window scores its last 64 rows) and stride 256.
# Prints tokens/s of both, new/base, and whether the losses agree.
#   [STEPS=6] scripts/bench/zpp_train_head_rows.sh BASE_BIN NEW_BIN
set -euo pipefail
base=${1:?baseline zpp-train binary}
new=${2:?new zpp-train binary}
here=$(cd "$(dirname "$0")/../.." && pwd)
data=${TOOLKIT_DATASETS:-$here/../shared/datasets}
work=$(mktemp -d "${TMPDIR:-/tmp}/zpp_head_rows.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$new" prepare -q --input "$data/text/tinyshakespeare.txt" --tokenizer "gpt2:$data/tokenizers/gpt2" \
  --out "$work/ts" > /dev/null
"$new" train -q --progress never --out "$work/gpt" "data.input=$work/ts" model.vocab_size=50257 model.n_layer=6 \
  model.n_head=6 model.n_embd=384 model.n_positions=256 data.seq_len=256 train_micro_batch_size_per_gpu=4 \
  train_iters=1 eval_interval=1000 eval_iters=1 threads=0 > /dev/null

# Prints "tokens_per_s loss" of binary $1 running $2 (train or eval).
measure() {
  local bin=$1 what=$2 out
  shift 2
  rm -rf "$work/run"
  if [[ $what == train ]]; then
    out=$("$bin" train -q --progress never --out "$work/run" "data.input=$work/ts" model.arch=bert \
      model.vocab_size=50264 model.n_layer=6 model.n_head=6 model.n_embd=384 model.n_positions=128 data.seq_len=128 \
      train_micro_batch_size_per_gpu=8 "train_iters=${STEPS:-6}" eval_interval=1000 eval_iters=1 threads=0 2> /dev/null)
  else
    out=$("$bin" eval -q --progress never --checkpoint "$work/gpt" --input "$work/ts" max_tokens=4000 "$@")
  fi
  python3 -c 'import json,sys; s=json.loads(sys.argv[1]); print(s["tokens_per_s"], s.get("final_loss", s.get("loss")))' "$out"
}

printf '%s cores\n%-28s %12s %12s %9s %s\n' "$(nproc)" case base_tok/s new_tok/s new/base same_loss
for c in "train BERT masked LM:train" "eval GPT stride 64:eval stride=64" "eval GPT stride 256:eval stride=256"; do
  name=${c%%:*}
  read -r -a args <<< "${c#*:}"
  read -r b_tps b_loss < <(measure "$base" "${args[@]}")
  read -r n_tps n_loss < <(measure "$new" "${args[@]}")
  same=$([[ $b_loss == "$n_loss" ]] && echo yes || echo "no ($b_loss vs $n_loss)")
  printf '%-28s %12.1f %12.1f %9.2f %s\n' "$name" "$b_tps" "$n_tps" "$(echo "$n_tps / $b_tps" | bc -l)" "$same"
done

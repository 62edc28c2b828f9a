#!/usr/bin/env bash
# Sampling speed of `zpp-train sample` for a baseline binary and a new one side by side, on a GPT-2
# 124M-shaped checkpoint (12 layers, 768 wide, context 1024, GPT-2 vocabulary) made by one training
# step of the new binary on tinyshakespeare: TOKENS new tokens (default 100) after a prompt of about
# PROMPT_TOKENS (default 200) tokens, greedy and top-k; seconds, tokens/s, and whether both binaries
# drew the same text (greedy decoding can differ only at near-ties of the logits).
#   [TOKENS=100 PROMPT_TOKENS=200] scripts/bench/zpp_train_sample.sh BASE_BIN NEW_BIN
set -euo pipefail
base=${1:?baseline zpp-train binary}
new=${2:?new zpp-train binary}
here=$(cd "$(dirname "$0")/../.." && pwd)
data=${TOOLKIT_DATASETS:-$here/../shared/datasets}
tokens=${TOKENS:-100}
work=$(mktemp -d "${TMPDIR:-/tmp}/zpp_sample.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$new" train -q --progress never --out "$work/run" "data.input=$data/text/tinyshakespeare.txt" \
  "data.tokenizer=gpt2:$data/tokenizers/gpt2" model.n_layer=12 model.n_head=12 model.n_embd=768 \
  model.n_positions=1024 model.vocab_size=50257 data.seq_len=64 train_micro_batch_size_per_gpu=1 train_iters=1 \
  eval_interval=100000 eval_iters=1 > /dev/null
prompt=$(head -c $(( ${PROMPT_TOKENS:-200} * 4 )) "$data/text/tinyshakespeare.txt")

# Prints "seconds text_json" of one sample run of binary $1 with overrides $2...
measure() {
  local bin=$1 start
  shift
  start=$(date +%s.%N)
  "$bin" sample -q --checkpoint "$work/run" --prompt "$prompt" "max_new_tokens=$tokens" "$@" \
    > "$work/out.json"
  echo "$(echo "$(date +%s.%N) - $start" | bc) $(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["text"]))' "$work/out.json")"
}

printf '%s cores; %s new tokens after a %s-byte prompt\n' "$(nproc)" "$tokens" "${#prompt}"
printf '%-16s %9s %9s %12s %9s %s\n' mode base_s new_s new_tokens/s new/base same_text
for mode in temperature=0 top_k=40; do
  read -r b_s b_text < <(measure "$base" "$mode")
  read -r n_s n_text < <(measure "$new" "$mode")
  same=$([[ $b_text == "$n_text" ]] && echo yes || echo no)
  printf '%-16s %9.2f %9.2f %12.1f %9.3f %s\n' "$mode" "$b_s" "$n_s" "$(echo "$tokens / $n_s" | bc -l)" \
    "$(echo "$n_s / $b_s" | bc -l)" "$same"
done

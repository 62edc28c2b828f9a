#!/usr/bin/env bash
# Memory of zpp-train's data loading: a few steps of the tiny model on a folder of token shards and
# on the text they were prepared from, for a baseline binary and a new one, side by side. Peak anonymous memory (RssAnon, sampled every 10 ms:
# what the process itself holds) and peak resident memory (VmHWM: also the shard pages mapped from the
# page cache, which the kernel can drop) and wall time.
#   scripts/bench/zpp_train_data_memory.sh BASE_BIN NEW_BIN [TEXT_MB]
# Makes TEXT_MB (default 200) of text from tinyshakespeare, prepared once with the byte tokenizer.
set -euo pipefail
base=${1:?baseline zpp-train binary}
new=${2:?new zpp-train binary}
mb=${3:-200}
here=$(cd "$(dirname "$0")/../.." && pwd)
data=${TOOLKIT_DATASETS:-$here/../shared/datasets}
work=$(mktemp -d "${TMPDIR:-/tmp}/zpp_data_mem.XXXXXX")
trap 'rm -rf "$work"' EXIT

copies=$(( mb * 1000000 / $(stat -c %s "$data/text/tinyshakespeare.txt") + 1 ))
for _ in $(seq "$copies"); do cat "$data/text/tinyshakespeare.txt"; done > "$work/text.txt"
truncate -s "${mb}000000" "$work/text.txt"
"$new" prepare --input "$work/text.txt" --tokenizer bytes --out "$work/shards" -q > /dev/null

# Runs one training on data.input=$3 and prints "peak_anon_mib peak_rss_mib seconds".
measure() {
  local bin=$1 out=$2 input=$3 start peak_anon=0 anon
  start=$(date +%s.%N)
  "$bin" train --config "$here/configs/zpp-train/tiny.yaml" data.input="$input" train_iters=3 \
    eval_interval=3 eval_iters=1 --out "$out" -q > /dev/null &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    anon=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    (( ${anon:-0} > peak_anon )) && peak_anon=$anon
    hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo "${hwm:-0}")
    sleep 0.01
  done
  wait "$pid"
  echo "$(( peak_anon / 1024 )) $(( ${hwm:-0} / 1024 )) $(echo "$(date +%s.%N) - $start" | bc)"
}

tokens=$(python3 -c "import json,sys; j=json.load(open('$work/shards/prepare.json')); print(j['train_tokens']+j['val_tokens'])")
printf '%s tokens (%s MB of text, byte tokenizer); 3 steps of configs/zpp-train/tiny.yaml\n' "$tokens" "$mb"
printf '%-12s %-10s %14s %14s %10s\n' input binary peak_anon_MiB peak_rss_MiB seconds
for input in shards text.txt; do
  read -r b_anon b_rss b_s < <(measure "$base" "$work/run_base_$input" "$work/$input")
  read -r n_anon n_rss n_s < <(measure "$new" "$work/run_new_$input" "$work/$input")
  printf '%-12s %-10s %14s %14s %10.2f\n' "$input" base "$b_anon" "$b_rss" "$b_s"
  printf '%-12s %-10s %14s %14s %10.2f\n' "$input" new "$n_anon" "$n_rss" "$n_s"
  printf '%-12s %-10s %14.2f %14.2f %10.2f\n' "$input" new/base "$(echo "$n_anon / $b_anon" | bc -l)" \
    "$(echo "$n_rss / $b_rss" | bc -l)" "$(echo "$n_s / $b_s" | bc -l)"
done

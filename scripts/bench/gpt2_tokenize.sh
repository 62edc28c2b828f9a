#!/usr/bin/env bash
# GPT-2 tokenization speed of `zpp-train prepare`, for a baseline binary and a new one side by side
# (the new one on all cores, threads=0, and on one, threads=1): natural text (tinyshakespeare, once
# and 40 times: short pieces, mostly cache hits) and text whose pre-tokenizer pieces are long (one run
# of random letters: the case where merging by rank scans the piece once per merge). The shards of
# all runs must be byte-identical; the script fails otherwise.
#   [REPEATS=3] scripts/bench/gpt2_tokenize.sh BASE_BIN NEW_BIN [RUN_LENGTHS...]   (default 100000 400000)
set -euo pipefail
base=${1:?baseline zpp-train binary}
new=${2:?new zpp-train binary}
shift 2
if (( $# )); then lengths=("$@"); else lengths=(100000 400000); fi
here=$(cd "$(dirname "$0")/../.." && pwd)
data=${TOOLKIT_DATASETS:-$here/../shared/datasets}
tokenizer="gpt2:$data/tokenizers/gpt2"
work=$(mktemp -d "${TMPDIR:-/tmp}/gpt2_tokenize.XXXXXX")
trap 'rm -rf "$work"' EXIT

cp "$data/text/tinyshakespeare.txt" "$work/tinyshakespeare.txt"
for _ in $(seq 40); do cat "$data/text/tinyshakespeare.txt"; done > "$work/tinyshakespeare_x40.txt"
inputs=(tinyshakespeare.txt tinyshakespeare_x40.txt)
for n in "${lengths[@]}"; do
  python3 -c "import random, string; random.seed($n); print(''.join(random.choices(string.ascii_letters, k=$n)))" \
    > "$work/letters_$n.txt"
  inputs+=("letters_$n.txt")
done

# Prints the seconds `prepare` takes on input $2 with binary $1 (shards under $3; more arguments
# follow), the best of REPEATS (default 3) runs.
measure() {
  local start seconds best="" bin=$1 input=$2 out=$3
  shift 3
  for _ in $(seq "${REPEATS:-3}"); do
    start=$(date +%s.%N)
    "$bin" prepare --input "$work/$input" --tokenizer "$tokenizer" --out "$out" -q "$@" > /dev/null
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    if [[ -z $best ]] || (( $(echo "$seconds < $best" | bc) )); then best=$seconds; fi
  done
  echo "$best"
}

printf '%s cores\n' "$(nproc)"
printf '%-34s %8s %8s %10s %9s %s\n' input base_s new_s new_1thr_s new/base shards
for input in "${inputs[@]}"; do
  b_s=$(measure "$base" "$input" "$work/base_$input")
  n_s=$(measure "$new" "$input" "$work/new_$input")
  n1_s=$(measure "$new" "$input" "$work/new1_$input" threads=1)
  same=identical
  for f in "$work/base_$input"/*.bin; do
    cmp -s "$f" "$work/new_$input/$(basename "$f")" && cmp -s "$f" "$work/new1_$input/$(basename "$f")" || same=DIFFERENT
  done
  printf '%-34s %8.2f %8.2f %10.2f %9.3f %s\n' "$input ($(stat -c %s "$work/$input") B)" "$b_s" "$n_s" "$n1_s" \
    "$(echo "$n_s / $b_s" | bc -l)" "$same"
  [[ $same == identical ]]
done

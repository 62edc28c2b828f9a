#!/usr/bin/env bash
# How often the GM certificate exists (the relaxation on a constraint graph is tight at the IRLS
# optimum, with strict complementarity) as N, the outlier fraction and sigma vary, for five
# constraint graphs (gm_graph.hpp): the chain in data order, the balanced chain (inliers in balanced
# order of their offset forces, the other points leaves), blocks of 2 and 4 on the balanced
# interleaved order, and blocks of 4 in data order. Each cell: SEEDS seeds of `tls-fit gen` data
# (noise 0.05, well below sigma), `tls-fit fit --mode gm --solver irls --multipliers sparse_sdp
# --graph G --block B --verify`; a count is the number certified, and "global" how many IRLS optima
# the exhaustive search confirms (a certificate needs one). Blocks of 4 run up to N = B4MAX. Then, for
# N = 10 and 30, the all-pairs relaxation (--solver sdp redundant=true, O(N^2) constraints) as the
# reference of what full redundancy gives.
# Usage: scripts/bench/gm_tightness.sh [BUILD_DIR] (env NS="30 100 300 1000" SEEDS=3 B4MAX=1000).
set -euo pipefail
BUILD=${1:-build}
TLS=$BUILD/bin/tls-fit
NS=${NS:-"30 100 300 1000"}
SEEDS=${SEEDS:-3}
B4MAX=${B4MAX:-1000}
[[ -x $TLS ]] || { echo "missing $TLS" >&2; exit 66; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cert() {  # file sigma graph block -> "certified verified"
  local j
  j=$("$TLS" fit --input "$1" --mode gm --sigma "$2" --solver irls --multipliers sparse_sdp --graph "$3" \
        --block "$4" --verify --out "$WORK/r" 2>/dev/null || true)
  python3 -c 'import json, sys; d = json.loads(sys.argv[1]); print(int(d["certified"]), int(d["verified"]))' "$j" 2>/dev/null ||
    echo "0 0"
}
printf '%6s %8s %6s %7s %10s %10s %10s %10s %10s\n' N outliers sigma global data_chain bal_chain bal_blk2 bal_blk4 data_blk4
for n in $NS; do
  for out in 0.0 0.1 0.3; do
    for sigma in 0.5 1.0; do
      c1=0 c2=0 c3=0 c4=0 c5=0 glob=0
      for ((s = 0; s < SEEDS; s++)); do
        "$TLS" gen --n "$n" --seed "$s" --outliers "$out" --noise 0.05 --output "$WORK/p.csv" >/dev/null 2>&1
        read -r a g < <(cert "$WORK/p.csv" "$sigma" data 1)
        c1=$((c1 + a)) glob=$((glob + g))
        read -r a _ < <(cert "$WORK/p.csv" "$sigma" balanced 1); c2=$((c2 + a))
        read -r a _ < <(cert "$WORK/p.csv" "$sigma" balanced 2); c3=$((c3 + a))
        if ((n <= B4MAX)); then
          read -r a _ < <(cert "$WORK/p.csv" "$sigma" balanced 4); c4=$((c4 + a))
          read -r a _ < <(cert "$WORK/p.csv" "$sigma" data 4); c5=$((c5 + a))
        fi
      done
      b4="$c4/$SEEDS" d4="$c5/$SEEDS"
      ((n <= B4MAX)) || b4=- d4=-
      printf '%6d %8.2f %6.2f %7s %10s %10s %10s %10s %10s\n' "$n" "$out" "$sigma" "$glob/$SEEDS" "$c1/$SEEDS" "$c2/$SEEDS" \
        "$c3/$SEEDS" "$b4" "$d4"
    done
  done
done
echo "all-pairs relaxation (redundant=true, dense SDP), N = 10 and 30: tight / seeds, mean relative gap"
printf '%6s %8s %6s %8s %12s\n' N outliers sigma tight mean_rel_gap
for n in 10 30; do
  for out in 0.0 0.1 0.3; do
    for sigma in 0.5 1.0; do
      tight=0 gaps=""
      for ((s = 0; s < SEEDS; s++)); do
        "$TLS" gen --n "$n" --seed "$s" --outliers "$out" --noise 0.05 --output "$WORK/p.csv" >/dev/null 2>&1
        j=$("$TLS" fit --input "$WORK/p.csv" --mode gm --sigma "$sigma" --solver sdp redundant=true --out "$WORK/r" 2>/dev/null || true)
        t=$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(int(d['tight']), abs(d['sdp']['relative_gap']))" "$j")
        tight=$((tight + ${t%% *}))
        gaps="$gaps ${t##* }"
      done
      python3 -c "import sys; g=[float(x) for x in sys.argv[5:]]; print(f'{int(sys.argv[1]):6d} {float(sys.argv[2]):8.2f} {float(sys.argv[3]):6.2f} {sys.argv[4]:>8s} {sum(g)/len(g):12.2e}')" \
        "$n" "$out" "$sigma" "$tight/$SEEDS" $gaps
    done
  done
done

#!/usr/bin/env bash
# How often the GM relaxation (with the all-pairs redundant constraints) is tight, as the outlier
# fraction and sigma vary: N points, SEEDS seeds per cell, `tls-fit fit --mode gm --solver sdp`;
# "tight" = SDP optimal, X numerically rank one and the extracted line's cost equal to the SDP value.
# Usage: scripts/bench/gm_tightness.sh [BUILD_DIR] (env N=10 SEEDS=5).
set -euo pipefail
BUILD=${1:-build}
TLS=$BUILD/bin/tls-fit
N=${N:-10}
SEEDS=${SEEDS:-5}
[[ -x $TLS ]] || { echo "missing $TLS" >&2; exit 66; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
printf '%8s %6s %8s %12s\n' outliers sigma tight mean_rel_gap
for out in 0.0 0.1 0.3; do
  for sigma in 0.1 0.5 1.0; do
    tight=0 gaps=""
    for ((s = 0; s < SEEDS; s++)); do
      "$TLS" gen --n "$N" --seed "$s" --outliers "$out" --noise 0.05 --output "$WORK/p.csv" >/dev/null 2>&1
      j=$("$TLS" fit --input "$WORK/p.csv" --mode gm --sigma "$sigma" --solver sdp redundant=true \
            --out "$WORK/r$s" 2>/dev/null || true)
      t=$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(int(d['tight']), abs(d['sdp']['relative_gap']))" "$j")
      tight=$((tight + ${t%% *}))
      gaps="$gaps ${t##* }"
    done
    python3 -c "import sys; g=[float(x) for x in sys.argv[4:]]; print(f'{float(sys.argv[1]):8.2f} {float(sys.argv[2]):6.2f} {sys.argv[3]:>8s} {sum(g)/len(g):12.2e}')" \
      "$out" "$sigma" "$tight/$SEEDS" $gaps
  done
done

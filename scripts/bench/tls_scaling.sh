#!/usr/bin/env bash
# GM line fit scaling: IRLS + closed-form certificate (`--solver irls --multipliers closed_form`)
# for N = 10 .. 10^6, printing time/N per row (linear growth = a flat column), and the SDP
# relaxation (`--solver sdp`) until one size exceeds SDP_LIMIT seconds; then the ratio SDP / IRLS
# at the largest N both ran. Synthetic data: 20% outliers, noise 0.05, sigma 0.5.
# Usage: scripts/bench/tls_scaling.sh [BUILD_DIR] (env MAX_N=1000000 SDP_LIMIT=60).
set -euo pipefail
BUILD=${1:-build}
TLS=$BUILD/bin/tls-fit
MAX_N=${MAX_N:-1000000}
SDP_LIMIT=${SDP_LIMIT:-60}
[[ -x $TLS ]] || { echo "missing $TLS" >&2; exit 66; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
field() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); t=d['times_s']; print($2)" "$1"; }
printf '%9s %10s %10s %12s %12s %10s\n' N irls_s cert_s total_s us_per_pt certified
declare -A IRLS
for n in 10 100 1000 10000 100000 1000000; do
  ((n <= MAX_N)) || break
  j=$("$TLS" fit --mode gm --sigma 0.5 --solver irls --multipliers closed_form synthetic.n="$n" \
        synthetic.outliers=0.2 --out "$WORK/i$n" 2>/dev/null || true)
  read -r irls cert cf <<<"$(field "$j" "t['solve'], t['certify'], d['certified']" | tr -d '(),')"
  IRLS[$n]=$(python3 -c "print($irls + $cert)")
  printf '%9d %10.4f %10.4f %12.4f %12.3f %10s\n' "$n" "$irls" "$cert" "${IRLS[$n]}" \
    "$(python3 -c "print(1e6 * ${IRLS[$n]} / $n)")" "$cf"
done
printf '\n%9s %10s %10s %8s\n' N sdp_s status tight
last=0
for n in 10 20 30 50 75 100 150 200; do
  start=$(date +%s.%N)
  j=$(timeout $((SDP_LIMIT * 3)) "$TLS" fit --mode gm --sigma 0.5 --solver sdp --multipliers sdp \
        synthetic.n="$n" synthetic.outliers=0.2 --out "$WORK/s$n" 2>/dev/null || true)
  wall=$(python3 -c "import time; print(time.time() - $start)")
  [[ -n $j ]] || { printf '%9d %10s (no result within %ss)\n' "$n" ">$((SDP_LIMIT * 3))" "$((SDP_LIMIT * 3))"; break; }
  read -r sdp st tight <<<"$(field "$j" "t['sdp'], d['sdp']['status'], d.get('tight')" | tr -d "(),'")"
  printf '%9d %10.3f %10s %8s\n' "$n" "$sdp" "$st" "$tight"
  last=$n LAST_SDP=$sdp
  python3 -c "import sys; sys.exit(0 if $wall > $SDP_LIMIT else 1)" && break
done
if [[ -n ${IRLS[$last]:-} ]]; then
  echo "ratio SDP / (IRLS + certificate) at N=$last: $(python3 -c "print(f'{$LAST_SDP / ${IRLS[$last]}:.0f}')")"
else
  j=$("$TLS" fit --mode gm --sigma 0.5 --solver irls --multipliers closed_form synthetic.n="$last" \
        synthetic.outliers=0.2 --out "$WORK/r$last" 2>/dev/null || true)
  t=$(field "$j" "t['solve'] + t['certify']")
  echo "ratio SDP / (IRLS + certificate) at N=$last: $(python3 -c "print(f'{$LAST_SDP / $t:.0f}')")"
fi

#!/usr/bin/env bash
# Agreement and time of the GM certificate with free multipliers chosen by the small SDP
# (--multipliers stationary_sdp) and by the chordal ADMM (--multipliers chordal, O(N) per iteration)
# against the relaxation's dual (--multipliers sdp, chain constraints,
# redundant=false: the same multiplier family) on `tls-fit gen` data (noise 0.05), at the
# multi-start IRLS line. Per N, outlier fraction and sigma over SEEDS seeds: how many the relaxation
# dual certifies, how many stationary_sdp ("new") certifies, how many both, and how many chordal
# certifies and agrees with stationary_sdp; times are the certificate stages (build + sdp + certify)
# from the JSON, median per N. Then certificate time vs N (env NT) on one instance per N (seed 0,
# sigma 1, no outliers) for chordal, stationary_sdp (N <= 300) and closed_form.
# Usage: scripts/bench/gm_certificate.sh [BUILD_DIR] (env NS="10 20 50" SEEDS=5 NT="20 50 100 300 1000 10000").
set -euo pipefail
BUILD=${1:-build}
TLS=$BUILD/bin/tls-fit
NS=${NS:-"10 20 50"}
SEEDS=${SEEDS:-5}
NT=${NT:-"20 50 100 300 1000 10000"}
[[ -x $TLS ]] || { echo "missing $TLS" >&2; exit 66; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for n in $NS; do
  for out in 0.0 0.1 0.3; do
    for sigma in 0.1 0.5 1.0; do
      for ((s = 0; s < SEEDS; s++)); do
        "$TLS" gen --n "$n" --seed "$s" --outliers "$out" --noise 0.05 --output "$WORK/p.csv" >/dev/null 2>&1
        for m in sdp stationary_sdp chordal; do
          j=$("$TLS" fit --input "$WORK/p.csv" --mode gm --sigma "$sigma" --solver irls --multipliers "$m" \
                --out "$WORK/r" 2>/dev/null || true)
          echo "$n $out $sigma $s $m $j" >>"$WORK/rows"
        done
      done
    done
  done
done
python3 - "$WORK/rows" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    n, out, sigma, seed, m, j = line.split(" ", 5)
    d = json.loads(j)
    t = sum(d["times_s"].get(k, 0.0) for k in ("build", "sdp", "certify"))
    rows.setdefault((int(n), float(out), float(sigma)), {}).setdefault(m, []).append((d["certified"], t, d["lambda_min"]))
print(f"{'N':>4} {'outl':>5} {'sigma':>5} {'cases':>5} {'sdp_cert':>8} {'new_cert':>8} {'both':>5} {'new_only':>8} {'chordal':>7} {'agree':>5}")
times = {}
tot = [0, 0, 0, 0, 0, 0]
for (n, out, sigma), r in sorted(rows.items()):
    a, b, h = r["sdp"], r["stationary_sdp"], r["chordal"]
    hc = sum(z[0] for z in h); agree = sum(y[0] == z[0] for y, z in zip(b, h))
    sc = sum(x[0] for x in a); nc = sum(x[0] for x in b)
    both = sum(x[0] and y[0] for x, y in zip(a, b)); only = sum(y[0] and not x[0] for x, y in zip(a, b))
    tot = [tot[0] + len(a), tot[1] + sc, tot[2] + nc, tot[3] + both, tot[4] + hc, tot[5] + agree]
    print(f"{n:4d} {out:5.2f} {sigma:5.2f} {len(a):5d} {sc:8d} {nc:8d} {both:5d} {only:8d} {hc:7d} {agree:5d}")
    tn = times.setdefault(n, ([], [], []))
    tn[0].extend(x[1] for x in a); tn[1].extend(y[1] for y in b); tn[2].extend(z[1] for z in h)
print(f"total: {tot[0]} cases, relaxation dual certifies {tot[1]}, stationary_sdp {tot[2]}, both {tot[3]}, "
      f"chordal {tot[4]} (same decision as stationary_sdp on {tot[5]})")
print(f"{'N':>4} {'sdp_median_s':>12} {'new_median_s':>12} {'chordal_s':>10} {'ratio':>6}")
for n, (ta, tb, tc) in sorted(times.items()):
    ma, mb, mc = statistics.median(ta), statistics.median(tb), statistics.median(tc)
    print(f"{n:4d} {ma:12.4f} {mb:12.4f} {mc:10.4f} {ma / mb:6.2f}")
PY
# Certificate time vs N at one instance per N.
echo "time vs N (seed 0, sigma 1, outliers 0, noise 0.05): certified / certificate seconds / ADMM iterations"
printf '%6s %-24s %-24s %-24s\n' N chordal stationary_sdp closed_form
for n in $NT; do
  "$TLS" gen --n "$n" --seed 0 --outliers 0.0 --noise 0.05 --output "$WORK/t.csv" >/dev/null 2>&1
  row=$(printf '%6d' "$n")
  for m in chordal stationary_sdp closed_form; do
    if [[ $m == stationary_sdp && $n -gt 300 ]]; then row+=$(printf ' %-24s' "-"); continue; fi
    j=$("$TLS" fit --input "$WORK/t.csv" --mode gm --sigma 1.0 --solver irls --multipliers "$m" --out "$WORK/r" 2>/dev/null || true)
    row+=$(python3 -c 'import json, sys
d = json.loads(sys.argv[1]); s = d.get("multiplier_sdp") or {}
print(" %-24s" % ("%s %.4f %s" % (d["certified"], d["times_s"].get("certify", 0.0), s.get("iterations", "-"))), end="")' "$j")
  done
  echo "$row"
done

#!/usr/bin/env bash
# GM certificate: agreement of the multiplier searches, then IRLS + certificate time vs N.
# 1. Agreement (N in NS, outliers 0/0.1/0.3, sigma 0.5/1, SEEDS seeds of `tls-fit gen` data, noise
#    0.05), all on the same graph (balanced, blocks of 2): the relaxation's dual (--multipliers sdp),
#    the dense free-multiplier SDP (stationary_sdp) and its chordal conversion (sparse_sdp, O(N) per
#    iteration, stopped at the sign of t*): how many each certifies, agreement of sparse_sdp with
#    stationary_sdp, median certificate seconds.
# 2. Time vs N (NT) for the default path (sparse_sdp on the balanced graph, block sizes 1, 2, 4 until
#    certified) on clean data (sigma 1) and with 10% outliers (up to N = OMAX): IRLS seconds (9
#    starts), certificate seconds (graph build + multiplier search + Cholesky decision + shift-invert Lanczos
#    lambda_min), microseconds per point, peak resident memory (MiB, whole process), certified
#    fraction, the graph that certified and the interior-point iterations; the dense baseline (stationary_sdp on the balanced chain, O(N^3))
#    in the same run up to N = DMAX, and the ratio at the largest N both ran.
# 3. Rejection of planted local minima (N in NR; 30% outliers, sigma 0.2, single-start IRLS from
#    angles k pi / 8 until one ends above the exhaustive-search optimum): certificate seconds (the
#    multi-start IRLS probe finds a cheaper line, so only the chain is tried, for the dual value),
#    graphs tried and interior-point iterations.
# Usage: scripts/bench/gm_certificate.sh [BUILD_DIR]
#   (env SECTIONS="1 2 3" NS="10 20 50" SEEDS=3 NT="10 100 300 1000 10000 100000 1000000" TSEEDS=3
#    (one seed from N = 1e5) OMAX=1000 DMAX=300 NR="100 1000 10000 100000"; N = 1e6 takes ~10 min and
#    ~14 GB).
set -euo pipefail
BUILD=${1:-build}
TLS=$BUILD/bin/tls-fit
NS=${NS:-"10 20 50"}
SEEDS=${SEEDS:-3}
SECTIONS=${SECTIONS:-"1 2 3"}
NT=${NT:-"10 100 300 1000 10000 100000 1000000"}
TSEEDS=${TSEEDS:-3}
OMAX=${OMAX:-1000}
NR=${NR:-"100 1000 10000 100000"}
DMAX=${DMAX:-300}
[[ -x $TLS ]] || { echo "missing $TLS" >&2; exit 66; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fit() { "$TLS" fit --input "$1" --mode gm --solver irls --out "$WORK/r" "${@:2}" 2>/dev/null || true; }
section() { [[ " $SECTIONS " == *" $1 "* ]]; }

if section 1; then
echo "1. agreement on the balanced graph with blocks of 2"
for n in $NS; do
  for out in 0.0 0.1 0.3; do
    for sigma in 0.5 1.0; do
      for ((s = 0; s < SEEDS; s++)); do
        "$TLS" gen --n "$n" --seed "$s" --outliers "$out" --noise 0.05 --output "$WORK/p.csv" >/dev/null 2>&1
        for m in sdp stationary_sdp sparse_sdp; do
          echo "$n $out $sigma $s $m $(fit "$WORK/p.csv" --sigma "$sigma" --multipliers "$m" --block 2)" >>"$WORK/rows"
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
    rows.setdefault(int(n), {}).setdefault(m, []).append((d["certified"], t))
print(f"{'N':>4} {'cases':>5} {'sdp_dual':>8} {'stationary':>10} {'sparse':>6} {'agree':>5} {'sdp_s':>8} {'stationary_s':>12} {'sparse_s':>8}")
for n, r in sorted(rows.items()):
    a, b, c = r["sdp"], r["stationary_sdp"], r["sparse_sdp"]
    agree = sum(x[0] == y[0] for x, y in zip(b, c))
    med = [statistics.median(x[1] for x in v) for v in (a, b, c)]
    print(f"{n:4d} {len(a):5d} {sum(x[0] for x in a):8d} {sum(x[0] for x in b):10d} {sum(x[0] for x in c):6d} {agree:5d} "
          f"{med[0]:8.4f} {med[1]:12.4f} {med[2]:8.4f}")
PY
fi

if section 2; then
echo "2. IRLS + certificate vs N (sparse_sdp, balanced graph, blocks 1, 2, 4 until certified)"
printf '%8s %8s %6s %9s %9s %9s %9s %8s %6s %6s %10s %7s\n' N outliers cert irls_s cert_s total_s us_per_pt rss_mib block iters dense_s ratio
for out in 0.0 0.1; do
  last=""
  for n in $NT; do
    [[ $out != 0.0 && $n -gt $OMAX ]] && continue
    seeds=$TSEEDS
    ((n >= 100000)) && seeds=1
    : >"$WORK/t"
    for ((s = 0; s < seeds; s++)); do
      "$TLS" gen --n "$n" --seed "$s" --outliers "$out" --noise 0.05 --output "$WORK/t.csv" >/dev/null 2>&1
      start=$(date +%s.%N)
      j=$(fit "$WORK/t.csv" --sigma 1.0)
      wall=$(echo "$(date +%s.%N) - $start" | bc)
      dense="-"
      if ((n <= DMAX)); then
        dense=$(fit "$WORK/t.csv" --sigma 1.0 --multipliers stationary_sdp --block 1 |
          python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["times_s"].get("build", 0) + d["times_s"]["certify"])')
      fi
      echo "$wall $dense $j" >>"$WORK/t"
    done
    python3 - "$WORK/t" "$n" "$out" <<'PY'
import json, statistics, sys
n, out = int(sys.argv[2]), float(sys.argv[3])
rows = []
for line in open(sys.argv[1]):
    wall, dense, j = line.split(" ", 2)
    rows.append((float(wall), dense, json.loads(j)))
med = lambda v: statistics.median(v)
cert = sum(r[2]["certified"] for r in rows)
irls = med([r[2]["times_s"]["solve"] for r in rows])
c = med([r[2]["times_s"].get("build", 0) + r[2]["times_s"]["certify"] for r in rows])
total = med([r[0] for r in rows])
short = lambda name: "1" if "chain" in name else name.split()[-1]  # "balanced blocks of 4" -> "4"
bands = sorted({short(r[2]["graph"]["name"]) for r in rows if r[2]["certified"]}) or ["-"]
iters = med([sum(t["search"].get("iterations", 0) for t in r[2]["graph"]["tried"]) for r in rows])
dense = [float(r[1]) for r in rows if r[1] != "-"]
ds = f"{med(dense):10.4f}" if dense else f"{'-':>10}"
ratio = f"{med(dense) / c:7.1f}" if dense else f"{'-':>7}"
rss = max(r[2]["peak_rss_mib"] for r in rows)
print(f"{n:8d} {out:8.2f} {cert:>3d}/{len(rows):<2d} {irls:9.4f} {c:9.4f} {total:9.3f} {1e6 * (irls + c) / n:9.1f} "
      f"{rss:8.0f} {'/'.join(bands):>6s} {iters:6.0f} {ds} {ratio}")
PY
  done
done
fi

section 3 || exit 0
echo "3. rejection of a planted local minimum (30% outliers, sigma 0.2)"
: >"$WORK/rej"
for n in $NR; do
  "$TLS" gen --n "$n" --seed 7 --outliers 0.3 --noise 0.05 --output "$WORK/l.csv" >/dev/null 2>&1
  for k in 0 1 2 3 4 5 6 7; do
    angle=$(python3 -c "import math; print($k * math.pi / 8)")
    j=$(fit "$WORK/l.csv" --sigma 0.2 --init-angle "$angle" --verify)
    if python3 -c 'import json, sys; d = json.loads(sys.argv[1]); sys.exit(0 if d["cost"] > d["global_cost"] * (1 + 1e-6) else 1)' "$j"; then
      echo "$n $angle $j" >>"$WORK/rej"
      break
    fi
  done
done
python3 - "$WORK/rej" <<'PY'
import json, sys
print(f"{'N':>8} {'angle':>6} {'cost':>9} {'global':>9} {'cert_s':>8} {'tried':>5} {'iters':>5}")
for line in open(sys.argv[1]):
    n, angle, j = line.split(" ", 2)
    d = json.loads(j)
    t = d["graph"]["tried"]
    secs = sum(d["times_s"].get(k, 0) for k in ("probe", "build", "certify"))
    iters = sum(x["search"].get("iterations", 0) for x in t)
    flag = "  CERTIFIED: a false certificate!" if d["certified"] else ""
    print(f"{int(n):8d} {float(angle):6.3f} {d['cost']:9.5f} {d['global_cost']:9.5f} {secs:8.3f} {len(t):5d} {iters:5d}{flag}")
PY

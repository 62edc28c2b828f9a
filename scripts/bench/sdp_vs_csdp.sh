#!/usr/bin/env bash
# Our interior-point SDP solver (`tls-fit sdp`) against Debian's csdp on the same SDPA files:
# the GM line-fit relaxations exported by `tls-fit fit --export-sdpa` (N points; basic chain
# constraints, and the all-pairs redundant ones for N <= 20) and Lovasz theta SDPs.
# Wall time per solve (process start included for both, best of REPEAT), objective values, ratio.
# Usage: scripts/bench/sdp_vs_csdp.sh [BUILD_DIR] (default build); csdp runs single-threaded.
set -euo pipefail
BUILD=${1:-build}
TLS=$BUILD/bin/tls-fit
REPEAT=${REPEAT:-3}
[[ -x $TLS ]] || { echo "missing $TLS: build the tls-fit target first" >&2; exit 66; }
command -v csdp >/dev/null || { echo "csdp not installed (apt-get install coinor-csdp)" >&2; exit 77; }
export OMP_NUM_THREADS=1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Lovasz theta of the 5-cycle and the Petersen graph (max <J,X> s.t. tr X = 1, X_ij = 0 on edges).
python3 - "$WORK" <<'PY'
import sys
def theta(path, n, edges):
    with open(path, "w") as f:
        f.write(f'"Lovasz theta\n{1 + len(edges)}\n1\n{n}\n' + " ".join(["1"] + ["0"] * len(edges)) + "\n")
        for i in range(n):
            for j in range(i, n):
                f.write(f"0 1 {i+1} {j+1} 1\n")
        for i in range(n):
            f.write(f"1 1 {i+1} {i+1} 1\n")
        for k, (i, j) in enumerate(edges):
            f.write(f"{k+2} 1 {i+1} {j+1} 1\n")
c5 = [(i, (i + 1) % 5) for i in range(5)]
pet = [(i, (i + 1) % 5) for i in range(5)] + [(5 + i, 5 + (i + 2) % 5) for i in range(5)] + [(i, 5 + i) for i in range(5)]
theta(f"{sys.argv[1]}/theta_c5.dat-s", 5, c5)
theta(f"{sys.argv[1]}/theta_petersen.dat-s", 10, pet)
PY

for n in 10 20 50; do
  "$TLS" gen --n "$n" --seed 1 --outliers 0.2 --noise 0.05 --output "$WORK/p$n.csv" >/dev/null 2>&1
  "$TLS" fit --input "$WORK/p$n.csv" --mode gm --sigma 0.2 --solver irls --export-sdpa "$WORK/gm_n$n.dat-s" \
    --out "$WORK/run$n" >/dev/null 2>&1 || true
  if (( n <= 20 )); then
    "$TLS" fit --input "$WORK/p$n.csv" --mode gm --sigma 0.2 --solver irls redundant=true \
      --export-sdpa "$WORK/gm_n${n}_redundant.dat-s" --out "$WORK/runr$n" >/dev/null 2>&1 || true
  fi
done

best_time() {  # best wall seconds of REPEAT runs of "$@"
  local best=""
  for ((k = 0; k < REPEAT; k++)); do
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s.%N)
    best=$(python3 -c "import sys; a=float(sys.argv[1])-float(sys.argv[2]); b=sys.argv[3]; print(a if b=='' else min(a,float(b)))" "$t1" "$t0" "$best")
  done
  echo "$best"
}

printf '%-26s %6s %6s %10s %16s %16s %10s %10s %7s\n' file order m status ours_primal csdp_primal ours_s csdp_s ratio
for f in "$WORK"/gm_n10.dat-s "$WORK"/gm_n10_redundant.dat-s "$WORK"/gm_n20.dat-s "$WORK"/gm_n20_redundant.dat-s \
         "$WORK"/gm_n50.dat-s "$WORK"/theta_c5.dat-s "$WORK"/theta_petersen.dat-s; do
  json=$("$TLS" sdp --input "$f" 2>/dev/null || true)
  csdp_out=$(csdp "$f" "$f.sol" 2>/dev/null || true)
  ours_t=$(best_time "$TLS" sdp --input "$f")
  csdp_t=$(best_time csdp "$f" "$f.sol")
  python3 - "$f" "$json" "$csdp_out" "$ours_t" "$csdp_t" <<'PY'
import json, os, re, sys
f, js, cs, ot, ct = sys.argv[1:]
j = json.loads(js)
m = re.search(r"Primal objective value:\s*(\S+)", cs)
cp = float(m.group(1)) if m else float("nan")
ot, ct = float(ot), float(ct)
print(f"{os.path.basename(f):26s} {j['order']:6d} {j['constraints']:6d} {j['status']:>10s} {j['primal']:16.9e} {cp:16.9e} {ot:10.4f} {ct:10.4f} {ot/ct:7.2f}")
PY
done

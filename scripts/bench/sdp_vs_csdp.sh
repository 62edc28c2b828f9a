#!/usr/bin/env bash
# Our interior-point SDP solver (`tls-fit sdp`) against Debian's csdp (CSDP 6.2) on the same SDPA files, and
# against Debian's sdpa (SDPA 7.3, package `sdpa`; statically linked with OpenBLAS) when it is installed (SDPA=0 skips it).
#   scripts/bench/sdp_vs_csdp.sh BUILD_DIR [SDPLIB_DIR]
# With SDPLIB_DIR (a folder of SDPLIB's .dat-s files, e.g. from github.com/vsdp/SDPLIB; kept outside the
# project): every problem there (PROBLEMS='regex' to select by name), the relative error to the optimum of
# SDPLIB's README.md table when that file is in the folder. Without it: GM line-fit relaxations exported by
# `tls-fit fit --export-sdpa` and Lovasz theta SDPs generated here.
# Both solvers get THREADS threads (default 2): ours --threads, csdp through OpenBLAS (OPENBLAS_NUM_THREADS).
# Debian's csdp calls BLAS through the libblas.so.3 alternative; the script says where that resolves and runs
# csdp with OpenBLAS's copy (openblas-pthread) via LD_LIBRARY_PATH, so the peer always uses an optimised BLAS.
# Wall time per solve (process start and file reading included for both), or with CLOCK=cpu the solver
# process's CPU time (user + system, from getrusage: fair on a shared, loaded machine when THREADS=1), best of REPEAT (default 2),
# TIMEOUT seconds per run (default 600). Per problem: status, iterations, time, objective of each, csdp's accuracy
# (the largest of its DIMACS errors 1, 3 and 5: relative primal infeasibility, dual infeasibility, real gap; ours
# has the same meaning), the time ratios ours/csdp (and ours/sdpa); then the counts solved (optimal or near_optimal
# for ours; csdp exit 0, or 3, its "partial success"; sdpa pdOPT or an infeasibility), csdp's count within 1e-6 by
# its own DIMACS errors (what our near_optimal means) and the geometric-mean time ratios over the problems both solve.
# BASELINE=BUILD_DIR (e.g. main's build) adds that build's tls-fit as a third column, run between ours and csdp on
# every problem (interleaved, same clock): its status, iterations, time, accuracy and time ratio to csdp, its solved
# count and geometric mean over the problems it and csdp solve.
set -euo pipefail
BUILD=${1:-build}
SDPLIB=${2:-}
TLS=$BUILD/bin/tls-fit
export REPEAT=${REPEAT:-2} THREADS=${THREADS:-2} TIMEOUT=${TIMEOUT:-600} PROBLEMS=${PROBLEMS:-.} CLOCK=${CLOCK:-wall}
[[ $CLOCK == wall || $CLOCK == cpu ]] || { echo "CLOCK must be wall or cpu, got $CLOCK" >&2; exit 2; }
SDPA_BIN=""
[[ ${SDPA:-1} == 0 ]] || SDPA_BIN=$(command -v sdpa || true)
export SDPA_BIN
[[ -x $TLS ]] || { echo "missing $TLS: build the tls-fit target first" >&2; exit 66; }
BASE_TLS=""
if [[ -n ${BASELINE:-} ]]; then
  BASE_TLS=$BASELINE/bin/tls-fit
  [[ -x $BASE_TLS ]] || { echo "missing baseline $BASE_TLS" >&2; exit 66; }
  echo "baseline: $BASE_TLS"
fi
export BASE_TLS
CSDP=$(command -v csdp) || { echo "csdp not installed (apt-get install coinor-csdp)" >&2; exit 77; }
[[ -z $SDPLIB || -d $SDPLIB ]] || { echo "no SDPLIB folder $SDPLIB" >&2; exit 66; }

blas=$(ldd "$CSDP" | awk '/libblas\.so/ {print $3}')
blas_real=$(readlink -f "$blas")
echo "csdp: $CSDP; libblas.so.3 -> $blas_real ($([[ $blas_real == *openblas* ]] && echo OpenBLAS || echo "reference BLAS or other"))"
OPENBLAS_DIR=""
for d in /usr/lib/x86_64-linux-gnu/openblas-pthread /usr/lib/aarch64-linux-gnu/openblas-pthread; do
  [[ -e $d/libblas.so.3 ]] && OPENBLAS_DIR=$d
done
[[ -n $OPENBLAS_DIR ]] || { echo "OpenBLAS (libopenblas0-pthread) not installed: install it to time csdp fairly" >&2; exit 77; }
echo "csdp runs with LD_LIBRARY_PATH=$OPENBLAS_DIR OPENBLAS_NUM_THREADS=$THREADS; ours with --threads $THREADS"
echo "sdpa: ${SDPA_BIN:-not installed (apt-get install sdpa) or SDPA=0}${SDPA_BIN:+ with OPENBLAS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); repeats $REPEAT; times: $CLOCK"
export OPENBLAS_DIR CSDP TLS

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [[ -n $SDPLIB ]]; then
  FILES=$(ls "$SDPLIB"/*.dat-s | python3 -c "
import os, re, sys
names = [l.strip() for l in sys.stdin if re.search(os.environ['PROBLEMS'], os.path.basename(l.strip()))]
key = lambda p: [int(t) if t.isdigit() else t for t in re.split(r'(\d+)', os.path.basename(p))]
print('\n'.join(sorted(names, key=key)))")
  KNOWN=$SDPLIB/README.md
else
  python3 - "$WORK" <<'PY'
import sys
def theta(path, n, edges):  # Lovasz theta: max <J,X> s.t. tr X = 1, X_ij = 0 on edges
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
pet = c5 + [(5 + i, 5 + (i + 2) % 5) for i in range(5)] + [(i, 5 + i) for i in range(5)]
theta(f"{sys.argv[1]}/theta_c5.dat-s", 5, c5)
theta(f"{sys.argv[1]}/theta_petersen.dat-s", 10, pet)
PY
  for n in 10 20 50; do
    "$TLS" gen --n "$n" --seed 1 --outliers 0.2 --noise 0.05 --output "$WORK/p$n.csv" >/dev/null 2>&1
    "$TLS" fit --input "$WORK/p$n.csv" --mode gm --sigma 0.2 --solver irls --export-sdpa "$WORK/gm_n$n.dat-s" \
      --out "$WORK/run$n" >/dev/null 2>&1 || true
  done
  FILES=$(ls "$WORK"/*.dat-s)
  KNOWN=""
fi

python3 - "$WORK" "$KNOWN" $FILES <<'PY'
import json, math, os, re, resource, subprocess, sys, time
work, known_md, files = sys.argv[1], sys.argv[2], sys.argv[3:]
env = os.environ
repeat, threads, timeout = int(env["REPEAT"]), env["THREADS"], float(env["TIMEOUT"])
known = {}
if known_md and os.path.exists(known_md):
    for line in open(known_md):
        m = re.match(r"\|\s*(\S+)\s*\|\s*\d+\s*\|\s*\d+\s*\|\s*([-+0-9.eE]+)\s*\|", line)
        if m:
            known[m.group(1)] = float(m.group(2))
csdp_env = dict(env, LD_LIBRARY_PATH=env["OPENBLAS_DIR"], OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads)
CSDP_STATUS = {0: "optimal", 1: "primal_infeasible", 2: "dual_infeasible", 3: "partial_success", 4: "iteration_limit",
               5: "stuck_primal", 6: "stuck_dual", 7: "no_progress", 8: "singular", 9: "nan"}

def clock():
    if env["CLOCK"] == "wall":
        return time.perf_counter()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # the finished (waited-for) solver processes
    return children.ru_utime + children.ru_stime

def timed(cmd, run_env):
    best, out, rc = math.inf, "", None
    for _ in range(repeat):
        t0 = clock()
        try:
            p = subprocess.run(cmd, env=run_env, capture_output=True, text=True, timeout=timeout)
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired:
            return timeout, "", None
        best = min(best, clock() - t0)
    return best, out, rc

def ours(f, tls=env["TLS"]):
    t, out, rc = timed([tls, "sdp", "--input", f, "--threads", threads, "-q"], env)
    try:
        j = json.loads(out)
        return j["status"], j["iterations"], t, j["primal"], j.get("achieved_accuracy", j["relative_gap"])
    except (ValueError, KeyError):
        return ("timeout" if rc is None else f"exit{rc}"), -1, t, math.nan, math.nan

def csdp(f):
    t, out, rc = timed([env["CSDP"], f, os.path.join(work, "csdp.sol")], csdp_env)
    its = [int(m) for m in re.findall(r"^Iter:\s*(\d+)", out, re.M)]
    m = re.search(r"Primal objective value:\s*(\S+)", out)
    d = re.search(r"DIMACS error measures:((\s+\S+){6})", out)
    acc = max(abs(float(d.group(1).split()[k])) for k in (0, 2, 4)) if d else math.nan
    status = "timeout" if rc is None else CSDP_STATUS.get(rc, f"exit{rc}")
    return status, (its[-1] if its else -1), t, (float(m.group(1)) if m else math.nan), acc

SDPA_SOLVED = ("pdOPT", "pINF_dFEAS", "pFEAS_dINF")

def sdpa(f):
    t, out, rc = timed([env["SDPA_BIN"], "-ds", f, "-o", os.path.join(work, "sdpa.out")], csdp_env)
    ph = re.search(r"phase\.value\s*=\s*(\S+)", out)
    it = re.search(r"^\s*Iteration\s*=\s*(\d+)", out, re.M)
    m = re.search(r"objValPrimal\s*=\s*(\S+)", out)
    status = "timeout" if rc is None else (ph.group(1) if ph else f"exit{rc}")
    return status, (int(it.group(1)) if it else -1), t, (float(m.group(1)) if m else math.nan)

def relerr(v, name):
    return abs(v - known[name]) / max(1.0, abs(known[name])) if name in known and math.isfinite(v) else math.nan

with_sdpa = bool(env.get("SDPA_BIN"))
with_base = bool(env.get("BASE_TLS"))
OURS_SOLVED = ("optimal", "near_optimal", "primal_infeasible", "dual_infeasible")
print(f"{'problem':12s} {'ours':>13s} {'it':>3s} {'s':>7s} {'objective':>15s} {'acc':>7s} {'relerr':>7s} | "
      + (f"{'baseline':>13s} {'it':>3s} {'s':>7s} {'acc':>7s} | " if with_base else "")
      + f"{'csdp':>15s} {'it':>3s} {'s':>7s} {'acc':>7s} {'relerr':>7s} | {'ratio':>5s}"
      + (f" {'base':>5s}" if with_base else "")
      + (f" | {'sdpa':>10s} {'it':>3s} {'s':>7s} {'relerr':>7s} | {'ratio':>5s}" if with_sdpa else ""))
solved_o = solved_c = solved_c6 = solved_s = solved_b = 0
ratios, ratios_s, ratios_b = [], [], []
for f in files:
    name = os.path.basename(f).removesuffix(".dat-s")
    so, io, to, oo, ao = ours(f)
    if with_base:
        sb, ib, tb, ob, ab = ours(f, env["BASE_TLS"])
    sc, ic, tc, oc, ac = csdp(f)
    eo, ec = relerr(oo, name), relerr(oc, name)
    ok_o = so in OURS_SOLVED
    ok_c = sc in ("optimal", "partial_success", "primal_infeasible", "dual_infeasible")
    solved_o += ok_o
    solved_c += ok_c
    solved_c6 += sc in ("primal_infeasible", "dual_infeasible") or (ok_c and ac <= 1e-6)
    r = to / tc
    if ok_o and ok_c:
        ratios.append(r)
    line = (f"{name:12s} {so:>13s} {io:3d} {to:7.3f} {oo:15.8e} {ao:7.1e} {eo:7.1e} | "
            + (f"{sb:>13s} {ib:3d} {tb:7.3f} {ab:7.1e} | " if with_base else "")
            + f"{sc:>15s} {ic:3d} {tc:7.3f} {ac:7.1e} {ec:7.1e} | {r:5.2f}")
    if with_base:
        ok_b = sb in OURS_SOLVED
        solved_b += ok_b
        if ok_b and ok_c:
            ratios_b.append(tb / tc)
        line += f" {tb / tc:5.2f}"
    if with_sdpa:
        ss, is_, ts, os_ = sdpa(f)
        ok_s = ss in SDPA_SOLVED
        solved_s += ok_s
        if ok_o and ok_s:
            ratios_s.append(to / ts)
        line += f" | {ss:>10s} {is_:3d} {ts:7.3f} {relerr(os_, name):7.1e} | {to / ts:5.2f}"
    print(line, flush=True)
print(f"solved: ours {solved_o}/{len(files)} (optimal, near_optimal or an infeasibility), csdp {solved_c}/{len(files)} "
      f"(its partial success counted; {solved_c6} within 1e-6 by its DIMACS errors)"
      + (f", sdpa {solved_s}/{len(files)} (pdOPT or an infeasibility)" if with_sdpa else "")
      + (f", baseline {solved_b}/{len(files)}" if with_base else ""))
gm = lambda rs: math.exp(sum(math.log(r) for r in rs) / len(rs))
if ratios:
    print(f"geometric-mean time ratio ours/csdp over the {len(ratios)} problems both solve: {gm(ratios):.3f}")
if ratios_b:
    print(f"geometric-mean time ratio baseline/csdp over the {len(ratios_b)} problems both solve: {gm(ratios_b):.3f}")
if ratios_s:
    print(f"geometric-mean time ratio ours/sdpa over the {len(ratios_s)} problems both solve: {gm(ratios_s):.3f}")
PY

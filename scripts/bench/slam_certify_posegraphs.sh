#!/usr/bin/env bash
# slam-certify on every pose-graph benchmark in ../shared/datasets/posegraphs, side by side with
# SE-Sync C++ when its hand-built checkout is given (never vendored).
#
#   scripts/bench/slam_certify_posegraphs.sh BUILD [SESYNC_CPP_DIR] [--repeats N] [--auto-only]
#
# BUILD: this project's build folder (bin/slam-certify). SESYNC_CPP_DIR: the C++ folder of a
# david-m-rosen/SE-Sync checkout built by hand (its build/lib/libSESync.so, with the Optimization and
# Preconditioners submodules); the script compiles a small driver against it that prints SE-Sync's
# F(xhat), status, its own total_computation_time and the driver's clock, and writes its estimate
# xhat, whose cost slam-certify then evaluates edge by edge and certifies (--candidate): SE-Sync's
# printed F(xhat) differs from the cost of its own xhat on some files (cubicle: 717.1340 printed,
# 717.12599 by the edge sum), so the optima are compared on xhat's evaluated cost.
# What is timed (like with like: neither side's g2o reading, process start-up or output writing):
#  - ours: build + solve + certify of the JSON's times_s (data matrix and its factorisation,
#    chordal initialisation, staircase, rounding, recovery, certificate);
#  - SE-Sync: the driver's steady clock around SESyncProblem's construction (data matrices, the
#    translation factorisation, the preconditioner) plus SESync(problem) (initialisation, staircase,
#    verification, rounding and its final F(xhat) and Lambda). SE-Sync's own total_computation_time
#    is printed too, but it leaves the construction out and is truncated to whole milliseconds
#    (Stopwatch::tock casts to std::chrono::milliseconds), so that a 1.9 ms run reads 0.001.
# Both run single-threaded (OMP_NUM_THREADS=1), interleaved run by run (ours, then SE-Sync, N times),
# minimum of N. SE-Sync reads kitti_* with its last edge twice (its reader repeats the previous edge
# at a blank line): for the optimum comparison it gets a copy without blank lines, and the value on
# the raw file is printed beside it.
# Columns: ours (cholesky=auto) cost, certified, rank, build/solve/certify and total seconds; total
# seconds with CHOLMOD and with Eigen's simplicial Cholesky (the measurement behind auto; not with
# --auto-only); SE-Sync's printed F(xhat) and status (y: GlobalOpt), the cost of its xhat by our edge
# sum and whether our certificate accepts xhat, SE-Sync's seconds (construction + solve) and its
# self-reported seconds; (xhat cost - our cost) / our cost; SE-Sync seconds / ours (speedup), and the
# same against its self-reported seconds (self).
set -euo pipefail
BUILD=${1:?usage: $0 BUILD [SESYNC_CPP_DIR] [--repeats N] [--auto-only]}
shift
SESYNC=""
REPEATS=1
AUTO_ONLY=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --repeats) REPEATS=$2; shift 2 ;;
    --auto-only) AUTO_ONLY=1; shift ;;
    *) SESYNC=$1; shift ;;
  esac
done
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DATA=${DATASETS:-$ROOT/../shared/datasets}/posegraphs
TOOL=$BUILD/bin/slam-certify
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CORES=$(getconf _NPROCESSORS_ONLN)  # not nproc: it reports OMP_NUM_THREADS when set
export OMP_NUM_THREADS=1

DRIVER=""
if [[ -n $SESYNC ]]; then
  cat > "$TMP/sesync_driver.cpp" <<'CPP'
// Runs SE-Sync on a g2o file (single thread, defaults), prints "F(xhat) status reported_seconds
// seconds" (seconds: steady clock around the problem's construction and the solve) and writes its
// estimate xhat as g2o vertices to argv[2], for slam-certify --candidate to evaluate and certify.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <Eigen/Geometry>
#include "SESync/SESync.h"
#include "SESync/SESync_utils.h"
int main(int argc, char** argv) {
  size_t n = 0;
  const SESync::measurements_t m = SESync::read_g2o_file(argv[1], n);
  SESync::SESyncOpts opts;
  opts.verbose = false;
  opts.num_threads = 1;
  const auto start = std::chrono::steady_clock::now();
  // What SESync::SESync(measurements, options) does, with the construction inside the clock.
  SESync::SESyncProblem problem(m, opts.formulation, opts.projection_factorization, opts.preconditioner,
                                opts.reg_Cholesky_precon_max_condition_number);
  const SESync::SESyncResult r = SESync::SESync(problem, opts);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%.17g %d %.6f %.9f\n", r.Fxhat, static_cast<int>(r.status), r.total_computation_time, seconds);
  FILE* f = std::fopen(argv[2], "w");
  const int d = r.xhat.rows();
  for (size_t i = 0; i < n; ++i) {
    const Eigen::VectorXd t = r.xhat.col(i);
    const Eigen::MatrixXd R = r.xhat.block(0, n + d * i, d, d);
    if (d == 2) {
      std::fprintf(f, "VERTEX_SE2 %zu %.17g %.17g %.17g\n", i, t(0), t(1), std::atan2(R(1, 0), R(0, 0)));
    } else {
      const Eigen::Quaterniond q{Eigen::Matrix3d(R)};
      std::fprintf(f, "VERTEX_SE3:QUAT %zu %.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", i, t(0), t(1), t(2), q.x(),
                   q.y(), q.z(), q.w());
    }
  }
  return std::fclose(f) == 0 ? 0 : 1;
}
CPP
  S=$SESYNC
  # No -march=native here: the driver must share Eigen's alignment rules with libSESync as built.
  c++ -O3 -std=c++17 -fopenmp "$TMP/sesync_driver.cpp" -o "$TMP/sesync_driver" \
    -I"$S/SE-Sync/include" -I"$S/Optimization/include" -I"$S/Preconditioners/Preconditioners" \
    -I"$S/Preconditioners/Preconditioners/ILDL/include" -I"$S/Preconditioners/Preconditioners/LSChol/include" \
    -I"$S/Preconditioners/SymILDL" -I/usr/include/eigen3 -I/usr/include/suitesparse \
    -L"$S/build/lib" -Wl,-rpath,"$S/build/lib" -lSESync -lILDL -lcholmod -lspqr -lopenblas
  DRIVER="$TMP/sesync_driver"
fi

echo "# slam-certify pose-graph benchmarks: $CORES cores (load $(cut -d' ' -f1 /proc/loadavg)) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), OMP_NUM_THREADS=1, best of $REPEATS"
/usr/bin/python3 - "$TOOL" "$DATA" "$TMP" "$REPEATS" "$DRIVER" "$AUTO_ONLY" <<'PY'
import json, pathlib, subprocess, sys
tool, data, tmp, repeats, driver = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
backends = ["auto"] if sys.argv[6] == "1" else ["auto", "cholmod", "simplicial"]

def ours(path, backend):
    p = subprocess.run([tool, "solve", "--input", str(path), f"cholesky={backend}", "-q", "--out", str(tmp / "run")],
                       capture_output=True, text=True)
    if p.returncode not in (0, 3):
        sys.exit(f"{path.name}: slam-certify exit {p.returncode}: {p.stderr[-500:]}")
    r = json.loads(p.stdout)
    r["total"] = sum(r["times_s"].values())
    return r

def sesync(path):
    p = subprocess.run([driver, str(path), str(tmp / "xhat.g2o")], capture_output=True, text=True)
    if p.returncode != 0:
        return None
    f, status, reported, secs = p.stdout.split()[-4:]
    return [float(f), int(status), float(secs), float(reported)]

def certify_xhat(original):
    c = subprocess.run([tool, "solve", "--input", str(original), "--candidate", str(tmp / "xhat.g2o"), "-q",
                        "--out", str(tmp / "cand")], capture_output=True, text=True)
    cand = json.loads(c.stdout)
    return [cand["cost"], cand["certified"]]

def keep_min(best, r, key):
    return r if best is None or r[key] < best[key] else best

head = f"{'graph':24} {'poses':>6} {'cost':>18} {'cert':>4} {'rk':>2} {'build':>6} {'solve':>7} {'certify':>7} {'total':>8}"
if len(backends) > 1:
    head += f" {'cholmod':>7} {'simplicial':>10}"
if driver:
    head += (f" {'SE-Sync F(xhat)':>18} {'ok':>2} {'xhat cost (ours)':>18} {'cert':>4} {'SE-Sync s':>9} {'self s':>7}"
             f" {'rel.diff':>9} {'speedup':>7} {'self':>5}")
print(head)
for path in sorted(data.glob("*.g2o")):
    text = path.read_text()
    clean = tmp / path.name
    clean.write_text("\n".join(l for l in text.splitlines() if l.strip()) + "\n")
    best = {b: None for b in backends}
    se, se_reported = None, None
    for _ in range(repeats):  # interleaved: every variant once per round
        for b in backends:
            best[b] = keep_min(best[b], ours(path, b), "total")
        if driver:
            run = sesync(clean)
            if run:
                se = keep_min(se, run, 2)
                se_reported = run[3] if se_reported is None else min(se_reported, run[3])
    r = best["auto"]
    line = (f"{path.stem:24} {r['poses']:6d} {r['cost']:18.10f} {'yes' if r['certified'] else 'NO':>4} {r['rank']:2d} "
            f"{r['times_s']['build']:6.3f} {r['times_s']['solve']:7.3f} {r['times_s']['certify']:7.3f} {r['total']:8.4f}")
    if len(backends) > 1:
        line += f" {best['cholmod']['total']:7.3f} {best['simplicial']['total']:10.3f}"
    extra = ""
    if driver:
        if se:
            cost, cert = certify_xhat(path)  # xhat.g2o: the last run's (deterministic) estimate on the clean file
            rel = (cost - r["cost"]) / abs(r["cost"])
            line += (f" {se[0]:18.10f} {'y' if se[1] == 0 else 'n':>2} {cost:18.10f} {'yes' if cert else 'no':>4} "
                     f"{se[2]:9.4f} {se_reported:7.3f} {rel:9.2e} {se[2] / r['total']:7.2f} {se_reported / r['total']:5.2f}")
            if "\n\n" in text or text.endswith("\n\n"):
                raw = sesync(path)
                if raw:
                    extra = f"   (raw file with blank lines: SE-Sync F(xhat) {raw[0]:.10f})"
        else:
            line += "  SE-Sync failed"
    print(line + extra, flush=True)
PY

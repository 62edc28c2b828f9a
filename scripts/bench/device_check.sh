#!/usr/bin/env bash
# One device session's checks, in one call (the H200 is lent for minutes, not hours): builds every CUDA
# target once, runs the gpu-labelled tests and the device CLI cases, then the device benchmarks of
# zpp-train (MFU, ZeRO++), ltd-pretrain, nice-slam-run and nxm-compress, each under its own time limit and
# skipped when the budget left is below its estimate, most wanted first. Each section's output goes to
# LOGDIR/<section>.log; a table of the sections (status, seconds) is printed last.
#   scripts/bench/device_check.sh BUILD_DIR LOGDIR      (env: BUDGET_S=540 JOBS=16 CMAKE_ARGS=...
#                                                        SECTIONS="tests nice ltd mfu zero nxm sanitize"
#                                                        TARGETS=... (what to build), ZERO_RUNS=... and
#                                                        SANITIZE=1 for the zero section)
# Where the machine lacks a dependency (nlohmann-json, libpng, ...), unpack Debian's packages into a folder
# and pass CMAKE_ARGS=-DCMAKE_PREFIX_PATH=<folder>/usr.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$(realpath -m "${1:-$ROOT/build-gpu}")"
LOGDIR="$(realpath -m "${2:-$BUILD.logs}")"
BUDGET_S="${BUDGET_S:-540}"
JOBS="${JOBS:-16}"
SECTIONS="${SECTIONS:-tests nice ltd mfu zero nxm sanitize}"
mkdir -p "$LOGDIR"
T0=$SECONDS
SUMMARY=()

left() { echo $((BUDGET_S - (SECONDS - T0))); }
# section NAME ESTIMATE_S COMMAND...: runs COMMAND under a limit of min(2 x estimate, budget left) when at
# least ESTIMATE_S seconds are left; output to LOGDIR/NAME.log, its last lines to stdout.
section() {
  local name=$1 estimate=$2 t=$SECONDS rc limit
  shift 2
  if (( $(left) < estimate )); then
    SUMMARY+=("$(printf '%-10s skipped (%d s left, needs ~%d s)' "$name" "$(left)" "$estimate")")
    return
  fi
  limit=$(( 2 * estimate < $(left) ? 2 * estimate : $(left) ))
  echo "== $name (limit $limit s, at $((SECONDS - T0)) s)"
  timeout --kill-after=5 "$limit" "$@" > "$LOGDIR/$name.log" 2>&1
  rc=$?
  tail -n 25 "$LOGDIR/$name.log"
  SUMMARY+=("$(printf '%-10s rc %-3d %4d s' "$name" "$rc" $((SECONDS - t)))")
}

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader || true
echo "== configure and build ($JOBS jobs)"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTOOLKIT_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_POLICY_VERSION_MINIMUM=3.5 ${CMAKE_ARGS:-} > "$LOGDIR/configure.log" 2>&1 ||
  { tail -30 "$LOGDIR/configure.log"; exit 1; }
grep -E "CUDA|NCCL|MPI" "$LOGDIR/configure.log" | head -5
TARGETS="${TARGETS:-zpp-train ltd-pretrain nice-slam-run nxm-compress test_kernels_gpu test_train_step_gpu
         test_ltd_kernels_gpu test_nerf_cuda_gpu test_nxm_cuda_gpu test_zero_cuda_gpu test_train_cli test_ltd_cli
         test_nxm_cli}"
cmake --build "$BUILD" --target $TARGETS -j"$JOBS" > "$LOGDIR/build.log" 2>&1 ||
  { grep -E "error|FAILED" "$LOGDIR/build.log" | head -40; exit 1; }
SUMMARY+=("$(printf '%-10s rc 0   %4d s' build $((SECONDS - T0)))")

device_tests() {
  set -o pipefail
  local rc=0
  # NCCL refuses two ranks on one GPU: the np-2 NCCL test needs two devices.
  (cd "$BUILD" && TOOLKIT_EXPECT_DEVICE=1 ctest -L gpu -E nccl -j4 --output-on-failure --timeout 240) || rc=1
  local env=(TOOLKIT_SOURCE_DIR="$ROOT" TOOLKIT_BIN_DIR="$BUILD/bin" TOOLKIT_TEST_TMP="$BUILD/test-tmp"
             TOOLKIT_EXPECT_DEVICE=1 OMP_NUM_THREADS=4)
  mkdir -p "$BUILD/test-tmp"
  env "${env[@]}" "$BUILD/tests/test_train_cli" -tc="*device=cuda*,peak*" || rc=1
  env "${env[@]}" "$BUILD/tests/test_ltd_cli" -tc="device=cuda*" || rc=1
  env "${env[@]}" "$BUILD/tests/test_nxm_cli" -tc="device=cuda*" || rc=1
  return $rc
}
sanitize() {
  set -o pipefail
  local san rc=0
  san="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
  "$san" --tool memcheck --error-exitcode 1 "$BUILD/tests/test_kernels_gpu" -tce="*failing CUDA call*" | tail -4 || rc=1
  "$san" --tool racecheck --error-exitcode 1 "$BUILD/tests/test_kernels_gpu" -tc="*attention*" | tail -4 || rc=1
  "$san" --tool memcheck --error-exitcode 1 "$BUILD/tests/test_zero_cuda_gpu" | tail -4 || rc=1
  "$san" --tool memcheck --error-exitcode 1 "$BUILD/tests/test_nerf_cuda_gpu" | tail -4 || rc=1
  return $rc
}
export ROOT BUILD
export -f device_tests sanitize  # run under timeout through bash -c
GPU="$ROOT/scripts/bench/zpp_train_gpu.sh"
for s in $SECTIONS; do
  case $s in
    tests) section tests 150 bash -c device_tests ;;
    nice) section nice 60 "$ROOT/scripts/bench/nice_slam_gpu.sh" "$BUILD" 30 ;;
    ltd) section ltd 100 env ONLY=ltd LTD_STEPS=8 "$GPU" "$BUILD" ;;
    mfu) section mfu 60 env ONLY=train BATCHES="64" STEPS=6 "$GPU" "$BUILD" ;;
    zero) section zero 120 env ONLY=zero ZERO_RUNS="${ZERO_RUNS:-one s0 s3 hpz s3_overlap zeropp zeropp_overlap}" \
            SANITIZE="${SANITIZE:-}" "$GPU" "$BUILD" ;;
    nxm) section nxm 40 env DEVICE=cuda SEQS=1,128 REPEATS=10 "$ROOT/scripts/bench/nxm_compress_latency.sh" "$BUILD" ;;
    sanitize) section sanitize 90 bash -c sanitize ;;
    *) echo "unknown section $s" ;;
  esac
done
echo "== summary ($((SECONDS - T0)) s of $BUDGET_S)"
printf '%s\n' "${SUMMARY[@]}"

#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan, every library instrumented) in build/fuzz and
# runs each for SECONDS (default 60) over a copy of its seed corpus, then prints one row per target: executions,
# corpus size, and the finding (crash, sanitizer report, uncaught exception, timeout, out-of-memory) if any, with
# the input that caused it under build/fuzz/findings/TARGET/. Exit 1 when any target found something.
#   scripts/fuzz.sh [SECONDS] [TARGET...]        (targets: config csv sdpa graph csr_cache pattern ...)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true

scripts/setup.sh --packages-only
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq clang libclang-rt-dev >/dev/null 2>&1 ||
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq clang libclang-rt-14-dev >/dev/null
fi

targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in tests/fuzz/fuzz_*.cpp; do t=$(basename "$f" .cpp); targets+=("${t#fuzz_}"); done
fi
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" \
  -DTOOLKIT_FUZZ=ON \
  -DTOOLKIT_CUDA=OFF -DTOOLKIT_MPI=OFF >/dev/null
cmake --build build/fuzz -j "${TOOLKIT_BUILD_JOBS:-$(nproc)}" --target "${targets[@]/#/fuzz_}" >&2

# UBSan reports undefined behaviour and carries on by default: stop there, so that it is a finding with its input.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
printf '%-12s %10s %8s  %s\n' target executions corpus finding
found=0
for t in "${targets[@]}"; do
  work="build/fuzz/work/$t" findings="build/fuzz/findings/$t"
  mkdir -p "$work" "$findings"
  log="build/fuzz/$t.log"
  rc=0
  "build/fuzz/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  execs=$(grep -ao 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' | tail -1)
  finding="none"
  if ((rc != 0)); then
    found=1
    finding="$(grep -a -m1 -E 'ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error|uncaught exception|deadly signal' "$log" || echo "exit $rc") -> $(ls "$findings" | head -1)"
  fi
  printf '%-12s %10s %8s  %s\n' "$t" "${execs:-?}" "$(ls "$work" | wc -l)" "$finding"
done
exit "$found"

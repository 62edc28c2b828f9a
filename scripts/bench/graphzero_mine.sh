#!/usr/bin/env bash
# Benchmark graphzero-mine against GraphPi's reference times (2 threads, wiki-Vote, email-Enron).
#   scripts/bench/graphzero_mine.sh [BUILD_DIR] [--repeats N] [--patterns a,b] [--no-jit]
# Builds the tool in BUILD_DIR (default: build) when missing; prints the table of
# scripts/bench/graphzero_mine.py. Datasets come from $TOOLKIT_DATASETS or ../shared/datasets.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build"
if [[ $# -gt 0 && "$1" != -* ]]; then
  build="$1"
  shift
fi
datasets="${TOOLKIT_DATASETS:-$root/../shared/datasets}"
if [[ ! -x "$build/bin/graphzero-mine" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" --target graphzero-mine -j2
fi
exec python3 "$root/scripts/bench/graphzero_mine.py" --bin "$build/bin/graphzero-mine" \
  --datasets "$datasets/graphs" "$@"

#!/usr/bin/env bash
# Sets up (packages + build, preset "ci", which shares build/default with the demo) and runs every test that needs no GPU and is not
# labelled slow: unit, cli and mpi tests; gpu tests skip themselves (exit 77) without a device.
#   scripts/test.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh ci
ctest --preset ci -j "${TOOLKIT_TEST_JOBS:-2}" "$@"

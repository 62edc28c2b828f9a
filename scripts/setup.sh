#!/usr/bin/env bash
# Installs every Debian package the toolkit needs (only when something is missing), then
# configures and builds with a CMake preset. Idempotent: run it as often as you like.
#   scripts/setup.sh [preset]      (default preset: "default"; see CMakePresets.json)
#   scripts/setup.sh --packages-only
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"

packages=(
  build-essential cmake ninja-build git pkg-config
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev libeigen3-dev doctest-dev nlohmann-json3-dev
  libopenmpi-dev openmpi-bin
  libboost-context-dev
  libsuitesparse-dev libpng-dev libjpeg-dev libopenblas-dev
  coinor-csdp
  sdpa
  python3 python3-numpy python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

[[ "$preset" == --packages-only ]] && exit 0

jobs="${TOOLKIT_BUILD_JOBS:-$(nproc)}"
cmake --preset "$preset" >&2
cmake --build --preset "$preset" -j "$jobs" >&2
echo "setup: built preset '$preset' in build/$preset (tools in build/$preset/bin)" >&2

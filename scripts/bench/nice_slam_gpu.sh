#!/usr/bin/env bash
# Device benchmark of nice-slam-run (issue 19): the synthetic sequence at 640x480 with NICE-SLAM's Replica
# hyperparameters (tracking 200 pixels x 10 iterations per frame; mapping 60 iterations of 1000 pixels every
# 5 frames over a 5-frame window), run with device=cuda and, as the baseline measured in the same run, with
# device=cpu on all cores (the same rays and samples: same seeds). Prints frames/s of both and their ratio,
# ms per tracking and mapping iteration, device memory (the map's buffers, everything in use on the device
# at the end, and the peak nvidia-smi saw), and ATE RMSE of both paths. Targets: >= 10 frames/s, <= 2 GB,
# ATE no worse than the CPU path. Optional third run with the depth-uncertainty and background extensions.
#   scripts/bench/nice_slam_gpu.sh [BUILD_DIR] [FRAMES] [--extensions]
set -euo pipefail
BUILD=${1:-build/default}
FRAMES=${2:-30}
EXT=${3:-}
BIN="$BUILD/bin/nice-slam-run"
[ -x "$BIN" ] || { echo "no $BIN: build the nice-slam-run target first" >&2; exit 66; }
WORK=$(mktemp -d)
SMI_PID=""
trap '[ -n "$SMI_PID" ] && kill "$SMI_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
"$BIN" synth -q --out "$WORK/data" --frames "$FRAMES" width=640 height=480 >/dev/null
SETTINGS=(tracking.pixels=200 tracking.iterations=10 mapping.every=5 mapping.iterations=60 mapping.pixels=1000
          mapping.window=5)
echo "# nice-slam-run device benchmark: $FRAMES synthetic frames at 640x480, $(nproc) cores on $(hostname)"
"$BIN" run -q --dataset "$WORK/data" --out "$WORK/cpu" "${SETTINGS[@]}" device=cpu >"$WORK/cpu.json"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$WORK/smi.txt" 2>/dev/null &
  SMI_PID=$!
  sleep 1
fi
"$BIN" run -q --dataset "$WORK/data" --out "$WORK/cuda" "${SETTINGS[@]}" device=cuda >"$WORK/cuda.json"
if [ "$EXT" = "--extensions" ]; then
  "$BIN" run -q --dataset "$WORK/data" --out "$WORK/cuda-ext" "${SETTINGS[@]}" device=cuda uncertainty.enabled=true \
    model.background=true >"$WORK/cuda-ext.json"
  "$BIN" run -q --dataset "$WORK/data" --out "$WORK/cpu-ext" "${SETTINGS[@]}" device=cpu uncertainty.enabled=true \
    model.background=true >"$WORK/cpu-ext.json"
fi
[ -n "$SMI_PID" ] && { kill "$SMI_PID" 2>/dev/null || true; SMI_PID=""; }
/usr/bin/python3 - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
def load(name):
    p = f"{work}/{name}.json"
    return json.load(open(p)) if os.path.exists(p) else None
def line(name, r):
    t = r["time_s"]; tot = r["seconds"]
    mem = ""
    if r.get("device") == "cuda":
        mem = f"  map {r['device_map_mib']:.0f} MiB, in use {r['device_used_mib']:.0f} MiB"
    print(f"{name:16s} fps {r['fps']:6.2f}  ATE {100*r.get('ate_rmse', float('nan')):.2f} cm  "
          f"ms/tracking it {r['ms_per_tracking_iteration']:7.2f}  ms/mapping it {r['ms_per_mapping_iteration']:7.2f}  "
          f"tracking {100*t['tracking']/tot:.0f}%  mapping {100*t['mapping']/tot:.0f}%  loading {100*t['load']/tot:.0f}%{mem}")
cpu, cuda = load("cpu"), load("cuda")
line("cpu (baseline)", cpu)
line("cuda", cuda)
peak = 0
if os.path.exists(f"{work}/smi.txt"):
    vals = [float(v) for v in open(f"{work}/smi.txt").read().split() if v.replace(".", "").isdigit()]
    peak = max(vals) if vals else 0
print(f"cuda vs cpu: {cuda['fps']/cpu['fps']:.1f}x frames/s, tracking it {cpu['ms_per_tracking_iteration']/cuda['ms_per_tracking_iteration']:.1f}x, "
      f"mapping it {cpu['ms_per_mapping_iteration']/cuda['ms_per_mapping_iteration']:.1f}x; "
      f"ATE ratio cuda/cpu {cuda.get('ate_rmse', float('nan'))/cpu.get('ate_rmse', float('nan')):.3f}; "
      f"device peak (nvidia-smi, whole device) {peak:.0f} MiB")
print(f"targets: fps >= 10: {cuda['fps'] >= 10}; device memory <= 2048 MiB: {max(peak, cuda['device_used_mib']) <= 2048}; "
      f"ATE no worse than cpu: {cuda.get('ate_rmse', 1e9) <= cpu.get('ate_rmse', 0) * 1.05} (5% slack)")
for name in ("cuda-ext", "cpu-ext"):
    r = load(name)
    if r: line(name, r)
PY

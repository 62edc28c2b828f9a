#!/usr/bin/env bash
# CPU benchmark of nice-slam-run at 160x120 on the synthetic sequence: frames/s on 2 threads against 1 thread
# (the baseline, measured in the same run), the share of time per stage, and ms per tracking iteration
# against the floating-point work it does (grid lookups and decoder FLOPs, counted from the config).
#   scripts/bench/nice_slam_run.sh [BUILD_DIR] [FRAMES]
set -euo pipefail
BUILD=${1:-build/default}
FRAMES=${2:-30}
BIN="$BUILD/bin/nice-slam-run"
[ -x "$BIN" ] || { echo "no $BIN: build the nice-slam-run target first" >&2; exit 66; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$BIN" synth -q --out "$WORK/data" --frames "$FRAMES" width=160 height=120 >/dev/null
echo "# nice-slam-run CPU benchmark: $FRAMES synthetic frames at 160x120, $(nproc) cores on $(hostname)"
for T in 1 2; do
  "$BIN" run -q --dataset "$WORK/data" --out "$WORK/run$T" threads=$T >"$WORK/result$T.json"
done
/usr/bin/python3 - "$WORK" "$BIN" <<'PY'
import json, subprocess, sys
work = sys.argv[1]
r1 = json.load(open(f"{work}/result1.json"))
r2 = json.load(open(f"{work}/result2.json"))
cfg = subprocess.run([sys.argv[2], "run", "--print-config"], capture_output=True, text=True).stdout
def key(path):  # tiny YAML lookup of a nested scalar in the resolved config
    lines = cfg.splitlines()
    depth, want = 0, path.split(".")
    for l in lines:
        ind = (len(l) - len(l.lstrip())) // 2
        k, _, v = l.strip().partition(":")
        if ind == depth and k == want[depth]:
            if depth == len(want) - 1:
                return float(v)
            depth += 1
    raise KeyError(path)
P, S = key("tracking.pixels"), key("sampling.stratified") + key("sampling.surface")
C, H = key("model.channels"), key("model.hidden")
mlp = lambda i, o: 2 * (i * H + H * H + H * o)
# forward: 3 grid levels x 8 corners x C multiply-adds; decoders middle (C), fine (2C), colour (C -> 3);
# backward to the points: the same lookups again (dot products) and the decoders' input gradients.
per_sample = 2 * (3 * 8 * 2 * C) + 2 * (mlp(C, 1) + mlp(2 * C, 1) + mlp(C, 3))
flop = P * S * per_sample
for name, r in (("1 thread", r1), ("2 threads", r2)):
    t = r["time_s"]; tot = r["seconds"]
    ms = r["ms_per_tracking_iteration"]
    print(f"{name:10s} fps {r['fps']:.2f}  ATE {r.get('ate_rmse', float('nan')):.4f} m  "
          f"tracking {100*t['tracking']/tot:.0f}%  mapping {100*t['mapping']/tot:.0f}%  loading {100*t['load']/tot:.0f}%  "
          f"ms/tracking it {ms:.1f} ({flop/ms/1e6:.2f} GFLOP/s)  ms/mapping it {r['ms_per_mapping_iteration']:.1f}")
print(f"speed-up 2 threads vs 1: {r2['fps']/r1['fps']:.2f}x   ({flop/1e6:.1f} MFLOP per tracking iteration)")
PY

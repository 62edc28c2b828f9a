#!/usr/bin/env bash
# CPU batch-1 latency of packed nxm BERT models against the same weights as dense fp32 (the trainer's
# Eigen GEMM, rows split over the same threads) and dense int8 (the packed kernels without sparsity),
# all measured interleaved call by call in one process by `nxm-compress bench` (random weights: latency
# does not depend on training), with the packed files' sizes on disk against the dense fp32 file.
# Per sequence length: each component linear of one block (qkv [3C, C], ao [C, C], ffn1 [4C, C],
# ffn2 [C, 4C]; weights warm in cache) and the whole forward of one sequence (weights streamed from memory).
# SEQ=1 is the memory-bound single-token case. DEVICE=cuda runs the packed settings and dense int8 on the
# CUDA device (packed_cuda.hpp; times include the per-call copies), dense fp32 stays on the CPU.
#   scripts/bench/nxm_compress_latency.sh [BUILD_DIR]
#   env: LAYERS=12 WIDTH=768 HEADS=12 SEQS=1,16,128 SETTINGS=2:4:8,2:4:4 REPEATS=20 THREADS=1 DEVICE=cpu
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build/default}"
NXM="$BUILD/bin/nxm-compress"
[[ -x "$NXM" ]] || { echo "build nxm-compress in $BUILD first" >&2; exit 66; }
LAYERS="${LAYERS:-12}"; WIDTH="${WIDTH:-768}"; HEADS="${HEADS:-12}"; SEQS="${SEQS:-1,16,128}"
SETTINGS="${SETTINGS:-2:4:8,2:4:4}"; REPEATS="${REPEATS:-20}"; THREADS="${THREADS:-1}"
DEVICE="${DEVICE:-cpu}"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
"$NXM" bench -q --progress never --out "$TMP/run" "layers=$LAYERS" "hidden=$WIDTH" "heads=$HEADS" "seq=$SEQS" \
  "settings=$SETTINGS" "repeats=$REPEATS" "threads=$THREADS" "device=$DEVICE" > "$TMP/bench.json"
echo "# nxm-compress bench: BERT ${LAYERS}x${WIDTH} (FFN $((4*WIDTH))), random weights, median of $REPEATS interleaved calls, threads=$THREADS"
echo "# host: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$TMP/bench.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
sizes = r["size_bytes"]
settings = [k for k in sizes if k != "dense_fp32"]
print("# kernel path: %s (device: %s)" % (r["kernel_path"], r["device_name"]))
print("size on disk: dense fp32 %.1f MB; " % (sizes["dense_fp32"] / 1e6) +
      ", ".join("%s %.1f MB (%.2fx smaller)" % (s, sizes[s] / 1e6, sizes["dense_fp32"] / sizes[s]) for s in settings))
print("# wall: medians of wall-clock time; cpu: of the process's CPU time (all threads; with THREADS=1 it")
print("# leaves out waiting for a core, the fairer figure on a loaded machine)")
print("%-4s %-7s %-7s %-4s %11s %11s %11s %9s %9s" % ("seq", "part", "setting", "time", "packed_ms", "fp32_ms", "int8_ms",
                                                      "vs_fp32", "vs_int8"))
for e in r["results"]:
    parts = list(e["linears"].items()) + [("forward", e["forward"])]
    for name, v in parts:
        for s in settings:
            for kind, k in (("wall", ""), ("cpu", "_cpu")):
                print("%-4d %-7s %-7s %-4s %11.3f %11.3f %11.3f %8.2fx %8.2fx" % (e["seq"], name, s, kind, v[s + k + "_ms"],
                      v["dense_fp32" + k + "_ms"], v["dense_int8" + k + "_ms"], v[s + k + "_vs_fp32"], v[s + k + "_vs_int8"]))
PY

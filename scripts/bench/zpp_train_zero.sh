#!/usr/bin/env bash
# ZeRO++ on CPU ranks, each figure against a baseline measured in the same run:
#  1. cross-node bytes a rank sends per step, ZeRO++ (qwZ + hpZ + qgZ) over ZeRO-3, measured on
#     4 MPI ranks in 2 emulated nodes (bf16, quantization block 2048; target <= 0.26), beside what
#     `zpp-train simulate` predicts for the same model and for 384 GPUs (24 nodes of 16);
#  2. int8 and int4 quantize + dequantize round trips against memcpy of the same fp32 buffer
#     (`zpp-train quantize-speed`, interleaved, best of REPS; target >= 0.5);
#  3. step time of stage 3 over stage 0 on 2 ranks (fp32, the 4-layer 128-wide GPT of default.yaml),
#     runs interleaved ROUNDS times, the median ratio; then the peak bytes of model state a rank
#     holds in each stage (memory_per_rank: measured from the buffers allocated) against stage 0's;
#  4. stage 3 with overlap_comm against without (same model, 2 ranks, interleaved): step time ratio,
#     the share of communication time hidden (comm_hidden_fraction) and the final losses (equal).
#   scripts/bench/zpp_train_zero.sh [BUILD_DIR]      (env: STEPS=20 ROUNDS=3 REPS=20)
# Machine: the host this runs on (nproc and the load average are printed); 4 ranks oversubscribe a
# 2-core machine, so step times there are not those of real nodes (bytes are exact either way).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
ZPP="$BUILD/bin/zpp-train"
STEPS="${STEPS:-20}"
ROUNDS="${ROUNDS:-3}"
REPS="${REPS:-20}"
[[ -x "$ZPP" ]] || { echo "zpp-train not built at $ZPP (cmake --build $BUILD --target zpp-train)" >&2; exit 66; }
command -v mpirun > /dev/null || { echo "mpirun not found (apt-get install openmpi-bin)" >&2; exit 66; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
json() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }

echo "# machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(uname -m)"
"$ZPP" prepare --input /usr/share/common-licenses/GPL-3 --tokenizer bytes --out "$TMP/shards" -q > /dev/null
DATA="data.input=$TMP/shards"

# 1. Cross-node bytes: a 4-layer, 256-wide GPT (3.4M parameters) so that scales and padding are small.
MODEL=(model.n_layer=4 model.n_head=4 model.n_embd=256 model.n_positions=128)
for cfg in zero3 zeropp; do
  mpirun -np 4 --oversubscribe "$ZPP" train -q --progress never --config "$ROOT/configs/zpp-train/tiny-$cfg.yaml" \
    "$DATA" "${MODEL[@]}" data.seq_len=128 train_iters=3 eval_iters=1 --out "$TMP/$cfg" > "$TMP/$cfg.json"
done
"$ZPP" simulate -q "${MODEL[@]}" model.vocab_size=256 nodes=2 ranks_per_node=2 train_micro_batch_size_per_gpu=2 \
  seq_len=128 > "$TMP/sim4.json"
"$ZPP" simulate -q > "$TMP/sim384.json"
python3 - "$TMP" <<'PY'
import json, sys
t = sys.argv[1]
z3, zpp = (json.load(open(f"{t}/{c}.json"))["bytes_per_step"] for c in ("zero3", "zeropp"))
s4, s384 = (json.load(open(f"{t}/sim{n}.json"))["variants"] for n in (4, 384))
print("# 1. cross-node bytes per rank and step (bf16, block 2048)")
print(f"{'':24} {'ZeRO-3':>14} {'ZeRO++':>14} {'ratio':>8}")
print(f"{'measured, 4 ranks':24} {z3['inter']:>14.0f} {zpp['inter']:>14.0f} {zpp['inter'] / z3['inter']:>8.4f}")
p3, pp = s4["zero3"]["bytes_per_step"]["inter"], s4["zeropp"]["bytes_per_step"]["inter"]
print(f"{'simulate, 4 ranks':24} {p3:>14.0f} {pp:>14.0f} {pp / p3:>8.4f}")
p3, pp = s384["zero3"]["bytes_per_step"]["inter"], s384["zeropp"]["bytes_per_step"]["inter"]
print(f"{'simulate, 384 (18B)':24} {p3:>14.4g} {pp:>14.4g} {pp / p3:>8.4f}   (target <= 0.26; paper 0.25)")
PY

# 2. Quantizer round trips against memcpy.
"$ZPP" quantize-speed -q "reps=$REPS" > "$TMP/q.json"
echo "# 2. quantize + dequantize of 64 MiB fp32, block 2048 (GB/s of fp32 input; target >= 0.5 of memcpy)"
python3 -c "
import json; d = json.load(open('$TMP/q.json'))
print(f\"memcpy {d['memcpy_gbs']:.2f}  int8 {d['int8_gbs']:.2f} ({d['int8_vs_memcpy']:.2f})  int4 {d['int4_gbs']:.2f} ({d['int4_vs_memcpy']:.2f})\")"

# 3. Stage 3 against stage 0 on 2 ranks, interleaved.
echo "# 3. mean step time on 2 ranks (fp32; $STEPS steps; $ROUNDS interleaved rounds)"
for round in $(seq 1 "$ROUNDS"); do
  for stage in 0 3; do
    mpirun -np 2 --oversubscribe "$ZPP" train -q --progress never "$DATA" "train_iters=$STEPS" eval_iters=1 \
      eval_interval=100000 "zero_optimization.stage=$stage" train_micro_batch_size_per_gpu=4 \
      --out "$TMP/s$stage-$round" > "$TMP/s$stage-$round.json"
  done
done
python3 - "$TMP" "$ROUNDS" <<'PY'
import json, statistics, sys
t, rounds = sys.argv[1], int(sys.argv[2])
rows = []
for r in range(1, rounds + 1):
    s0, s3 = (json.load(open(f"{t}/s{s}-{r}.json"))["mean_step_s"] for s in (0, 3))
    rows.append((s0, s3, s3 / s0))
    print(f"round {r}: stage 0 {s0 * 1e3:.1f} ms  stage 3 {s3 * 1e3:.1f} ms  ratio {s3 / s0:.3f}")
print(f"median stage-3 / stage-0 step time: {statistics.median(x[2] for x in rows):.3f}")
PY
# Memory: 2 steps per stage; buckets of 100k elements (about an eighth of the model: DeepSpeed's
# default 5e8 would fuse this model into one bucket, whose gradients and staging then live whole).
for stage in 0 1 2 3; do
  mpirun -np 2 --oversubscribe "$ZPP" train -q --progress never "$DATA" train_iters=2 eval_iters=1 \
    "zero_optimization.stage=$stage" zero_optimization.reduce_bucket_size=100000 \
    zero_optimization.allgather_bucket_size=100000 train_micro_batch_size_per_gpu=4 \
    --out "$TMP/m$stage" > "$TMP/m$stage.json"
done
python3 - "$TMP" <<'PY'
import json, sys
t = sys.argv[1]
print("peak bytes a rank holds, 2 ranks:  params      grads  optimizer    staging   total  total/stage 0")
base = None
for s in range(4):
    m = json.load(open(f"{t}/m{s}.json"))["zero"]["memory_per_rank"]
    base = base or m["total"]
    print(f"  stage {s}: {m['params']:>24.0f} {m['grads']:>10.0f} {m['optimizer']:>10.0f} {m['staging']:>10.0f}"
          f" {m['total']:>8.0f} {m['total'] / base:>14.3f}")
PY

# 4. overlap_comm on and off (stage 3, 2 ranks), interleaved.
echo "# 4. stage 3 on 2 ranks, overlap_comm on against off ($STEPS steps; $ROUNDS interleaved rounds)"
for round in $(seq 1 "$ROUNDS"); do
  for overlap in false true; do
    mpirun -np 2 --oversubscribe "$ZPP" train -q --progress never "$DATA" "train_iters=$STEPS" eval_iters=1 \
      eval_interval=100000 zero_optimization.stage=3 "zero_optimization.overlap_comm=$overlap" \
      zero_optimization.reduce_bucket_size=200000 zero_optimization.stage3_prefetch_bucket_size=200000 \
      train_micro_batch_size_per_gpu=4 --out "$TMP/o$overlap-$round" > "$TMP/o$overlap-$round.json"
  done
done
python3 - "$TMP" "$ROUNDS" <<'PY'
import json, statistics, sys
t, rounds = sys.argv[1], int(sys.argv[2])
ratios = []
for r in range(1, rounds + 1):
    off, on = (json.load(open(f"{t}/o{o}-{r}.json")) for o in ("false", "true"))
    ratios.append(on["mean_step_s"] / off["mean_step_s"])
    same = "equal" if on["final_loss"] == off["final_loss"] else "DIFFER"
    print(f"round {r}: off {off['mean_step_s'] * 1e3:.1f} ms  on {on['mean_step_s'] * 1e3:.1f} ms  "
          f"ratio {ratios[-1]:.3f}  hidden {on['comm_hidden_fraction']:.3f}  final losses {same}")
print(f"median overlap-on / off step time: {statistics.median(ratios):.3f}")
PY

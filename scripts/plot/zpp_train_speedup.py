#!/usr/bin/python3
"""Predicted speedup of each ZeRO++ variant over ZeRO-3 against the inter-node bandwidth, from the JSON
of `zpp-train simulate` with a bandwidth sweep, into a PNG; the ZeRO++ paper's headline (up to 2.16x
at 384 GPUs on low bandwidth) is drawn beside it.

    zpp-train simulate 'sweep_inter_bandwidth_gbs=[0.5,1,2,4,8,16,32]' > sim.json
    scripts/plot/zpp_train_speedup.py sim.json -o speedup.png

Exit codes as the tools': 65 a file that is not simulate's JSON with a sweep, 66 the file missing,
74 the PNG cannot be written (written to a temporary name and renamed).
"""
import argparse
import json
import os
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

EX_DATAERR, EX_NOINPUT, EX_IOERR = 65, 66, 74
VARIANTS = [("qwz", "qwZ"), ("hpz", "hpZ"), ("qgz", "qgZ"), ("zeropp", "ZeRO++ (all three)")]


def fail(code, message):
    print(f"zpp_train_speedup.py: {message}", file=sys.stderr)
    sys.exit(code)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prediction", type=pathlib.Path, help="JSON printed by zpp-train simulate (with a sweep)")
    ap.add_argument("-o", "--output", type=pathlib.Path, default=pathlib.Path("speedup.png"))
    args = ap.parse_args()
    if not args.prediction.is_file():
        fail(EX_NOINPUT, f"{args.prediction} not found")
    try:
        pred = json.loads(args.prediction.read_text())
        sweep = pred["sweep"]
        bw = [p["inter_node_bandwidth_gbs"] for p in sweep]
        speedup = {k: [p["variants"][k]["speedup"] for p in sweep] for k, _ in VARIANTS}
    except (ValueError, KeyError, TypeError) as e:
        fail(EX_DATAERR, f"{args.prediction}: not the JSON of zpp-train simulate with sweep_inter_bandwidth_gbs ({e})")
    if not bw:
        fail(EX_DATAERR, f"{args.prediction}: the sweep is empty")
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for key, label in VARIANTS:
        ax.plot(bw, speedup[key], marker="o", label=label)
    ax.axhline(2.16, color="grey", linestyle="--", linewidth=1)
    ax.text(bw[0], 2.2, "paper: up to 2.16x (384 GPUs, low bandwidth)", color="grey", fontsize=8)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("inter-node bandwidth per rank (GB/s)")
    ax.set_ylabel("predicted speedup over ZeRO-3")
    ax.set_title(f"{pred['parameters']:.3g} parameters, {pred['ranks']} ranks ({pred['nodes']} nodes of "
                 f"{pred['ranks_per_node']})", fontsize=10)
    ax.legend()
    fig.tight_layout()
    tmp = args.output.with_name(args.output.name + f".tmp.{os.getpid()}.png")
    try:
        fig.savefig(tmp, dpi=120)
        os.replace(tmp, args.output)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        fail(EX_IOERR, f"cannot write {args.output}: {e}")
    print(args.output)


if __name__ == "__main__":
    main()

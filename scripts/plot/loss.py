#!/usr/bin/python3
"""Loss curves of zpp-train runs: training loss per step (and validation loss where logged) from
each RUN_DIR/metrics.jsonl, one colour per run, into a PNG.

    scripts/plot/loss.py RUN_DIR [RUN_DIR ...] -o loss.png [--log]
"""
import argparse
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_metrics(run: pathlib.Path):
    path = run / "metrics.jsonl"
    if not path.is_file():
        sys.exit(f"loss.py: {path} not found")
    steps, loss, vsteps, vloss = [], [], [], []
    with path.open() as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"loss.py: {path}:{lineno}: {e}")
            if "step" in rec and "loss" in rec:
                steps.append(rec["step"])
                loss.append(rec["loss"])
            if "val_loss" in rec:
                vsteps.append(rec["step"])
                vloss.append(rec["val_loss"])
    return steps, loss, vsteps, vloss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=pathlib.Path)
    ap.add_argument("-o", "--out", type=pathlib.Path, default=pathlib.Path("loss.png"))
    ap.add_argument("--log", action="store_true", help="logarithmic loss axis")
    args = ap.parse_args()
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, run in enumerate(args.runs):
        steps, loss, vsteps, vloss = read_metrics(run)
        colour = f"C{i % 10}"
        ax.plot(steps, loss, color=colour, lw=1, label=f"{run.name} train")
        if vsteps:
            ax.plot(vsteps, vloss, "o--", color=colour, ms=4, label=f"{run.name} val")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss (nats/token)")
    if args.log:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(json.dumps({"png": str(args.out), "runs": [str(r) for r in args.runs]}))


if __name__ == "__main__":
    main()

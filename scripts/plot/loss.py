#!/usr/bin/python3
"""Loss curves of zpp-train runs: training loss per step (and validation loss where logged) from
each RUN_DIR/metrics.jsonl, one colour per run, into a PNG.

    scripts/plot/loss.py RUN_DIR [RUN_DIR ...] -o loss.png [--log]

A step logged twice (a run resumed by an older zpp-train that kept records past its checkpoint)
counts once, with its last record. Exit codes as the tools': 65 a malformed metrics file or one
without loss records (file and line named), 66 a run directory or metrics file missing, 74 the PNG
cannot be written (it is written to a temporary name and renamed, never left half-written).
"""
import argparse
import json
import os
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from run_files import EX_DATAERR, EX_IOERR, fail, metrics_records  # noqa: E402


def read_metrics(run: pathlib.Path):
    path = run / "metrics.jsonl"
    train, val = {}, {}
    for _, _, rec in metrics_records(run):
        if "step" in rec and isinstance(rec.get("loss"), (int, float)):
            train[rec["step"]] = rec["loss"]
        if "step" in rec and isinstance(rec.get("val_loss"), (int, float)):
            val[rec["step"]] = rec["val_loss"]
    if not train:
        fail(EX_DATAERR, f"{path}: no records with 'step' and 'loss'")
    steps = sorted(train)
    vsteps = sorted(val)
    return steps, [train[s] for s in steps], vsteps, [val[s] for s in vsteps]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=pathlib.Path)
    ap.add_argument("-o", "--out", type=pathlib.Path, default=pathlib.Path("loss.png"))
    ap.add_argument("--log", action="store_true", help="logarithmic loss axis")
    args = ap.parse_args()
    curves = [(run, read_metrics(run)) for run in args.runs]  # every input is checked before plotting
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (run, (steps, loss, vsteps, vloss)) in enumerate(curves):
        colour = f"C{i % 10}"
        name = run.resolve().name
        ax.plot(steps, loss, color=colour, lw=1, label=f"{name} train")
        if vsteps:
            ax.plot(vsteps, vloss, "o--", color=colour, ms=4, label=f"{name} val")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss (nats/token)")
    if args.log:
        ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    tmp = args.out.with_name(f".{args.out.name}.tmp{os.getpid()}")
    try:
        fig.savefig(tmp, dpi=120, format="png")
        os.replace(tmp, args.out)
    except OSError as e:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # the folder itself is missing or not a folder: nothing was written
        fail(EX_IOERR, f"cannot write {args.out}: {e.strerror or e}")
    print(json.dumps({"png": str(args.out), "runs": [str(r) for r in args.runs]}))


if __name__ == "__main__":
    main()

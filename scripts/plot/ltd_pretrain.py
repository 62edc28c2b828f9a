#!/usr/bin/python3
"""Loss against LayerTokens of ltd-pretrain runs (random-LTD and its full-length baseline): training loss
(a running mean over `--smooth` steps) and validation loss against the cumulative LayerTokens of each
RUN_DIR/metrics.jsonl, and the kept tokens per step, into a PNG. Runs whose directory name holds "base"
are drawn dashed.

    scripts/plot/ltd_pretrain.py RUN_DIR [RUN_DIR ...] -o ltd_loss.png [--smooth 20]

Exit codes as the tools': 65 a malformed metrics file or one without LayerToken records (file and line
named), 66 a run directory or metrics file missing, 74 the PNG cannot be written (written to a temporary
name and renamed).
"""
import argparse
import os
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from run_files import EX_DATAERR, EX_IOERR, fail, metrics_records  # noqa: E402


def read_run(run: pathlib.Path):
    path = run / "metrics.jsonl"
    records = {}
    for _, lineno, rec in metrics_records(run):
        if "step" not in rec:
            fail(EX_DATAERR, f"{path}:{lineno}: not a metrics record (no 'step')")
        if "cumulative_layer_tokens" not in rec or "loss" not in rec:
            fail(EX_DATAERR, f"{path}:{lineno}: no 'loss' and 'cumulative_layer_tokens' (not an ltd-pretrain run?)")
        records[rec["step"]] = rec
    if not records:
        fail(EX_DATAERR, f"{path}: no records")
    return [records[s] for s in sorted(records)]


def running_mean(xs, k):
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= k:
            acc -= xs[i - k]
        out.append(acc / min(i + 1, k))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=pathlib.Path)
    ap.add_argument("-o", "--out", type=pathlib.Path, default=pathlib.Path("ltd_loss.png"))
    ap.add_argument("--smooth", type=int, default=20, help="steps of the training loss running mean")
    args = ap.parse_args()
    if args.smooth < 1:
        fail(2, "--smooth must be >= 1")
    fig, (ax, axv, axk) = plt.subplots(1, 3, figsize=(16, 4.8))
    for i, run in enumerate(args.runs):
        recs = read_run(run)
        colour = f"C{i}"
        style = "--" if "base" in run.name else "-"
        lt = [r["cumulative_layer_tokens"] / 1e6 for r in recs]
        ax.plot(lt, running_mean([r["loss"] for r in recs], args.smooth), style, color=colour, label=run.name)
        val = [(r["cumulative_layer_tokens"] / 1e6, r["val_loss"]) for r in recs if "val_loss" in r]
        if val:
            axv.plot(*zip(*val), style, marker="o", ms=3, color=colour, label=run.name)
        axk.plot([r["step"] for r in recs], [r["kept_tokens"] for r in recs], style, color=colour, label=run.name)
    ax.set(xlabel="LayerTokens (millions)", ylabel=f"training loss (mean of {args.smooth} steps)",
           title="training loss against LayerTokens")
    axv.set(xlabel="LayerTokens (millions)", ylabel="validation loss", title="validation loss against LayerTokens")
    axk.set(xlabel="step", ylabel="kept tokens per sequence", title="random-LTD layers' kept tokens")
    for a in (ax, axv, axk):
        a.grid(alpha=0.3)
    axv.legend(fontsize=7)
    fig.tight_layout()
    tmp = args.out.with_name(args.out.name + ".tmp.png")
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, args.out)
    except OSError as e:
        fail(EX_IOERR, f"cannot write {args.out}: {e}")
    print(args.out)


if __name__ == "__main__":
    main()

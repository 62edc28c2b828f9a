#!/usr/bin/python3
"""Plot a range-certify solve run: estimate, ground truth and anchors (x-y view; x-z too in 3-D).

Usage: scripts/plot/range_certify.py RUN_DIR [--output trajectory.png]
Reads RUN_DIR/artifacts/trajectory.csv, anchors.csv, groundtruth.csv (when present) and result.json.
"""
import argparse
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def read_csv(path):
    return np.atleast_2d(np.loadtxt(path, delimiter=",", skiprows=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=pathlib.Path)
    ap.add_argument("--output", type=pathlib.Path, help="PNG to write (default RUN_DIR/artifacts/trajectory.png)")
    args = ap.parse_args()
    art = args.run_dir / "artifacts"
    try:
        est = read_csv(art / "trajectory.csv")
        anchors = read_csv(art / "anchors.csv")
        gt = read_csv(art / "groundtruth.csv") if (art / "groundtruth.csv").exists() else None
        result = json.loads((args.run_dir / "result.json").read_text())
    except (OSError, ValueError) as e:
        sys.exit(f"range_certify.py: cannot read run directory {args.run_dir}: {e}")
    dim = anchors.shape[1] - 1
    views = [(0, 1)] if dim == 2 else [(0, 1), (0, 2)]
    fig, axes = plt.subplots(1, len(views), figsize=(6 * len(views), 5.5), squeeze=False)
    names = "xyz"
    for ax, (i, j) in zip(axes[0], views):
        if gt is not None:
            ax.plot(gt[:, 1 + i], gt[:, 1 + j], color="0.6", lw=2, label="ground truth")
        ax.plot(est[:, 1 + i], est[:, 1 + j], color="C0", lw=1, marker=".", ms=2, label="estimate")
        ax.scatter(anchors[:, 1 + i], anchors[:, 1 + j], marker="^", s=80, color="C3", label="anchors", zorder=3)
        ax.set_xlabel(names[i])
        ax.set_ylabel(names[j])
        ax.set_aspect("equal", adjustable="datalim")
        ax.legend(loc="best", fontsize=8)
    verdict = "certified" if result.get("certified") else "NOT certified"
    rmse = result.get("rmse")
    fig.suptitle(f"{result.get('source', '')}: prior {result.get('prior')}, N={result.get('n')}, cost {result.get('cost'):.6g}, "
                 f"{verdict} (pivot {result.get('certificate'):.2g})" + (f", RMSE {rmse:.3f}" if rmse is not None else ""),
                 fontsize=9)
    out = args.output or art / "trajectory.png"
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(out)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Trajectory plot of a nice-slam-run run directory: the estimate (trajectory.txt) against the ground truth
(the dataset's groundtruth.txt, found through result.json, or --groundtruth FILE), top view and height over
time, written to RUN/artifacts/trajectory.png (or -o FILE). The estimate is drawn as written (its first pose
is anchored to the ground truth's)."""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def load_tum(path):
    rows = [l.split() for l in open(path) if l.strip() and not l.startswith("#")]
    return np.array([[float(x) for x in r[:8]] for r in rows])


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("run")
    ap.add_argument("--groundtruth")
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    est = load_tum(os.path.join(a.run, "trajectory.txt"))
    gt_path = a.groundtruth
    if not gt_path:
        result = json.load(open(os.path.join(a.run, "result.json")))
        root = result.get("dataset", {}).get("root", "")
        candidate = os.path.join(root if os.path.isabs(root) else os.path.join(os.getcwd(), root), "groundtruth.txt")
        gt_path = candidate if os.path.exists(candidate) else None
    fig, ax = plt.subplots(1, 2, figsize=(11, 5))
    if gt_path:
        gt = load_tum(gt_path)
        ax[0].plot(gt[:, 1], gt[:, 2], "k-", label="ground truth")
        ax[1].plot(gt[:, 0] - est[0, 0], gt[:, 3], "k-", label="ground truth")
    ax[0].plot(est[:, 1], est[:, 2], "r.-", label="estimate")
    ax[1].plot(est[:, 0] - est[0, 0], est[:, 3], "r.-", label="estimate")
    ax[0].set_xlabel("x (m)")
    ax[0].set_ylabel("y (m)")
    ax[0].axis("equal")
    ax[0].set_title("top view")
    ax[1].set_xlabel("time (s)")
    ax[1].set_ylabel("z (m)")
    ax[1].set_title("height")
    ax[0].legend()
    out = a.output or os.path.join(a.run, "artifacts", "trajectory.png")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

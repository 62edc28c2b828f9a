#!/usr/bin/python3
"""Plot a slam-certify solve run: the trajectory (top-down x-y) and the landmarks, with the certificate.

Usage: scripts/plot/slam_certify.py RUN_DIR [--truth FILE.tum] [--output map_plot.png]
Reads RUN_DIR/artifacts/poses.tum, landmarks.csv and RUN_DIR/result.json; --truth overlays a
ground-truth TUM trajectory (rigidly aligned to the estimate by Horn's method on common stamps).
"""
import argparse
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def read_tum(path):
    data = np.loadtxt(path, ndmin=2)
    return data[:, 0], data[:, 1:4]


def align(source, target):
    """R, t minimising sum ||R source_i + t - target_i||^2 (Horn / Umeyama without scale)."""
    ms, mt = source.mean(axis=0), target.mean(axis=0)
    U, _, Vt = np.linalg.svd((target - mt).T @ (source - ms))
    D = np.diag([1.0, 1.0, np.sign(np.linalg.det(U @ Vt))])
    R = U @ D @ Vt
    return R, mt - R @ ms


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=pathlib.Path)
    ap.add_argument("--truth", type=pathlib.Path, help="ground-truth TUM trajectory to overlay")
    ap.add_argument("--output", type=pathlib.Path, help="PNG to write (default RUN_DIR/artifacts/map_plot.png)")
    args = ap.parse_args()
    art = args.run_dir / "artifacts"
    try:
        stamps, xyz = read_tum(art / "poses.tum")
        landmarks = np.loadtxt(art / "landmarks.csv", delimiter=",", skiprows=1, ndmin=2)
        result = json.loads((args.run_dir / "result.json").read_text())
    except (OSError, ValueError) as e:
        sys.exit(f"slam_certify.py: cannot read run directory {args.run_dir}: {e}")
    fig, ax = plt.subplots(figsize=(7, 7))
    ax.plot(xyz[:, 0], xyz[:, 1], "-", color="tab:blue", lw=1, label=f"estimate ({len(xyz)} poses)")
    if landmarks.size:
        ax.plot(landmarks[:, 1], landmarks[:, 2], "s", color="tab:red", ms=4, label=f"{len(landmarks)} landmarks")
    title_extra = ""
    if args.truth:
        t_stamps, t_xyz = read_tum(args.truth)
        common, i_est, i_gt = np.intersect1d(stamps, t_stamps, return_indices=True)
        if len(common) >= 3:
            R, t = align(t_xyz[i_gt], xyz[i_est])
            gt = t_xyz[i_gt] @ R.T + t
            rmse = float(np.sqrt(np.mean(np.sum((gt - xyz[i_est]) ** 2, axis=1))))
            ax.plot(gt[:, 0], gt[:, 1], "--", color="k", lw=1, label="ground truth (aligned)")
            title_extra = f", trajectory RMSE {rmse:.4g}"
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(loc="best", fontsize=8)
    verdict = "certified optimal" if result["certified"] else "NOT certified"
    bound = result.get("lower_bound")
    bound_text = f"lower bound {bound:.8g}" if bound is not None else "no lower bound (S not PSD)"
    ax.set_title(f"slam-certify: cost {result['cost']:.8g}, {bound_text}\n{verdict}, rank {result['rank']}, "
                 f"lambda_min {result['lambda_min']:.2g}{title_extra}", fontsize=10)
    out = args.output or art / "map_plot.png"
    fig.savefig(out, dpi=120, bbox_inches="tight")
    print(out)


if __name__ == "__main__":
    main()

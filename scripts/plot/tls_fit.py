#!/usr/bin/python3
"""Plot a tls-fit run: the points (coloured by absolute residual) and the fitted line.

Usage: scripts/plot/tls_fit.py RUN_DIR [--output fit.png]
Reads RUN_DIR/artifacts/points.npy, residuals.npy (and weights.npy when present) and result.json.
"""
import argparse
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=pathlib.Path)
    ap.add_argument("--output", type=pathlib.Path, help="PNG to write (default RUN_DIR/artifacts/fit.png)")
    args = ap.parse_args()
    art = args.run_dir / "artifacts"
    try:
        pts = np.load(art / "points.npy")
        res = np.load(art / "residuals.npy")
        result = json.loads((args.run_dir / "result.json").read_text())
    except (OSError, ValueError) as e:
        sys.exit(f"tls_fit.py: cannot read run directory {args.run_dir}: {e}")
    weights_path = art / "weights.npy"
    colour = np.load(weights_path) if weights_path.exists() else np.abs(res)
    label = "weight" if weights_path.exists() else "|residual|"

    a, b, c = result["a"], result["b"], result["c"]
    fig, ax = plt.subplots(figsize=(6, 6))
    sc = ax.scatter(pts[:, 0], pts[:, 1], c=colour, s=10, cmap="viridis")
    fig.colorbar(sc, ax=ax, label=label)
    # The line a x + b y = c: foot point c*(a, b), direction (-b, a), spanning the data.
    span = np.ptp(pts, axis=0).max() * 0.75 + 1e-9
    centre = np.array([a, b]) * c + np.array([-b, a]) * np.dot(pts.mean(axis=0), [-b, a])
    t = np.linspace(-span, span, 2)
    ax.plot(centre[0] - b * t, centre[1] + a * t, "r-", lw=2,
            label=f"{a:.3f}x + {b:.3f}y = {c:.3f}  ({'certified' if result['certified'] else 'not certified'})")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(loc="best", fontsize=8)
    # The dual value is a lower bound only when H(lambda) >= 0, i.e. when certified.
    bound = f"lower bound {result['dual']:.4g}" if result["certified"] else "no bound (H not PSD)"
    mode = result.get("mode", "tls")
    extra = f", sigma {result['sigma']:g}, {result['inliers']}/{result['n']} inliers (|e| < sigma)" if mode == "gm" else ""
    ax.set_title(f"tls-fit {mode}{extra}\ncost {result['cost']:.4g}, {bound}", fontsize=10)
    out = args.output or art / "fit.png"
    fig.savefig(out, dpi=120, bbox_inches="tight")
    print(out)


if __name__ == "__main__":
    main()

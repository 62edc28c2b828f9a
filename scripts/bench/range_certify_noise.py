#!/usr/bin/python3
"""range-certify noise study ("Safe and Smooth", Fig. 4): 2-D, N = 100 states, 6 anchors, all ranges,
sigma_d from 1e-4 to 100; for every sigma and prior (cv, zv, none), SETUPS simulated problems x INITS
Gauss-Newton runs (gt, then random), each certified. The reference is the lowest cost found from any
init of that setup: a certified run at it is a true positive (TP), certified above it a false positive
(FP, must stay 0), not certified at it a false negative (FN), not certified above it a true negative (TN).
The paper uses 100 setups x 10 inits; the defaults here are smaller (--setups, --inits).

Usage: scripts/bench/range_certify_noise.py BUILD_DIR [--setups 10] [--inits 10] [--csv out.csv] [--plot out.png]
"""
import argparse
import csv
import json
import pathlib
import subprocess
import sys
import tempfile

SIGMAS = [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0]
PRIORS = ["cv", "zv", "none"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--setups", type=int, default=10)
    ap.add_argument("--inits", type=int, default=10)
    ap.add_argument("--csv", type=pathlib.Path)
    ap.add_argument("--plot", type=pathlib.Path)
    args = ap.parse_args()
    tool = args.build / "bin" / "range-certify"
    table = []
    print(f"{'sigma_d':>8} {'prior':>5} {'TP':>4} {'FP':>4} {'TN':>4} {'FN':>4}")
    with tempfile.TemporaryDirectory() as tmp:
        for sigma in SIGMAS:
            for prior in PRIORS:
                counts = dict(TP=0, FP=0, TN=0, FN=0)
                for setup in range(args.setups):
                    cmd = [str(tool), "solve", f"sim.seed={setup}", f"sim.sigma_d={sigma}", f"sigma_d={sigma}",
                           f"prior={prior}", "init=gt", f"tries={args.inits}", "stop_at_certified=false",
                           f"seed={1000 * setup}", "--out", f"{tmp}/run", "-q"]
                    p = subprocess.run(cmd, capture_output=True, text=True)
                    if p.returncode not in (0, 3):
                        sys.exit(f"range-certify failed: {' '.join(cmd)}\n{p.stderr[-2000:]}")
                    attempts = json.loads(p.stdout)["attempts"]
                    lowest = min(a["cost"] for a in attempts)
                    for a in attempts:
                        at_best = a["cost"] <= lowest + 1e-6 * abs(lowest)
                        key = ("TP" if at_best else "FP") if a["certified"] else ("FN" if at_best else "TN")
                        counts[key] += 1
                table.append(dict(sigma_d=sigma, prior=prior, **counts))
                print(f"{sigma:8.0e} {prior:>5} {counts['TP']:4d} {counts['FP']:4d} {counts['TN']:4d} {counts['FN']:4d}",
                      flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["sigma_d", "prior", "TP", "FP", "TN", "FN"])
            w.writeheader()
            w.writerows(table)
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(PRIORS), figsize=(4 * len(PRIORS), 3.5), sharey=True)
        for ax, prior in zip(axes, PRIORS):
            rows = [r for r in table if r["prior"] == prior]
            x = range(len(rows))
            bottom = [0] * len(rows)
            for key, colour in (("TP", "C2"), ("TN", "C0"), ("FN", "C1"), ("FP", "C3")):
                vals = [r[key] for r in rows]
                ax.bar(x, vals, bottom=bottom, color=colour, label=key)
                bottom = [b + v for b, v in zip(bottom, vals)]
            ax.set_xticks(list(x), [f"{r['sigma_d']:.0e}" for r in rows], rotation=45)
            ax.set_title(f"prior {prior}")
            ax.set_xlabel("sigma_d")
        axes[0].set_ylabel("runs")
        axes[-1].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(args.plot)


if __name__ == "__main__":
    main()

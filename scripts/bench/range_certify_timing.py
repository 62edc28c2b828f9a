#!/usr/bin/python3
"""range-certify timing study ("Safe and Smooth", Fig. 5): N = 10 .. 10^6 simulated 2-D states (6 anchors,
all ranges, prior cv, init gt), per-stage seconds (Gauss-Newton solve, one damped GN step, closed-form
multipliers, O(N) LDL^T certificate), peak memory, the log-log slope of each stage over N >= 1000, and the
ratio certificate / one GN step (the baseline measured in the same run; the paper: certificate <= one step).

Usage: scripts/bench/range_certify_timing.py BUILD_DIR [--max-n 1000000] [--plot timing.png]
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np


def run(tool, n, out):
    cmd = ["/usr/bin/time", "-v", str(tool), "solve", f"sim.n={n}", "init=gt", "tries=1", "--out", str(out), "-q"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 3):
        sys.exit(f"range-certify failed at N={n} (exit {p.returncode}): {p.stderr[-2000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    return json.loads(p.stdout), rss / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--max-n", type=int, default=1000000)
    ap.add_argument("--plot", type=pathlib.Path)
    args = ap.parse_args()
    tool = args.build / "bin" / "range-certify"
    sizes = [n for n in (10, 100, 1000, 10000, 100000, 1000000) if n <= args.max_n]
    rows = []
    print(f"{'N':>8} {'iters':>5} {'solve_s':>9} {'gn_step_s':>10} {'mult_s':>9} {'cert_s':>9} {'cert/step':>9} "
          f"{'certified':>9} {'MiB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            r, mib = run(tool, n, pathlib.Path(tmp) / f"n{n}")
            t = r["times_s"]
            rows.append((n, t["solve"], t["gn_iteration"], t["multipliers"], t["certificate"], mib))
            print(f"{n:8d} {r['iterations']:5d} {t['solve']:9.4f} {t['gn_iteration']:10.4f} {t['multipliers']:9.5f} "
                  f"{t['certificate']:9.4f} {t['certificate'] / t['gn_iteration']:9.3f} {str(r['certified']):>9} {mib:8.1f}",
                  flush=True)
    a = np.array(rows)
    big = a[:, 0] >= 1000
    if big.sum() >= 2:
        print("\nlog-log slopes over N >= 1000 (1 = linear):")
        for i, name in enumerate(["solve", "gn_step", "multipliers", "certificate", "memory"], start=1):
            slope = np.polyfit(np.log(a[big, 0]), np.log(a[big, i]), 1)[0]
            print(f"  {name:12s} {slope:5.2f}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4.5))
        for i, name in enumerate(["GN solve", "one GN step", "multipliers", "certificate"], start=1):
            ax.loglog(a[:, 0], a[:, i], marker="o", label=name)
        ax.loglog(a[:, 0], a[-1, 4] * a[:, 0] / a[-1, 0], "k:", label="linear")
        ax.set_xlabel("N (states)")
        ax.set_ylabel("seconds")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(args.plot)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""range-certify on the STAR-loc UWB runs: for each run, group_window (0: one state per row time) and
prior, Gauss-Newton from gt, flip and RANDOM random trajectories (all run, none stopped early), each
certified; prints n, the lowest cost found, which inits reached it, which were certified, and the RMSE
(3-D and horizontal x-y) of the certified (else cheapest) solution. Bias calibration is on (the paper's
treatment of its real data). sigma_d = 0.05 m; sigma_a from --sigma-a (default 0.01; cv: m/s^2, zv: m per step).

Usage: scripts/bench/range_certify_starloc.py BUILD_DIR [DATASETS_DIR] [--random 3] [--windows 0,0.05] [--sigma-a 0.01]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

RUNS = ["loop-2d_s5", "loop-2d-v2_s5", "loop-3d_s5", "loop-2d-fast_s1"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("datasets", type=pathlib.Path, nargs="?", default=pathlib.Path("../shared/datasets"))
    ap.add_argument("--random", type=int, default=3)
    ap.add_argument("--windows", default="0,0.05")
    ap.add_argument("--priors", default="cv,zv")
    ap.add_argument("--sigma-a", default="0.01")
    args = ap.parse_args()
    tool = args.build / "bin" / "range-certify"
    root = args.datasets / "uwb" / "starloc"
    print(f"{'run':16s} {'window':>6} {'prior':>5} {'n':>5} {'best_cost':>11} {'reach_best':>16} {'certified':>16} "
          f"{'rmse':>6} {'rmse_xy':>7} {'cert_s':>7} {'step_s':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for run in RUNS:
            if not (root / run / "uwb.csv").exists():
                print(f"{run}: absent, skipped")
                continue
            for window in args.windows.split(","):
                for prior in args.priors.split(","):
                    rows = []
                    for init in ("gt", "flip"):
                        rows.append(solve(tool, root, run, window, prior, init, 1, args.sigma_a, tmp))
                    rows.append(solve(tool, root, run, window, prior, "random", args.random, args.sigma_a, tmp))
                    attempts = [a for r in rows for a in r["attempts"]]
                    lowest = min(a["cost"] for a in attempts)
                    names = [a["init"] if a["init"] != "random" else "r" for a in attempts]
                    reach = "".join(n[0] if a["cost"] <= lowest * (1 + 1e-6) else "." for n, a in zip(names, attempts))
                    cert = "".join(n[0] if a["certified"] else "." for n, a in zip(names, attempts))
                    chosen = next((r for r in rows if r["certified"]), min(rows, key=lambda r: r["cost"]))
                    print(f"{run:16s} {window:>6} {prior:>5} {chosen['n']:5d} {lowest:11.6g} {reach:>16} {cert:>16} "
                          f"{chosen['rmse']:6.3f} {chosen.get('rmse_xy', float('nan')):7.3f} "
                          f"{chosen['times_s']['certificate']:7.4f} {chosen['times_s']['gn_iteration']:7.4f}", flush=True)
    print("\nreach_best / certified: one letter per init (g gt, f flip, r random) that reached the lowest cost found / "
          "was certified; '.' otherwise")


def solve(tool, root, run, window, prior, init, tries, sigma_a, tmp):
    cmd = [str(tool), "solve", "--input", f"starloc:{root / run}", f"group_window={window}", f"prior={prior}",
           f"init={init}", f"tries={tries}", "stop_at_certified=false", "sigma_d=0.05", f"sigma_a={sigma_a}",
           "--out", f"{tmp}/run", "-q"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 3):
        sys.exit(f"range-certify failed: {' '.join(cmd)}\n{p.stderr[-2000:]}")
    return json.loads(p.stdout)


if __name__ == "__main__":
    main()

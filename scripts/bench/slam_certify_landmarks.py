#!/usr/bin/python3
"""slam-certify on landmark problems: data-matrix build time against landmark count, certificate
success rate against noise (Holmes & Barfoot, RA-L 2023, Sec. VI), and UTIAS Starry Night windows.

Usage: scripts/bench/slam_certify_landmarks.py BUILD [--out DIR] [--seeds N] [--only scaling|noise|starry]

scaling: a 2D world of 200 poses on a circle, landmarks 250..16000 (each seen from the poses within
  8 m); prints the build time (landmark-by-landmark elimination + the translation factor), the time of
  one trust-region iteration of the reduced rotation-only problem and of one sparse Cholesky of K (the
  size and pattern of the reduced system a Gauss-Newton iteration on the full landmark problem
  factorises: the paper's "no more than one local-solver iteration" compares with such an iteration,
  which also pays the O(sum_j k_j^2) landmark Schur complement), best of 3, and the least-squares
  slope of log(build) against log(landmarks).
noise: worlds of 20 poses and 10 landmarks (2D and 3D, N seeds each) with every sigma multiplied by a
  scale; prints the fraction certified at each scale and the mean relative suboptimality bound.
starry: windows of the Starry Night dataset (slam-certify starry), certified or not, relative duality
  gap, trajectory RMSE against the ground truth after a rigid (Horn) alignment.
Writes DIR/landmark_scaling.png and DIR/certificate_vs_noise.png.
"""
import argparse
import json
import math
import pathlib
import subprocess
import sys
import tempfile
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(tool, args):
    p = subprocess.run([tool] + args + ["-q"], capture_output=True, text=True)
    if p.returncode not in (0, 3):
        sys.exit(f"slam-certify {' '.join(args)}: exit {p.returncode}: {p.stderr[-400:]}")
    return json.loads(p.stdout), p.returncode


def scaling(tool, tmp, out, repeats=3):
    print("# data-matrix build time against landmark count (200 poses, 2D), best of", repeats)
    print(f"{'landmarks':>9} {'obs':>8} {'build s':>8} {'1 iter s':>9} {'factor s':>9} {'build/iter':>10} "
          f"{'build/factor':>12} {'certified':>9}")
    L, B = [], []
    for landmarks in [250, 500, 1000, 2000, 4000, 8000, 16000]:
        g2o = tmp / f"w{landmarks}.g2o"
        run(tool, ["sim", "--output", str(g2o), "world.poses=200", f"world.landmarks={landmarks}", "world.seed=1"])
        build, per_iter, factor = math.inf, math.inf, math.inf
        for _ in range(repeats):
            r, _ = run(tool, ["solve", "--input", str(g2o), "--out", str(tmp / "run")])
            iters = sum(l["iterations"] for l in r["staircase"])
            build = min(build, r["times_s"]["build"])
            # one trust-region iteration of the reduced (rotation-only) problem: the iterations' own time
            per_iter = min(per_iter, r["solve_parts_s"]["trust_region"] / max(iters, 1))
            # one sparse Cholesky of K + lambda I: K has the size (3n in 2D) and the co-visibility pattern of
            # the reduced camera system that one Gauss-Newton iteration on the full landmark problem
            # factorises after its own O(sum_j k_j^2) landmark Schur complement
            factor = min(factor, r["solve_parts_s"]["preconditioner"])
        obs = r["edges"] - 199
        print(f"{landmarks:9d} {obs:8d} {build:8.4f} {per_iter:9.4f} {factor:9.4f} {build / per_iter:10.2f} "
              f"{build / factor:12.2f} {str(r['certified']):>9}", flush=True)
        L.append(landmarks)
        B.append(build)
    slope = np.polyfit(np.log(L), np.log(B), 1)[0]
    print(f"log-log slope of build time against landmarks: {slope:.3f}")
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.loglog(L, B, "o-", label=f"build (slope {slope:.2f})")
    ax.loglog(L, B[0] * np.array(L) / L[0], "k--", lw=0.8, label="slope 1")
    ax.set_xlabel("landmarks")
    ax.set_ylabel("data-matrix build time (s)")
    ax.legend()
    fig.savefig(out / "landmark_scaling.png", dpi=120, bbox_inches="tight")


def noise(tool, tmp, out, seeds):
    print(f"# certificate success against noise (20 poses, 10 landmarks, {seeds} seeds)")
    scales = [1, 4, 8, 16, 32, 64]
    fig, ax = plt.subplots(figsize=(5, 4))
    for d in (2, 3):
        rates = []
        for s in scales:
            certified, bounds = 0, []
            for seed in range(seeds):
                r, code = run(tool, ["solve", "world.dimension=%d" % d, "world.poses=20", "world.landmarks=10",
                                     f"world.rotation_sigma={0.02 * s}", f"world.translation_sigma={0.05 * s}",
                                     f"world.landmark_sigma={0.05 * s}", f"world.seed={seed}", "--out", str(tmp / "run")])
                certified += code == 0
                if r["suboptimality_bound"] is not None:
                    bounds.append(r["suboptimality_bound"] / max(abs(r["cost"]), 1e-300))
            rates.append(certified / seeds)
            mean_bound = f"{np.mean(bounds):.2e}" if bounds else "-"
            print(f"  {d}D scale {s:3d} (rotation sigma {0.02 * s:.2f} rad): certified {certified}/{seeds}, "
                  f"mean relative bound {mean_bound}", flush=True)
        ax.semilogx([0.02 * s for s in scales], rates, "o-", label=f"{d}D")
    ax.set_xlabel("rotation noise sigma (rad); translation and landmark sigma 2.5x")
    ax.set_ylabel("fraction certified")
    ax.set_ylim(-0.05, 1.05)
    ax.legend()
    fig.savefig(out / "certificate_vs_noise.png", dpi=120, bbox_inches="tight")


def rmse(est_tum, truth_tum):
    est, gt = np.loadtxt(est_tum, ndmin=2), np.loadtxt(truth_tum, ndmin=2)
    _, i, j = np.intersect1d(est[:, 0], gt[:, 0], return_indices=True)
    a, b = gt[j, 1:4], est[i, 1:4]
    ma, mb = a.mean(0), b.mean(0)
    U, _, Vt = np.linalg.svd((b - mb).T @ (a - ma))
    R = U @ np.diag([1, 1, np.sign(np.linalg.det(U @ Vt))]) @ Vt
    return math.sqrt(np.mean(np.sum((a @ R.T + mb - R @ ma - b) ** 2, axis=1)))


def starry(tool, tmp):
    dataset = ROOT.parent / "shared/datasets/landmark-slam"
    if not (dataset / "stereo_measurements.csv").exists():
        print("# Starry Night: dataset absent, skipped")
        return
    print("# UTIAS Starry Night windows")
    print(f"{'steps':>10} {'landmarks':>9} {'obs':>6} {'cost':>12} {'SDP bound':>12} {'rel.gap':>9} {'cert':>5} {'rank':>4} "
          f"{'RMSE m':>7} {'dead-reck.':>10} {'time s':>7}")
    for steps in ["0:100", "0:300", "300:600", "600:900", "900:1200", "1200:1500", "1500:1900"]:
        g2o, truth = tmp / "starry.g2o", tmp / "truth.tum"
        conv, _ = run(tool, ["starry", "--dataset", str(dataset), "--output", str(g2o), "--steps", steps,
                             "--truth", str(truth)])
        t0 = time.perf_counter()
        r, code = run(tool, ["solve", "--input", str(g2o), "--out", str(tmp / "srun")])
        wall = time.perf_counter() - t0
        # Dead reckoning: the vertices of the converted file.
        dr = tmp / "dr.tum"
        lines = [l.split() for l in g2o.read_text().splitlines() if l.startswith("VERTEX_SE3:QUAT")]
        dr.write_text("".join(" ".join(l[1:]) + "\n" for l in lines))
        gap = r["duality_gap"] / (1 + abs(r["cost"]))
        bound = r["dual_value"] if r["lower_bound"] is not None else float("nan")
        print(f"{steps:>10} {conv['landmarks']:9d} {conv['observations']:6d} {r['cost']:12.6f} {bound:12.6f} {gap:9.2e} "
              f"{'yes' if code == 0 else 'no':>5} {r['rank']:4d} {rmse(tmp / 'srun/artifacts/poses.tum', truth):7.4f} "
              f"{rmse(dr, truth):10.4f} {wall:7.2f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path("."))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--only", choices=["scaling", "noise", "starry"])
    args = ap.parse_args()
    tool = str(args.build / "bin/slam-certify")
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"# {len(__import__('os').sched_getaffinity(0))} cores, load {open('/proc/loadavg').read().split()[0]}")
    with tempfile.TemporaryDirectory() as t:
        tmp = pathlib.Path(t)
        if args.only in (None, "scaling"):
            scaling(tool, tmp, args.out)
        if args.only in (None, "noise"):
            noise(tool, tmp, args.out, args.seeds)
        if args.only in (None, "starry"):
            starry(tool, tmp)


if __name__ == "__main__":
    main()

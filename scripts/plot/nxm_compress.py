#!/usr/bin/python3
"""Accuracy against compression ratio of nxm-compress runs, and the ADMM residuals of the ADMM runs.

    scripts/plot/nxm_compress.py DIR [DIR ...] -o nxm_compress.png

Each DIR is a run directory of `nxm-compress compress`, `search` or `finetune` (its result.json), or a
folder of such runs (scripts/bench/nxm_compress_sst2.sh's OUT_DIR). Left: test accuracy against
cr_paper (a finetune run, the dense teacher, sits at 0 %), one marker per method. Right: relative primal
residual and mask flip rate per ADMM round (metrics.jsonl). Exit codes as the tools': 65 a malformed
result or metrics file (named), 66 no run found, 74 the PNG cannot be written (written to a temporary
name and renamed).
"""
import argparse
import json
import os
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from run_files import EX_DATAERR, EX_IOERR, EX_NOINPUT, fail  # noqa: E402


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        fail(EX_DATAERR, f"{path}: not valid JSON ({e})")


def find_runs(dirs):
    runs = []
    for d in map(pathlib.Path, dirs):
        if not d.is_dir():
            fail(EX_NOINPUT, f"{d}: no such directory")
        candidates = [d] if (d / "result.json").is_file() else sorted(p for p in d.iterdir() if (p / "result.json").is_file())
        runs += candidates
    if not runs:
        fail(EX_NOINPUT, "no run directory with result.json among " + ", ".join(dirs))
    return runs


def admm_rounds(run):
    path = run / "metrics.jsonl"
    rounds = []
    if not path.is_file():
        return rounds
    with open(path) as f:
        for i, line in enumerate(f, 1):
            try:
                m = json.loads(line)
            except json.JSONDecodeError:
                fail(EX_DATAERR, f"{path}:{i}: not valid JSON")
            if m.get("stage") == "admm_round":
                rounds.append((m["round"], m["relative_primal_residual"], m["mask_flip_rate"]))
    return rounds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("-o", "--output", default="nxm_compress.png")
    a = ap.parse_args()
    runs = find_runs(a.dirs)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    markers = {"admm": "o", "magnitude": "s", "srste": "^"}
    for run in runs:
        manifest = run / "manifest.json"
        if manifest.is_file() and load_json(manifest).get("tool") != "nxm-compress":
            continue  # e.g. the zpp-train pretraining run beside them
        r = load_json(run / "result.json")
        if "accuracy" not in r:
            fail(EX_DATAERR, f"{run / 'result.json'}: no accuracy")
        cr = r.get("cr_paper", 0.0)
        method = r.get("method", "dense")
        label = run.name + (f" ({r['plan']})" if "plan" in r else " (dense teacher)")
        ax.scatter([cr], [100 * r["accuracy"]], marker=markers.get(method, "*"), s=70, label=label)
        rounds = admm_rounds(run)
        if rounds:
            x = [k for k, _, _ in rounds]
            ax2.plot(x, [p for _, p, _ in rounds], marker="o", label=f"{run.name}: rel. primal residual")
            ax2.plot(x, [f for _, _, f in rounds], marker="x", linestyle="--", label=f"{run.name}: mask flip rate")
    ax.set_xlabel("compression ratio cr_paper (%)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title("accuracy against compression")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax2.set_xlabel("ADMM round")
    ax2.set_yscale("log")
    ax2.set_title("ADMM convergence")
    ax2.grid(alpha=0.3)
    if ax2.lines:
        ax2.legend(fontsize=7)
    fig.tight_layout()
    out = pathlib.Path(a.output)
    tmp = out.with_name(out.name + f".tmp.{os.getpid()}.png")
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, out)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        fail(EX_IOERR, f"cannot write {out}: {e}")
    print(out)


if __name__ == "__main__":
    main()

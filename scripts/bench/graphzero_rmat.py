#!/usr/bin/env python3
"""R-MAT at scale (issue 22): load, relabel, plan and mining time, CPU time and peak memory of
`graphzero-mine count` for triangle and 4-clique on rmat:SCALE (Graph500 parameters, edge factor 16).

For each scale the graph is built three ways in one run, so the cache's effect is a ratio against a
baseline measured on the same machine at the same time:
  generate  --graph-cache off: generate the edges, build and relabel the CSR (the baseline)
  write     --graph-cache DIR: the same, then write the binary CSR cache (first run)
  mapped    --graph-cache DIR: map the cache written just before (every later run)
(the first two count wedges, a closed form, so that they measure the graph), then each pattern is counted
on the mapped graph. With --baseline BIN (e.g. main's build) the generate stage also runs with that binary,
interleaved in the same run, and its time, CPU and peak memory are printed as ratios (ours / baseline). Peak RSS and CPU come from /usr/bin/time (mapped pages of
the cache count in RSS but are shared between ranks of one host and reclaimable). The machine's load average
is printed with every row: on a shared machine wall times overstate the work; CPU seconds do not
(load_cpu and relabel_cpu: the process's CPU seconds of building or mapping the graph and of relabelling it,
from the result's load_cpu_s / orient_cpu_s).

  scripts/bench/graphzero_rmat.py --bin build/default/bin/graphzero-mine [--scales 22,24]
      [--patterns triangle,4-clique] [--threads 2] [--cache-dir DIR] [--keep-cache] [--baseline BIN]
"""
import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile


def timed(cmd):
    """Runs cmd under /usr/bin/time -v; returns (JSON result, peak RSS in GB, user+sys CPU seconds, wall s)."""
    proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    field = lambda name: re.search(re.escape(name) + r":\s*([0-9.:]+)", proc.stderr).group(1)
    rss_gb = int(field("Maximum resident set size (kbytes)")) / 1e6
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    wall = 0.0
    for part in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":"):
        wall = wall * 60 + float(part)
    return json.loads(proc.stdout.strip().splitlines()[-1]), rss_gb, cpu, wall


def load_average():
    return "%.1f" % os.getloadavg()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="graphzero-mine binary")
    ap.add_argument("--scales", default="22,24")
    ap.add_argument("--patterns", default="triangle,4-clique")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache-dir", help="folder for the caches (default: a temporary folder, removed after)")
    ap.add_argument("--keep-cache", action="store_true", help="keep the cache folder")
    ap.add_argument("--baseline", help="another graphzero-mine binary whose generate stage is measured alongside")
    args = ap.parse_args()
    cache = args.cache_dir or tempfile.mkdtemp(prefix="gz-rmat-cache-")
    runs = tempfile.mkdtemp(prefix="gz-rmat-runs-")
    print(f"# {platform.node()}, {os.cpu_count()} cores, {args.threads} threads, {args.bin}")
    print("# scale  stage     pattern    count                 load_s  relabel_s  load_cpu  relabel_cpu  plan_s   "
          "mine_s  mine_cpu_s  cpu_s    wall_s   peak_GB  load_avg")
    try:
        for scale in [int(s) for s in args.scales.split(",")]:
            spec = f"rmat:{scale}"
            base = [args.bin, "count", "--graph", spec, "--threads", str(args.threads), "-q"]
            # The graph-building stages count wedges (a closed form per vertex: next to no mining).
            stages = [("generate", "off", "wedge"), ("write", cache, "wedge")]
            stages += [("mapped", cache, p) for p in args.patterns.split(",")]
            if args.baseline:
                stages.insert(0, ("baseline", "off", "wedge"))
            load, usage = {}, {}
            for stage, where, pattern in stages:
                out = tempfile.mkdtemp(dir=runs)
                binary = [args.baseline] if stage == "baseline" else [args.bin]
                r, rss, cpu, wall = timed(binary + base[1:] + ["--pattern", pattern, "--graph-cache", where,
                                                               "--out", out])
                load.setdefault(stage, r["load_time_s"] + r["orient_time_s"])
                usage.setdefault(stage, (cpu, rss))
                # Process CPU of loading and of relabelling (builds before these fields print "-").
                stage_cpu = lambda key: f"{r[key]:.2f}" if key in r else "-"
                print(f"  {scale:5d}  {stage:8s}  {pattern:9s}  {r['count']:20d}  {r['load_time_s']:7.2f}  "
                      f"{r['orient_time_s']:9.2f}  {stage_cpu('load_cpu_s'):>8s}  {stage_cpu('orient_cpu_s'):>11s}  "
                      f"{r['plan_time_s']:6.3f}  {r['time_s']:7.2f}  "
                      f"{r['match_cpu_s']:10.2f}  {cpu:7.1f}  {wall:7.1f}  {rss:7.2f}  {load_average()}",
                      flush=True)
                shutil.rmtree(out, ignore_errors=True)
            print(f"# scale {scale}: graph ready in {load['mapped']:.2f} s mapped vs {load['generate']:.2f} s "
                  f"generated and relabelled (ratio {load['mapped'] / load['generate']:.3f})")
            if args.baseline:
                (cpu, rss), (base_cpu, base_rss) = usage["generate"], usage["baseline"]
                print(f"# scale {scale}: generated and relabelled in {load['generate']:.2f} s vs the baseline's "
                      f"{load['baseline']:.2f} s (ratio {load['generate'] / load['baseline']:.3f}); process CPU "
                      f"{cpu:.1f} vs {base_cpu:.1f} s ({cpu / base_cpu:.3f}); peak {rss:.2f} vs {base_rss:.2f} GB")
    finally:
        shutil.rmtree(runs, ignore_errors=True)
        if not args.cache_dir and not args.keep_cache:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()

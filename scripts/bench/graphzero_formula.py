#!/usr/bin/env python3
"""Counting formulas of graphzero-mine (issue 22): --formula auto / on / off, same run, 2 threads.

For every (graph, pattern) the three settings run interleaved, REPEATS times each (fastest kept);
off enumerates every level (the baseline), on counts the longest tail a formula allows, auto lets
the cost model choose. Counts must agree (a run that passed --timeout is reported as such and
compared no further). Prints a table with the plans' formulas, wall and CPU seconds, the ratios
auto/off and on/off, and --peer times (e.g. G2Miner's, measured by hand) with auto/peer.
  scripts/bench/graphzero_formula.py --bin BUILD/bin/graphzero-mine [--datasets DIR]
      [--graphs wiki-Vote,astro-ph] [--patterns dumbbell,6-star] [--timeout 120] [--repeats 1]
      [--peer 'dumbbell@wiki-Vote=9.7,...']
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

PATTERNS = {  # name -> edges; the 6-7-vertex shapes whose tails a formula can or cannot count
    "dumbbell": "0-1,1-2,2-0,0-3,3-4,4-5,5-3",
    "6-cycle": "6-cycle",
    "6-star": "6-star",
    "K2-4": "0-2,0-3,0-4,0-5,1-2,1-3,1-4,1-5",
    "triangle+3": "0-1,1-2,2-0,0-3,1-4,2-5",
    "4-cycle+2": "0-1,1-2,2-3,3-0,0-4,0-5",
    "house+1": "0-1,1-2,2-3,3-0,0-4,1-4,2-5",
}
GRAPHS = ("wiki-Vote", "email-Enron", "astro-ph", "as-22july06")


def run(binary, args, timeout):
    try:
        out = subprocess.run([binary] + args + ["-q"], check=True, capture_output=True, text=True,
                             timeout=timeout).stdout
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.strip().splitlines()[-1])


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--datasets", default=os.environ.get("TOOLKIT_DATASETS", os.path.join(root, "..", "shared", "datasets")))
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--patterns", default=",".join(PATTERNS))
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per run; a slower run is reported as '>T'")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--peer", default="", help="pattern@graph=seconds,... (a peer's time measured by hand)")
    a = ap.parse_args()
    peer = {}
    for item in filter(None, a.peer.split(",")):
        key, secs = item.split("=")
        peer[tuple(key.split("@"))] = float(secs)
    cache = tempfile.mkdtemp(prefix="gz-formula-")
    print(f"load average before: {os.getloadavg()[0]:.1f}; 2 threads; fastest of {a.repeats}; timeout {a.timeout:g} s\n")
    header = (f"{'graph':<12} {'pattern':<11} {'count':>20} {'auto':>19} {'auto_s':>8} {'on_s':>8} {'off_s':>8} "
              f"{'auto_cpu':>8} {'off_cpu':>8} {'auto/off':>8} {'on/off':>7} {'peer_s':>7} {'auto/peer':>9}")
    print(header)
    print("-" * len(header))
    for g in a.graphs.split(","):
        path = os.path.join(a.datasets, "graphs", g + ".el")
        for name in a.patterns.split(","):
            base = ["count", "--graph", path, "--pattern", PATTERNS.get(name, name), "--threads", "2",
                    "--graph-cache", cache]
            best = {}
            for _ in range(a.repeats):
                for f in ("auto", "on", "off"):
                    r = run(a.bin, base + ["--formula", f], a.timeout)
                    if r and (f not in best or (best[f] and r["time_s"] < best[f]["time_s"])):
                        best[f] = r
                    best.setdefault(f, None)
            counts = {r["count"] for r in best.values() if r}
            if len(counts) > 1:
                sys.exit(f"{name} on {g}: counts differ between formula settings: {counts}")
            t = {f: (r["time_s"] if r else None) for f, r in best.items()}
            cpu = {f: (r["match_cpu_s"] if r else None) for f, r in best.items()}
            fmt = lambda x: f"{x:.3f}" if x is not None else f">{a.timeout:g}"
            ratio = lambda x, y: (f"{x / y:.3f}" if x is not None and y else (f"<{x / a.timeout:.3f}" if x is not None else "-"))
            auto = best["auto"]["plan"]["formula"] if best["auto"] else "-"
            p = peer.get((name, g))
            print(f"{g:<12} {name:<11} {(counts.pop() if counts else '-'):>20} {auto:>19} {fmt(t['auto']):>8} "
                  f"{fmt(t['on']):>8} {fmt(t['off']):>8} {fmt(cpu['auto']):>8} {fmt(cpu['off']):>8} "
                  f"{ratio(t['auto'], t['off']):>8} {ratio(t['on'], t['off']):>7} {(f'{p:g}' if p else '-'):>7} "
                  f"{(ratio(t['auto'], p) if p else '-'):>9}", flush=True)
    print(f"\nauto/off, on/off: wall-time ratios of the same run ('<x': off passed the timeout, so the ratio is "
          f"below x); *_cpu: CPU seconds of the 2 threads. Load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

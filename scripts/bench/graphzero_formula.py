#!/usr/bin/env python3
"""Counting formulas of graphzero-mine (issue 22): --formula auto / on / off, same run, 2 threads.

For every (graph, pattern) the three settings run interleaved, REPEATS times each (fastest kept);
off enumerates every level (the baseline), on counts the longest tail a formula allows, auto lets
the cost model choose. Counts must agree (a run that passed --timeout is reported as such and
compared no further). Prints a table with the plans' formulas, wall and CPU seconds, the ratios
auto/off and on/off, and --peer times (e.g. G2Miner's, measured by hand) with auto/peer.
Cost-model audit: --patterns 5 stands for every connected 5-vertex pattern, 6 for the 6-vertex sample
(SAMPLE6); a clique also runs --local-graph on and off; auto_cpu/best is auto's CPU seconds over the
fastest forced setting's, and --slower X prints only the rows where that exceeds X. --baseline BIN runs
another binary's auto too, interleaved (its CPU seconds: base_cpu).
  scripts/bench/graphzero_formula.py --bin BUILD/bin/graphzero-mine [--datasets DIR]
      [--graphs wiki-Vote,astro-ph] [--patterns dumbbell,6-star|5|6] [--timeout 120] [--repeats 1]
      [--peer 'dumbbell@wiki-Vote=9.7,...'] [--slower 1.3] [--baseline MAIN/bin/graphzero-mine]
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
SAMPLE6 = {  # the 6-vertex audit sample (issue 22)
    "dumbbell": PATTERNS["dumbbell"], "house+apex": "0-1,1-2,2-3,3-0,0-4,1-4,4-5", "house+1": PATTERNS["house+1"],
    "6-cycle": "6-cycle", "6-path": "0-1,1-2,2-3,3-4,4-5", "K2-4": PATTERNS["K2-4"],
    "4-cycle+2": PATTERNS["4-cycle+2"], "triangle+3": PATTERNS["triangle+3"],
}
GRAPHS = ("wiki-Vote", "email-Enron", "astro-ph", "as-22july06")


def connected_patterns(binary, k):
    """Every connected k-vertex pattern once (edge lists 'a-b,...'), as the tool's `motifs` enumerates them."""
    return [p["pattern"] for p in run(binary, ["motifs", "--graph", "gnp:8:0.5", "--size", str(k), "--threads", "1"],
                                      60)["patterns"]]


def expand(names, binary):
    """Pattern names -> [(name, edges)]: '5' every connected 5-vertex pattern, '6' the 6-vertex sample."""
    out = []
    for name in names.split(","):
        if name == "5":
            out += [(e, e) for e in connected_patterns(binary, 5)]
        elif name == "6":
            out += list(SAMPLE6.items())
        else:
            out.append((name, PATTERNS.get(name, SAMPLE6.get(name, name))))
    return out


def is_clique(edges):
    if "-" not in edges or "," not in edges:
        return edges.endswith("-clique")
    es = [tuple(sorted(map(int, e.split("-")))) for e in edges.split(",")]
    k = len({v for e in es for v in e})
    return len(set(es)) == k * (k - 1) // 2


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
    ap.add_argument("--slower", type=float, default=0.0,
                    help="print only rows where auto's CPU s exceed X times the fastest forced setting's")
    ap.add_argument("--baseline", default="", help="another binary whose auto runs interleaved (base_cpu)")
    a = ap.parse_args()
    peer = {}
    for item in filter(None, a.peer.split(",")):
        key, secs = item.split("=")
        peer[tuple(key.split("@"))] = float(secs)
    cache = tempfile.mkdtemp(prefix="gz-formula-")
    print(f"load average before: {os.getloadavg()[0]:.1f}; 2 threads; fastest of {a.repeats}; timeout {a.timeout:g} s\n")
    header = (f"{'graph':<12} {'pattern':<11} {'count':>20} {'auto':>19} {'auto_s':>8} {'on_s':>8} {'off_s':>8} "
              f"{'auto_cpu':>8} {'on_cpu':>8} {'off_cpu':>8} {'lg_cpu':>8} {'cpu/best':>8} "
              + (f"{'base_cpu':>8} " if a.baseline else "")
              + f"{'auto/off':>8} {'on/off':>7} {'peer_s':>7} {'auto/peer':>9}")
    print(header)
    print("-" * len(header))
    for g in a.graphs.split(","):
        path = os.path.join(a.datasets, "graphs", g + ".el")
        for name, edges in expand(a.patterns, a.bin):
            base = ["count", "--graph", path, "--pattern", edges, "--threads", "2", "--graph-cache", cache]
            settings = {"auto": (a.bin, ["--formula", "auto"]), "on": (a.bin, ["--formula", "on"]),
                        "off": (a.bin, ["--formula", "off"])}
            if is_clique(edges):
                settings["lg_on"] = (a.bin, ["--local-graph", "on"])
                settings["lg_off"] = (a.bin, ["--local-graph", "off"])
            if a.baseline:
                settings["base"] = (a.baseline, ["--formula", "auto"])
            best = {}
            for _ in range(a.repeats):
                for f, (binary, extra) in settings.items():
                    r = run(binary, base + extra, a.timeout)
                    if r and (f not in best or (best[f] and r["match_cpu_s"] < best[f]["match_cpu_s"])):
                        best[f] = r
                    best.setdefault(f, None)
            counts = {r["count"] for r in best.values() if r}
            if len(counts) > 1:
                sys.exit(f"{name} on {g}: counts differ between formula settings: {counts}")
            t = {f: (r["time_s"] if r else None) for f, r in best.items()}
            cpu = {f: (r["match_cpu_s"] if r else None) for f, r in best.items()}
            forced = [cpu[f] for f in settings if f not in ("auto", "base") and cpu[f] is not None]
            slower = cpu["auto"] / min(forced) if cpu["auto"] is not None and forced and min(forced) > 0 else None
            if a.slower and (slower is None or slower <= a.slower) and cpu["auto"] is not None:
                continue
            fmt = lambda x: f"{x:.3f}" if x is not None else f">{a.timeout:g}"
            ratio = lambda x, y: (f"{x / y:.3f}" if x is not None and y else (f"<{x / a.timeout:.3f}" if x is not None else "-"))
            auto = best["auto"]["plan"]["formula"] if best["auto"] else "-"
            lg = min([cpu[f] for f in ("lg_on", "lg_off") if cpu.get(f) is not None], default=None)
            p = peer.get((name, g))
            print(f"{g:<12} {name:<11} {(counts.pop() if counts else '-'):>20} {auto:>19} {fmt(t['auto']):>8} "
                  f"{fmt(t['on']):>8} {fmt(t['off']):>8} {fmt(cpu['auto']):>8} {fmt(cpu['on']):>8} {fmt(cpu['off']):>8} "
                  f"{(fmt(lg) if 'lg_on' in settings else '-'):>8} {(f'{slower:.2f}' if slower else '-'):>8} "
                  + (f"{fmt(cpu['base']):>8} " if a.baseline else "")
                  + f"{ratio(t['auto'], t['off']):>8} {ratio(t['on'], t['off']):>7} {(f'{p:g}' if p else '-'):>7} "
                  f"{(ratio(t['auto'], p) if p else '-'):>9}", flush=True)
    print(f"\nauto/off, on/off: wall-time ratios of the same run ('<x': off passed the timeout, so the ratio is "
          f"below x); *_cpu: CPU seconds of the 2 threads (match_cpu_s; lg: the faster of --local-graph on/off); "
          f"cpu/best: auto_cpu over the fastest forced setting's; base_cpu: --baseline's auto. Load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

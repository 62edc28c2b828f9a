#!/usr/bin/env python3
"""Per-kernel GPU time from an Nsight Compute CSV (ncu --csv --metrics gpu__time_duration.sum ...):
sums each kernel's duration over its launches and prints the kernels by total time with their share.
Used by zpp_train_gpu.sh PROFILE=1 to see where a training step's time goes.
  gpu_kernel_profile.py NCU.csv [--top 25]"""
import argparse
import collections
import csv
import re
import sys

UNIT_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}


def short_name(name):
    """Kernel name without template arguments and parameter lists, at most 70 characters."""
    name = re.sub(r"\(.*", "", name)
    depth, out = 0, []
    for ch in name:
        depth += ch == "<"
        if depth == 0:
            out.append(ch)
        depth -= ch == ">"
    return "".join(out).strip()[:70]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    lines = open(args.csv, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        sys.exit(f"{args.csv}: no ncu CSV header (a line starting with \"ID\")")
    total_ns, count = collections.Counter(), collections.Counter()
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        name = short_name(row["Kernel Name"])
        total_ns[name] += value * UNIT_NS.get(row["Metric Unit"], 1.0)
        count[name] += 1
    grand = sum(total_ns.values())
    if grand == 0:
        sys.exit(f"{args.csv}: no gpu__time_duration.sum rows")
    print(f"{'kernel':<70} {'launches':>8} {'total ms':>9} {'share':>6}")
    for name, ns in total_ns.most_common(args.top):
        print(f"{name:<70} {count[name]:>8} {ns / 1e6:>9.2f} {100 * ns / grand:>5.1f}%")
    print(f"{'all kernels':<70} {sum(count.values()):>8} {grand / 1e6:>9.2f}")


if __name__ == "__main__":
    main()

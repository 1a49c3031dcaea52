#!/usr/bin/env python3
"""Per-kernel table of a profiled cuda_decode_bench run, from Nsight Compute's
raw CSV (deploy/gpu-check.sh, step `profile`):

    ncu --profile-from-start off --metrics gpu__time_duration.sum --csv --page raw \\
        cuda_decode_bench --profile --batches=1 --new_tokens=16 > b1.csv
    python3 deploy/gpu_profile_table.py b1.csv --json b1.json [--whole]

A decode run is cut into steps at each SampleKernel launch (one per engine
step); the table is the median step's kernels (after dropping the first two
steps: the prefill and the first decode), grouped by name, grid and block,
with the step's time split into GEMM, attention and everything else (issue
22's target for the rest: <= 120 us a step at batch 1). `--whole` sums the
whole capture instead (a prefill run). Times are GPU time per launch, the
gaps between launches not included."""
import argparse
import collections
import csv
import io
import json
import re
import statistics
import sys

GEMM = re.compile(r"nvjet|gemm|Gemm|cutlass|sm90_xmma|splitKreduce|GemvSmallM|gemv", re.I)
ATTENTION = re.compile(r"Decode|Prefill|FlashDecode|Merge", re.I)
STEP_END = "SampleKernel"


def load(path):
    with open(path, errors="replace") as f:
        lines = [line for line in f if line.startswith('"')]
    rows = list(csv.reader(io.StringIO("".join(lines))))
    if len(rows) < 3:
        return []
    header = rows[0]
    name, time_ns = header.index("Kernel Name"), header.index("gpu__time_duration.sum")
    grid, block = header.index("Grid Size"), header.index("Block Size")
    launches = []
    for row in rows[2:]:  # rows[1] holds the units
        try:
            ns = float(row[time_ns].replace(",", ""))
        except ValueError:
            continue
        launches.append((short(row[name]), ns / 1e3, row[grid], row[block]))
    return launches


def short(name):
    name = re.sub(r"^void ", "", name).replace("(anonymous namespace)::", "")
    name = re.sub(r"\(.*", "", name)  # argument lists
    return name.replace("kvserve::", "")[:90]


def category(name):
    if GEMM.search(name):
        return "gemm"
    if ATTENTION.search(name):
        return "attention"
    return "other"


def table(launches):
    kernels = collections.OrderedDict()
    for name, us, grid, block in launches:
        entry = kernels.setdefault((name, grid, block), [0, 0.0])
        entry[0] += 1
        entry[1] += us
    rows = [{"kernel": n, "grid": g, "block": b, "launches": c, "us": round(t, 2),
             "us_each": round(t / c, 2), "category": category(n)}
            for (n, g, b), (c, t) in kernels.items()]
    rows.sort(key=lambda r: -r["us"])
    split = collections.Counter()
    for r in rows:
        split[r["category"]] += r["us"]
    return rows, {k: round(v, 1) for k, v in split.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv")
    parser.add_argument("--json")
    parser.add_argument("--whole", action="store_true", help="sum the whole capture (prefill)")
    args = parser.parse_args()
    launches = load(args.csv)
    if not launches:
        print(f"{args.csv}: no kernel rows (did ncu run? see its log)")
        return 1
    report = {"launches": len(launches)}
    if args.whole:
        segment = launches
    else:
        ends = [i for i, launch in enumerate(launches) if launch[0].endswith(STEP_END)]
        steps = [launches[a + 1:b + 1] for a, b in zip([-1] + ends, ends)][2:]
        if not steps:
            print(f"{args.csv}: fewer than 3 steps ({len(ends)} {STEP_END} launches)")
            return 1
        totals = [sum(l[1] for l in s) for s in steps]
        median = statistics.median(totals)
        segment = min(steps, key=lambda s: abs(sum(l[1] for l in s) - median))
        report.update(steps=len(steps), step_us_median=round(median, 1),
                      step_us_min=round(min(totals), 1), step_us_max=round(max(totals), 1))
    rows, split = table(segment)
    total = sum(r["us"] for r in rows)
    report.update(total_us=round(total, 1), split_us=split, kernels=rows)
    what = "whole capture" if args.whole else f"median step of {report['steps']}"
    print(f"{args.csv}: {what}: {len(segment)} launches, {total:.1f} us "
          f"(gemm {split.get('gemm', 0):.1f}, attention {split.get('attention', 0):.1f}, "
          f"other {split.get('other', 0):.1f})")
    for r in rows:
        print(f"  {r['kernel']:70s} grid={r['grid']:14s} block={r['block']:12s} "
              f"n={r['launches']:4d} {r['us']:9.1f} us ({r['us_each']:7.2f} each) {r['category']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Two fold runs side by side on the benchmark seeds, run by run: the share of held-out runs at
or above each cell's bar (random sampling's median on the same seeds and, where Kernel Tuner ran,
its best median - 0.01), over all nineteen spaces and over Kernel Tuner's ten older ones, per
budget. The medians' table of strategy-folds.py says which cells pass; this says how many runs
do, so that a change of default is judged on every run, not only on cells that are coin tosses.

  python3 scripts/kt/folds-share.py NEW/results.json.gz OLD/results.json.gz [--fold by_gpu]
"""

import argparse
import gzip
import json
import statistics

OLDER = [
    "gemm_RTX_2080_Ti", "gemm_RTX_3090", "convolution_RTX_2080_Ti",
    "convolution_RTX_3060_laptop", "convolution_RTX_3090", "convolution_RTX_Titan",
    "pnpoly_RTX_2080_Ti", "pnpoly_RTX_3060_laptop", "pnpoly_RTX_3090", "pnpoly_RTX_Titan",
]


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return {(r["fold"], r["space"], int(r["budget"])): r for r in json.load(f)}


def bar(r):
    b = statistics.median(r["random"])
    if r["kt_median"] is not None:
        b = max(b, r["kt_median"] - 0.01)
    return b


def share(rows, keys):
    hit = sum(sum(f >= bar(rows[k]) for f in rows[k]["fractions"]) for k in keys)
    runs = sum(len(rows[k]["fractions"]) for k in keys)
    return hit, runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("new")
    ap.add_argument("old")
    ap.add_argument("--fold", default="by_gpu", choices=["by_gpu", "by_kernel"])
    a = ap.parse_args()
    new, old = load(a.new), load(a.old)
    keys = sorted(k for k in new if k[0] == a.fold)
    missing = [k for k in keys if k not in old]
    if missing:
        raise SystemExit(f"{a.old} lacks {len(missing)} cells, e.g. {missing[:2]}")
    budgets = sorted({k[2] for k in keys})
    print(f"Held-out runs at or above their cell's bar, {a.fold}: new ({a.new}) / old ({a.old})\n")
    print("| spaces | budget | new | old |")
    print("|---|---|---|---|")
    for name, spaces in (("all nineteen", None), ("Kernel Tuner's ten older", OLDER)):
        for b in [None, *budgets]:
            ks = [k for k in keys if (spaces is None or k[1] in spaces) and (b is None or k[2] == b)]
            (nh, nr), (oh, orr) = share(new, ks), share(old, ks)
            print(f"| {name} | {b or 'all'} | {nh / nr:.3f} ({nh}/{nr}) | {oh / orr:.3f} ({oh}/{orr}) |")


if __name__ == "__main__":
    main()

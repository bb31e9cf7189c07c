#!/usr/bin/env python3
"""Which of issue 49's cells are coin tosses: for each candidate setting of `surrogate`, the share
of runs that clear each cell's bar, on tuning seeds only (never the benchmark seeds 0-24), weakest
cells first. A cell's median passes when more than half of its runs clear the bar, so a cell whose
share is near 0.5 passes or fails by the draw of the benchmark seeds; a change that lifts one such
cell and lowers another has moved nothing.

  python3 scripts/kt/cell-shares.py SETTINGS... [--first 1000] [--seeds 48] [--cells all|kt]
      [--space NAME ...] [--out DIR] [--jobs 2]

SETTINGS are `replay --settings` texts ("" is the default). A cell is a space and a budget; its bar
is strategy-folds.py's: random sampling's median on the same seeds, and at 50/100/200 also Kernel
Tuner's best median - 0.01. Replays are kept in OUT/runs.jsonl (strategy-folds.py's cache) and
reused. Prints, per setting, the mean share over the cells, how many Kernel Tuner cells are below
0.5 and 0.6, and the weakest seven.
"""
import argparse
import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def folds_module():
    spec = importlib.util.spec_from_file_location("strategy_folds",
                                                  os.path.join(HERE, "strategy-folds.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("settings", nargs="+")
    ap.add_argument("--first", type=int, default=1000)
    ap.add_argument("--seeds", type=int, default=48)
    ap.add_argument("--space", action="append", help="only these spaces (default: all nineteen)")
    ap.add_argument("--cells", choices=["all", "kt"], default="kt",
                    help="the cells ranked: every budget, or Kernel Tuner's (50/100/200)")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "cell-shares"))
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "kt-spaces"))
    ap.add_argument("--gputune")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    sf = folds_module()
    folds = json.load(open(os.path.join(HERE, "folds.json")))
    bench = folds["benchmark_seeds"]
    if a.first < bench["first"] + bench["count"] and a.first + a.seeds > bench["first"]:
        ap.error("--first/--seeds overlap the benchmark seeds: tuning seeds only")
    every = sorted({s for g in folds["by_gpu"].values() for s in g})
    spaces = a.space or every
    unknown = sorted(set(spaces) - set(every))
    if unknown:
        ap.error(f"not one of the nineteen spaces: {', '.join(unknown)}")
    budgets, kt_budgets = folds["budgets"], folds["kt_budgets"]
    gputune = sf.find_gputune(a.gputune)
    dbs = os.path.join(a.out, "dbs")
    sf.import_spaces(gputune, a.data, spaces, dbs)
    runs = sf.Runs(gputune, dbs, os.path.join(a.out, "runs.jsonl"), budgets, a.jobs)
    kt = sf.kt_best(sf.KT_DEFAULT, set(spaces), kt_budgets)
    n = a.seeds
    runs.ensure([(s, "random", "", a.first, n) for s in spaces]
                + [(s, "surrogate", c, a.first, n) for s in spaces for c in a.settings])
    rand = {s: runs.get(s, "random", "", a.first, n) for s in spaces}
    bars = {s: sf.bars(s, rand, kt, budgets, kt_budgets) for s in spaces}
    ranked = budgets if a.cells == "all" else kt_budgets
    for c in a.settings:
        shares, cells = [], []
        for s in spaces:
            bar = bars[s]
            got = runs.get(s, "surrogate", c, a.first, n)
            for b in budgets:
                share = sum(x >= bar[b] for x in got[b]) / n
                shares.append(share)
                if b in ranked:
                    cells.append((share, s, b, sf.median(got[b]), bar[b]))
        cells.sort()
        print(f"[{c or 'default'}] seeds {a.first}-{a.first + n - 1}: mean share "
              f"{sum(shares) / len(shares):.4f}; cells below 0.5: "
              f"{sum(x[0] < 0.5 for x in cells)}, below 0.6: {sum(x[0] < 0.6 for x in cells)} "
              f"of {len(cells)}")
        for share, s, b, med, bar in cells[:7]:
            print(f"  {share:.2f}  {s} at {b}: median {med:.3f}, bar {bar:.3f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The local optima of a brute-forced Kernel Tuner space, for issue 25's analysis of where guided
strategies stall (docs/strategies.md, "Session 15").

  python3 scripts/kt/kt-local-optima.py gemm_RTX_2080_Ti [--data ../shared/data/kt-spaces] [--top 14]

Prints, for the best local optima under one-parameter moves (best first): the fraction of the
optimum, the share of the space whose steepest-ascent climb ends there (its basin), and, for its
moves of two and three parameters each one value along, how many are points of the space and the
best fractions among those better than it.
"""
import argparse
import collections
import gzip
import itertools
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
a = argparse.ArgumentParser()
a.add_argument("space")
a.add_argument("--data", default=os.path.join(HERE, "..", "..", "..", "shared", "data", "kt-spaces"))
a.add_argument("--top", type=int, default=14)
args = a.parse_args()
d = json.load(gzip.open(os.path.join(args.data, args.space + ".json.gz")))
tp = d["tune_params"]; names = list(tp.keys())
pts = {}
for k, e in d["cache"].items():
    t = e["time"]
    if isinstance(t, (int, float)):
        idx = tuple([str(x) for x in tp[n]].index(v) for n, v in zip(names, k.split(",")))
        pts[idx] = t
best = min(pts.values())
frac = {p: best / t for p, t in pts.items()}
def nbrs1(p):
    for i in range(len(p)):
        for v in range(len(tp[names[i]])):
            if v != p[i]:
                q = p[:i] + (v,) + p[i+1:]
                if q in frac: yield q
def climb(p):
    while True:
        nb = max(nbrs1(p), key=lambda q: frac[q], default=p)
        if frac[nb] <= frac[p]: return p
        p = nb
basin = collections.Counter(climb(p) for p in frac)
locs = sorted(basin, key=lambda p: -frac[p])
for p in locs[:args.top]:
    f = frac[p]
    out = []
    for k in (2, 3):
        cnt = 0; better = []
        for idxs in itertools.combinations(range(len(p)), k):
            for signs in itertools.product((-1, 1), repeat=k):
                q = list(p)
                for i, s in zip(idxs, signs): q[i] += s
                q = tuple(q)
                if q in frac:
                    cnt += 1
                    if frac[q] > f: better.append(round(frac[q], 3))
        out.append((k, cnt, sorted(better, reverse=True)[:3]))
    print(round(f, 3), f"basin {basin[p]/len(frac):.3f}", out)

#!/usr/bin/env python3
"""How often a best-improvement hill climb over one-parameter moves reaches the optimum (within
0.02) from a random start, over a whole space and within each niche (the points with one value
of one parameter); issue 49's case for the niche rounds of `surrogate` (docs/strategies.md).

  python3 scripts/kt/kt-niche-climb.py convolution_milo_W6600 [--starts 60] [--data DIR]
"""
import argparse
import gzip
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("space")
    ap.add_argument("--starts", type=int, default=60)
    ap.add_argument("--data", default=os.path.join(HERE, "..", "..", "..", "shared", "data", "kt-spaces"))
    a = ap.parse_args()
    with gzip.open(os.path.join(a.data, a.space + ".json.gz"), "rt") as f:
        d = json.load(f)
    keys, tp = d["tune_params_keys"], d["tune_params"]
    vals = [tp[k] for k in keys]
    pts = {}
    for k, v in d["cache"].items():
        t = v.get("time")
        pts[tuple(json.loads(x) if x.lstrip("-").replace(".", "", 1).isdigit() else x
                  for x in k.split(","))] = 1.0 / t if isinstance(t, (int, float)) and t > 0 else 0.0
    best = max(pts.values())

    def climb(c, ok):
        while True:
            nb = [c[:i] + (v,) + c[i + 1:] for i in range(len(c)) for v in vals[i] if v != c[i]]
            nb = [n for n in nb if n in pts and ok(n)]
            m = max(nb, key=lambda n: pts[n], default=None)
            if m is None or pts[m] <= pts[c]:
                return c
            c = m

    rng = random.Random(1)
    every = list(pts)

    def share(ok):
        starts = [c for c in every if ok(c)]
        hits = sum(pts[climb(rng.choice(starts), ok)] >= 0.98 * best for _ in range(a.starts))
        return hits / a.starts, max(pts[c] for c in starts) / best

    s, _ = share(lambda c: True)
    print(f"{a.space}: whole space, {s:.0%} of {a.starts} climbs reach 0.98 of the optimum")
    for i, k in enumerate(keys):
        if len(vals[i]) < 2:
            continue
        for v in vals[i]:
            s, top = share(lambda c, i=i, v=v: c[i] == v)
            print(f"  {k}={v}: {s:.0%} (the niche's best {top:.3f})")


if __name__ == "__main__":
    main()

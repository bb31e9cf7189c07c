#!/usr/bin/env python3
"""Summarises gpu-autotune.sh's output directory as markdown for BENCHMARKS.md."""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"- cannot read {path}: {e}")
        return None


print("### Runtime autotuner (stencil, 4096×4096 Jacobi sweeps)\n")
print("| run | launches | chosen block | non-optimal time share | total time (s) | started tuned |")
print("|---|---|---|---|---|---|")
runs = sorted(p for p in glob.glob(os.path.join(out, "autotune-*.json"))
              if not p.endswith("autotune-cache.json"))
shares = []
for path in runs:
    d = load(path)
    if d is None:
        continue
    name = os.path.basename(path)[len("autotune-"):-len(".json")]
    share = d.get("non_optimal_share")
    if name != "cached" and share is not None:
        shares.append(share)
    print(f"| {name} | {d.get('launches')} | {d.get('chosen')} | "
          f"{share * 100 if share is not None else float('nan'):.4f} % | "
          f"{d.get('total_time_s', float('nan')):.3f} | {d.get('started_tuned')} |")
if shares:
    print(f"\nMedian non-optimal share over fresh runs: {statistics.median(shares) * 100:.4f} %\n")
for path in runs:
    d = load(path)
    if d and "reference" in d:
        print(f"- {os.path.basename(path)}: reference {json.dumps(d['reference'])}")

print("\n### The same kernel under #[tune], `run-bundle` (32 block sizes)\n")
print("| search | wall (s) | winner | score | winner median (µs) | base median (µs) | noise |")
print("|---|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(out, "search-*.json"))):
    d = load(path)
    if not d or not d.get("groups"):
        continue
    r = os.path.basename(path)[len("search-"):-len(".json")]
    try:
        with open(os.path.join(out, f"search-{r}.wall")) as f:
            start, end = map(float, f.read().split())
        wall = end - start
    except (OSError, ValueError):
        wall = float("nan")
    variants = d["groups"][0]["variants"]
    ok = [v for v in variants if v.get("score") is not None and v["variant"] != "base"]
    base = next((v for v in variants if v["variant"] == "base"), None)
    if not ok:
        print(f"| {r} | {wall:.1f} | none | | | | |")
        continue
    w = ok[0]
    wc = w["workloads"][0]
    bc = base["workloads"][0] if base else {}
    print(f"| {r} | {wall:.1f} | {w['variant']} | {w['score']:.4f} | "
          f"{wc.get('center', float('nan')) * 1e6:.2f} | {bc.get('center', float('nan')) * 1e6:.2f} | "
          f"{(wc.get('noise') or float('nan')) * 100:.2f} % |")
    print("\n  top 5: " + ", ".join(
        f"{v['variant']} {v['workloads'][0].get('center', float('nan')) * 1e6:.2f} µs" for v in ok[:5]))

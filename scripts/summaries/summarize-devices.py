#!/usr/bin/env python3
"""Summarises gpu-devices.sh's folder: per search, the wall times of one GPU and of several (each
run, median, spread), the speed-up of the medians, and each run's winner with its score; the
several-GPU winner's score in the one-GPU stores, beside their own winner's (same winner, or how
far apart), and what the fault run did.

    python3 scripts/summaries/summarize-devices.py OUT
"""

import json
import re
import statistics
import sys
from pathlib import Path


def times(out):
    t = {}
    for line in (out / "times.txt").read_text().splitlines():
        m = re.match(r"(\S+) exit=(\d+) wall_s=([\d.]+)", line)
        if m:
            t[m.group(1)] = (int(m.group(2)), float(m.group(3)))
    return t


def variants(path):
    """{variant: (score, samples, status)} of a report --format json, and its winner."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}, None
    groups = doc.get("groups") or []
    if not groups:
        return {}, None
    vs = {}
    winner = None
    # The report ranks best first, and never a screened-out variant above one measured further.
    for v in groups[0]["variants"]:
        vs[v["variant"]] = (v.get("score"), v.get("status"))
        if winner is None and v["variant"] != "base" and v.get("score") is not None \
                and v.get("status") == "ok":
            winner = v["variant"]
    return vs, winner


def stored(out, name):
    log = out / f"{name}.log"
    try:
        text = log.read_text()
    except OSError:
        return None
    m = re.search(r"(\d+) result\(s\) stored", text)
    return int(m.group(1)) if m else None


def main():
    out = Path(sys.argv[1])
    t = times(out)
    # The runs over several GPUs are named NAME-Ngpu-I (gpu-devices.sh's DEVICES).
    n = max([int(m.group(1)) for k in t for m in [re.search(r"-(\d+)gpu-", k)] if m] + [2])
    print(f"| search | 1 GPU: runs (s) | median | {n} GPUs: runs (s) | median | speed-up | winners (1 GPU / {n} GPUs) | {n}-GPU winner in the 1-GPU stores |")
    print("|---|---|---|---|---|---|---|---|")
    for name in ["sgemm", "histogram", "large", "guided"]:
        one = [t.get(f"{name}-1gpu-{i}") for i in (1, 2, 3)]
        two = [t.get(f"{name}-{n}gpu-{i}") for i in (1, 2, 3)]
        if not any(one) and not any(two):
            continue
        fmt = lambda runs: ", ".join(
            f"{w:.2f}" + ("" if rc == 0 else f" (exit {rc})") for rc, w in filter(None, runs)
        )
        med = lambda runs: statistics.median([w for rc, w in filter(None, runs)]) if any(runs) else float("nan")
        m1, m2 = med(one), med(two)
        w1 = [variants(out / f"{name}-1gpu-{i}.report.json") for i in (1, 2, 3)]
        w2 = [variants(out / f"{name}-{n}gpu-{i}.report.json") for i in (1, 2, 3)]
        winners = "; ".join(str(w) for _, w in w1) + " / " + "; ".join(str(w) for _, w in w2)
        # The 2-GPU winners, scored in each 1-GPU store, against that store's own winner.
        rel = []
        for _, w in w2:
            for vs, own in w1:
                if w and own and w in vs and vs[w][0] and vs[own][0]:
                    rel.append(vs[w][0] / vs[own][0])
        within = f"{min(rel):.4f}–{max(rel):.4f} of the 1-GPU winner's score" if rel else "n/a"
        print(f"| {name} | {fmt(one)} | {m1:.2f} | {fmt(two)} | {m2:.2f} | {m1 / m2:.2f}× | {winners} | {within} |")
    print()
    for name in ["sgemm", "histogram", "large", "guided"]:
        counts = [stored(out, f"{name}-{n}gpu-{i}") for i in (1, 2, 3)]
        if any(c is not None for c in counts):
            print(f"- {name}: results stored by the three {n}-GPU runs (each into a new store): {counts}")
    if (out / "fault.log").exists():
        rc, w = t.get("fault", (None, None))
        log = (out / "fault.log").read_text()
        vs, winner = variants(out / "fault.report.json")
        statuses = {}
        for _, (s, st) in vs.items():
            statuses[st] = statuses.get(st, 0) + 1
        print(f"- fault: exit {rc}, {w} s; winner {winner}; statuses {statuses}")
        for line in log.splitlines():
            if "warning" in line or "GPU " in line or "Done" in line or "measured again" in line:
                print(f"  - {line.strip()}")


main()

#!/usr/bin/env python3
"""Summarises a gpu-search.sh folder as markdown: per search run its wall time, statuses, how
many variants lost the race, samples taken, the winner and its time, noise and bandwidth; then
across runs the median wall time, whether the winners agree within the reported noise, how far
each winner is from the best time any run (or a reference search) found, and, where the folder
holds them, the bandwidth roof (copy-*.json) and a reference time (reference.json).

  python3 summarize-search.py DIR [--reference-search DIR2] [--title TEXT]

Reads the SQLite stores (search-*.db) and reports (search-*.report.json) directly."""
import argparse
import glob
import json
import os
import re
import sqlite3
import statistics


def summary(doc, tag):
    out = []
    for b in doc["benchmarks"]:
        for st in b["states"]:
            for s in st["summaries"]:
                if s["tag"] == tag:
                    out.append(float(s["data"][0]["value"]))
    return out


def roof(folder):
    rates, times = [], []
    for path in sorted(glob.glob(os.path.join(folder, "copy-*.json"))):
        try:
            doc = json.load(open(path))
        except (OSError, ValueError):
            continue
        rates += summary(doc, "nv/cold/bw/global/bytes_per_second")
        times += summary(doc, "nv/cold/time/gpu/median")
    return rates, times


def runs(folder):
    """[(name, exit, wall)] from times.txt, in order."""
    out = []
    path = os.path.join(folder, "times.txt")
    if os.path.exists(path):
        for line in open(path):
            m = re.match(r"(\S+) exit=(\d+) wall_s=([\d.]+)", line)
            if m:
                out.append((m.group(1), int(m.group(2)), float(m.group(3))))
    return out


def load(folder, name):
    """One run: rows by variant from the store, and the winner from the report."""
    db = os.path.join(folder, f"{name}.db")
    rows = {}
    if os.path.exists(db):
        con = sqlite3.connect(db)
        for variant, status, center, noise, bw, samples, message in con.execute(
                "SELECT variant, status, center, noise, bandwidth, samples, message FROM results"):
            r = rows.setdefault(variant, [])
            r.append(dict(status=status, center=center, noise=noise, bandwidth=bw,
                          samples=len(json.loads(samples)), raced=bool(message and message.startswith("raced"))))
        con.close()
    winner = None
    try:
        groups = json.load(open(os.path.join(folder, f"{name}.report.json")))["groups"]
        scored = [v for g in groups for v in g["variants"]
                  if v["variant"] != "base" and v["status"] == "ok" and v["score"] is not None]
        # The report lists each group's variants as `report` ranks them (a deciding search's
        # screened variants never above one measured further, whatever their score against
        # the control of their own process): its first scored one is the winner.
        if scored:
            winner = scored[0]
    except (OSError, ValueError, KeyError):
        pass
    return rows, winner


def fmt_time(s):
    return f"{s * 1e6:.2f} us" if s is not None else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--reference-search", help="a folder whose searches also count for 'best time found'")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    folder = a.folder
    if a.title:
        print(f"### {a.title}\n")
    rates, copy_times = roof(folder)
    roof_rate = statistics.median(rates) if rates else None
    if rates:
        print(f"Copy roof (cold, entropy, bytes read + written): median {roof_rate / 1e12:.3f} TB/s over "
              f"{len(rates)} run(s) [{min(rates) / 1e12:.3f}, {max(rates) / 1e12:.3f}], "
              f"median time {fmt_time(statistics.median(copy_times))}\n")
    reference = None
    ref_path = os.path.join(folder, "reference.json")
    if os.path.exists(ref_path):
        reference = json.load(open(ref_path))
        print(f"Reference: {reference['name']}: median {fmt_time(statistics.median(reference['median_s']))} "
              f"over {len(reference['median_s'])} run(s) "
              f"[{fmt_time(min(reference['median_s']))}, {fmt_time(max(reference['median_s']))}]\n")

    all_runs = [(folder, n, rc, w) for n, rc, w in runs(folder)]
    if a.reference_search:
        all_runs += [(a.reference_search, n, rc, w) for n, rc, w in runs(a.reference_search)]
    loaded = {(f, n): load(f, n) for f, n, _, _ in all_runs}
    best_any = min((r["center"] for rows, _ in loaded.values() for v, rs in rows.items() if v != "base"
                    for r in rs if r["status"] == "ok" and r["center"]), default=None)

    print("| run | exit | wall | ok / variants | other statuses | raced | samples | winner | winner time | noise | winner / best found | bandwidth | of copy roof |"
          + (" winner / reference |" if reference else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if reference else ""))
    winners = []
    for f, name, rc, wall in all_runs:
        rows, winner = loaded[(f, name)]
        label = name if f == folder else f"{os.path.basename(f.rstrip('/'))}/{name}"
        vs = {v: rs for v, rs in rows.items() if v != "base"}
        statuses = {}
        for rs in vs.values():
            st = "ok" if all(r["status"] == "ok" for r in rs) else rs[0]["status"]
            statuses[st] = statuses.get(st, 0) + 1
        ok = statuses.pop("ok", 0)
        raced = sum(1 for rs in vs.values() if any(r["raced"] for r in rs))
        samples = sum(r["samples"] for rs in rows.values() for r in rs)
        other = ", ".join(f"{k} {n}" for k, n in sorted(statuses.items())) or "none"
        if winner:
            w = rows.get(winner["variant"], [{}])[0]
            center, noise, bw = w.get("center"), w.get("noise"), w.get("bandwidth")
            if f == folder:
                winners.append((name, winner["variant"], center, noise))
            cells = [winner["variant"], fmt_time(center), f"{noise * 100:.2f} %" if noise else "-",
                     f"{center / best_any:.4f}" if center and best_any else "-",
                     f"{bw / 1e12:.3f} TB/s" if bw else "-",
                     f"{bw / roof_rate * 100:.1f} %" if bw and roof_rate else "-"]
            if reference:
                cells.append(f"{center / statistics.median(reference['median_s']):.4f}" if center else "-")
        else:
            cells = ["-"] * (7 if reference else 6)
        print(f"| {label} | {rc} | {wall:.2f} s | {ok} / {len(vs)} | {other} | {raced} | {samples} | " + " | ".join(cells) + " |")

    searches = [w for n, _, w in runs(folder) if re.fullmatch(r"search-\d+", n)]
    if searches:
        print(f"\nMedian wall time of the {len(searches)} search run(s): {statistics.median(searches):.2f} s "
              f"[{min(searches):.2f}, {max(searches):.2f}].")
    timed = [w for w in winners if w[2]]
    if len(timed) > 1:
        centers = [w[2] for w in timed]
        spread = (max(centers) - min(centers)) / min(centers)
        noise = min(w[3] for w in timed if w[3])
        names = sorted({w[1] for w in timed})
        print(f"Winners: {', '.join(names)}; their times differ by {spread * 100:.3f} % "
              f"(smallest reported noise {noise * 100:.2f} %): "
              + ("less than the noise." if spread < noise else "NOT less than the noise."))
    if best_any and timed:
        worst = max(w[2] for w in timed) / best_any
        print(f"Best time any run found: {fmt_time(best_any)}; the slowest winner is {(worst - 1) * 100:.2f} % above it.")


if __name__ == "__main__":
    main()

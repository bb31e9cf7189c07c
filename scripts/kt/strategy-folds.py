#!/usr/bin/env python3
"""Issue 49's fold benchmark: every setting of the guided strategies chosen on some of the
nineteen community spaces and judged on the others, on a CPU, in one command.

  python3 scripts/kt/strategy-folds.py [--out DIR] [--jobs 2] [--gputune BIN]
      [--folds scripts/kt/folds.json] [--candidates scripts/kt/candidates.json]
      [--kt FILE.json.gz ...]

The procedure (docs/strategies.md, "Settings chosen on other spaces"):
1. Each space of ../shared/data/kt-spaces is imported into its own store (`cargo gputune import`).
2. Every candidate of candidates.json (a strategy and its settings, `replay --settings`) and
   gputune's `random` are replayed on every space with the tuning seeds of folds.json
   (`replay --batch-size 1 --max-evals 400 --format json`; a run's best-so-far curve gives its
   fraction of the optimum at every budget, no strategy seeing the budget).
3. For each fold (folds.json: leave one GPU out, leave one kernel out) and each strategy, a
   candidate is scored on the fold's training spaces by its share of runs that clear each cell's
   bar (a cell: a space and a budget of 25-400; its bar: random sampling's median, and at
   50/100/200 also Kernel Tuner's best median - 0.01), averaged over the cells. The incumbent
   (candidates.json's "incumbent") is kept unless a challenger's share exceeds it by more than z
   standard errors of the paired difference (units: a training space and a tuning seed; z the
   one-sided 5 % point, Bonferroni over the challengers); of the challengers that clear that
   margin, the largest share wins. The held-out spaces are never read. (Issue 49's third
   session; before it, the fewest cells whose median failed its bar.)
4. Each held-out space is reported with its fold's chosen settings on the benchmark seeds (0-24):
   median, quartiles, the share of seeds within 0.01 of the optimum, against random sampling's
   median on the same seeds and Kernel Tuner's best median (its eleven strategies, each seed run
   under each value order, pooled: order-neutral; from --kt, kept runs of strategy-vs-kt.py).
5. The default: the candidate chosen on all nineteen spaces, which the code must ship.

Replays are kept in OUT/runs.jsonl, keyed by the binary's digest, space, strategy, settings and
seeds; a rerun reuses them. --carry FILE (an earlier run's runs.jsonl or runs.jsonl.gz) adopts
that run's replays under this binary's digest once a check passes: for each strategy and settings
in FILE, the first two seeds of its fastest replay are run again with this binary and must give
the same fractions, else the script stops. Writes OUT/table.md, OUT/chosen.json, OUT/results.json
and an SVG per space, and prints the table.
"""
import argparse
import gzip
import hashlib
import json
import math
import os
import subprocess
import sys
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KT_DEFAULT = [os.path.join(ROOT, "benchmarks", "2026-11-27-strategy-vs-kt-both", "results.json.gz"),
              os.path.join(ROOT, "benchmarks", "2026-11-28-strategy-folds", "kt-milo.json.gz")]
MAX_EVALS = 400
WITHIN = 0.01


def quartiles(v):
    v = sorted(v)
    if not v:
        return [math.nan] * 3

    def at(q):
        x = q * (len(v) - 1)
        lo, hi = math.floor(x), math.ceil(x)
        return v[lo] + (v[hi] - v[lo]) * (x - lo)
    return [at(0.25), at(0.5), at(0.75)]


def median(v):
    return quartiles(v)[1]


def find_gputune(given):
    if given:
        return given
    for d in [os.environ.get("CARGO_TARGET_DIR", ""), os.path.join(ROOT, "target")]:
        for profile in ["release", "debug"]:
            p = os.path.join(d, profile, "cargo-gputune")
            if d and os.path.exists(p):
                return p
    sys.exit("no cargo-gputune binary: build one (cargo build --release -p cargo-gputune) or "
             "give --gputune BIN")


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def import_spaces(gputune, data, spaces, dbs):
    os.makedirs(dbs, exist_ok=True)
    for s in spaces:
        db = os.path.join(dbs, s + ".db")
        if os.path.exists(db):
            continue
        files = [os.path.join(data, s + ".json.gz")]
        t1 = os.path.join(data, s.split("_")[0] + ".T1.json")
        if os.path.exists(t1):
            files.append(t1)
        out = subprocess.run([gputune, "gputune", "import", *files, "--db", db + ".part"],
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"import of {s} failed: {out.stderr.strip()}")
        os.replace(db + ".part", db)


def at_budget(curve, budget):
    f = 0.0
    for e, v in curve:
        if e <= budget:
            f = v
    return f


class Runs:
    """Replays, kept in a JSON-lines file: (space, strategy, settings, first, seeds) -> one list
    of fractions per seed, one fraction per budget."""

    def __init__(self, gputune, dbs, path, budgets, jobs):
        self.gputune, self.dbs, self.path, self.budgets, self.jobs = gputune, dbs, path, budgets, jobs
        self.binary = digest(gputune)
        self.kept = {}
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    r = json.loads(line)
                    self.kept[self.key(r["space"], r["strategy"], r["settings"], r["first"],
                                       r["seeds"], r["binary"])] = r["fractions"]

    def key(self, space, strategy, settings, first, seeds, binary=None):
        return (binary or self.binary, space, strategy, settings, first, seeds)

    def _one(self, task):
        space, strategy, settings, first, seeds = task
        t = time.time()
        cmd = ["nice", "-n", "10", self.gputune, "gputune", "replay", "--db",
               os.path.join(self.dbs, space + ".db"), "--strategy", strategy, "--seed", str(first),
               "--seeds", str(seeds), "--max-evals", str(MAX_EVALS), "--batch-size", "1",
               "--format", "json", "--settings", settings]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"replay {space} {strategy} {settings}: {out.stderr.strip()}")
        runs = json.loads(out.stdout)["functions"][0]["runs"]
        fr = [[at_budget(r["curve"], b) for b in self.budgets] for r in runs]
        return task, fr, time.time() - t

    def ensure(self, tasks):
        todo = [t for t in dict.fromkeys(tasks) if self.key(*t) not in self.kept]
        if not todo:
            return
        print(f"  {len(todo)} replays to run ({len(tasks) - len(todo)} kept)", file=sys.stderr)
        with ThreadPoolExecutor(self.jobs) as ex, open(self.path, "a") as log:
            for (space, strategy, settings, first, seeds), fr, sec in ex.map(self._one, todo):
                self.kept[self.key(space, strategy, settings, first, seeds)] = fr
                log.write(json.dumps({"binary": self.binary, "space": space, "strategy": strategy,
                                      "settings": settings, "first": first, "seeds": seeds,
                                      "budgets": self.budgets, "seconds": round(sec, 1),
                                      "fractions": fr}) + "\n")
                log.flush()
                print(f"  {space} {strategy} [{settings}] seeds {first}+{seeds}: {sec:.0f} s",
                      file=sys.stderr)

    def carry(self, path):
        """Adopts an earlier run's replays under this binary once a sample of them replays the
        same: per strategy and settings, the first two seeds of its fastest replay."""
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            old = [json.loads(line) for line in f]
        sample = {}
        for r in old:
            k = (r["strategy"], r["settings"])
            if r["budgets"] != self.budgets:
                sys.exit(f"--carry {path}: budgets {r['budgets']}, not {self.budgets}")
            if k not in sample or r["seconds"] < sample[k]["seconds"]:
                sample[k] = r
        checks = [(r["space"], r["strategy"], r["settings"], r["first"], min(2, r["seeds"]))
                  for r in sample.values()]
        with ThreadPoolExecutor(self.jobs) as ex:
            for (space, strategy, settings, first, n), fr, _ in ex.map(self._one, checks):
                want = sample[(strategy, settings)]["fractions"][:n]
                if fr != want:
                    sys.exit(f"--carry {path}: {space} {strategy} [{settings}] seeds {first}+{n} "
                             f"replay otherwise with this binary ({fr} against {want})")
        adopted = 0
        with open(self.path, "a") as log:
            for r in old:
                k = self.key(r["space"], r["strategy"], r["settings"], r["first"], r["seeds"])
                if k in self.kept:
                    continue
                self.kept[k] = r["fractions"]
                log.write(json.dumps({**r, "binary": self.binary, "carried_from": r["binary"]}) + "\n")
                adopted += 1
        print(f"  carried {adopted} replays from {path} ({len(checks)} checked, the same)",
              file=sys.stderr)

    def get(self, space, strategy, settings, first, seeds):
        """{budget: [fraction per seed]}."""
        fr = self.kept[self.key(space, strategy, settings, first, seeds)]
        return {b: [r[i] for r in fr] for i, b in enumerate(self.budgets)}


def kt_best(paths, spaces, budgets):
    """{(space, budget): (strategy, median, fractions)}: Kernel Tuner's best median, each
    strategy's runs under both value orders pooled."""
    cells = {}
    for p in paths:
        if not os.path.exists(p):
            print(f"  no Kernel Tuner runs at {p}", file=sys.stderr)
            continue
        with gzip.open(p, "rt") as f:
            for r in json.load(f):
                if not r["strategy"].startswith("kt ") or r["space"] not in spaces:
                    continue
                if r["budget"] not in budgets or not r["fractions"]:
                    continue
                m = median(r["fractions"])
                k = (r["space"], r["budget"])
                if k not in cells or m > cells[k][1]:
                    cells[k] = (r["strategy"][3:], m, r["fractions"])
    return cells


def bars(space, rand, kt, budgets, kt_budgets):
    """{budget: the bar a cell's runs are counted against}: random sampling's median, and at the
    Kernel Tuner budgets also Kernel Tuner's best median - 0.01."""
    out = {}
    for b in budgets:
        bar = median(rand[space][b])
        if b in kt_budgets and (space, b) in kt:
            bar = max(bar, kt[(space, b)][1] - WITHIN)
        out[b] = bar
    return out


def failed_cells(got, bar, budgets):
    """The cells whose median is below its bar (the first two sessions' score)."""
    return sum(median(got[b]) < bar[b] for b in budgets)


def cleared(got, bar, budgets):
    """Per seed, the share of the budgets at which the run is at or above the cell's bar."""
    n = len(got[budgets[0]])
    return [sum(got[b][i] >= bar[b] for b in budgets) / len(budgets) for i in range(n)]


def choose(cands, incumbent, training, tune, rand, kt, budgets, kt_budgets, alpha=0.05):
    """The incumbent unless a challenger clears more of the training cells' bars run by run by a
    margin: each candidate's share of runs at or above each cell's bar, averaged over the cells;
    a challenger must exceed the incumbent's share by more than z standard errors of the paired
    difference over (space, tuning seed) units, z the one-sided `alpha` point after Bonferroni
    over the challengers; of those that do, the largest share. Returns a dict with the choice and
    every candidate's share, margin and failed cells (the count the first two sessions chose by)."""
    names = [c["name"] for c in cands]
    if incumbent not in names:
        sys.exit(f"candidates.json: the incumbent {incumbent} is not a candidate")
    bar = {s: bars(s, rand, kt, budgets, kt_budgets) for s in training}
    units = {c: [u for s in training for u in cleared(tune[(c, s)], bar[s], budgets)] for c in names}
    fails = {c: sum(failed_cells(tune[(c, s)], bar[s], budgets) for s in training) for c in names}
    share = {c: sum(v) / len(v) for c, v in units.items()}
    challengers = [c for c in names if c != incumbent]
    z = statistics.NormalDist().inv_cdf(1 - alpha / max(1, len(challengers)))
    table, best = {}, (share[incumbent], incumbent, False)
    for c in names:
        row = {"share": round(share[c], 4), "failed_cells": fails[c]}
        if c != incumbent:
            d = [x - y for x, y in zip(units[c], units[incumbent])]
            se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else math.inf
            diff = sum(d) / len(d)
            row.update({"over_incumbent": round(diff, 4), "se": round(se, 4),
                        "clears_margin": diff > z * se})
            if diff > z * se and (not best[2] or share[c] > best[0]):
                best = (share[c], c, True)
        table[c] = row
    return {"candidate": best[1], "z": round(z, 3), "candidates": table}


def svg(path, title, budgets, curves):
    """curves: name -> {budget: (q1, median, q3)}; the default solid with its band, the bars
    dashed."""
    w, h, left, right, top, bottom = 760, 420, 70, 230, 40, 50
    lo = min([q[0] for c in curves.values() for q in c.values()] + [0.9])
    lo = max(0.0, math.floor(lo * 20) / 20)
    xs = [math.log2(b) for b in budgets]
    px = lambda b: left + (w - left - right) * ((math.log2(b) - min(xs)) / max(1e-9, max(xs) - min(xs)))
    py = lambda f: top + (h - top - bottom) * (1.0 - (f - lo) / max(1e-9, 1.0 - lo))
    palette = ["#d62728", "#1f77b4", "#7f7f7f", "#2ca02c", "#ff7f0e"]
    p = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
         f'font-family="sans-serif" font-size="11">', f'<rect width="{w}" height="{h}" fill="white"/>',
         f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="13">{title}</text>']
    for i in range(6):
        f = lo + (1.0 - lo) * i / 5
        p.append(f'<line x1="{left}" x2="{w - right}" y1="{py(f):.1f}" y2="{py(f):.1f}" stroke="#eee"/>'
                 f'<text x="{left - 6}" y="{py(f) + 4:.1f}" text-anchor="end">{f:.3f}</text>')
    for b in budgets:
        p.append(f'<text x="{px(b):.1f}" y="{h - bottom + 16}" text-anchor="middle">{b}</text>')
    p.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">'
             'evaluations (unique configurations, log scale)</text>')
    p.append(f'<text x="16" y="{(top + h - bottom) / 2}" text-anchor="middle" transform="rotate(-90 16 '
             f'{(top + h - bottom) / 2})">fraction of the optimum (median; band q1–q3)</text>')
    for k, (name, c) in enumerate(curves.items()):
        colour = palette[k % len(palette)]
        pts = [(b, c[b]) for b in budgets if b in c]
        if k == 0 and pts:
            band = [(px(b), py(q[2])) for b, q in pts] + [(px(b), py(q[0])) for b, q in reversed(pts)]
            p.append('<polygon points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in band)
                     + f'" fill="{colour}" fill-opacity="0.12" stroke="none"/>')
        dash = "" if k == 0 else ' stroke-dasharray="5 3"'
        p.append('<polyline points="' + " ".join(f"{px(b):.1f},{py(q[1]):.1f}" for b, q in pts)
                 + f'" fill="none" stroke="{colour}" stroke-width="{2.5 if k == 0 else 1.5}"{dash}/>')
        y = top + 10 + 17 * k
        p.append(f'<line x1="{w - right + 10}" x2="{w - right + 35}" y1="{y}" y2="{y}" stroke="{colour}" '
                 f'stroke-width="2"{dash}/><text x="{w - right + 40}" y="{y + 4}">{name}</text>')
    p.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(p) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "kt-spaces"))
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "strategy-folds"))
    ap.add_argument("--folds", default=os.path.join(HERE, "folds.json"))
    ap.add_argument("--candidates", default=os.path.join(HERE, "candidates.json"))
    ap.add_argument("--kt", nargs="*", default=KT_DEFAULT,
                    help="results.json.gz files of strategy-vs-kt.py --kt-value-order both")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--gputune")
    ap.add_argument("--carry", nargs="*", default=[],
                    help="earlier runs.jsonl(.gz) whose replays this binary adopts after a check")
    ap.add_argument("--tune-only", action="store_true",
                    help="replay the tuning seeds and print the choices, not the benchmark seeds")
    a = ap.parse_args()
    t0 = time.time()
    with open(a.folds) as f:
        folds = json.load(f)
    with open(a.candidates) as f:
        cands_doc = json.load(f)
    budgets, kt_budgets = folds["budgets"], folds["kt_budgets"]
    tune_seeds = (folds["tuning_seeds"]["first"], folds["tuning_seeds"]["count"])
    bench_seeds = (folds["benchmark_seeds"]["first"], folds["benchmark_seeds"]["count"])
    spaces = sorted({s for group in folds["by_gpu"].values() for s in group})
    kernel_spaces = sorted({s for group in folds["by_kernel"].values() for s in group})
    if spaces != kernel_spaces:
        sys.exit("folds.json: the GPU folds and the kernel folds hold different spaces")
    os.makedirs(a.out, exist_ok=True)
    gputune = find_gputune(a.gputune)
    dbs = os.path.join(a.out, "dbs")
    import_spaces(gputune, a.data, spaces, dbs)
    runs = Runs(gputune, dbs, os.path.join(a.out, "runs.jsonl"), budgets, a.jobs)
    for p in a.carry:
        runs.carry(p)
    kt = kt_best(a.kt, spaces, kt_budgets)
    missing = [(s, b) for s in spaces for b in kt_budgets if (s, b) not in kt]
    if missing:
        print(f"  Kernel Tuner's runs miss {len(missing)} cells, e.g. {missing[:3]}", file=sys.stderr)

    # 2. The tuning seeds: every candidate and random on every space.
    cands = cands_doc["candidates"]
    tasks = [(s, "random", "", *tune_seeds) for s in spaces]
    tasks += [(s, c["strategy"], c["settings"], *tune_seeds) for c in cands for s in spaces]
    runs.ensure(tasks)
    tune = {(c["name"], s): runs.get(s, c["strategy"], c["settings"], *tune_seeds)
            for c in cands for s in spaces}
    rand_tune = {s: runs.get(s, "random", "", *tune_seeds) for s in spaces}

    # 3. The choices: per fold, per strategy; and on all nineteen (the default).
    strategies = sorted({c["strategy"] for c in cands})
    by_name = {c["name"]: c for c in cands}
    chosen = {"folds": {}, "all": {}}
    incumbents = cands_doc.get("incumbent", {})

    def pick(st, training, held=None):
        mine = [c for c in cands if c["strategy"] == st]
        got = choose(mine, incumbents.get(st, mine[0]["name"]), training, tune, rand_tune, kt,
                     budgets, kt_budgets)
        row = {"candidate": got["candidate"], "settings": by_name[got["candidate"]]["settings"],
               "incumbent": incumbents.get(st, mine[0]["name"]), "z": got["z"],
               "training": got["candidates"]}
        if held is not None:
            row["held_out"] = held
        return row
    for kind in ["by_gpu", "by_kernel"]:
        for fold, held in folds[kind].items():
            training = [s for s in spaces if s not in held]
            for st in strategies:
                chosen["folds"].setdefault(kind, {}).setdefault(fold, {})[st] = pick(st, training, held)
    for st in strategies:
        chosen["all"][st] = pick(st, spaces)
    with open(os.path.join(a.out, "chosen.json"), "w") as f:
        json.dump(chosen, f, indent=1)

    def cell(ch):
        t = ch["training"]
        best = max((c for c in t if c != ch["incumbent"]), key=lambda c: t[c]["over_incumbent"],
                   default=None)
        text = f"{ch['candidate']} (share {t[ch['candidate']]['share']:.3f}"
        if best is not None:
            text += (f"; best challenger {best} {t[best]['over_incumbent']:+.3f} ± "
                     f"{t[best]['se']:.3f}, z {ch['z']:.2f}")
        return text + ")"
    lines = ["## Choices", "",
             "Each candidate's share of tuning runs at or above each training cell's bar, averaged over "
             "the cells; a challenger replaces the incumbent only when its share exceeds the incumbent's "
             "by more than z standard errors of the paired difference.", "",
             "| fold | held out | " + " | ".join(f"`{st}` chosen" for st in strategies) + " |",
             "|---|---|" + "---|" * len(strategies)]
    for kind in ["by_gpu", "by_kernel"]:
        for fold, ch in chosen["folds"][kind].items():
            lines.append(f"| {kind.replace('_', ' ')}: {fold} | {len(folds[kind][fold])} spaces | "
                         + " | ".join(cell(ch[st]) for st in strategies) + " |")
    lines.append("| all nineteen (the default) | – | " + " | ".join(
        cell(chosen["all"][st]) for st in strategies) + " |")
    lines.append("")
    for st in strategies:
        t = chosen["all"][st]["training"]
        lines += [f"On all nineteen spaces (`{st}`): share of runs clearing the bar / failed cells "
                  "(median below the bar, the first two sessions' score):", "",
                  "| candidate | share | over the incumbent ± SE | failed cells |", "|---|---|---|---|"]
        for c, r in t.items():
            over = (f"{r['over_incumbent']:+.4f} ± {r['se']:.4f}" + (" (clears)" if r["clears_margin"] else "")
                    if "over_incumbent" in r else "incumbent")
            lines.append(f"| {c} | {r['share']:.4f} | {over} | {r['failed_cells']} |")
        lines.append("")
    if a.tune_only:
        print("\n".join(lines))
        for c in cands:
            print(c["name"], " ".join(f"{s[:14]}:" + "/".join(f"{median(tune[(c['name'], s)][b]):.3f}" for b in budgets) for s in spaces))
        print(f"\nwall time {time.time() - t0:.0f} s", file=sys.stderr)
        return

    # 4. The benchmark seeds: each held-out space with its folds' choices, and random.
    default = cands_doc.get("guided", "surrogate")
    tasks = [(s, "random", "", *bench_seeds) for s in spaces]
    for kind in ["by_gpu", "by_kernel"]:
        for fold, ch in chosen["folds"][kind].items():
            for s in folds[kind][fold]:
                tasks += [(s, st, ch[st]["settings"], *bench_seeds) for st in strategies]
    runs.ensure(tasks)
    results, verdict = [], []
    lines += [f"Fraction of the optimum on the held-out spaces, gputune's benchmark seeds "
              f"{bench_seeds[0]}–{bench_seeds[0] + bench_seeds[1] - 1}: `{default}` with its fold's "
              "settings, median [q1, q3] and seeds within 0.01 of the optimum; random sampling's median "
              "(the same seeds); Kernel Tuner's best median (its strategies' runs under both value orders "
              "pooled) and that strategy.", ""]
    for kind in ["by_gpu", "by_kernel"]:
        lines += [f"## Held out {kind.replace('_', ' ')}", "",
                  "| space | budget | `" + default + "` | within 0.01 | random | Kernel Tuner's best | − random | − KT best |",
                  "|---|---|---|---|---|---|---|---|"]
        for fold, ch in chosen["folds"][kind].items():
            for s in folds[kind][fold]:
                got = runs.get(s, default, ch[default]["settings"], *bench_seeds)
                rnd = runs.get(s, "random", "", *bench_seeds)
                curves = {f"gputune {default} ({ch[default]['candidate']})": {},
                          "gputune random": {}, "Kernel Tuner's best": {}}
                for b in budgets:
                    q1, m, q3 = quartiles(got[b])
                    near = sum(v >= 1.0 - WITHIN for v in got[b])
                    r = median(rnd[b])
                    k = kt.get((s, b))
                    curves[f"gputune {default} ({ch[default]['candidate']})"][b] = (q1, m, q3)
                    curves["gputune random"][b] = tuple(quartiles(rnd[b]))
                    if k:
                        curves["Kernel Tuner's best"][b] = tuple(quartiles(k[2]))
                    dk = f"{m - k[1]:+.3f}" if k else ""
                    lines.append(f"| {s} | {b} | {m:.3f} [{q1:.3f}, {q3:.3f}] | {near}/{len(got[b])} | "
                                 f"{r:.3f} | " + (f"{k[1]:.3f} `{k[0]}`" if k else "–")
                                 + f" | {m - r:+.3f} | {dk} |")
                    verdict.append((kind, s, b, m, r, k[1] if k else None))
                    results.append({"fold": kind, "held_out": fold, "space": s, "budget": b,
                                    "candidate": ch[default]["candidate"], "fractions": got[b],
                                    "random": rnd[b], "kt_best": k[0] if k else None,
                                    "kt_median": k[1] if k else None})
                if kind == "by_kernel":
                    svg(os.path.join(a.out, s + ".svg"), f"{s}, held out (its kernel's fold)",
                        budgets, {n: c for n, c in curves.items() if c})
        lines.append("")
    lines += ["## Acceptance", ""]
    for kind in ["by_gpu", "by_kernel"]:
        v = [x for x in verdict if x[0] == kind]
        below_random = [(s, b, m, r) for _, s, b, m, r, _ in v if m < r]
        lines.append(f"- {kind.replace('_', ' ')}: ≥ random sampling's median on "
                     f"{len({s for _, s, *_ in v}) - len({s for s, *_ in below_random})} of "
                     f"{len({s for _, s, *_ in v})} spaces at every budget"
                     + ("" if not below_random else "; below: " + ", ".join(
                         f"{s} at {b} ({m:.3f} < {r:.3f})" for s, b, m, r in below_random)))
        for b in kt_budgets:
            ds = [(s, m - k) for _, s, bb, m, _, k in v if bb == b and k is not None]
            ge = sum(d >= -1e-9 for _, d in ds)
            near = sum(d >= -WITHIN - 1e-9 for _, d in ds)
            worst = min(ds, key=lambda x: x[1]) if ds else ("–", 0.0)
            lines.append(f"  - {b} evaluations: ≥ Kernel Tuner's best on {ge} of {len(ds)}, within 0.01 "
                         f"on {near} of {len(ds)}; worst {worst[1]:+.3f} ({worst[0]})")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f)
    print(f"\nwall time {time.time() - t0:.0f} s; tables, choices and plots in {a.out}")


if __name__ == "__main__":
    main()

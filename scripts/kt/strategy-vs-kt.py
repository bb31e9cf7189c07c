#!/usr/bin/env python3
"""Issue 25's strategy benchmark: gputune's strategies against Kernel Tuner 1.5's, replayed on the
same brute-forced spaces (Kernel Tuner cache files), without a GPU, counted the same way: unique
configurations as evaluations, failures included.

  python3 scripts/kt/strategy-vs-kt.py [--data DIR] [--out DIR] [--seeds 25]
      [--budgets 25,50,100,200,400] [--spaces pnpoly_RTX_3090,...] [--gputune-strategies ...]
      [--kt-strategies ...] [--kt-seeds N] [--first-seed 0] [--jobs 2] [--gputune BIN] [--batch-size 1]
      [--kt-value-order listed|reversed|both]

Every space of DIR (default ../shared/data/kt-spaces) is imported with `cargo gputune import`
(with the T1 file of its kernel, for the base), replayed with each gputune strategy (`cargo gputune
replay --format json`) and with each Kernel Tuner strategy (`tune_kernel(..., simulation_mode=True,
cache=FILE, strategy=S, strategy_options={"max_fevals": N})`, restricted to exactly the
configurations the cache holds where the cache is not the whole product of the parameter lists),
each seed and budget a separate run. The score of a run is the fraction of the optimum it reached
as Kernel Tuner's community defines it: optimum time / time of the best configuration found (1.0 is
the optimum; 0 when nothing valid was found). Prints a markdown table per budget (median [q1, q3]
over the seeds), writes OUT/results.json, OUT/table.md and an SVG per space, and the wall time.

Kernel Tuner's runs are kept in OUT/kt-runs.jsonl as they finish, and gputune's replays in
OUT/gputune-runs.jsonl (keyed by the binary's SHA-256, strategy, budget, seeds and batch); a rerun
with the same OUT reuses them (delete the files to start over), so a long run can be split into
several (--budgets, --kt-strategies "", --gputune-strategies "") and tabled by one final run. Kernel Tuner's searchspace and cache are built once per
space and process (its construction takes seconds on the 17,956-point GEMM), not once per run.
Seeds: Kernel Tuner's run with seed s sets Python's and NumPy's global generators to s; gputune's
takes `--seed s`. --kt-value-order reversed lists each parameter's values to Kernel Tuner in
reverse (the same space; Kernel Tuner then enumerates it from the other end), `both` pools the two
orders' runs: a control for strategies that lean towards the first valid configuration of Kernel
Tuner's enumeration. --first-seed F replays gputune's seeds F, F + 1, … (tuning seeds, kept
apart from the benchmark's 0..N-1; Kernel Tuner's runs stay on 0..N-1, its runs being fixed).
"""
import argparse
import collections
import gzip
import hashlib
import json
import math
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

GPUTUNE_STRATEGIES = ["random", "genetic", "annealing", "surrogate"]
KT_STRATEGIES = ["random_sample", "genetic_algorithm", "dual_annealing", "simulated_annealing",
                 "diff_evo", "pso", "bayes_opt", "mls", "greedy_ils", "hybrid_vndx",
                 "adaptive_tabu_greywolf"]
DEFAULT_GUIDED = "surrogate"
# gputune's fraction is a ratio of speedups over base, Kernel Tuner's a ratio of times: the same
# configuration gives the same fraction up to rounding.
EQUAL = 1e-9
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))  # scripts/kt/ -> the repository


def quartiles(v):
    v = sorted(v)
    if not v:
        return [math.nan] * 3

    def at(q):
        x = q * (len(v) - 1)
        lo, hi = math.floor(x), math.ceil(x)
        return v[lo] + (v[hi] - v[lo]) * (x - lo)
    return [at(0.25), at(0.5), at(0.75)]


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


def spaces_of(data, wanted):
    names = sorted(f[:-len(".json.gz")] for f in os.listdir(data) if f.endswith(".json.gz"))
    if wanted:
        missing = [w for w in wanted if w not in names]
        if missing:
            sys.exit(f"no such space in {data}: {', '.join(missing)} (have {', '.join(names)})")
        names = [n for n in names if n in wanted]
    return names


# --- gputune ---------------------------------------------------------------------------------

def gputune_import(gputune, data, spaces, db):
    files = [os.path.join(data, s + ".json.gz") for s in spaces]
    kernels = {s.split("_")[0] for s in spaces}
    files += [os.path.join(data, k + ".T1.json") for k in sorted(kernels)
              if os.path.exists(os.path.join(data, k + ".T1.json"))]
    out = subprocess.run([gputune, "gputune", "import", *files, "--db", db],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"import failed: {out.stderr.strip()}")


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def gputune_replays(gputune, db, spaces, strategies, seeds, budgets, batch, log, first=0):
    """{(space, strategy, budget): [fraction per seed]}; replays of the same binary, strategy,
    budget, seeds (`first`, first + 1, …) and batch kept in `log` are reused."""
    binary = digest(gputune)
    kept = {}
    if os.path.exists(log):
        with open(log) as f:
            for line in f:
                r = json.loads(line)
                kept[(r["binary"], r["strategy"], r["budget"], r["seeds"], r["batch"],
                      r.get("first_seed", 0))] = r
    out = {}
    for s in strategies:
        for b in budgets:
            k = kept.get((binary, s, b, seeds, batch, first))
            if k and all(sp in k["fractions"] for sp in spaces):
                for sp in spaces:
                    out[(sp, s, b)] = k["fractions"][sp]
                continue
            t = time.time()
            run = subprocess.run(
                [gputune, "gputune", "replay", "--db", db, "--strategy", s, "--seed", str(first),
                 "--seeds", str(seeds),
                 "--max-evals", str(b), "--batch-size", str(batch), "--format", "json"],
                capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"replay {s} {b} failed: {run.stderr.strip()}")
            for f in json.loads(run.stdout)["functions"]:
                space = f["title"].split(" / ")[0]
                if space in spaces:
                    if f.get("replayed_over", f["space"]) != f["space"]:
                        sys.exit(f"{space}: replayed over {f['replayed_over']} of {f['space']}")
                    out[(space, s, b)] = [r["fraction"] for r in f["runs"]]
            print(f"  gputune {s:>10} @ {b:>4}: {time.time() - t:6.1f} s", file=sys.stderr)
            with open(log, "a") as f:
                f.write(json.dumps({"binary": binary, "strategy": s, "budget": b, "seeds": seeds,
                                    "first_seed": first, "batch": batch, "seconds": time.time() - t,
                                    "fractions": {sp: out[(sp, s, b)] for sp in spaces}}) + "\n")
    return out


# --- Kernel Tuner ----------------------------------------------------------------------------

_SPACE = {}


def _kt_prepare(path):
    """Loads a cache once per process and makes Kernel Tuner reuse its parsed cache and
    searchspace for every run on it (both built from the file alone; the searchspace's
    neighbour caches, which a run changes, start empty for each run)."""
    if path in _SPACE:
        return _SPACE[path]
    import warnings
    warnings.filterwarnings("ignore")
    import kernel_tuner
    import kernel_tuner.interface as interface
    import kernel_tuner.util as util
    from kernel_tuner.searchspace import supported_neighbor_methods

    with open(path) as f:
        doc = json.load(f)
    names = doc["tune_params_keys"]
    tune_params = {k: doc["tune_params"][k] for k in names}
    keys = set(doc["cache"].keys())
    full = math.prod(len(v) for v in tune_params.values())

    def restrict(p):
        return ",".join(str(p[k]) for k in names) in keys
    restrictions = restrict if len(keys) < full else None
    times = [v["time"] for v in doc["cache"].values()
             if isinstance(v.get("time"), (int, float)) and v["time"] < 1e20]
    if not getattr(util, "_bench_memo", False):
        read_cache, searchspace = util.read_cache, interface.Searchspace
        memo_cache, memo_space = {}, {}

        def cached_read(cachefile, open_cache=True):
            if cachefile not in memo_cache:
                memo_cache[cachefile] = read_cache(cachefile, open_cache)
            return dict(memo_cache[cachefile])

        def cached_space(tp, restr, *args, **kwargs):
            key = json.dumps(tp, sort_keys=True)
            if key not in memo_space:
                memo_space[key] = searchspace(tp, restr, *args, **kwargs)
            space = memo_space[key]
            for name in ("_Searchspace__neighbor_cache", "_Searchspace__neighbor_partial_cache",
                         "neighbors_index"):
                # Kernel Tuner 1.5's own names: under others the reset below would do nothing.
                if not hasattr(space, name):
                    sys.exit(f"kernel_tuner {kernel_tuner.__version__}: Searchspace has no "
                             f"{name}; its runs cannot be made independent by this script")
            # A Searchspace keeps state between the runs that share it: its neighbour caches,
            # from which `get_random_neighbor` pops its picks. Shared, they made a run depend on
            # the runs before it in the same process (simulated annealing on GEMM, seed 1: 0.825
            # alone, 0.886 after seed 0), so the kept runs were not reproducible by seed. Each
            # run starts from the caches of a fresh Searchspace, as a run of its own would.
            space._Searchspace__neighbor_cache = {m: dict() for m in supported_neighbor_methods}
            space._Searchspace__neighbor_partial_cache = {
                m: collections.defaultdict(list) for m in supported_neighbor_methods}
            space.neighbors_index = dict()
            return space
        util.read_cache = cached_read
        interface.Searchspace = cached_space
        util._bench_memo = True
    _SPACE[path] = (doc, tune_params, restrictions, min(times), names)
    return _SPACE[path]


def kt_run(task):
    """One Kernel Tuner run: (space, strategy, budget, seed, path, order) -> fraction. Under
    order "reversed" each parameter's values are listed to Kernel Tuner in reverse: the same space
    and the same adjacency, enumerated from the other end."""
    space, strategy, budget, seed, path, order = task
    import numpy
    from kernel_tuner import tune_kernel
    doc, tune_params, restrictions, optimum, names = _kt_prepare(path)
    if order == "reversed":
        tune_params = {k: list(reversed(v)) for k, v in tune_params.items()}
    random.seed(seed)
    numpy.random.seed(seed)
    t = time.time()
    devnull = open(os.devnull, "w")
    stdout, sys.stdout = sys.stdout, devnull
    try:
        results, _ = tune_kernel(doc["kernel_name"], "__global__ void k() {}", doc["problem_size"],
                                 [], tune_params, lang="CUDA", simulation_mode=True, cache=path,
                                 strategy=strategy, strategy_options={"max_fevals": budget},
                                 restrictions=restrictions, quiet=True, verbose=False)
    finally:
        sys.stdout = stdout
        devnull.close()
    found = [r["time"] for r in results
             if isinstance(r.get("time"), (int, float)) and r["time"] < 1e20]
    unique = len({tuple(r[k] for k in names) for r in results})
    return {"space": space, "strategy": strategy, "budget": budget, "seed": seed,
            "fraction": optimum / min(found) if found else 0.0, "evaluations": unique,
            "seconds": time.time() - t, "order": order}


def kt_replays(tmp, data, spaces, strategies, seeds, budgets, jobs, log, kept_only=False,
               orders=("listed",)):
    """Kernel Tuner's runs of every space, strategy, budget and seed under each value order of
    `orders`, those kept in `log` reused; (space, strategy, budget) -> fractions, the orders'
    runs pooled."""
    done = {}
    if os.path.exists(log):
        with open(log) as f:
            for line in f:
                r = json.loads(line)
                # Runs logged before the orders existed were all made in the cache's order.
                r.setdefault("order", "listed")
                done[(r["space"], r["strategy"], r["budget"], r["seed"], r["order"])] = r
    tasks = []
    for s in spaces:
        path = os.path.join(tmp, s + ".json")
        if not os.path.exists(path):
            with gzip.open(os.path.join(data, s + ".json.gz"), "rb") as src, open(path, "wb") as dst:
                shutil.copyfileobj(src, dst)
        for k in strategies:
            for b in budgets:
                for seed in range(seeds):
                    for o in orders:
                        if (s, k, b, seed, o) not in done:
                            tasks.append((s, k, b, seed, path, o))
    print(f"  Kernel Tuner: {len(tasks)} runs to do, {len(done)} kept from {log}"
          + (" (--kt-kept-only: not run)" if kept_only else ""), file=sys.stderr)
    if kept_only:
        tasks = []
    # Grouped by space and order, so that each process builds few searchspaces.
    tasks.sort(key=lambda t: (t[0], t[5], t[1], t[2], t[3]))
    t0 = time.time()
    with open(log, "a") as out, multiprocessing.Pool(jobs, maxtasksperchild=None) as pool:
        for i, r in enumerate(pool.imap(kt_run, tasks, chunksize=1)):
            out.write(json.dumps(r) + "\n")
            out.flush()
            done[(r["space"], r["strategy"], r["budget"], r["seed"], r["order"])] = r
            if (i + 1) % 50 == 0:
                print(f"  Kernel Tuner: {i + 1}/{len(tasks)} runs, {time.time() - t0:.0f} s",
                      file=sys.stderr)
    res = {}
    for (s, k, b, seed, o), r in sorted(done.items()):
        if s in spaces and k in strategies and b in budgets and seed < seeds and o in orders:
            res.setdefault((s, k, b), []).append(r["fraction"])
    return res


# --- output ----------------------------------------------------------------------------------

def svg(path, title, budgets, curves):
    """curves: name -> {budget: (q1, median, q3)}; gputune's solid, Kernel Tuner's dashed."""
    w, h, left, right, top, bottom = 760, 460, 70, 210, 40, 50
    lo = min([q[0] for c in curves.values() for q in c.values()] + [0.9])
    lo = max(0.0, math.floor(lo * 20) / 20)
    xs = [math.log2(b) for b in budgets]
    px = lambda b: left + (w - left - right) * ((math.log2(b) - min(xs)) / max(1e-9, max(xs) - min(xs)))
    py = lambda f: top + (h - top - bottom) * (1.0 - (f - lo) / (1.0 - lo))
    palette = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
               "#7b4173"]
    p = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
         f'font-family="sans-serif" font-size="11">', f'<rect width="{w}" height="{h}" fill="white"/>',
         f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for i in range(6):
        f = lo + (1.0 - lo) * i / 5
        p.append(f'<line x1="{left}" x2="{w - right}" y1="{py(f):.1f}" y2="{py(f):.1f}" stroke="#eee"/>'
                 f'<text x="{left - 6}" y="{py(f) + 4:.1f}" text-anchor="end">{f:.3f}</text>')
    for b in budgets:
        p.append(f'<text x="{px(b):.1f}" y="{h - bottom + 16}" text-anchor="middle">{b}</text>')
    p.append(f'<text x="{(left + w - right) / 2}" y="{h - 12}" text-anchor="middle">'
             'evaluations (unique configurations, log scale)</text>')
    p.append(f'<text x="16" y="{(top + h - bottom) / 2}" text-anchor="middle" transform="rotate(-90 16 '
             f'{(top + h - bottom) / 2})">optimum time / best found (median; band q1–q3 of gputune\'s)</text>')
    for k, (name, c) in enumerate(curves.items()):
        colour = palette[k % len(palette)]
        ours = name.startswith("gputune")
        pts = [(b, c[b]) for b in budgets if b in c]
        if ours and pts:
            band = [(px(b), py(q[2])) for b, q in pts] + [(px(b), py(q[0])) for b, q in reversed(pts)]
            p.append('<polygon points="' + " ".join(f"{x:.1f},{y:.1f}" for x, y in band)
                     + f'" fill="{colour}" fill-opacity="0.10" stroke="none"/>')
        dash = "" if ours else ' stroke-dasharray="5 3"'
        p.append('<polyline points="' + " ".join(f"{px(b):.1f},{py(q[1]):.1f}" for b, q in pts)
                 + f'" fill="none" stroke="{colour}" stroke-width="{2.5 if ours else 1.5}"{dash}/>')
        y = top + 10 + 17 * k
        p.append(f'<line x1="{w - right + 10}" x2="{w - right + 35}" y1="{y}" y2="{y}" stroke="{colour}" '
                 f'stroke-width="2"{dash}/><text x="{w - right + 40}" y="{y + 4}">{name}</text>')
    p.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(p) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "kt-spaces"))
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "strategy-vs-kt"))
    ap.add_argument("--seeds", type=int, default=25)
    ap.add_argument("--first-seed", type=int, default=0,
                    help="gputune's first seed (tuning seeds: e.g. 1000; Kernel Tuner's stay 0..)")
    ap.add_argument("--kt-seeds", type=int, help="seeds of Kernel Tuner's runs (default --seeds)")
    ap.add_argument("--budgets", default="25,50,100,200,400")
    ap.add_argument("--spaces", default="", help="comma-separated names (default: all)")
    ap.add_argument("--gputune-strategies", default=",".join(GPUTUNE_STRATEGIES))
    ap.add_argument("--kt-strategies", default=",".join(KT_STRATEGIES))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch-size", type=int, default=1,
                    help="gputune's batch (Kernel Tuner's sequential runner evaluates one at a time)")
    ap.add_argument("--gputune")
    ap.add_argument("--kt-value-order", choices=["listed", "reversed", "both"], default="listed",
                    help="list each parameter's values to Kernel Tuner as the cache lists them, "
                         "reversed (the same space and adjacency, enumerated from the other end), "
                         "or both, each seed run under each order and the runs pooled. A control: "
                         "a strategy that repairs a configuration to the first valid one of "
                         "Kernel Tuner's enumeration leans towards whichever end comes first")
    ap.add_argument("--kt-kept-only", action="store_true",
                    help="table only the Kernel Tuner runs kept in OUT, running none")
    a = ap.parse_args()
    t0 = time.time()
    budgets = [int(b) for b in a.budgets.split(",") if b]
    spaces = spaces_of(a.data, [s for s in a.spaces.split(",") if s])
    ours = [s for s in a.gputune_strategies.split(",") if s]
    theirs = [s for s in a.kt_strategies.split(",") if s]
    kt_seeds = a.kt_seeds or a.seeds
    orders = ["listed", "reversed"] if a.kt_value_order == "both" else [a.kt_value_order]
    os.makedirs(a.out, exist_ok=True)
    gputune = find_gputune(a.gputune)
    tmp = tempfile.mkdtemp(prefix="strategy-vs-kt-")
    try:
        db = os.path.join(tmp, "kt.db")
        gputune_import(gputune, a.data, spaces, db)
        mine = gputune_replays(gputune, db, spaces, ours, a.seeds, budgets, a.batch_size,
                               os.path.join(a.out, "gputune-runs.jsonl"), a.first_seed)
        kt = kt_replays(tmp, a.data, spaces, theirs, kt_seeds, budgets, a.jobs,
                        os.path.join(a.out, "kt-runs.jsonl"), a.kt_kept_only,
                        orders) if theirs else {}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    rows = {}
    for (s, k, b), v in mine.items():
        rows[(s, "gputune " + k, b)] = v
    for (s, k, b), v in kt.items():
        rows[(s, "kt " + k, b)] = v
    names = ["gputune " + k for k in ours] + ["kt " + k for k in theirs]
    lines = [f"Fraction of the optimum (optimum time / best time found; 1.0 = optimum), median "
             f"[q1, q3] over {a.seeds} seeds (gputune"
             + (f", from seed {a.first_seed}" if a.first_seed else "")
             + f") and {kt_seeds} (Kernel Tuner"
             + {"listed": "", "reversed": ", each parameter's values listed in reverse",
                "both": " under each of the two value orders, listed and reversed, pooled: "
                        f"{2 * kt_seeds} runs"}[a.kt_value_order]
             + "); "
             f"gputune batch {a.batch_size}; (n=N): a cell of another number of seeds.", ""]
    verdict = []
    for b in budgets:
        lines += [f"### {b} evaluations", "",
                  "| space | " + " | ".join(names) + " | best KT | gputune " + DEFAULT_GUIDED + " − best KT |",
                  "|---|" + "---|" * (len(names) + 2)]
        for s in spaces:
            cells, best_kt = [], None
            for n in names:
                v = rows.get((s, n, b))
                if not v:
                    cells.append("–")
                    continue
                q1, m, q3 = quartiles(v)
                want = a.seeds if n.startswith("gputune ") else kt_seeds * len(orders)
                cells.append(f"{m:.3f} [{q1:.3f}, {q3:.3f}]"
                             + (f" (n={len(v)})" if len(v) != want else ""))
                if n.startswith("kt ") and (best_kt is None or m > best_kt[1]):
                    best_kt = (n[3:], m)
            ours_v = rows.get((s, "gputune " + DEFAULT_GUIDED, b))
            diff = ""
            if best_kt and ours_v:
                d = quartiles(ours_v)[1] - best_kt[1]
                diff = f"{d:+.3f}"
                verdict.append((b, s, d))
            lines.append(f"| {s} | " + " | ".join(cells) + f" | {best_kt[0] if best_kt else '–'} | {diff} |")
        lines.append("")
    for b in budgets:
        ds = [d for bb, _, d in verdict if bb == b]
        if ds:
            lines.append(f"- {b} evaluations: gputune {DEFAULT_GUIDED} ≥ best Kernel Tuner strategy on "
                         f"{sum(d >= -EQUAL for d in ds)} of {len(ds)} spaces; worst {min(ds):+.3f}")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump([{"space": s, "strategy": n, "budget": b, "fractions": v}
                   for (s, n, b), v in sorted(rows.items())], f)
    for s in spaces:
        curves = {n: {b: quartiles(rows[(s, n, b)]) for b in budgets if rows.get((s, n, b))}
                  for n in names}
        svg(os.path.join(a.out, s + ".svg"), f"{s}: fraction of the optimum", budgets,
            {n: c for n, c in curves.items() if c})
    print(f"\nwall time {time.time() - t0:.0f} s; plots and results in {a.out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Summarises a gpu-vs-kt.sh folder as markdown: per problem, gputune's search and Kernel
Tuner's brute force side by side (wall time, variants evaluated, samples taken, winner and its
time, medians over the runs), the ratio of their wall times, each tool's winner as the other
tool measured it, and the quality guard: each gputune winner against the best time of a
reference search (full.db, FULL=1), and the gputune winners against each other.

  python3 summarize-vs-kt.py DIR [PROBLEM…]

Reads DIR/PROBLEM/times.txt, the gputune stores and reports (gputune-R.db,
gputune-R.report.json, full.db) and Kernel Tuner's results (kt-R.json, from kt_tune.py); runs
of the warm mode (gputune-warm-R, kt-warm-R) get a table of their own. A problem of several
parts (PARTS: hostloop) is one search of several functions against several kt_tune.py
problems run one after the other (kt-R.PART.json): its walls are of the whole, and each part
gets its rows, cross-checks, quality guard and tie check."""
import json
import os
import re
import sqlite3
import statistics
import sys

PROBLEMS = ["scale", "reduce", "transpose", "sgemm", "conv", "gemv", "rowsum", "histogram", "hostloop"]
TITLES = {
    "scale": "scale (y = a·x), 155 points, 2^26 f32",
    "reduce": "two-pass sum, 128 points, 2^28 f32",
    "transpose": "tiled transpose, 28 points, 16384² f32",
    "sgemm": "tiled SGEMM, 64 points, 4096² f32",
    "conv": "17 × 17 convolution, 268 points, 4096² f32",
    "gemv": "bf16 GEMV with a header of its own and a register limit, 72 points, 8192² bf16",
    "rowsum": "CUB block-level row sums (BlockLoad × BlockReduce), 54 points, 16384 × 8192 f32",
    "histogram": "256-bin histogram with private shared-memory copies, 240 points, 2^26 u32 keys (new for issue 24)",
    "hostloop": "inputs made by host loops (issue 47): SGEMM, 64 points, 4096² f32, then the first pass of a sum, "
                "128 points, 2^28 f32, in one search; Kernel Tuner's sgemm then reduce, timed as one run",
}
# Problems of several parts: one gputune search of several functions (one store and report per
# run), against Kernel Tuner's problems run one after the other in one timed process (each
# writing kt-R.PART.json). Per part: (Kernel Tuner's problem, gputune's function).
PARTS = {"hostloop": [("sgemm", "sgemm"), ("reduce", "partial_sums")]}
# Within this much of the best time of the reference search, a winner passes.
TOLERANCE = 0.01
# gputune's score::NOISE_THRESHOLD: shifts under it are drift, not results.
NOISE_THRESHOLD = 0.005
# Per problem, the point of the space that is base itself (the same parameters): the tie check
# wants it never marked faster or slower than base.
IDENTICAL = {
    "scale": "ipt_4.tpb_256",
    "reduce": "tpb_256.ipt_4.vec_4.unroll_1",
    "transpose": "tile_32.rows_8.pad_1",
    "sgemm": "bm_64.bn_64.bk_16.tm_4.tn_4",
    "conv": "block_x_32.block_y_8.tile_x_1.tile_y_1.pad_0",
    "gemv": "tpb_256.vec_4.rows_1.maxrreg_0",
    "rowsum": "tpb_256.ipt_4.load_BLOCK_LOAD_DIRECT.reduce_BLOCK_REDUCE_WARP_REDUCTIONS",
    "histogram": "tpb_256.ipt_1.copies_1.bps_4",
}


def parts_of(problem):
    """[(Kernel Tuner's part or None, gputune's function or None)]: one (None, None) for a
    problem of one function."""
    return PARTS.get(problem, [(None, None)])


def times(folder):
    """{name: (exit, wall)} from times.txt (the last line of a name wins)."""
    out = {}
    path = os.path.join(folder, "times.txt")
    if os.path.exists(path):
        for line in open(path):
            m = re.match(r"(\S+) exit=(\d+) wall_s=([\d.]+)", line)
            if m:
                out[m.group(1)] = (int(m.group(2)), float(m.group(3)))
    return out


def distinct_control(rows):
    """Control samples taken: each distinct control once (rows of one process share one)."""
    keys = {r.get("control_key") for r in rows if r.get("control_key")}
    return sum(len(json.loads(k)) for k in keys)


def store_rows(db, function=None):
    """The store's rows (of `function` only, when given): [dict(variant, status, center, noise,
    samples, control, stop, message)]."""
    if not os.path.exists(db):
        return None
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        cols = {r[1] for r in con.execute("PRAGMA table_info(results)")}
        stop = "stop" if "stop" in cols else "NULL"
        control = "control" if "control" in cols else "NULL"
        rows = []
        where, params = ("WHERE function = ?", (function,)) if function else ("", ())
        for variant, status, center, noise, samples, st, ctl, message in con.execute(
                f"SELECT variant, status, center, noise, samples, {stop}, {control}, message FROM results {where}",
                params):
            rows.append(dict(variant=variant, status=status, center=center, noise=noise,
                             samples=len(json.loads(samples or "[]")),
                             control=len(json.loads(ctl or "[]")), control_key=ctl or "",
                             stop=st, message=message))
        return rows
    except sqlite3.Error as e:
        print(f"cannot read {db}: {e}", file=sys.stderr)
        return None
    finally:
        con.close()


def stop_counts(per_variant):
    """{stop reason: variants}: a variant's reason is its workloads' one, or the first that is
    not `criterion` (measured in full) where they differ; none where nothing was measured."""
    out = {}
    for stops in per_variant:
        stops = [st for st in stops if st]
        if not stops:
            continue
        st = next((x for x in stops if x != "criterion"), "criterion")
        out[st] = out.get(st, 0) + 1
    return out


def report_variants(path, function=None):
    """The report JSON's variants of every group (of `function`'s only, when given), or None."""
    try:
        groups = json.load(open(path))["groups"]
    except (OSError, ValueError, KeyError):
        return None
    return [v for g in groups if function is None or g.get("function") == function for v in g["variants"]]


def gputune_run(folder, name, function=None):
    """One gputune search (of `function` only, when given): counts from the store, the winner
    from the report (the best score over base, as `report` ranks; summarize-search.py does the
    same)."""
    rows = store_rows(os.path.join(folder, f"{name}.db"), function)
    variants = report_variants(os.path.join(folder, f"{name}.report.json"), function)
    if rows is None and variants is None:
        return None
    run = dict(name=name)
    if rows is not None:
        by_variant = {}
        for r in rows:
            by_variant.setdefault(r["variant"], []).append(r)
        space = {v: rs for v, rs in by_variant.items() if v != "base"}
        statuses = {}
        for rs in space.values():
            st = "ok" if all(r["status"] == "ok" for r in rs) else next(r["status"] for r in rs if r["status"] != "ok")
            statuses[st] = statuses.get(st, 0) + 1
        run.update(
            evaluated=len(space),
            base="base" in by_variant,
            statuses=statuses,
            stops=stop_counts([r["stop"] for r in rs] for rs in space.values()),
            # Each process's control (base, measured before its variants) is copied into every
            # variant row of that process: count each one once.
            samples=sum(r["samples"] for r in rows) + distinct_control(rows),
            control=distinct_control(rows),
            centers={v: statistics.median([r["center"] for r in rs])
                     for v, rs in space.items()
                     if all(r["status"] == "ok" and r["center"] for r in rs)},
            full={v: all(r["stop"] == "criterion" for r in rs) for v, rs in space.items()},
        )
    elif variants is not None:
        space = [v for v in variants if v["variant"] != "base"]
        statuses = {}
        for v in space:
            statuses[v["status"]] = statuses.get(v["status"], 0) + 1
        run.update(
            evaluated=len(space),
            base=any(v["variant"] == "base" for v in variants),
            statuses=statuses,
            stops=stop_counts([w.get("stop") for w in v.get("workloads") or []] for v in space),
            samples=sum(w.get("samples") or 0 for v in variants for w in v.get("workloads") or []),
            control=None,
            centers={v["variant"]: v["time"] for v in space if v["status"] == "ok" and v["time"]},
            full={},
        )
    winner = None
    if variants:
        scored = [v for v in variants if v["variant"] != "base" and v["status"] == "ok" and v["score"] is not None]
        # In the report's order, as `report` ranks: a deciding search's screened variants never
        # above one measured further, whatever a slow control of their own process lent their
        # score (the highest score alone once picked a screened variant 6 % behind the best).
        if scored:
            winner = scored[0]
    if winner:
        run.update(winner=winner["variant"], winner_time=winner["time"], winner_noise=winner["noise"])
    else:
        # No report: the fastest median in the store.
        centers = run.get("centers") or {}
        best = min(centers, key=centers.get) if centers else None
        noise = None
        if best and rows:
            noise = statistics.median([r["noise"] for r in rows if r["variant"] == best and r["noise"]] or [0]) or None
        run.update(winner=best, winner_time=centers.get(best), winner_noise=noise)
    return run


def kt_run(folder, name, part=None):
    """One Kernel Tuner run (kt-R.json; kt-R.PART.json for a part of a problem of several)."""
    try:
        doc = json.load(open(os.path.join(folder, f"{name}.{part}.json" if part else f"{name}.json")))
    except (OSError, ValueError):
        return None
    return dict(
        name=name,
        evaluated=doc["evaluated"],
        statuses=doc["statuses"],
        samples=doc["samples"] + doc.get("warmup_samples", 0),
        warmup=doc.get("warmup_samples", 0),
        winner=doc["winner"],
        winner_time=doc["winner_time_s"],
        winner_noise=doc.get("winner_noise"),
        centers={r["label"]: r["time_s"] for r in doc["results"] if r["status"] == "ok" and r["time_s"]},
        timings=doc.get("kernel_tuner_timings_ms") or {},
        seconds=doc.get("seconds") or {},
        device=doc.get("device"),
    )


def us(s):
    return f"{s * 1e6:.2f} us" if s is not None else "-"


def spread(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return fmt(values[0])
    return f"{fmt(statistics.median(values))} [{fmt(min(values))}–{fmt(max(values))}]"


def count(values):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if min(values) == max(values):
        return f"{values[0]}"
    return f"{statistics.median(values):g} [{min(values)}–{max(values)}]"


def winners(runs):
    names = {}
    for r in runs:
        if r.get("winner"):
            names[r["winner"]] = names.get(r["winner"], 0) + 1
    return ", ".join(f"`{w}`" + (f" ×{n}" if len(runs) > 1 else "") for w, n in sorted(names.items(), key=lambda x: -x[1])) or "-"


def statuses_text(runs):
    merged = {}
    for r in runs:
        for k, n in (r.get("statuses") or {}).items():
            merged.setdefault(k, []).append(n)
    return ", ".join(f"{k} {count(v)}" for k, v in sorted(merged.items())) or "-"


def median_centers(runs):
    """Per label, the median over runs of its time."""
    per = {}
    for r in runs:
        for label, t in (r.get("centers") or {}).items():
            per.setdefault(label, []).append(t)
    return {label: statistics.median(ts) for label, ts in per.items()}


def rank_line(tool, runs, other_name, other_runs):
    """Where `tool`'s winners stand in the other tool's measurements."""
    centers = median_centers(other_runs)
    if not centers:
        return None
    best = min(centers.values())
    order = sorted(centers, key=centers.get)
    parts = []
    for w in sorted({r["winner"] for r in runs if r.get("winner")}):
        if w in centers:
            parts.append(f"`{w}` {us(centers[w])}, rank {order.index(w) + 1} of {len(order)}, "
                         f"{(centers[w] / best - 1) * 100:+.2f} % vs its best")
        else:
            parts.append(f"`{w}` not measured ok there")
    return f"- {tool}'s winner(s) as {other_name} measured them (median over its runs): " + "; ".join(parts) + \
        f" (its best: `{order[0]}` {us(best)})."


MODES = (("", "cold compile caches (gputune's kernel cache and CuPy's emptied before every run)"),
         ("warm-", "warm compile caches (both kept from an untimed run before)"))


def mode_summary(folder, walls, problem, infix, title):
    """One mode's table (cold: run names gputune-R and kt-R; warm: gputune-warm-R and kt-warm-R);
    returns gputune's runs per part ({function or None: [run]}), their run names and the median
    walls of both tools."""
    pattern = r"(?:gputune|kt)-" + re.escape(infix) + r"(\d+)"
    run_numbers = sorted({int(m.group(1)) for n in walls for m in [re.fullmatch(pattern, n)] if m})
    if not run_numbers:
        return {}, [], None
    print(f"#### {title[0].upper() + title[1:]}\n")
    parts = parts_of(problem)
    g_runs, k_runs = {f: [] for _, f in parts}, {f: [] for _, f in parts}
    g_walls, k_walls, g_fail, k_fail = [], [], [], []
    for r in run_numbers:
        if f"gputune-{infix}{r}" in walls:
            rc, w = walls[f"gputune-{infix}{r}"]
            (g_walls if rc == 0 else g_fail).append(w)
            for _, function in parts:
                run = gputune_run(folder, f"gputune-{infix}{r}", function)
                if run and rc == 0:
                    g_runs[function].append(run)
        if f"kt-{infix}{r}" in walls:
            rc, w = walls[f"kt-{infix}{r}"]
            (k_walls if rc == 0 else k_fail).append(w)
            for part, function in parts:
                run = kt_run(folder, f"kt-{infix}{r}", part)
                if run and rc == 0:
                    k_runs[function].append(run)
    device = next((r["device"] for runs in k_runs.values() for r in runs if r.get("device")), None)
    if device:
        print(f"Device: {device}. Runs: {len(run_numbers)} of each tool, alternating which goes first.\n")

    print("| tool | ok runs | wall, median [min–max] | variants evaluated | outcomes | samples taken | winner | winner time |")
    print("|---|---|---|---|---|---|---|---|")
    for part, function in parts:
        g_tool, k_tool = ("gputune", "Kernel Tuner") if function is None else \
            (f"gputune, `{function}`", f"Kernel Tuner, {part}")
        runs = g_runs[function]
        g_eval = count([r.get("evaluated") for r in runs])
        if any(r.get("base") for r in runs):
            g_eval += " + base"
        g_out = statuses_text(runs)
        stops = sorted({k for r in runs for k in (r.get("stops") or {})})
        if stops:
            g_out += "; stopped by " + ", ".join(
                f"{k} {count([(r.get('stops') or {}).get(k, 0) for r in runs])}" for k in stops)
        g_samples = count([r.get("samples") for r in runs])
        controls = [r.get("control") for r in runs if r.get("control")]
        if controls:
            g_samples += f" (control samples of base {count(controls)})"
        print(f"| {g_tool} | {len(g_walls)}/{len(g_walls) + len(g_fail)} | {spread(g_walls, lambda s: f'{s:.2f} s')} | "
              f"{g_eval} | {g_out} | {g_samples} | {winners(runs)} | {spread([r.get('winner_time') for r in runs], us)} |")
        runs = k_runs[function]
        k_samples = count([r.get("samples") for r in runs])
        if runs:
            k_samples += f" (incl. {runs[0]['warmup']} warm-up)"
        print(f"| {k_tool} | {len(k_walls)}/{len(k_walls) + len(k_fail)} | {spread(k_walls, lambda s: f'{s:.2f} s')} | "
              f"{count([r.get('evaluated') for r in runs])} | {statuses_text(runs)} | {k_samples} | "
              f"{winners(runs)} | {spread([r.get('winner_time') for r in runs], us)} |")
    print()
    if len(parts) > 1:
        print("Each tool's wall is of its whole run (every part, one after the other): the rows of one "
              "tool share it.")
    ratio = None
    if g_walls and k_walls:
        gm, km = statistics.median(g_walls), statistics.median(k_walls)
        ratio = (gm, km)
        print(f"Wall time gputune / Kernel Tuner, {title.split(' (')[0]}: **{gm / km:.3f}** "
              f"(medians {gm:.2f} s / {km:.2f} s).")
    if g_fail or k_fail:
        print(f"Failed runs (exit ≠ 0, not in the medians): gputune {len(g_fail)}, Kernel Tuner {len(k_fail)}.")
    print("Winner times: gputune's is the median of its cold samples (L2 flushed before each); Kernel "
          "Tuner's the mean of its 7 back-to-back launches, each timed by CUDA events"
          + (" (first pass only: gputune's includes final_sum)" if problem == "reduce" else "")
          + ": they do not compare directly; the cross-check below compares each tool's pick in the other's measurements.")
    for part, function in parts:
        runs = k_runs[function]
        if not runs:
            continue
        keys = [("total_compile_time", "compile"), ("total_verification_time", "verification"),
                ("total_benchmark_time", "benchmark"), ("total_framework_time", "framework"),
                ("total_strategy_time", "strategy")]
        parts_text = []
        for key, what in keys:
            vals = [r["timings"].get(key) for r in runs if r["timings"].get(key) is not None]
            if vals:
                parts_text.append(f"{what} {statistics.median(vals) / 1e3:.2f} s")
        setup = [r["seconds"].get("imports_and_setup", 0) + r["seconds"].get("data", 0) for r in runs if r["seconds"]]
        if setup:
            parts_text.append(f"imports, device and data before tune_kernel {statistics.median(setup):.2f} s")
        if parts_text:
            print("Kernel Tuner's own split of its time" + (f" on {part}" if part else "") + " (medians): "
                  + ", ".join(parts_text) + ".")
    print()
    for part, function in parts:
        if g_runs[function] and k_runs[function]:
            for line in (rank_line("gputune", g_runs[function], "Kernel Tuner", k_runs[function]),
                         rank_line("Kernel Tuner", k_runs[function], "gputune", g_runs[function])):
                if line:
                    print(line if function is None else f"- `{function}` / {part}:" + line[1:])
            print()
    return g_runs, [f"gputune-{infix}{r}" for r in run_numbers], ratio


def problem_summary(root, problem):
    folder = os.path.join(root, problem)
    if not os.path.isdir(folder):
        return
    walls = times(folder)
    print(f"### {TITLES.get(problem, problem)}\n")
    if os.path.exists(os.path.join(folder, "errors.txt")):
        print("Errors: " + open(os.path.join(folder, "errors.txt")).read().strip() + "\n")
    parts = parts_of(problem)
    g_runs, names, ratios = {f: [] for _, f in parts}, [], []
    for infix, title in MODES:
        runs, run_names, ratio = mode_summary(folder, walls, problem, infix, title)
        for function, rs in runs.items():
            g_runs[function] += rs
        names += run_names
        if ratio:
            ratios.append((title.split(" (")[0], ratio))
    if ratios:
        print("**All four, wall to wall (medians):** " + "; ".join(
            f"{what}: gputune {g:.2f} s, Kernel Tuner {k:.2f} s, ratio {g / k:.3f}"
            for what, (g, k) in ratios) + ".\n")
    where_time(folder, names)
    for part, function in parts:
        if function is not None:
            print(f"#### `{function}` (Kernel Tuner's {part})\n")
        again = [run for n in sorted(walls) if re.fullmatch(r"again-\d+", n) and walls[n][0] == 0
                 for run in [gputune_run(folder, n, function)] if run]
        quality(folder, g_runs[function] + again, function)
        tie_check(folder, part or problem, [r["name"] for r in g_runs[function] + again], function)
    print()


def where_time(folder, names):
    """Each gputune run's own account of its bench processes (the search's last line)."""
    lines = []
    for name in names:
        path = os.path.join(folder, f"{name}.log")
        if not os.path.exists(path):
            continue
        for line in open(path, errors="replace"):
            if "Time to the first sample" in line:
                lines.append(f"- {name}: " + line.strip().split("gputune ", 1)[-1])
    if lines:
        print("Where gputune's time went (each run's closing line):\n")
        print("\n".join(lines) + "\n")


def tie_check(folder, problem, names, function=None):
    """The point identical to base, as each gputune search's report marks it (in `function`'s
    groups only, when given)."""
    label = IDENTICAL.get(problem)
    if not label or not names:
        return
    marks = []
    for name in names:
        variants = report_variants(os.path.join(folder, f"{name}.report.json"), function) or []
        v = next((v for v in variants if v["variant"] == label), None)
        if v is None or v.get("score") is None:
            marks.append((name, None))
        else:
            marks.append((name, v))
    seen = [(n, v) for n, v in marks if v is not None]
    bad = [n for n, v in seen if v.get("significant")]
    text = "; ".join(
        f"{n} {v['score']:.4f} ({v.get('verdict') or 'within noise'}, noise {pct(v.get('noise'))})"
        if v is not None else f"{n} not scored" for n, v in marks)
    verdict = "PASS" if seen and not bad else ("FAIL" if bad else "not checked")
    print(f"Tie check, `{label}` (the same point as base) in {len(seen)} search(es): {text}: "
          f"**{verdict}**.\n")


def quality(folder, g_runs, function=None):
    timed = [r for r in g_runs if r.get("winner_time")]
    if not timed:
        print("Quality guard: no gputune winners to check.")
        return
    full = store_rows(os.path.join(folder, "full.db"), function)
    if full is not None:
        ok = [r for r in full if r["variant"] != "base" and r["status"] == "ok" and r["center"]]
        if not ok:
            print("Quality guard (reference search): full.db holds no measured variant: not checked.")
        else:
            best = min(ok, key=lambda r: r["center"])
            cut = sum(1 for r in full if r["variant"] != "base" and r["stop"] not in (None, "criterion"))
            note = "" if cut == 0 else f" (NOT a full reference: {cut} variants not measured in full)"
            where = ""
            if os.path.exists(os.path.join(folder, "full.txt")):
                where = " (" + open(os.path.join(folder, "full.txt")).read().strip() + ")"
            print(f"Quality guard, against the reference search{where}{note}: its best `{best['variant']}` "
                  f"{us(best['center'])} (noise {pct(best['noise'])}). A winner passes within "
                  f"{TOLERANCE * 100:g} % of it, or within the noise (the larger of the winner's and the best's).\n")
            centers = {r["variant"]: r["center"] for r in ok}
            for r in timed:
                rel = r["winner_time"] / best["center"] - 1
                noise = max(r.get("winner_noise") or 0, best["noise"] or 0)
                passed = rel <= TOLERANCE or rel <= noise
                inside = centers.get(r["winner"])
                extra = (f"; the reference measured `{r['winner']}` at {us(inside)} "
                         f"({(inside / best['center'] - 1) * 100:+.2f} %)") if inside else ""
                print(f"- {r['name']}: `{r['winner']}` {us(r['winner_time'])}, {rel * 100:+.2f} % "
                      f"(noise {pct(noise)}){extra}: **{'PASS' if passed else 'FAIL'}**")
            print()
    else:
        print("Quality guard against a reference search: no full.db (run with FULL=1).\n")
    if len(timed) > 1:
        ts = [r["winner_time"] for r in timed]
        rel = (max(ts) - min(ts)) / min(ts)
        noises = [r["winner_noise"] for r in timed if r.get("winner_noise")]
        if noises:
            # The same winner every time passes whatever its times (they differ between
            # processes by more than one process's noise shows); different winners must be
            # equal within the noise, or within gputune's noise threshold (0.5 %).
            noise = max(min(noises), NOISE_THRESHOLD)
            same = len({r["winner"] for r in timed}) == 1
            passed = same or rel < noise
            why = "the same winner in every run" if same else f"the floor is {pct(noise)}"
            print(f"Quality guard between the gputune runs: winners {winners(timed)}; their times differ by "
                  f"{rel * 100:.3f} %, the smallest reported noise is {pct(min(noises))} ({why}): "
                  f"**{'PASS' if passed else 'FAIL'}**.")
        elif len({r["winner"] for r in timed}) == 1:
            print(f"Quality guard between the gputune runs: winners {winners(timed)}, the same in every "
                  f"run (times {rel * 100:.3f} % apart): **PASS**.")
        else:
            print(f"Quality guard between the gputune runs: their winner times differ by {rel * 100:.3f} %; "
                  "no noise reported: not checked.")


def pct(x):
    return f"{x * 100:.2f} %" if x is not None else "-"


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = sys.argv[1]
    problems = sys.argv[2:] or [p for p in PROBLEMS if os.path.isdir(os.path.join(root, p))]
    print("## gputune vs Kernel Tuner: search cost\n")
    for name in ("gpu.txt", "versions.txt"):
        path = os.path.join(root, name)
        if os.path.exists(path):
            print(f"{name}: " + " / ".join(line.strip() for line in open(path) if line.strip()) + "\n")
    for p in problems:
        problem_summary(root, p)
    return 0


if __name__ == "__main__":
    sys.exit(main())

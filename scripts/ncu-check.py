#!/usr/bin/env python3
"""Checks gputune's clocks against the hardware's: each case's state is measured by gputune
(cold, default stdrel criterion, medians) once per timer of TIMERS (default "events cupti":
`--timer events`, CUDA events around the launches, and `--timer cupti`, CUPTI's kernel
records), each in its own process, and once under Nsight Compute with `--profile` (clocks not
locked: `--clock-control none`), and they are compared. The sample under ncu is the run of kernels between the last two launches of
gputune's `gputune_timestamp` kernel, summed over `gpu__time_duration.sum`.

  python3 scripts/ncu-check.py OUTDIR CASE...

CASE is `NAME:BINARY:BENCH:VARIANT:AXIS;AXIS…` (VARIANT may be empty: the binary's production
choice). Writes OUTDIR/ncu-check.md (a table) and OUTDIR/ncu-check.json; prints the table. Exit
status 1 if a state could not be measured either way; the 2 % agreement is reported, not
enforced (it is what BENCHMARKS.md records)."""

import csv
import io
import json
import os
import subprocess
import sys

NCU = os.environ.get("NCU", "ncu")
TIMERS = os.environ.get("TIMERS", "events cupti").split()


def bench_args(case):
    args = ["-b", case["bench"]]
    for a in case["axes"]:
        args += ["-a", a]
    if case["variant"]:
        args += ["--variant", case["variant"]]
    return args


def gputune_median(case, out_dir, timer):
    path = os.path.join(out_dir, f"{case['name']}.{timer}.json")
    cmd = [case["binary"], *bench_args(case), "--no-batch", "--timer", timer, "--json", path]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr.strip()[-500:]}")
    with open(path) as f:
        doc = json.load(f)
    state = doc["benchmarks"][0]["states"][0]
    summaries = {s["tag"]: s["data"][0]["value"] for s in state["summaries"]}
    return {
        "median": summaries["nv/cold/time/gpu/median"],
        "noise": summaries.get("nv/cold/time/gpu/stdev/relative"),
        "samples": summaries.get("nv/cold/sample_size"),
        "clock": (state.get("samples") or {}).get("clock"),
        "state": state["name"],
    }


def ncu_sample(case, out_dir):
    cmd = [
        NCU, "--csv", "--print-units", "base", "--clock-control", "none",
        "--metrics", "gpu__time_duration.sum",
        case["binary"], *bench_args(case), "--profile",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    with open(os.path.join(out_dir, f"{case['name']}.ncu.txt"), "w") as f:
        f.write(r.stdout)
        f.write(r.stderr)
    if r.returncode != 0:
        raise RuntimeError(f"ncu exited {r.returncode}: {r.stderr.strip()[-500:]}")
    # ncu prints its own lines (==PROF==) before the CSV; the CSV starts at its header.
    lines = r.stdout.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    kernels = [
        (row["Kernel Name"], float(row["Metric Value"].replace(",", "")))
        for row in rows
        if row.get("Metric Name") == "gpu__time_duration.sum"
    ]
    marks = [i for i, (name, _) in enumerate(kernels) if name.startswith("gputune_timestamp")]
    if len(marks) < 2:
        raise RuntimeError(f"fewer than two timestamp kernels in {len(kernels)} profiled")
    sample = kernels[marks[-2] + 1 : marks[-1]]
    if not sample:
        # A memcpy or memset between the timestamps is no kernel: ncu does not profile it.
        return {"time": None, "kernels": []}
    unit = rows[0].get("Metric Unit", "nsecond")
    scale = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0}.get(unit, 1e-9)
    return {
        "time": sum(t for _, t in sample) * scale,
        "kernels": [name.split("(")[0] for name, _ in sample],
    }


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    results, failed = [], False
    for spec in sys.argv[2:]:
        name, binary, bench, variant, axes = spec.split(":", 4)
        case = {
            "name": name, "binary": binary, "bench": bench, "variant": variant,
            "axes": [a for a in axes.split(";") if a],
        }
        row = dict(case)
        try:
            row["gputune"] = {t: gputune_median(case, out_dir, t) for t in TIMERS}
            row["ncu"] = ncu_sample(case, out_dir)
            if row["ncu"]["time"] is not None:
                row["ratio"] = {
                    t: g["median"] / row["ncu"]["time"] for t, g in row["gputune"].items()
                }
        except Exception as e:  # a failing case is reported, the others still run
            row["error"] = str(e)
            failed = True
        results.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    us = lambda seconds: f"{seconds * 1e6:.2f} us"
    table = [
        "| case | state | variant | kernels in the sample | "
        + " | ".join(f"gputune {t} median (noise, clock)" for t in TIMERS)
        + " | ncu (unlocked clocks) | "
        + " | ".join(f"{t} / ncu" for t in TIMERS)
        + " | within 2 % |",
        "|---|---|---|---|" + "---|" * (2 * len(TIMERS) + 2),
    ]
    for r in results:
        variant = r["variant"] or "(production)"
        if "error" in r:
            table.append(f"| {r['name']} | | {variant} | | failed: {r['error'][:160]} |")
            continue
        g, n = r["gputune"], r["ncu"]
        state = next(iter(g.values()))["state"]
        medians = " | ".join(
            f"{us(x['median'])} ({100 * (x['noise'] or 0):.2f} %, {x['clock']})" for x in g.values()
        )
        if n["time"] is None:
            table.append(
                f"| {r['name']} | {state} | {variant} | none (a copy: ncu profiles kernels only) "
                f"| {medians} | - | " + " | ".join("-" for _ in g) + " | - |"
            )
            continue
        ratios = r["ratio"]
        within = ", ".join(f"{t} {'yes' if abs(x - 1) <= 0.02 else 'no'}" for t, x in ratios.items())
        table.append(
            f"| {r['name']} | {state} | {variant} | {', '.join(n['kernels'])} | {medians} "
            f"| {us(n['time'])} | " + " | ".join(f"{x:.4f}" for x in ratios.values())
            + f" | {within}{'' if n['time'] >= 50e-6 else ' (under 50 us)'} |"
        )
    text = "\n".join(table) + "\n"
    print(text)
    with open(os.path.join(out_dir, "ncu-check.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out_dir, "ncu-check.json"), "w") as f:
        json.dump(results, f, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Checks gputune's clocks against the hardware's, median against median.

Each case's state is measured RUNS times by gputune, each in its own process (cold, default
stdrel criterion; the median of CUDA-event times), and RUNS times under Nsight Compute, each a
process that takes SAMPLES cold samples without the blocking kernel (clocks not locked:
`--clock-control none`; ncu's own cache control flushes before every kernel). A sample under
ncu is the run of kernels between the two `gputune_timestamp` launches that bracket it, summed
over `gpu__time_duration.sum`. Each side's number is the median over its processes of the
per-process medians, and the spread over processes is shown: one process's memory placement
moves a memory-bound kernel by a percent or more, and one ncu sample has its own noise.

  [RUNS=3] [SAMPLES=5] python3 scripts/gpu/ncu-check.py OUTDIR CASE...

CASE is `NAME:BINARY:BENCH:VARIANT:AXIS;AXIS…` (VARIANT may be empty: the binary's production
choice). Writes OUTDIR/ncu-check.md (a table) and OUTDIR/ncu-check.json; prints the table. Exit
status 1 if a state could not be measured either way; the 2 % agreement is reported, not
enforced (it is what BENCHMARKS.md records)."""

import csv
import io
import json
import os
import statistics
import subprocess
import sys

NCU = os.environ.get("NCU", "ncu")
RUNS = int(os.environ.get("RUNS", "3"))
SAMPLES = int(os.environ.get("SAMPLES", "5"))


def bench_args(case):
    args = ["-b", case["bench"]]
    for a in case["axes"]:
        args += ["-a", a]
    if case["variant"]:
        args += ["--variant", case["variant"]]
    return args


def gputune_median(case, out_dir, run):
    path = os.path.join(out_dir, f"{case['name']}.{run}.json")
    cmd = [case["binary"], *bench_args(case), "--no-batch", "--json", path]
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
        "state": state["name"],
    }


def ncu_samples(case, out_dir, run, samples=SAMPLES):
    """The sample times of one process under ncu (the warm-up's left out), in seconds. Run
    `profile` is the bench's `--profile`: one sample, nothing else."""
    if run == "profile":
        flags = ["--profile"]
    else:
        flags = [
            "--no-batch", "--disable-blocking-kernel",
            "--stopping-criterion", "sample-count", "--target-samples", str(samples),
            "--min-samples", str(samples),
            # Between ncu's replays the SM idles: the clock read around a sample is no throttle.
            "--throttle-threshold", "0",
        ]
    cmd = [
        NCU, "--csv", "--print-units", "base", "--clock-control", "none",
        "--metrics", "gpu__time_duration.sum",
        case["binary"], *bench_args(case), *flags,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    with open(os.path.join(out_dir, f"{case['name']}.{run}.ncu.txt"), "w") as f:
        f.write(r.stdout)
        f.write(r.stderr)
    if r.returncode != 0:
        raise RuntimeError(f"ncu exited {r.returncode}: {r.stderr.strip()[-500:]}")
    # ncu prints its own lines (==PROF==) before the CSV; the CSV starts at its header.
    lines = r.stdout.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))
    unit = rows[0].get("Metric Unit", "nsecond")
    scale = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0}.get(unit, 1e-9)
    kernels = [
        (row["Kernel Name"], float(row["Metric Value"].replace(",", "")) * scale)
        for row in rows
        if row.get("Metric Name") == "gpu__time_duration.sum"
    ]
    marks = [i for i, (name, _) in enumerate(kernels) if name.startswith("gputune_timestamp")]
    # Two timestamp launches per cold sample, the first just before its start event and the
    # second just after its stop event: the last SAMPLES pairs are the measured samples.
    pairs = [(marks[j], marks[j + 1]) for j in range(len(marks) - 2, -1, -2)][:samples]
    if len(pairs) < samples:
        raise RuntimeError(f"{len(marks)} timestamp kernels for {samples} samples")
    windows = [kernels[a + 1 : b] for a, b in pairs]
    if not any(windows):
        # A memcpy or memset between the timestamps is no kernel: ncu does not profile it.
        return {"times": [], "kernels": []}
    if not all(windows):
        raise RuntimeError("some samples hold no kernel under ncu, others do")
    return {
        "times": [sum(t for _, t in w) for w in windows],
        "kernels": [name.split("(")[0] for name, _ in windows[0]],
    }


def spread(values):
    return (min(values), max(values))


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
            runs = [gputune_median(case, out_dir, r) for r in range(RUNS)]
            medians = [g["median"] for g in runs]
            row["gputune"] = {
                "runs": runs,
                "median": statistics.median(medians),
                "spread": spread(medians),
                "state": runs[0]["state"],
            }
            # `--profile` runs under ncu (what a user profiling a variant does), one sample.
            row["profile"] = ncu_samples(case, out_dir, "profile", samples=1)
            profiled = [ncu_samples(case, out_dir, r) for r in range(RUNS)]
            if all(p["times"] for p in profiled):
                per_process = [statistics.median(p["times"]) for p in profiled]
                row["ncu"] = {
                    "runs": profiled,
                    "median": statistics.median(per_process),
                    "spread": spread(per_process),
                    "kernels": profiled[0]["kernels"],
                }
                row["ratio"] = row["gputune"]["median"] / row["ncu"]["median"]
            else:
                row["ncu"] = None
        except Exception as e:  # a failing case is reported, the others still run
            row["error"] = str(e)
            failed = True
        results.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    us = lambda s: f"{s * 1e6:.2f} us"
    span = lambda lo_hi: f"[{lo_hi[0] * 1e6:.2f}–{lo_hi[1] * 1e6:.2f}]"
    table = [
        f"| case | state | variant | kernels in the sample | gputune median of {RUNS} processes [their range] "
        f"| ncu median of {RUNS} processes × {SAMPLES} samples [their range] | gputune / ncu | within 2 % "
        f"| `--profile` under ncu (1 sample) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        variant = r["variant"] or "(production)"
        if "error" in r:
            table.append(f"| {r['name']} | | {variant} | | failed: {r['error'][:160]} | | | | |")
            continue
        g, n = r["gputune"], r["ncu"]
        ours = f"{us(g['median'])} {span(g['spread'])}"
        if n is None:
            table.append(
                f"| {r['name']} | {g['state']} | {variant} | none (a copy: ncu profiles kernels "
                f"only) | {ours} | - | - | - | - |"
            )
            continue
        table.append(
            f"| {r['name']} | {g['state']} | {variant} | {', '.join(n['kernels'])} | {ours} "
            f"| {us(n['median'])} {span(n['spread'])} | {r['ratio']:.4f} "
            f"| {'yes' if abs(r['ratio'] - 1) <= 0.02 else 'no'}"
            f"{'' if n['median'] >= 50e-6 else ' (under 50 us)'} "
            f"| {us(r['profile']['times'][0]) if r['profile']['times'] else 'ran'} |"
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

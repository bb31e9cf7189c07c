#!/usr/bin/env python3
"""Build cost of N variants, isolated (one build per variant, like CUB) vs batched (one build
holding all N), for the reduce-cpu example's `sum`. Prints a markdown table for BENCHMARKS.md.

Usage: python3 scripts/local/bench-build-times.py [N ...]   (default: 16 64 256; release profile)
Each batched build is repeated 3 times (median); isolated builds are timed one by one and the
per-variant median is reported with the total.
"""
import json, os, statistics, subprocess, sys, time

PACKAGE = "gputune-example-reduce-cpu"
CMD = ["cargo", "build", "--release", "--quiet", "-p", PACKAGE, "--bench", "reduce"]


def build(selection):
    env = dict(os.environ)
    env.pop("GPUTUNE_VARIANTS", None)
    if selection is not None:
        env["GPUTUNE_VARIANTS"] = selection
    start = time.monotonic()
    out = subprocess.run(CMD + ["--message-format=json"], env=env, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    if out.returncode != 0:
        sys.exit(f"build failed:\n{out.stderr}")
    return elapsed, out.stdout


def labels():
    _, stdout = build(None)
    for line in stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "build-script-executed" and PACKAGE in msg.get("package_id", ""):
            with open(os.path.join(msg["out_dir"], "gputune", "manifest.json")) as f:
                manifest = json.load(f)
            return [l for f in manifest["functions"] if f["name"] == "sum" for l in f["labels"]]
    sys.exit("no manifest found")


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [16, 64, 256]
    space = labels()
    rows = []
    for n in sizes:
        chosen = [f"{PACKAGE}::sum.{l}" for l in space[:n]]
        batched = []
        for _ in range(3):
            build(None)  # production build in between, so the batch really rebuilds
            t, _ = build(",".join(chosen))
            batched.append(t)
        isolated = [build(label)[0] for label in chosen]
        total_iso, med_batch = sum(isolated), statistics.median(batched)
        rows.append((n, total_iso, statistics.median(isolated), med_batch, total_iso / med_batch))
        print(f"N={n}: isolated {total_iso:.1f} s total, batched {med_batch:.2f} s", file=sys.stderr)
    print("| N | isolated: total | isolated: per variant (median) | batched: one build (median of 3) | batched: per variant | isolated / batched |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, tot, per, batch, ratio in rows:
        print(f"| {n} | {tot:.1f} s | {per:.2f} s | {batch:.2f} s | {batch / n * 1000:.1f} ms | {ratio:.0f}× |")


if __name__ == "__main__":
    main()

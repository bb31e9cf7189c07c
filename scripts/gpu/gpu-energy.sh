#!/usr/bin/env bash
# Issue 29's GPU acceptance (energy as well as time), on the GPU machine, from the repository root:
#
#   bash .gpu/energy/gpu-energy.sh DIR   [E=.gpu/energy] [EVALS=40] [SEARCH_LIMIT=120] [W1=0.4 W2=0.8]
#
# Needs .gpu/energy (`bash scripts/gpu/build-gpu.sh energy`: the scale, reduce and SGEMM bundles built
# with `search --objective energy`, and their cargo-gputune). No cargo needed. Writes logs, JSON,
# stores and reports to DIR, and DIR/summary.md. Reads NVML's energy counter; sets nothing.
#
# (a) Repeatability: the scale example's production build (base: ipt 4, tpb 256, 2^26 f32) in 5
#     processes one after another, each measuring energy (`--energy`: 5 batches of at least 0.1 s
#     and 4 counter updates). PASS when every process's mean joules per launch is within twice
#     its own reported noise (the relative spread of its batches) of the median of the 5.
# (b) Linearity: the same kernel with `--energy-window` W1 and W2 (0.4 and 0.8 s), twice each,
#     alternating: batches of about 2× the launches. A batch spans at least 4 updates of the
#     counter, which an H200 updates every 100 ms (2026-11-27), so windows under 0.4 s all make
#     0.4 s batches there (0.1 against 0.2 s compared 0.4 s with 0.4 s). PASS when the launches
#     per batch grew 1.6–2.6× and the energy per batch as much (energy ratio over launch ratio,
#     that is joules per launch, within twice the two windows' noises combined of 1).
# (c) Searches with `--objective energy`: each bundle's variants, a seeded random sample of
#     EVALS (all, where the space is smaller), every one measured in full with its energy, base
#     in each process as the control; `report` prints per example the time winner and the
#     energy winner with both numbers, whether they differ, and the Pareto front.
set -uo pipefail
out=${1:-${OUT:?give the folder for logs, stores and reports}}
e=${E:-.gpu/energy}
evals=${EVALS:-40}
limit=${SEARCH_LIMIT:-120}
w1=${W1:-0.4}
w2=${W2:-0.8}
gputune="$e/cargo-gputune"
bin="$e/scale-bundle/bin/scale-base"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,power.limit,power.draw,temperature.gpu,clocks.sm,clocks.mem \
  --format=csv > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
fixed=(-a 'T{ct}=f32' -a 'Elements{io}[pow2]=26' --no-batch --stopping-criterion sample-count
  --target-samples 20 --energy)

# (a) The same kernel, 5 processes.
for i in 1 2 3 4 5; do
  "$bin" "${fixed[@]}" --json "$out/repeat-$i.json" > "$out/repeat-$i.log" 2>&1
  echo "repeat $i exit=$?"
done
# (b) Batches of W1 and W2, alternating.
for k in 1 2; do
  for w in "$w1" "$w2"; do
    "$bin" "${fixed[@]}" --energy-window "$w" --json "$out/window-$w-$k.json" \
      > "$out/window-$w-$k.log" 2>&1
    echo "window $w ($k) exit=$?"
  done
done
# (c) The searches.
for ex in scale reduce sgemm; do
  rm -f "$out/$ex.db" "$out/$ex.db-wal" "$out/$ex.db-shm"
  t0=$(date +%s.%N)
  timeout "$limit" "$gputune" run-bundle "$e/$ex-bundle" --strategy random --seed 1 \
    --max-evals "$evals" --db "$out/$ex.db" > "$out/$ex.search.log" 2>&1
  rc=$?
  echo "$ex search exit=$rc wall_s=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')")" \
    | tee -a "$out/times.txt"
  "$gputune" report --db "$out/$ex.db" --top 5 > "$out/$ex.report.txt" 2>&1
  "$gputune" report --db "$out/$ex.db" --top 5 --objective edp > "$out/$ex.report-edp.txt" 2>&1
done

python3 - "$out" "$w1" "$w2" <<'PY' | tee "$out/summary.md"
import json, math, os, statistics, sys
out, w1, w2 = sys.argv[1:4]

def state(path):
    try:
        doc = json.load(open(path))
        return doc["benchmarks"][0]["states"][0]
    except Exception as e:  # a run that failed says so below
        return {"error": f"{path}: {e}"}

def tag(st, t):
    for s in st.get("summaries", []):
        if s["tag"] == t:
            return s["data"][0]["value"]
    return None

def energy(st):
    e = st.get("energy") or {}
    b = e.get("batches") or []
    return {
        "jpl": tag(st, "gputune/energy/joules_per_launch/mean"),
        "noise": tag(st, "gputune/energy/joules_per_launch/stdev/relative"),
        "watts": tag(st, "gputune/energy/power/mean"),
        "interval": e.get("counter_interval"),
        "launches": statistics.mean(x["launches"] for x in b) if b else None,
        "joules": statistics.mean(x["joules"] for x in b) if b else None,
        "time": tag(st, "nv/cold/time/gpu/median"),
        "unavailable": e.get("unavailable") or st.get("error"),
    }

print("## (a) repeatability: scale base, 2^26 f32, 5 processes\n")
print("| run | J/launch | noise | W | counter interval | J/batch | launches/batch | time (median) |")
print("|---|---|---|---|---|---|---|---|")
runs = [energy(state(f"{out}/repeat-{i}.json")) for i in range(1, 6)]
for i, r in enumerate(runs, 1):
    if r["jpl"] is None:
        print(f"| {i} | unavailable: {r['unavailable']} |||||||")
        continue
    print(f"| {i} | {r['jpl']*1e3:.4f} mJ | {r['noise']*100:.2f} % | {r['watts']:.1f} | "
          f"{r['interval']*1e3:.1f} ms | {r['joules']:.2f} J | {r['launches']:.0f} | {r['time']*1e6:.1f} us |")
ok_runs = [r for r in runs if r["jpl"] is not None]
if len(ok_runs) == 5:
    med = statistics.median(r["jpl"] for r in ok_runs)
    devs = [abs(r["jpl"] / med - 1) for r in ok_runs]
    within = [d <= 2 * r["noise"] for d, r in zip(devs, ok_runs)]
    spread = statistics.stdev(r["jpl"] for r in ok_runs) / statistics.mean(r["jpl"] for r in ok_runs)
    dev_text = ", ".join("%.2f %%" % (d * 100) for d in devs)
    tol_text = ", ".join("%.2f %%" % (2 * r["noise"] * 100) for r in ok_runs)
    print(f"\nmedian {med*1e3:.4f} mJ/launch; spread of the 5 means {spread*100:.2f} %; "
          f"deviations from the median {dev_text} against twice each run's noise {tol_text}")
    print(f"\n{'PASS' if all(within) else 'FAIL'} (a): {sum(within)} of 5 within twice their noise of the median")
else:
    print("\nFAIL (a): not every run measured energy")

print(f"\n## (b) linearity: batches of {w1} s against {w2} s\n")
print("| window | run | launches/batch | J/batch | J/launch | noise |")
print("|---|---|---|---|---|---|")
w = {}
for k in (1, 2):
    for win in (w1, w2):
        r = energy(state(f"{out}/window-{win}-{k}.json"))
        w.setdefault(win, []).append(r)
        if r["jpl"] is None:
            print(f"| {win} s | {k} | unavailable: {r['unavailable']} ||||")
        else:
            print(f"| {win} s | {k} | {r['launches']:.0f} | {r['joules']:.2f} | {r['jpl']*1e3:.4f} mJ | {r['noise']*100:.2f} % |")
good = all(r["jpl"] is not None for rs in w.values() for r in rs)
if good:
    a, b = w[w1], w[w2]
    lr = statistics.mean(r["launches"] for r in b) / statistics.mean(r["launches"] for r in a)
    er = statistics.mean(r["joules"] for r in b) / statistics.mean(r["joules"] for r in a)
    na = statistics.mean(r["noise"] for r in a)
    nb = statistics.mean(r["noise"] for r in b)
    tol = 2 * math.sqrt(na * na + nb * nb)
    dev = abs(er / lr - 1)
    print(f"\nlaunches ×{lr:.3f}, energy ×{er:.3f}: energy per launch ×{er/lr:.4f} "
          f"({dev*100:.2f} % off 1, tolerance {tol*100:.2f} %)")
    print(f"\n{'PASS' if dev <= tol and 1.6 < lr < 2.6 else 'FAIL'} (b): energy grows with the launches")
else:
    print("\nFAIL (b): not every run measured energy")

print("\n## (c) searches with --objective energy\n")
times = open(f"{out}/times.txt").read() if os.path.exists(f"{out}/times.txt") else ""
for ex in ("scale", "reduce", "sgemm"):
    print(f"### {ex}\n")
    print("```")
    print(next((l for l in times.splitlines() if l.startswith(ex)), "").strip())
    text = open(f"{out}/{ex}.report.txt").read() if os.path.exists(f"{out}/{ex}.report.txt") else ""
    at = text.find("Energy:")
    print(text[at:].split("\nenergy: joules per launch")[0].rstrip() if at >= 0 else text[-1500:])
    edp = open(f"{out}/{ex}.report-edp.txt").read() if os.path.exists(f"{out}/{ex}.report-edp.txt") else ""
    line = next((l.strip() for l in edp.splitlines() if l.strip().startswith("edp winner")), None)
    if line:
        print(line)
    print("```\n")
PY

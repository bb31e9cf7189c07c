#!/usr/bin/env python3
"""Summarises the JSON documents of gpu-measurement.sh into the tables of BENCHMARKS.md.

For each criterion and state: samples taken (median and range over the repeats), the median
GPU time of each run (median over runs and its spread), cold and batch bandwidth, and the
copy bandwidth of the same run next to the scale kernel's.
"""
import glob
import json
import os
import statistics
import sys


def summaries(state):
    out = {}
    for s in state["summaries"]:
        v = s["data"][0]["value"]
        try:
            out[s["tag"]] = float(v)
        except ValueError:
            out[s["tag"]] = v
    return out


def key(state):
    axes = " ".join(f'{a["name"]}={a["value"]}' for a in state["axis_values"])
    # The tuned scale bench runs its variants over the same axis values.
    return axes + (f' variant={state["variant"]}' if state.get("variant") else "")


def main(folder):
    runs = {}
    device = None
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        criterion = os.path.basename(path).rsplit("-", 1)[0]
        doc = json.load(open(path))
        device = device or next((d for d in doc["devices"] if d["backend"] == "cuda"), None)
        for b in doc["benchmarks"]:
            for st in b["states"]:
                if st["status"] not in ("ok", "timeout"):
                    print(f"<!-- {path}: {b['name']} {key(st)} {st['status']}: {st.get('error')} -->")
                    continue
                runs.setdefault((criterion, b["name"], key(st)), []).append(summaries(st))
    if device:
        print(f"Device: {device['name']}, sm_{device['sm_version']}, {device['number_of_sms']} SMs, "
              f"peak {device['global_memory_bus_bandwidth'] / 1e12:.2f} TB/s (2 x memory clock x bus width / 8), "
              f"L2 {device['l2_cache_size'] / 2**20:.0f} MiB, ECC {device['ecc_state']}\n")
    print("| criterion | bench | state | runs | samples median [min, max] | median GPU time: median of runs [min, max] | spread of run medians | cold BW (median run) | batch BW (median run) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (criterion, bench, state), rs in sorted(runs.items()):
        n = [r["nv/cold/sample_size"] for r in rs]
        med = [r["nv/cold/time/gpu/median"] for r in rs]
        bw = [r.get("nv/cold/bw/global/bytes_per_second", float("nan")) for r in rs]
        hot_t = [r.get("nv/batch/time/gpu/mean") for r in rs if r.get("nv/batch/time/gpu/mean")]
        mm = statistics.median(med)
        spread = (max(med) - min(med)) / mm * 100
        bytes_ = statistics.median(bw) * statistics.median([r["nv/cold/time/gpu/mean"] for r in rs])
        hot_bw = bytes_ / statistics.median(hot_t) if hot_t else float("nan")
        print(f"| {criterion} | {bench} | {state} | {len(rs)} | {statistics.median(n):.0f} [{min(n):.0f}, {max(n):.0f}] "
              f"| {mm * 1e6:.2f} us [{min(med) * 1e6:.2f}, {max(med) * 1e6:.2f}] | {spread:.2f} % "
              f"| {statistics.median(bw) / 1e12:.3f} TB/s | {hot_bw / 1e12:.3f} TB/s |")
    print()
    print("Scale kernel bandwidth next to the copy of the same run (cold, bytes read + written):\n")
    print("| criterion | elements | IPT | scale TB/s (median of runs) | copy TB/s (same runs) | scale / copy |")
    print("|---|---|---|---|---|---|")
    for (criterion, bench, state), rs in sorted(runs.items()):
        if bench != "scale":
            continue
        parts = dict(p.split("=", 1) for p in state.split())
        copy_key = f'T{{ct}}={parts["T{ct}"]} Elements{{io}}={parts["Elements{io}"]}'
        copy = runs.get((criterion, "copy", copy_key))
        if not copy:
            continue
        s_bw = statistics.median(r["nv/cold/bw/global/bytes_per_second"] for r in rs)
        c_bw = statistics.median(r["nv/cold/bw/global/bytes_per_second"] for r in copy)
        ipt = parts.get("IPT") or dict(p.split("_", 1) for p in parts["variant"].split("."))["ipt"]
        print(f"| {criterion} | {parts['Elements{io}']} | {ipt} | {s_bw / 1e12:.3f} | {c_bw / 1e12:.3f} | {s_bw / c_bw * 100:.1f} % |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")

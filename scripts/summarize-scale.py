#!/usr/bin/env python3
"""Summarises gpu-scale.sh's folder: per search, its wall time, what each variant's status
was, the winner against base, and the bandwidth of base and of the winner next to the
device-to-device copy of the same size (the roof) measured right after."""
import glob
import json
import os
import re
import statistics
import sys

BYTES = 2 * 4 * 2**26  # f32, 2^26 elements, read + written


def copy_roof(folder):
    rates = []
    for path in sorted(glob.glob(os.path.join(folder, "copy-*.json"))):
        doc = json.load(open(path))
        for b in doc["benchmarks"]:
            for st in b["states"]:
                for s in st["summaries"]:
                    if s["tag"] == "nv/cold/bw/global/bytes_per_second":
                        rates.append(float(s["data"][0]["value"]))
    return rates


def main(folder):
    times = {}
    for line in open(os.path.join(folder, "times.txt")):
        m = re.match(r"(\S+) exit=(\d+) wall_s=([\d.]+)", line)
        if m:
            times[m.group(1)] = (int(m.group(2)), float(m.group(3)))
    devices = os.path.join(folder, "devices.json")
    try:
        d = json.load(open(devices))["devices"][0]
        print(f"Device: {d['name']}, sm_{d['sm_version']}, {d['number_of_sms']} SMs, "
              f"L2 {d['l2_cache_size'] / 2**20:.0f} MiB, bus {d['global_memory_bus_width']} bits, "
              f"ECC {d['ecc_state']}, peak {d['global_memory_bus_bandwidth'] / 1e12:.2f} TB/s\n")
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        print("Device: unknown (see devices.err)\n")
    roof = copy_roof(folder)
    roof_med = statistics.median(roof) if roof else float("nan")
    print(f"Copy roof (cold, 2^26 f32, read + written): median {roof_med / 1e12:.3f} TB/s over "
          f"{len(roof)} run(s)" + (f" [{min(roof) / 1e12:.3f}, {max(roof) / 1e12:.3f}]" if roof else "") + "\n")
    print("| search | exit | wall s | variants ok / measured | other statuses | winner | score | base TB/s | winner TB/s | winner / copy |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, (rc, wall) in times.items():
        path = os.path.join(folder, f"{name}.report.json")
        try:
            groups = json.load(open(path))["groups"]
        except (OSError, ValueError, KeyError):
            print(f"| {name} | {rc} | {wall:.2f} | no report | | | | | | |")
            continue
        for g in groups:
            vs = [v for v in g["variants"] if v["variant"] != "base"]
            statuses = {}
            for v in vs:
                statuses[v["status"]] = statuses.get(v["status"], 0) + 1
            ok = statuses.pop("ok", 0)
            scored = [v for v in vs if v["score"] is not None]
            best = max(scored, key=lambda v: v["score"]) if scored else None
            base = next((v for v in g["variants"] if v["variant"] == "base"), None)

            def rate(v):
                c = v and v["workloads"] and v["workloads"][0]["center"]
                return BYTES / c if c else float("nan")

            other = ", ".join(f"{k} {n}" for k, n in sorted(statuses.items())) or "none"
            print(f"| {name} | {rc} | {wall:.2f} | {ok} / {len(vs)} | {other} | "
                  f"{best['variant'] if best else '-'} | {best['score'] if best else float('nan'):.4f} | "
                  f"{rate(base) / 1e12:.3f} | {rate(best) / 1e12:.3f} | {rate(best) / roof_med * 100:.1f} % |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")

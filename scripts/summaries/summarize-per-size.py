#!/usr/bin/env python3
"""Summarises gpu-per-size-time.sh's runs into the table of BENCHMARKS.md (issue 26).

Per size: the variant each production build ran there (from the states' `variant`), the
median over runs of each run's median GPU time, the range of those run medians, the speedup
of the per-size build over the single-winner build (ratio of the medians), and whether it is
beyond noise: the two builds' ranges of run medians do not overlap (every per-size run faster
than every single run, or the other way round). Also the copy's bandwidth at the same size as
the roof.

    python3 summarize-per-size.py DIR
"""
import glob
import json
import os
import statistics
import sys


def summaries(state):
    out = {}
    for s in state["summaries"]:
        try:
            out[s["tag"]] = float(s["data"][0]["value"])
        except (ValueError, TypeError):
            out[s["tag"]] = s["data"][0]["value"]
    return out


# The size axis (SIZE_AXIS in the environment; Elements by default, Keys for the histogram).
SIZE_AXIS = os.environ.get("SIZE_AXIS", "Elements")


def elements(state):
    for a in state["axis_values"]:
        if a["name"].split("{")[0] == SIZE_AXIS:
            return int(a["value"])
    return None


def load(folder, kind):
    """{elements: [(median s, variant, bytes/s)]} over the runs of one build; and the device."""
    per_size, device, problems = {}, None, []
    for path in sorted(glob.glob(os.path.join(folder, f"{kind}-*.json"))):
        doc = json.load(open(path))
        device = device or next((d for d in doc["devices"] if d["backend"] == "cuda"), None)
        for b in doc["benchmarks"]:
            for st in b["states"]:
                if st["status"] != "ok":
                    problems.append(f"{path}: {b['name']} {st['name']}: {st['status']} {st.get('error')}")
                    continue
                s = summaries(st)
                per_size.setdefault(elements(st), []).append(
                    (s["nv/cold/time/gpu/median"], st.get("variant") or "base",
                     s.get("nv/cold/bw/global/bytes_per_second", float("nan"))))
    return per_size, device, problems


def fmt_time(t):
    return f"{t * 1e6:.2f} us" if t < 1e-3 else f"{t * 1e3:.3f} ms"


def main(folder):
    single, device, p1 = load(folder, "single")
    per_size, _, p2 = load(folder, "per-size")
    copy, _, p3 = load(folder, "copy")
    for p in p1 + p2 + p3:
        print(f"<!-- {p} -->")
    if device:
        print(f"Device: {device['name']}, sm_{device['sm_version']}, {device['number_of_sms']} SMs, "
              f"L2 {device['l2_cache_size'] / 2**20:.0f} MiB\n")
    print(f"| {SIZE_AXIS.lower()} | single: variant | single: median of run medians [range] | per-size: variant "
          "| per-size: median of run medians [range] | speedup | beyond noise | copy BW |")
    print("|---|---|---|---|---|---|---|---|")
    never_slower, faster = True, 0
    for n in sorted(k for k in set(single) | set(per_size) if k is not None):
        a, b = single.get(n, []), per_size.get(n, [])
        if not a or not b:
            print(f"| 2^{n.bit_length() - 1} | missing | | | | | | |")
            never_slower = False
            continue
        ta, tb = [x[0] for x in a], [x[0] for x in b]
        ma, mb = statistics.median(ta), statistics.median(tb)
        va = ",".join(sorted({x[1] for x in a}))
        vb = ",".join(sorted({x[1] for x in b}))
        apart = max(tb) < min(ta) or max(ta) < min(tb)
        speedup = ma / mb
        if apart and speedup > 1:
            faster += 1
        if apart and speedup < 1:
            never_slower = False
        roof = copy.get(n)
        roof = f"{statistics.median(x[2] for x in roof) / 1e12:.3f} TB/s" if roof else ""
        print(f"| 2^{n.bit_length() - 1} | {va} | {fmt_time(ma)} [{fmt_time(min(ta))}, {fmt_time(max(ta))}] "
              f"| {vb} | {fmt_time(mb)} [{fmt_time(min(tb))}, {fmt_time(max(tb))}] | {speedup:.4f} "
              f"| {'yes' if apart else 'no'} | {roof} |")
    runs = len(glob.glob(os.path.join(folder, "single-*.json")))
    print(f"\n{runs} run(s) of each build, alternating. Per-size build slower beyond noise at no size: "
          f"{'yes' if never_slower else 'NO'}; faster beyond noise at {faster} size(s).")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")

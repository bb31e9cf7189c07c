#!/usr/bin/env python3
"""The best case of a search on two GPUs, from the logs of `gpu-devices.sh`: what each bench
process pays whatever its share (the CLI's own start and end, opening its device, its bench's
setup) plus half of everything the one-GPU search did after that (measuring, compile waits, the
time between), as if two GPUs split it with nothing repeated and both finished together. The
device open on two is what two processes opening at once paid in those runs. Prints, per search,
the one-GPU wall time, that best case, the speed-up it allows, and the same with a device open as
cheap as one process alone gets. An estimate, not a bound: a search whose one-GPU run waited on
compiles can beat it, since two processes compile side by side (the large space: 2.08× measured
against 1.92× here).

  python3 scripts/gpu/devices-bound.py DIR [DIR …]   (DIR: an OUT of gpu-devices.sh, its logs
                                                       NAME-1gpu-K.log.gz and times.txt)
"""

import glob
import gzip
import os
import re
import statistics
import sys

LINE = re.compile(
    r"in (\d+) bench process\(es\) of ([\d.]+) s in all: device open ([\d.]+) s, setup ([\d.]+) s,"
    r" reference outputs ([\d.]+) s, compile waits ([\d.]+) s, measuring ([\d.]+) s")
FIELDS = ("procs", "total", "open", "setup", "ref", "compile", "measuring")


def accounts(path):
    with gzip.open(path, "rt") as f:
        m = LINE.search(f.read())
    if not m:
        sys.exit(f"{path}: no accounting line")
    return dict(zip(FIELDS, map(float, m.groups())))


def walls(folder):
    out = {}
    with open(os.path.join(folder, "times.txt")) as f:
        for line in f:
            m = re.match(r"(\S+) exit=0 wall_s=([\d.]+)", line)
            if m:
                out[m.group(1)] = float(m.group(2))
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print("| search | 1 GPU | best case on 2 GPUs | speed-up then | with one process's open |")
    print("|---|---|---|---|---|")
    for folder in sys.argv[1:]:
        wall = walls(folder)
        names = sorted({os.path.basename(p).split("-1gpu-")[0]
                        for p in glob.glob(os.path.join(folder, "*-1gpu-*.log.gz"))})
        for name in names:
            one = [accounts(p) for p in sorted(glob.glob(f"{folder}/{name}-1gpu-*.log.gz"))]
            two = [accounts(p) for p in sorted(glob.glob(f"{folder}/{name}-2gpu-*.log.gz"))]
            runs = [wall[k] for k in sorted(wall) if k.startswith(f"{name}-1gpu-")]
            if not one or not two or not runs:
                continue
            w1 = statistics.median(runs)
            med = {k: statistics.median(a[k] for a in one) for k in FIELDS}
            open2 = statistics.median(a["open"] / a["procs"] for a in two)
            outside = w1 - med["total"]
            rest = med["total"] - med["open"] - med["setup"] - med["ref"]

            def best(opened):
                return outside + opened + med["setup"] + med["ref"] + rest / 2

            shared, cheap = best(open2), best(med["open"])
            print(f"| {name} ({os.path.basename(folder.rstrip('/'))}) | {w1:.2f} s | {shared:.2f} s "
                  f"(open {open2:.2f} s) | {w1 / shared:.2f}× | {w1 / cheap:.2f}× "
                  f"(open {med['open']:.2f} s) |")


if __name__ == "__main__":
    main()

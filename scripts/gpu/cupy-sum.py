#!/usr/bin/env python3
"""The reference for the reduction example: CuPy's `x.sum()` (CuPy calls CUB's device-wide
reduction) of 2^K float32 values, timed the way gputune's cold loop times a kernel: before each
sample an L2-sized buffer is written (the cache flush), then a spin kernel holds the stream
(about 200 us, longer than CuPy's host-side dispatch) so that the start event, the sum's
launches and the stop event are all queued when it ends and the events time the device work
alone, not Python; one warm-up; the median of SAMPLES samples is one run, RUNS runs. Writes
reference.json for summarize-search.py and prints a line per run.

  python3 cupy-sum.py OUT_JSON [K=28] [RUNS=3] [SAMPLES=500]"""
import json
import statistics
import sys

import cupy as cp


def main():
    out = sys.argv[1]
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 28
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    samples = int(sys.argv[4]) if len(sys.argv) > 4 else 500
    props = cp.cuda.runtime.getDeviceProperties(0)
    flush = cp.empty(props["l2CacheSize"], dtype=cp.uint8)
    n = 1 << k
    # Non-zero, index-dependent inputs (never time on zeros).
    x = (cp.arange(n, dtype=cp.int64) % 9 - 4).astype(cp.float32)
    x[x == 0] = 1
    # One thread spins for `cycles` SM clock cycles.
    spin = cp.RawKernel(r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}""", "spin")
    cycles = cp.int64(props["clockRate"] * 1000 * 200e-6)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    medians = []
    for r in range(runs):
        times = []
        for i in range(samples + 1):
            flush.fill(0)
            spin((1,), (1,), (cycles,))
            start.record()
            total = x.sum()
            stop.record()
            stop.synchronize()
            if i > 0:
                times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
        med = statistics.median(times)
        medians.append(med)
        print(f"run {r + 1}: CuPy sum of 2^{k} f32: median {med * 1e6:.2f} us, "
              f"{4 * n / med / 1e12:.3f} TB/s read (sum {float(total):.0f})")
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    json.dump({"name": f"CuPy {cp.__version__} x.sum() (CUB) of 2^{k} f32, cold, launches held, on {name}",
               "median_s": medians}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()

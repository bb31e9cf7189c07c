#!/usr/bin/env python3
"""How NVRTC compilations of one process scale over threads, against the same work spread over
processes (issue 32: 73 compilations of CCCL-heavy kernels on 15 threads took 60 % of Kernel
Tuner's serial time instead of about a tenth).

Run on the GPU machine (it needs libnvrtc and CUDA's headers, no GPU):

    python3 scripts/gpu/nvrtc-scaling.py [--jobs 30] [--workers 15] [--source examples/cub-rowsum/src/rowsum.cu]

Prints, per mode, the wall time for the jobs and the mean time per compilation.
NVRTC is called through ctypes, which releases the GIL during the call, so threads here are
real threads inside one process as in gputune's compile pool.
"""
import argparse
import ctypes
import glob
import multiprocessing
import os
import threading
import time

NVRTC = None


def nvrtc():
    global NVRTC
    if NVRTC is None:
        NVRTC = ctypes.CDLL(os.environ.get("NVRTC", "libnvrtc.so.13"))
    return NVRTC


def include_dirs():
    for root in ("/usr/local/cuda/targets/x86_64-linux/include", "/usr/local/cuda/include"):
        if os.path.isdir(root):
            return [root, os.path.join(root, "cccl")]
    raise SystemExit("no CUDA include directory")


def compile_one(source, defines, extra):
    lib = nvrtc()
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source, b"k.cu", 0, None, None)
    assert rc == 0, rc
    opts = [b"--gpu-architecture=sm_90", b"-std=c++17"]
    opts += [("-I" + d).encode() for d in include_dirs()]
    opts += [("-I" + os.environ.get("SOURCE_DIR", ".")).encode()]
    opts += [f"-D{k}={v}".encode() for k, v in defines]
    opts += [o.encode() for o in extra]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    t = time.perf_counter()
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    dt = time.perf_counter() - t
    if rc != 0:
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, buf)
        raise RuntimeError(buf.value.decode()[:2000])
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return dt


def job_defines(n):
    tpbs, ipts = [128, 256, 512], [4, 8, 16]
    loads = ["BLOCK_LOAD_DIRECT", "BLOCK_LOAD_VECTORIZE", "BLOCK_LOAD_WARP_TRANSPOSE"]
    reduces = ["BLOCK_REDUCE_RAKING", "BLOCK_REDUCE_WARP_REDUCTIONS"]
    out = []
    for i in range(n):
        out.append([
            ("TPB", tpbs[i % 3]), ("IPT", ipts[(i // 3) % 3]),
            ("LOAD", loads[(i // 9) % 3]), ("REDUCE", reduces[(i // 27) % 2]),
        ])
    return out


def proc_worker(args):
    source, defines, extra = args
    return compile_one(source, defines, extra)


def run_threads(source, jobs, workers, extra):
    times, lock, it = [], threading.Lock(), iter(jobs)

    def work():
        while True:
            with lock:
                d = next(it, None)
            if d is None:
                return
            dt = compile_one(source, d, extra)
            with lock:
                times.append(dt)

    ts = [threading.Thread(target=work) for _ in range(workers)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=30)
    ap.add_argument("--workers", type=int, default=15)
    ap.add_argument("--source", default="examples/cub-rowsum/src/rowsum.cu")
    ap.add_argument("--modes", default="serial,threads,processes")
    ap.add_argument("--extra", default="", help="extra NVRTC options, comma-separated")
    a = ap.parse_args()
    os.environ["SOURCE_DIR"] = os.path.dirname(os.path.abspath(a.source))
    source = open(a.source, "rb").read()
    extra = [o for o in a.extra.split(",") if o]
    jobs = job_defines(a.jobs)
    ver = (ctypes.c_int(), ctypes.c_int())
    nvrtc().nvrtcVersion(ctypes.byref(ver[0]), ctypes.byref(ver[1]))
    print(f"NVRTC {ver[0].value}.{ver[1].value}, {os.cpu_count()} CPUs, source {a.source}, "
          f"{a.jobs} jobs, {a.workers} workers, extra {extra}")
    for mode in a.modes.split(","):
        t0 = time.perf_counter()
        if mode == "serial":
            n = max(3, a.jobs // a.workers)
            times = [compile_one(source, d, extra) for d in jobs[:n]]
        elif mode == "threads":
            times = run_threads(source, jobs, a.workers, extra)
        elif mode == "processes":
            ctx = multiprocessing.get_context("spawn")
            with ctx.Pool(a.workers) as pool:
                times = pool.map(proc_worker, [(source, d, extra) for d in jobs], chunksize=1)
        else:
            raise SystemExit(f"unknown mode {mode}")
        wall = time.perf_counter() - t0
        print(f"{mode:10} {len(times):3} compilations  wall {wall:7.2f} s  "
              f"per compilation {sum(times) / len(times):6.3f} s  "
              f"(min {min(times):.3f}, max {max(times):.3f})  "
              f"throughput {len(times) / wall:6.2f}/s", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Kernel Tuner's side of the search-cost benchmark (issue 15, gpu-vs-kt.sh): tunes one of
gputune's example kernels with Kernel Tuner 1.5 (brute force, CuPy backend, every
configuration verified) over the same space, the same source and the same problem size as
gputune's bundle, and writes what the search cost and found as JSON.

  python3 kt_tune.py PROBLEM --src DIR --json OUT.json      (PROBLEM: scale reduce transpose sgemm conv rowsum gemv histogram)
  python3 kt_tune.py PROBLEM --check-space [--bundle DIR]   (no GPU, no CuPy: the space's size)

--src is a folder holding scale.cu, reduce.cu, transpose.cu, sgemm.cu, conv.cu, rowsum.cu, gemv.cu,
histogram.cu
and the header gemv.cu includes, half_vec.cuh (build-gpu.sh's kt part copies them to .gpu/kt-src);
by default the folder kt-src next to this script, else the examples of the repository this script
is in.

What matches gputune, per problem (see PROBLEMS):
- The parameters are the -D defines the kernels read (gputune's `Kernel` passes `ipt` as
  `IPT`, transpose's `rows` as `BLOCK_ROWS`); Kernel Tuner prepends them as `#define`s.
  Identifier values (rowsum's `load = BLOCK_LOAD_DIRECT`, which gputune passes as
  `-DLOAD=BLOCK_LOAD_DIRECT`) are strings in tune_params, which Kernel Tuner 1.5 writes unquoted
  (`#define LOAD BLOCK_LOAD_DIRECT`; --check-space checks that it does).
  `VALUE_T` (gputune's element type define) is prepended as `#define VALUE_T float`
  (`__nv_bfloat16` for gemv).
- The restrictions are the `require` clauses of each `#[tune]`, in Python syntax (Rust's
  integer `/` is `//` here); --check-space enumerates the space both with Kernel Tuner's
  Searchspace and directly, and compares its labels with a bundle's where one is given/found.
- Launch geometry: grid, block and dynamic shared memory as each lib.rs computes them. The
  reduction's grid uses the occupancy calculator on the compiled kernel, which Kernel Tuner
  cannot express (its grid is fixed before compilation): a wrapper around the CuPy backend's
  run_kernel caps Kernel Tuner's grid (one block per tile) at occupancy x SMs, exactly as
  `grid()` in examples/reduce-cuda/src/lib.rs does.
- A launch over the compiled kernel's limits (threads per block lowered by its registers,
  dynamic shared memory over its 48 KiB default) is what gputune marks `invalid` without
  launching; the same wrapper raises Kernel Tuner's own "too many resources requested for
  launch" for it, so that Kernel Tuner skips it as a failed configuration (without the wrapper
  CuPy's CUDA_ERROR_INVALID_VALUE for > 48 KiB of dynamic shared memory, 4 SGEMM points, would
  abort the whole tuning run).

What necessarily differs (and is in the report):
- reduce: Kernel Tuner times the first pass (partial_sums) only, gputune both launches
  (partial_sums and final_sum, a few us on a few thousand partials).
- Timing: Kernel Tuner times each configuration by `iterations` (7) back-to-back launches,
  each between two CUDA events with the GPU otherwise idle, and reports their mean; gputune
  takes cold samples (L2 flushed before each) until its stopping criterion holds, and reports
  the median. Kernel Tuner also benchmarks the first configuration twice (its warm-up).
- Data: random inputs from numpy with a fixed seed (gputune generates its own patterns);
  outputs are poisoned with NaN before each verifying run (as gputune does).
- Compiler options: Kernel Tuner's CuPy backend compiles with NVRTC and --std=c++11 plus
  CuPy's -arch; gputune with NVRTC, C++17, --gpu-architecture=sm_XY and CUDA's include
  directories. The problems written since gputune compiles as nvcc does (rowsum, gemv: their
  spec's `compiler_options`) get what gputune gives every kernel: -std=c++17 and -I for the
  CUDA toolkit's include directory and its include/cccl, found as gputune finds them
  (cuda_include_dirs: next to the NVRTC library the process loaded, $CUDA_HOME and kin, the
  usual install paths), plus -I for the source's folder where the source includes a header of
  its crate (gemv's half_vec.cuh, which gputune embeds). The CuPy backend passes
  compiler_options to cupy.RawModule, and CuPy puts its own bundled CCCL (cub, thrust,
  libcudacxx) before every option, so under Kernel Tuner `<cub/...>` is CuPy's copy of CUB, not
  the toolkit's that gputune compiles with (the JSON records both); the toolkit's directories
  still serve what CuPy does not bundle (cuda_bf16.h, cooperative groups).
- Compiler options as tuning parameters (gemv's maxrreg, gputune's OptionRule::MaxRegisters:
  0 is no option, 32 is --maxrregcount=32): Kernel Tuner 1.5 takes one compiler_options list
  per tune_kernel call and cannot vary it per configuration, so a problem with
  `option_params` is tuned by one tune_kernel call per value of those parameters, each over
  the rest of the space with that value fixed (still a tune_params entry, so still a
  #define, as in gputune) and its compiler options; the results are merged into one JSON and
  Kernel Tuner's timings summed over the calls (each call benchmarks its first configuration
  once more as a warm-up, so the warm-up launches are counted per call).
"""
import argparse
import itertools
import json
import os
import statistics
import sys
import time

from kt_problems import PROBLEMS

T_START = time.perf_counter()

HERE = os.path.dirname(os.path.abspath(__file__))
# The repository: two folders up from scripts/kt/, one up from .gpu/ (build-gpu.sh copies it there).
REPO = os.path.dirname(os.path.dirname(HERE)) if os.path.basename(os.path.dirname(HERE)) == "scripts" else os.path.dirname(HERE)
SEED = 20240615


def tune_params(spec):
    out = {define: list(values) for _, define, values in spec["params"]}
    for define, values in spec["derived"]:
        out[define] = list(values)
    return out


def option_runs(spec):
    """The tune_kernel calls a problem takes: one per combination of values of its option
    parameters (`option_params`: compiler options that are tuning parameters), as [(the
    parameters' fixed values, the compiler options they make)]; one call with no fixed values
    and no options for a problem without option parameters."""
    rules = spec.get("option_params", [])
    if not rules:
        return [({}, [])]
    values = {define: vals for _, define, vals in spec["params"]}
    names = [define for define, _ in rules]
    runs = []
    for combo in itertools.product(*(values[n] for n in names)):
        fixed = dict(zip(names, combo))
        options = [o for define, rule in rules for o in rule(fixed[define])]
        runs.append((fixed, options))
    return runs


def run_tune_params(spec, fixed):
    """tune_params with the option parameters of one tune_kernel call fixed to their value
    (kept as one-value parameters, so that they are still #defines and restrictions see them)."""
    params = tune_params(spec)
    for define, value in fixed.items():
        params[define] = [value]
    return params


def cuda_include_dirs():
    """CUDA's include directories as gputune finds them (gputune-runtime's
    backend/cuda/include.rs): $GPUTUNE_INCLUDE_PATH's directories, then the first candidate
    holding cuda_fp16.h among: next to the NVRTC library this process loaded (<lib>/../include,
    <lib>/../../include), $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT (include/ or
    targets/<arch>/include/), /usr/local/cuda-<NVRTC's version>, /usr/local/cuda, /opt/cuda,
    /usr/lib/cuda (include/ or targets/<arch>/include/), with its cccl/ (CUB, Thrust, libcu++)
    when that holds cub/. Returns (directories, what was looked at)."""
    dirs = [d for d in os.environ.get("GPUTUNE_INCLUDE_PATH", "").split(":") if d]
    looked = []
    targets = ("x86_64-linux", "sbsa-linux", "aarch64-linux")
    candidates = []
    version = None
    try:  # CuPy loads NVRTC; without CuPy (--check-space) the search goes on without it.
        import cupy

        version = cupy.cuda.nvrtc.getVersion()
    except Exception:
        pass
    try:
        with open("/proc/self/maps") as f:
            libs = sorted({line.split()[-1] for line in f if "libnvrtc.so" in line.split()[-1]})
    except OSError:
        libs = []
    for lib in libs:
        folder = os.path.dirname(lib)
        why = "next to the loaded " + os.path.basename(lib)
        candidates += [(os.path.join(folder, "..", "include"), why),
                       (os.path.join(folder, "..", "..", "include"), why)]
    roots = [(os.environ[v], "$" + v) for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT") if os.environ.get(v)]
    if version:
        roots.append((f"/usr/local/cuda-{version[0]}.{version[1]}", "a usual install path"))
    roots += [(r, "a usual install path") for r in ("/usr/local/cuda", "/opt/cuda", "/usr/lib/cuda")]
    for root, why in roots:
        candidates.append((os.path.join(root, "include"), why))
        candidates += [(os.path.join(root, "targets", t, "include"), why) for t in targets]
    seen = set()
    for folder, why in candidates:
        folder = os.path.normpath(folder)
        if folder in seen:
            continue
        seen.add(folder)
        if os.path.isfile(os.path.join(folder, "cuda_fp16.h")):
            looked.append(f"{folder} ({why}): found")
            dirs.append(folder)
            cccl = os.path.join(folder, "cccl")
            if os.path.isdir(os.path.join(cccl, "cub")):
                dirs.append(cccl)
            return dirs, looked
        looked.append(f"{folder} ({why}): {'no cuda_fp16.h' if os.path.isdir(folder) else 'not there'}")
    return dirs, looked


def compiler_options(spec, source_folder):
    """The compiler options of every configuration of a problem (before its option
    parameters'): its spec's `compiler_options`, -I for CUDA's include directories where
    `cuda_includes`, and -I for the source's folder where it includes headers of its crate."""
    options = list(spec.get("compiler_options", []))
    if spec.get("cuda_includes"):
        dirs, looked = cuda_include_dirs()
        if not dirs:
            print(f"warning: CUDA's include directories not found; looked at: {'; '.join(looked)}",
                  file=sys.stderr)
        options += ["-I" + d for d in dirs]
    if spec.get("headers"):
        options.append("-I" + source_folder)
    return options


def label(spec, config):
    """gputune's label of a configuration (`ipt_4.tpb_256`)."""
    return ".".join(f"{name}_{config[define]}" for name, define, _ in spec["params"])


def check(restriction, config):
    return bool(eval(restriction, {}, dict(config)))


def direct_space(spec):
    """The space enumerated directly: the cross product filtered by the restrictions."""
    params = tune_params(spec)
    names = list(params)
    out = []
    for values in itertools.product(*params.values()):
        config = dict(zip(names, values))
        if all(check(r, config) for r in spec["restrictions"]):
            out.append(config)
    return out


def bundle_labels(problem, bundle):
    path = os.path.join(bundle, "bundle.json") if bundle else None
    if not path:
        for folder in (os.path.join(HERE, f"{problem}-bundle"), os.path.join(REPO, ".gpu", f"{problem}-bundle")):
            if os.path.exists(os.path.join(folder, "bundle.json")):
                path = os.path.join(folder, "bundle.json")
                break
    if not path or not os.path.exists(path):
        return None, None
    doc = json.load(open(path))
    for b in doc["benches"]:
        if b.get("function"):
            return path, set(b["function"]["labels"])
    return path, None


def check_space(problem, bundle):
    spec = PROBLEMS[problem]
    direct = direct_space(spec)
    labels = [label(spec, c) for c in direct]
    ok = len(direct) == spec["expected_size"] and len(set(labels)) == len(labels)
    print(f"{problem}: direct enumeration: {len(direct)} points ({len(set(labels))} distinct gputune labels), "
          f"gputune's #[tune] space: {spec['expected_size']}")
    base = dict(spec["base"])
    if not any(all(c[k] == v for k, v in base.items()) for c in direct):
        print(f"{problem}: base {base} is NOT in the space")
        ok = False
    runs = option_runs(spec)
    if len(runs) > 1:
        sizes = [sum(all(c[k] == v for k, v in fixed.items()) for c in direct) for fixed, _ in runs]
        print(f"{problem}: {len(runs)} tune_kernel calls, one per value of the option parameters: "
              + ", ".join(f"{fixed} ({n} points, options {opts})" for (fixed, opts), n in zip(runs, sizes)))
    try:
        from kernel_tuner.searchspace import Searchspace
        from kernel_tuner.util import append_default_block_size_names, prepare_kernel_string
    except ImportError as e:
        print(f"{problem}: Kernel Tuner's Searchspace not checked ({e})")
    else:
        names = list(tune_params(spec))
        # Whole configurations, derived parameters included, over every tune_kernel call.
        kt, size = [], 0
        for fixed, _ in runs:
            space = Searchspace(run_tune_params(spec, fixed), list(spec["restrictions"]), 1024)
            kt += [tuple(c) for c in space.list]
            size += space.size
        same = sorted(kt) == sorted(tuple(c[k] for k in names) for c in direct)
        print(f"{problem}: Kernel Tuner's Searchspace: {size} points"
              f"{f' over {len(runs)} calls' if len(runs) > 1 else ''}, "
              f"{'the same points' if same else 'NOT the same points'} as the direct enumeration")
        ok = ok and same and size == spec["expected_size"]
        # The defines Kernel Tuner prepends for base: each parameter as gputune's -D gives it
        # (identifiers unquoted).
        block_size_names = list(spec["block_size_names"])
        append_default_block_size_names(block_size_names)
        _, text = prepare_kernel_string(spec["kernel"], "", dict(base), (1, 1, 1), (1, 1, 1),
                                        block_size_names, "CUDA", None)
        missing = [f"#define {k} {v}" for k, v in base.items() if f"#define {k} {v}\n" not in text]
        print(f"{problem}: Kernel Tuner's defines for base: "
              f"{'as gputune passes them' if not missing else 'MISSING ' + str(missing)}")
        ok = ok and not missing
    if spec.get("compiler_options"):
        folder = os.path.dirname(os.path.abspath(source_path(spec, source_dir(None))))
        print(f"{problem}: compiler options here: {compiler_options(spec, folder)}")
    path, blabels = bundle_labels(problem, bundle)
    if blabels is not None:
        same = blabels == set(labels)
        print(f"{problem}: {path}: {len(blabels)} labels, "
              f"{'the same as' if same else 'NOT the same as'} the space here")
        if not same:
            print(f"  only in the bundle: {sorted(blabels - set(labels))[:10]}")
            print(f"  only here: {sorted(set(labels) - blabels)[:10]}")
        ok = ok and same
    print(f"{problem}: {'OK' if ok else 'MISMATCH'}")
    return ok


# ---------------------------------------------------------------------------------------------
# On the GPU.

LAST_GRID = {}  # the grid of the last launch (the reduction's verify reads it)
LAUNCHES = []  # (parameters, grid, block, dynamic shared bytes, error) per compiled kernel


def install_cupy_fixes(grid_hook):
    """Patches Kernel Tuner 1.5's CuPy backend: (1) the device UUID that CuPy 14 returns is not
    the 16 bytes uuid.UUID(bytes=) wants ("bytes is not a 16-char string"): a shim pads or
    truncates it; (2) run_kernel refuses, as Kernel Tuner's "too many resources requested for
    launch" (which it skips as a failed configuration), a launch over the compiled kernel's
    limits, which gputune marks invalid before launching, and applies `grid_hook` (the
    reduction's occupancy-sized grid). The limits and the grid are computed once per compiled
    kernel, at its first launch (the verifying run), so the timed launches only look them up."""
    import uuid as real_uuid

    import kernel_tuner.backends.cupy as ktcupy

    class UUIDShim:
        @staticmethod
        def UUID(*args, **kwargs):
            raw = kwargs.get("bytes")
            if raw is not None:
                if isinstance(raw, str):
                    raw = raw.encode("latin-1")
                raw = bytes(raw)[:16].ljust(16, b"\0")
                kwargs["bytes"] = raw
            return real_uuid.UUID(*args, **kwargs)

    ktcupy.uuid = UUIDShim

    cls = ktcupy.CupyFunctions
    original_run = cls.run_kernel
    original_compile = cls.compile
    cache = {}

    def compile(self, kernel_instance):
        # The configuration being compiled, for the record of its launch shape.
        self.gputune_params = dict(kernel_instance.params)
        return original_compile(self, kernel_instance)

    def run_kernel(self, func, gpu_args, threads, grid, stream=None):
        key = (id(func), tuple(threads), tuple(grid), self.smem_size)
        entry = cache.get(key)
        if entry is None or entry[0] is not func:
            if entry is not None or len(cache) > 64:
                cache.clear()
            nthreads = threads[0] * threads[1] * threads[2]
            limit = func.max_threads_per_block
            smem_limit = func.max_dynamic_shared_size_bytes
            if nthreads > limit:
                error = (f"too many resources requested for launch: a block of {nthreads} threads, "
                         f"the kernel takes at most {limit}")
            elif self.smem_size > smem_limit:
                error = (f"too many resources requested for launch: {self.smem_size} bytes of dynamic "
                         f"shared memory, the kernel may use {smem_limit}")
            else:
                error = None
            new_grid = grid_hook(self, func, threads, grid) if grid_hook and not error else tuple(grid)
            entry = (func, error, new_grid)
            cache[key] = entry
            LAUNCHES.append((getattr(self, "gputune_params", {}), new_grid, tuple(threads), self.smem_size, error))
        _, error, new_grid = entry
        if error:
            raise RuntimeError(error)
        LAST_GRID["grid"] = new_grid
        return original_run(self, func, gpu_args, threads, new_grid, stream)

    cls.compile = compile
    cls.run_kernel = run_kernel


def grid_hook_reduce(dev, func, threads, grid):
    """lib.rs: blocks = min(max(tiles, 1), max(occupancy x SMs, 1)), with the occupancy of the
    compiled partial_sums at TPB threads and no dynamic shared memory. Kernel Tuner's grid is
    the tile count (problem size n, divided by TPB * IPT * VEC, rounded up)."""
    import cupy as cp

    tpb = threads[0] * threads[1] * threads[2]
    per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(func.kernel.ptr, tpb, 0)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    resident = max(per_sm * sms, 1)
    return (max(min(max(grid[0], 1), resident), 1), 1, 1)


def make_scale(spec, np, cp):
    n = spec["n"]
    rng = np.random.default_rng(SEED)
    x = rng.random(n, dtype=np.float32) + np.float32(1)  # non-zero
    a = np.float32(3.0)
    y = np.full(n, np.nan, dtype=np.float32)  # poisoned: a skipped element fails the check
    expected = a * x  # one IEEE multiply, as on the GPU: exact

    def verify(answer, result, atol=None):
        return bool(np.array_equal(result[1], expected))

    args = [x, y, a, np.uint64(n)]
    # answer: which arguments Kernel Tuner refreshes before and copies back after the
    # verifying run (only y); verify does the comparison.
    return args, [None, y, None, None], verify, None, n


def make_reduce(spec, np, cp):
    n = spec["n"]
    rng = np.random.default_rng(SEED)
    x = rng.random(n, dtype=np.float32)
    exact = float(np.sum(x, dtype=np.float64))
    props = cp.cuda.runtime.getDeviceProperties(0)
    sms = int(props["multiProcessorCount"])
    per_sm = int(props.get("maxBlocksPerMultiProcessor", 32) or 32)
    # As many partials as any variant writes (max_partials in lib.rs), and some to spare.
    partials = np.full(sms * max(per_sm, 32), np.nan, dtype=np.float32)

    def verify(answer, result, atol=None):
        blocks = LAST_GRID["grid"][0]
        got = result[1][:blocks]
        if not np.all(np.isfinite(got)):
            return False
        total = float(np.sum(got, dtype=np.float64))
        return abs(total - exact) <= 1e-4 * abs(exact)

    args = [x, partials, np.uint64(n)]
    return args, [None, partials, None], verify, None, n


def make_transpose(spec, np, cp):
    side = spec["n"]
    rng = np.random.default_rng(SEED)
    x = rng.random((side, side), dtype=np.float32)
    out = np.full((side, side), np.nan, dtype=np.float32)
    expected = np.ascontiguousarray(x.T)

    def verify(answer, result, atol=None):
        return bool(np.array_equal(result[1].reshape(side, side), expected))

    args = [x, out, np.uint32(side), np.uint32(side)]
    return args, [None, out, None, None], verify, None, (side, side)


def make_sgemm(spec, np, cp):
    n = spec["n"]
    rng = np.random.default_rng(SEED)
    # Random eighths 1/8..1: every product and sum is exact in f32 (as in gputune's bench).
    a = (rng.integers(1, 9, size=(n, n)) / 8).astype(np.float32)
    b = (rng.integers(1, 9, size=(n, n)) / 8).astype(np.float32)
    c = np.full((n, n), np.nan, dtype=np.float32)
    expected = cp.asnumpy(cp.matmul(cp.asarray(a), cp.asarray(b)))
    args = [a, b, c, np.int32(n)]
    # Kernel Tuner's default check, numpy.allclose(expected, result, atol), whose rtol is
    # 1e-5: with atol 1e-5, gputune's f32 tolerance (|out - ref| <= 1e-5 + 1e-5 |ref|).
    return args, [None, None, expected, None], None, 1e-5, (n, n)


def make_conv(spec, np, cp):
    n, f = spec["n"], 17
    rng = np.random.default_rng(SEED)
    # Eighths 1/8..1: every product is a multiple of 1/64 and every sum of 289 is exact in f32.
    x = (rng.integers(1, 9, size=(n + f - 1, n + f - 1)) / 8).astype(np.float32)
    filt = (rng.integers(1, 9, size=(f, f)) / 8).astype(np.float32)
    out = np.full((n, n), np.nan, dtype=np.float32)
    gx, acc = cp.asarray(x), cp.zeros((n, n), dtype=cp.float32)
    for j in range(f):
        for i in range(f):
            acc += gx[j:j + n, i:i + n] * float(filt[j, i])
    expected = cp.asnumpy(acc)
    args = [out, x, filt, np.int32(n), np.int32(n)]
    return args, [expected, None, None, None, None], None, 1e-5, (n, n)


def make_rowsum(spec, np, cp):
    rows, cols = spec["n"]
    rng = np.random.default_rng(SEED)
    # Eighths 1/8..1 (integers 1..8 over 8, as the bench's eighths kernel makes them): every
    # row's sum is a multiple of 1/8 below 2^21, exact in f32 in any order of addition.
    ints = rng.integers(1, 9, size=(rows, cols), dtype=np.uint8)
    x = ints.astype(np.float32) / np.float32(8)
    expected = (ints.sum(axis=1, dtype=np.int64) / 8).astype(np.float32)
    del ints
    out = np.full(rows, np.nan, dtype=np.float32)  # poisoned: a row not written fails the check

    def verify(answer, result, atol=None):
        return bool(np.array_equal(result[1], expected))

    args = [x, out, np.int32(cols)]
    return args, [None, out, None], verify, None, (rows,)


def make_gemv(spec, np, cp):
    m, k = spec["n"]
    rng = np.random.default_rng(SEED)
    # Eighths 1/8..1, exact in bf16 (3 bits of mantissa at most): a float32's top 16 bits are
    # its bf16 bit pattern. Every product is a multiple of 1/64 and every sum of 8192 of them
    # is exact in f32, so the float64 product rounded to f32 is what any order of summation
    # in float gives.
    a32 = rng.integers(1, 9, size=(m, k), dtype=np.uint8).astype(np.float32) / np.float32(8)
    x32 = rng.integers(1, 9, size=k, dtype=np.uint8).astype(np.float32) / np.float32(8)
    expected = (a32.astype(np.float64) @ x32.astype(np.float64)).astype(np.float32)

    def bf16_bits(v):
        return (v.view(np.uint32) >> 16).astype(np.uint16)

    a, x = bf16_bits(a32), bf16_bits(x32)
    del a32
    y = np.full(m, np.nan, dtype=np.float32)

    def verify(answer, result, atol=None):
        return bool(np.array_equal(result[2], expected))

    args = [a, x, y, np.int32(m), np.int32(k)]
    return args, [None, None, y, None, None], verify, None, (m,)


def make_histogram(spec, np, cp):
    n = spec["n"]
    rng = np.random.default_rng(SEED)
    keys = rng.integers(0, 256, size=n, dtype=np.uint32)
    expected = np.bincount(keys, minlength=256).astype(np.uint32)
    # Zeroed (the wrapper zeroes them before each launch): Kernel Tuner resets the arguments
    # before its verifying run, and the later runs only add to them.
    bins = np.zeros(256, dtype=np.uint32)
    sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])

    def verify(answer, result, atol=None):
        return bool(np.array_equal(result[2], expected))

    args = [keys, np.int64(n), bins]
    return args, [None, None, bins], verify, None, (8 * sms,)


MAKERS = {"scale": make_scale, "reduce": make_reduce, "transpose": make_transpose, "sgemm": make_sgemm,
          "conv": make_conv, "rowsum": make_rowsum, "gemv": make_gemv, "histogram": make_histogram}


def source_dir(given):
    if given:
        return given
    local = os.path.join(HERE, "kt-src")
    return local if os.path.isdir(local) else None


def source_path(spec, src):
    """The problem's .cu file: in the folder `src` if given, else in its example crate."""
    if src:
        return os.path.join(src, spec["src"])
    return os.path.join(REPO, "examples", spec["crate"], "src", spec["src"])


def read_source(spec, src):
    """The source Kernel Tuner compiles (VALUE_T defined first) and the folder it is in,
    where the headers it includes must be."""
    path = source_path(spec, src)
    folder = os.path.dirname(os.path.abspath(path))
    for header in spec.get("headers", []):
        if not os.path.isfile(os.path.join(folder, header)):
            raise SystemExit(f"{spec['src']} includes {header}, which is not in {folder}")
    with open(path) as f:
        return f"#define VALUE_T {spec.get('value_t', 'float')}\n" + f.read(), folder


def sum_or_first(values):
    """The sum of one number per tune_kernel call, or the first call's value if not all are
    numbers."""
    if all(isinstance(v, (int, float)) for v in values):
        return sum(values)
    return values[0]


def cupy_cccl_include():
    """The include options of CuPy's bundled CCCL, which CuPy puts before every compiler option
    of a RawModule (so `<cub/...>` is CuPy's CUB under Kernel Tuner), or None if CuPy does not
    say."""
    try:
        import cupy._core.core as core

        return list(core._get_cccl_include_options())
    except Exception:
        return None


def status_of(r):
    if "__error__" in r:
        return type(r["__error__"]).__name__
    t = r.get("time")
    return "ok" if isinstance(t, (int, float)) else f"no time ({t!r})"


def tune(problem, src, out_json, iterations):
    import numpy as np
    import cupy as cp

    spec = PROBLEMS[problem]
    install_cupy_fixes(grid_hook_reduce if problem == "reduce" else None)
    import kernel_tuner
    from kernel_tuner import tune_kernel

    source, folder = read_source(spec, src)
    fixed_options = compiler_options(spec, folder)
    t_data = time.perf_counter()
    args, answer, verify, atol, problem_size = MAKERS[problem](spec, np, cp)
    t_tune = time.perf_counter()
    options = dict(
        restrictions=list(spec["restrictions"]) or None,
        answer=answer,
        verify=verify,
        grid_div_x=list(spec["grid_div_x"]),
        strategy="brute_force",
        lang="cupy",
        verbose=False,
        cache=None,
        iterations=iterations,
    )
    if spec["grid_div_y"]:
        options["grid_div_y"] = spec["grid_div_y"]
    if atol is not None:
        options["atol"] = atol
    if spec["smem"]:
        options["smem_args"] = {"size": spec["smem"]}
    # One tune_kernel call per value of the option parameters (one call without them).
    results, envs, calls = [], [], []
    for fixed, extra in option_runs(spec):
        run_options = fixed_options + extra
        # None (Kernel Tuner's default) where a call has no options: the existing problems.
        options["compiler_options"] = run_options or None
        t_call = time.perf_counter()
        # block_size_names is a fresh list each call: Kernel Tuner appends its defaults to it.
        call_results, call_env = tune_kernel(spec["kernel"], source, problem_size, args,
                                             run_tune_params(spec, fixed),
                                             block_size_names=list(spec["block_size_names"]), **options)
        results += call_results
        envs.append(call_env)
        calls.append(dict(fixed=fixed, compiler_options=run_options, evaluated=len(call_results),
                          seconds=time.perf_counter() - t_call))
    env = envs[0]
    t_done = time.perf_counter()

    shapes = {label(spec, p): (g, b, m, e) for p, g, b, m, e in LAUNCHES if p}
    rows = []
    for r in results:
        if r is None:
            continue
        st = status_of(r)
        times = [float(t) for t in r.get("times", [])] if st == "ok" else []
        rows.append(dict(
            label=label(spec, r), status=st,
            time_s=float(r["time"]) / 1e3 if st == "ok" else None,
            median_s=statistics.median(times) / 1e3 if times else None,
            noise=(statistics.stdev(times) / statistics.mean(times)) if len(times) > 1 else None,
            samples=len(times),
            compile_ms=float(r.get("compile_time", 0) or 0),
            verification_ms=float(r.get("verification_time", 0) or 0),
            benchmark_ms=float(r.get("benchmark_time", 0) or 0),
        ))
        shape = shapes.get(rows[-1]["label"])
        if shape:
            rows[-1].update(grid=list(shape[0]), block=list(shape[1]), shared_bytes=shape[2],
                            refused=shape[3])
    ok = [r for r in rows if r["status"] == "ok"]
    winner = min(ok, key=lambda r: r["time_s"]) if ok else None
    statuses = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    keys = ("total_framework_time", "total_strategy_time", "total_compile_time",
            "total_verification_time", "total_benchmark_time", "overhead_time")
    doc = dict(
        tool="kernel_tuner",
        kernel_tuner_version=getattr(kernel_tuner, "__version__", "?"),
        cupy_version=cp.__version__,
        numpy_version=np.__version__,
        problem=problem,
        device=env.get("device_name"),
        space_size=spec["expected_size"],
        evaluated=len(rows),
        statuses=statuses,
        iterations=iterations,
        samples=sum(r["samples"] for r in rows),
        # Kernel Tuner benchmarks the first configuration once more before the search (its
        # warm-up): `iterations` more timed launches per tune_kernel call, not in the results.
        warmup_samples=iterations * len(calls),
        tune_kernel_calls=calls,
        winner=winner["label"] if winner else None,
        winner_time_s=winner["time_s"] if winner else None,
        winner_median_s=winner["median_s"] if winner else None,
        winner_noise=winner["noise"] if winner else None,
        time_definition="mean of the iterations' CUDA-event times of one launch each (Kernel Tuner's 'time')",
        seconds=dict(
            imports_and_setup=t_data - T_START,
            data=t_tune - t_data,
            tune_kernel=t_done - t_tune,
            total_in_process=t_done - T_START,
        ),
        # Summed over the tune_kernel calls.
        kernel_tuner_timings_ms={k: sum_or_first([e.get(k) for e in envs]) for k in keys if k in env},
        # The options of every call (each call's own, option parameters' included, are in
        # tune_kernel_calls).
        compiler_options=fixed_options,
        cupy_cccl_include=cupy_cccl_include(),
        results=rows,
    )
    with open(out_json, "w") as f:
        json.dump(doc, f, indent=1)
    w = f"{winner['label']} {winner['time_s'] * 1e6:.2f} us" if winner else "none"
    print(f"{problem}: {len(rows)} configurations evaluated ({statuses}), {doc['samples']} timed launches "
          f"(+{doc['warmup_samples']} warm-up), winner {w}, tune_kernel {t_done - t_tune:.2f} s"
          f"{f' over {len(calls)} calls' if len(calls) > 1 else ''}, "
          f"whole process so far {t_done - T_START:.2f} s")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problem", choices=sorted(PROBLEMS))
    ap.add_argument("--src", help="folder with the .cu sources (default: kt-src next to this script, "
                                  "else the repository's examples)")
    ap.add_argument("--json", help="where to write the results (required unless --check-space)")
    ap.add_argument("--iterations", type=int, default=7, help="Kernel Tuner's iterations (default 7)")
    ap.add_argument("--check-space", action="store_true", help="print the space's size and check it; no GPU")
    ap.add_argument("--bundle", help="with --check-space: a bundle whose labels the space must equal "
                                     "(default: PROBLEM-bundle next to this script or in .gpu/, if there)")
    a = ap.parse_args()
    if a.check_space:
        return 0 if check_space(a.problem, a.bundle) else 1
    if not a.json:
        ap.error("--json is required")
    return tune(a.problem, source_dir(a.src), a.json, a.iterations)


if __name__ == "__main__":
    sys.exit(main())

"""The problems kt_tune.py tunes with Kernel Tuner: each one's source, space, base and launch
geometry, as the matching gputune example declares them (see kt_tune.py)."""


def span(lo, hi, step=1):
    return list(range(lo, hi + 1, step))


def pow2(lo, hi):
    return [1 << k for k in range(lo, hi + 1)]


# Per problem: the source, the kernel's name, the tunable parameters in the #[tune] order as
# (gputune name, define, values), derived parameters (defines Kernel Tuner needs but gputune's
# space does not have: each is fixed by the others through a restriction), the restrictions,
# gputune's base, the problem and its launch geometry. The arguments and the check come from
# the make_* functions below. Optional keys: `value_t` (VALUE_T's type, default float),
# `compiler_options` (the options of every configuration; without it Kernel Tuner's defaults),
# `cuda_includes` (-I CUDA's include directories, see cuda_include_dirs), `headers` (headers of
# the crate the source includes with #include "...": -I the source's folder, where they must
# be), `option_params` ([(define, value -> compiler options)]: tuning parameters that are
# compiler options too, tuned by one tune_kernel call per value, see option_runs).
PROBLEMS = {
    "scale": dict(
        src="scale.cu", crate="scale-cuda", kernel="scale",
        params=[("ipt", "IPT", [1, 2, 4, 8, 16]), ("tpb", "TPB", span(64, 1024, 32))],
        derived=[],
        restrictions=[],
        base={"IPT": 4, "TPB": 256},
        expected_size=155,
        block_size_names=["TPB"],
        # grid: n.div_ceil(IPT * TPB) blocks (lib.rs), block TPB, no dynamic shared memory
        grid_div_x=["IPT", "TPB"], grid_div_y=None,
        smem=None,
        n=1 << 26,
    ),
    "reduce": dict(
        src="reduce.cu", crate="reduce-cuda", kernel="partial_sums",
        params=[("tpb", "TPB", pow2(7, 10)), ("ipt", "IPT", [1, 2, 4, 8]),
                ("vec", "VEC", [1, 2, 4]), ("unroll", "UNROLL", [1, 2, 4])],
        derived=[],
        restrictions=["IPT * VEC * UNROLL <= 32"],
        base={"TPB": 256, "IPT": 4, "VEC": 4, "UNROLL": 1},
        expected_size=128,
        block_size_names=["TPB"],
        # Kernel Tuner's grid is one block per tile of TPB * IPT * VEC elements (at least
        # one); run_kernel's wrapper caps it at the resident blocks (see grid_hook_reduce).
        grid_div_x=["TPB", "IPT", "VEC"], grid_div_y=None,
        smem=None,
        n=1 << 28,
    ),
    "transpose": dict(
        src="transpose.cu", crate="transpose-cuda", kernel="transpose",
        params=[("tile", "TILE", pow2(3, 7)), ("rows", "BLOCK_ROWS", pow2(0, 5)), ("pad", "PAD", [0, 1])],
        derived=[],
        restrictions=[
            "TILE % BLOCK_ROWS == 0",
            "TILE * BLOCK_ROWS <= 1024",
            "TILE * (TILE + PAD) * 8 <= 49152",
            "TILE * BLOCK_ROWS >= 64",
        ],
        base={"TILE": 32, "BLOCK_ROWS": 8, "PAD": 1},
        expected_size=28,
        # block TILE x BLOCK_ROWS; grid (cols / TILE, rows / TILE), rounded up (launch_config)
        block_size_names=["TILE", "BLOCK_ROWS"],
        grid_div_x=["TILE"], grid_div_y=["TILE"],
        smem=None,
        n=1 << 14,  # the side
    ),
    "sgemm": dict(
        src="sgemm.cu", crate="sgemm-cuda", kernel="sgemm",
        params=[("bm", "BM", [64, 128]), ("bn", "BN", [64, 128]), ("bk", "BK", [8, 16, 32, 64]),
                ("tm", "TM", [4, 8]), ("tn", "TN", [4, 8])],
        # The block is (BM / TM) * (BN / TN) threads, which Kernel Tuner can only take from a
        # parameter: THREADS, fixed by the last restriction (one value per point, so the space
        # keeps its 64 points). The source does not read it. Written as a difference: Kernel
        # Tuner 1.5's parser of string restrictions turns "THREADS == (BM // TM) * (BN // TN)"
        # into a constraint no point satisfies (an empty space).
        derived=[("THREADS", [64, 128, 256, 512, 1024])],
        restrictions=[
            "(BM // TM) * (BN // TN) <= 1024",
            "(BM + BN) * BK * 4 <= 98304",
            "THREADS - (BM // TM) * (BN // TN) == 0",
        ],
        base={"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4},
        expected_size=64,
        block_size_names=["THREADS"],
        # grid (n / BN, n / BM), dynamic shared memory (BM + BN) * BK * 4 bytes (lib.rs)
        grid_div_x=["BN"], grid_div_y=["BM"],
        smem=lambda p: (p["BM"] + p["BN"]) * p["BK"] * 4,
        n=1 << 12,
    ),
    "conv": dict(
        src="conv.cu", crate="conv-cuda", kernel="conv",
        params=[("block_x", "BLOCK_X", [16, 32, 64, 128]), ("block_y", "BLOCK_Y", pow2(0, 4)),
                ("tile_x", "TILE_X", [1, 2, 4]), ("tile_y", "TILE_Y", [1, 2, 4]),
                ("pad", "PAD", [0, 1])],
        derived=[],
        restrictions=[
            "BLOCK_X * BLOCK_Y >= 64",
            "BLOCK_X * BLOCK_Y <= 1024",
            "(BLOCK_Y * TILE_Y + 16) * (BLOCK_X * TILE_X + 16 + PAD) * 4 <= 49152",
        ],
        base={"BLOCK_X": 32, "BLOCK_Y": 8, "TILE_X": 1, "TILE_Y": 1, "PAD": 0},
        expected_size=268,
        block_size_names=["BLOCK_X", "BLOCK_Y"],
        # grid (w / (BLOCK_X * TILE_X), h / (BLOCK_Y * TILE_Y)), rounded up (lib.rs)
        grid_div_x=["BLOCK_X", "TILE_X"], grid_div_y=["BLOCK_Y", "TILE_Y"],
        smem=None,
        n=1 << 12,  # the output's side; the input's is n + 16
    ),
    "rowsum": dict(
        src="rowsum.cu", crate="cub-rowsum", kernel="rowsum",
        # CUB's algorithms as identifiers: gputune's -DLOAD=BLOCK_LOAD_DIRECT, Kernel Tuner's
        # `#define LOAD BLOCK_LOAD_DIRECT` (the source writes cub::LOAD).
        params=[("tpb", "TPB", [128, 256, 512]), ("ipt", "IPT", [4, 8, 16]),
                ("load", "LOAD", ["BLOCK_LOAD_DIRECT", "BLOCK_LOAD_VECTORIZE", "BLOCK_LOAD_WARP_TRANSPOSE"]),
                ("reduce", "REDUCE", ["BLOCK_REDUCE_RAKING", "BLOCK_REDUCE_WARP_REDUCTIONS"])],
        derived=[],
        restrictions=[],
        base={"TPB": 256, "IPT": 4, "LOAD": "BLOCK_LOAD_DIRECT", "REDUCE": "BLOCK_REDUCE_WARP_REDUCTIONS"},
        expected_size=54,
        block_size_names=["TPB"],
        # One block per row: Kernel Tuner's grid is the problem size (rows) divided by the
        # product of grid_div_x, which is 1 for an empty list.
        grid_div_x=[], grid_div_y=None,
        smem=None,
        n=(1 << 14, 8192),  # (rows, cols), as the bench's Rows{io}[pow2]=14 and Cols=8192
        compiler_options=["-std=c++17"],
        cuda_includes=True,
    ),
    "gemv": dict(
        src="gemv.cu", crate="gemv-half", kernel="gemv",
        params=[("tpb", "TPB", [64, 128, 256, 512]), ("vec", "VEC", [2, 4, 8]),
                ("rows", "ROWS", [1, 2, 4]), ("maxrreg", "MAXRREG", [0, 32])],
        derived=[],
        restrictions=[],
        base={"TPB": 256, "VEC": 4, "ROWS": 1, "MAXRREG": 0},
        expected_size=72,
        block_size_names=["TPB"],
        # One warp per ROWS consecutive rows: ceil(m / ((TPB / 32) * ROWS)) blocks (lib.rs).
        grid_div_x=["TPB // 32 * ROWS"], grid_div_y=None,
        smem=None,
        n=(8192, 8192),  # (m, k)
        value_t="__nv_bfloat16",
        compiler_options=["-std=c++17"],
        cuda_includes=True,
        # Headers of the crate the source includes with #include "...": -I the source's folder.
        headers=["half_vec.cuh"],
        # Tuning parameters that are compiler options too: one tune_kernel call per value.
        option_params=[("MAXRREG", lambda v: ["--maxrregcount=%d" % v] if v else [])],
    ),
    "histogram": dict(
        src="histogram.cu", crate="histogram-cuda", kernel="histogram",
        params=[("tpb", "TPB", [128, 256, 512, 1024]), ("ipt", "IPT", [1, 2, 4, 8, 16]),
                ("copies", "COPIES", [1, 2, 4, 8]), ("bps", "BPS", [1, 2, 4, 8])],
        derived=[],
        restrictions=["COPIES * 32 <= TPB", "TPB * BPS <= 2048"],
        base={"TPB": 256, "IPT": 1, "COPIES": 1, "BPS": 4},
        expected_size=240,
        block_size_names=["TPB"],
        # BPS blocks per SM (lib.rs): the problem size is 8 x the SMs (make_histogram), divided
        # by 8 // BPS.
        grid_div_x=["8 // BPS"], grid_div_y=None,
        smem=None,
        n=1 << 26,  # keys
    ),
}

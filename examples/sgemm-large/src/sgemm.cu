// C = A·B for row-major n×n float matrices, n a multiple of 128 (the largest block tile), in
// the style of CLBlast's xgemm kernel: a large space of switches, each one a -D define.
//
//   BM, BN   the BM×BN tile of C a block computes (grid: n/BN × n/BM blocks)
//   BK       the depth of the slabs of A (BM×BK) and B (BK×BN) a block works through at a time
//   TM, TN   the TM×TN register tile of C each thread accumulates: (BM/TM)·(BN/TN) threads
//   VEC      the vector width (1, 2, 4: float, float2, float4) of the global loads that stage
//            a slab into shared memory
//   SA, SB   stage A (resp. B) through shared memory (1), or read it straight from global
//            memory through the read-only cache (__ldg) in the inner loop (0)
//   UNROLL   the unroll factor of the inner loop over a slab's k
//   PAD      one float of padding per shared-memory row, against bank conflicts
//
// The wrapper's #[tune] requires keep only points this kernel handles; the static_asserts
// below restate them, so that a point that slipped through fails to compile instead of
// computing a wrong C.

#define THREADS ((BM / TM) * (BN / TN))
// Threads along a row of the C tile, and along a column.
#define TX (BN / TN)
#define TY (BM / TM)
// The row strides of the staged slabs: A is stored transposed (BK rows of BM), so that the
// inner loop reads a k-row of it; B as it is (BK rows of BN).
#define LDA (BM + PAD)
#define LDB (BN + PAD)

static_assert(BM % TM == 0 && BN % TN == 0, "the register tile divides the block tile");
static_assert(THREADS >= 32 && THREADS <= 1024, "a block holds 32 to 1024 threads");
static_assert(BK % UNROLL == 0, "the unroll factor divides the slab depth");
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "loads are float, float2 or float4");
static_assert(SA == 0 || SA == 1, "SA is a switch");
static_assert(SB == 0 || SB == 1, "SB is a switch");
static_assert(PAD == 0 || PAD == 1, "PAD is a switch");
static_assert((SA * BK * LDA + SB * BK * LDB) * 4 <= 49152,
              "the staged slabs fit the 48 KiB a block gets without opting in");

#if VEC == 1
typedef float vec_t;
#elif VEC == 2
typedef float2 vec_t;
#else
typedef float4 vec_t;
#endif

// Component u of a loaded vector; u is a compile-time constant in every (unrolled) use, so
// these fold to a register.
__device__ __forceinline__ float component(float v, int) { return v; }
__device__ __forceinline__ float component(float2 v, int u) { return u == 0 ? v.x : v.y; }
__device__ __forceinline__ float component(float4 v, int u) {
    return u == 0 ? v.x : u == 1 ? v.y : u == 2 ? v.z : v.w;
}

// `#pragma unroll UNROLL` with the macro expanded first: a pragma's argument is not
// macro-expanded everywhere, _Pragma's string is built after expansion.
#define PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) PRAGMA(unroll n)

// __launch_bounds__ tells ptxas the block size, so that it keeps the registers per thread
// within what THREADS threads can have (spilling if it must) rather than producing a kernel
// that cannot be launched with the block it was written for.
extern "C" __global__ void __launch_bounds__(THREADS)
    sgemm(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
          int n) {
    extern __shared__ float smem[];
    float* const as = smem;                 // BK × LDA when SA: as[k * LDA + m] = A(m, k)
    float* const bs = smem + SA * BK * LDA;  // BK × LDB when SB: bs[k * LDB + j] = B(k, j)
    (void)as;
    (void)bs;
    const int tid = threadIdx.x;
    const int tx = tid % TX, ty = tid / TX;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    // Thread (tx, ty) owns rows ty + i·TY and columns tx + j·TX of the block's tile (CLBlast's
    // strided layout): neighbouring threads own neighbouring columns, so the warp's reads of
    // a k-row of B (shared or global) and its stores of C are contiguous, and its reads of a
    // k-row of the staged A either broadcast (one ty) or hit consecutive banks.
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < n; k0 += BK) {
#if SA
        // A's slab: BM rows of BK floats, as BM·BK/VEC vectors along k, the same number per
        // thread. Consecutive threads take consecutive vectors of a row (coalesced loads).
        // A vector never straddles two rows (BK % VEC == 0) and is aligned: k0 + k is a
        // multiple of VEC, n a multiple of 4, and the allocation 256-byte aligned.
        static_assert(BK % VEC == 0, "a vector of A stays in one row of the slab");
        static_assert((BM * BK) % (THREADS * VEC) == 0, "A's vectors divide among the threads");
#pragma unroll
        for (int l = 0; l < BM * BK / (THREADS * VEC); ++l) {
            const int v = tid + l * THREADS;
            const int m = v / (BK / VEC), k = v % (BK / VEC) * VEC;
            const vec_t x = __ldg(reinterpret_cast<const vec_t*>(a + (size_t)(row0 + m) * n + k0 + k));
#pragma unroll
            for (int u = 0; u < VEC; ++u) as[(k + u) * LDA + m] = component(x, u);
        }
#endif
#if SB
        // B's slab: BK rows of BN floats, as vectors along j, the same number per thread.
        static_assert(BN % VEC == 0, "a vector of B stays in one row of the slab");
        static_assert((BK * BN) % (THREADS * VEC) == 0, "B's vectors divide among the threads");
#pragma unroll
        for (int l = 0; l < BK * BN / (THREADS * VEC); ++l) {
            const int v = tid + l * THREADS;
            const int k = v / (BN / VEC), j = v % (BN / VEC) * VEC;
            const vec_t x = __ldg(reinterpret_cast<const vec_t*>(b + (size_t)(k0 + k) * n + col0 + j));
#pragma unroll
            for (int u = 0; u < VEC; ++u) bs[k * LDB + j + u] = component(x, u);
        }
#endif
#if SA || SB
        __syncthreads();  // the slabs are staged before anyone reads them
#endif
        UNROLL_BY(UNROLL)
        for (int k = 0; k < BK; ++k) {
            float ra[TM], rb[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) {
#if SA
                ra[i] = as[k * LDA + ty + i * TY];
#else
                ra[i] = __ldg(a + (size_t)(row0 + ty + i * TY) * n + k0 + k);
#endif
            }
#pragma unroll
            for (int j = 0; j < TN; ++j) {
#if SB
                rb[j] = bs[k * LDB + tx + j * TX];
#else
                rb[j] = __ldg(b + (size_t)(k0 + k) * n + col0 + tx + j * TX);
#endif
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
#if SA || SB
        __syncthreads();  // everyone is done with the slabs before they are overwritten
#endif
    }

#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            c[(size_t)(row0 + ty + i * TY) * n + col0 + tx + j * TX] = acc[i][j];
}

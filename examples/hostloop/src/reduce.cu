// Two-pass device-wide sum: partial_sums writes one partial sum per block, final_sum adds
// them up in one block. VALUE_T, TPB, IPT, VEC and UNROLL come from -D defines (see lib.rs).
//
// Pass 1 reads the input as vectors of VEC elements (a struct aligned to its size, so that
// each is one ld.global.nc.v2/.v4, or two .v2 for 4 doubles). A tile is TPB * IPT vectors,
// TPB * IPT * VEC elements: thread t of a block loads vectors t, t + TPB, ..., t + (IPT-1)*TPB
// of it, so each of its IPT loads is coalesced across the warp and all are in flight at once.
// Blocks walk the tiles grid-stride (block b takes tiles b, b + G, b + 2G, ... for a grid of
// G blocks); UNROLL is how many of its tiles a block takes per loop trip. The source issues
// all UNROLL * IPT vector loads of a trip before its first add; ptxas then keeps as many in
// flight as its register budget allows (4 to 8 loads of 16 bytes per thread in the SASS of
// the points checked), overlapping the rest with the adds.
// The grid is sized to the device (as many blocks as can be resident), not to n: each block
// loops over many tiles and the partials stay few.
//
// The input pointer need not be aligned to a vector: the first `head` elements, up to the
// first aligned address, and the elements after the last full tile are read one by one by
// the whole grid.

#if !defined(VALUE_T) || !defined(TPB) || !defined(IPT) || !defined(VEC) || !defined(UNROLL)
#error "compile with -DVALUE_T=... -DTPB=... -DIPT=... -DVEC=... -DUNROLL=..."
#endif
#if TPB % 32 != 0 || TPB < 32 || TPB > 1024
#error "TPB must be a multiple of 32 from 32 to 1024"
#endif
#if IPT < 1 || VEC < 1 || UNROLL < 1
#error "IPT, VEC and UNROLL must be positive"
#endif

#define WARPS (TPB / 32)
// Vectors, and elements, of one tile.
#define TILE_VECS ((unsigned long long)TPB * IPT)
#define TILE (TILE_VECS * VEC)

struct __align__(sizeof(VALUE_T) * VEC) vec_t {
    VALUE_T v[VEC];
};

__device__ __forceinline__ VALUE_T warp_sum(VALUE_T v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, offset);
    }
    return v;
}

// The sum of `v` over the block, valid in thread 0. Every thread of the block must call it.
__device__ __forceinline__ VALUE_T block_sum(VALUE_T v)
{
    __shared__ VALUE_T warp_sums[WARPS];
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0) {
        warp_sums[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = warp_sum(lane < WARPS ? warp_sums[lane] : VALUE_T(0));
    }
    return v;
}

// Adds UNROLL tiles starting at tile `t`, `stride` tiles apart, into acc[0..IPT).
// Loads first, adds after: the adds of a trip wait on its loads, not the loads on the adds.
template <int N>
__device__ __forceinline__ void add_tiles(const vec_t* __restrict__ body, unsigned long long t,
                                          unsigned long long stride, VALUE_T (&acc)[IPT])
{
    vec_t v[N][IPT];
#pragma unroll
    for (int u = 0; u < N; ++u) {
#pragma unroll
        for (int k = 0; k < IPT; ++k) {
            v[u][k] = body[(t + u * stride) * TILE_VECS + k * TPB + threadIdx.x];
        }
    }
    // IPT independent accumulators keep the chains of dependent adds short.
#pragma unroll
    for (int u = 0; u < N; ++u) {
#pragma unroll
        for (int k = 0; k < IPT; ++k) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
                acc[k] += v[u][k].v[e];
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(TPB)
partial_sums(const VALUE_T* __restrict__ x, VALUE_T* __restrict__ partials, unsigned long long n)
{
    // Elements before the first address aligned to a whole vector (0 for an allocation's base).
    const unsigned long long misaligned = ((unsigned long long)x / sizeof(VALUE_T)) % VEC;
    const unsigned long long head = misaligned == 0 ? 0 : (VEC - misaligned < n ? VEC - misaligned : n);
    const vec_t* body = reinterpret_cast<const vec_t*>(x + head);
    const unsigned long long tiles = (n - head) / TILE;
    const unsigned long long stride = gridDim.x;

    VALUE_T acc[IPT];
#pragma unroll
    for (int k = 0; k < IPT; ++k) {
        acc[k] = VALUE_T(0);
    }
    unsigned long long t = blockIdx.x;
    for (; t + (UNROLL - 1) * stride < tiles; t += UNROLL * stride) {
        add_tiles<UNROLL>(body, t, stride, acc);
    }
#if UNROLL > 1
    for (; t < tiles; t += stride) {
        add_tiles<1>(body, t, stride, acc);
    }
#endif
    VALUE_T sum = VALUE_T(0);
#pragma unroll
    for (int k = 0; k < IPT; ++k) {
        sum += acc[k];
    }

    // The leftovers, one element at a time across the grid: j < head is element j, the rest
    // are the elements after the last full tile.
    const unsigned long long body_end = head + tiles * TILE;
    const unsigned long long leftovers = head + (n - body_end);
    for (unsigned long long j = (unsigned long long)blockIdx.x * TPB + threadIdx.x; j < leftovers;
         j += stride * TPB) {
        sum += x[j < head ? j : body_end + (j - head)];
    }

    sum = block_sum(sum);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = sum;
    }
}

// One block of TPB threads: *out = partials[0] + ... + partials[n_partials - 1].
extern "C" __global__ void __launch_bounds__(TPB)
final_sum(const VALUE_T* __restrict__ partials, VALUE_T* __restrict__ out, unsigned n_partials)
{
    VALUE_T sum = VALUE_T(0);
    for (unsigned i = threadIdx.x; i < n_partials; i += TPB) {
        sum += partials[i];
    }
    sum = block_sum(sum);
    if (threadIdx.x == 0) {
        *out = sum;
    }
}

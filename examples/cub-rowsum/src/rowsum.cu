// Per-row sums of a row-major float matrix with CUB's block-level primitives, one block per
// row:
//   out[r] = x[r][0] + x[r][1] + ... + x[r][cols - 1]
//
// A block of TPB threads walks its row in tiles of TPB * IPT elements: cub::BlockLoad with the
// algorithm LOAD brings each thread IPT of them (blocked arrangement), the thread adds them to
// its running sum, and after the last tile cub::BlockReduce with the algorithm REDUCE adds the
// TPB running sums. cols must be a multiple of TPB * IPT (the Rust wrapper checks). TPB, IPT,
// LOAD (a cub::BlockLoadAlgorithm, e.g. BLOCK_LOAD_DIRECT) and REDUCE (a
// cub::BlockReduceAlgorithm, e.g. BLOCK_REDUCE_WARP_REDUCTIONS) come from -D defines.
//
// eighths, which makes test inputs on the device, needs no define: without them only it is
// compiled (and CUB's headers are not read), so that it can be compiled on its own.

#if defined(TPB) || defined(IPT) || defined(LOAD) || defined(REDUCE)
#if !defined(TPB) || !defined(IPT) || !defined(LOAD) || !defined(REDUCE)
#error "rowsum needs all of -DTPB=... -DIPT=... -DLOAD=... -DREDUCE=..."
#endif
#if TPB % 32 != 0 || TPB < 32 || TPB > 1024
#error "TPB must be a multiple of 32 from 32 to 1024"
#endif
#if IPT < 1
#error "IPT must be positive"
#endif

#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>

__global__ void __launch_bounds__(TPB)
rowsum(const float* __restrict__ x, float* __restrict__ out, int cols)
{
    using Load = cub::BlockLoad<float, TPB, IPT, cub::LOAD>;
    using Reduce = cub::BlockReduce<float, TPB, cub::REDUCE>;
    // The loads and the final reduction never overlap (a barrier separates them): one
    // allocation of shared memory serves both.
    __shared__ union {
        Load::TempStorage load;
        Reduce::TempStorage reduce;
    } temp;

    const float* row = x + (long long)blockIdx.x * cols;
    float sum = 0.0f;
    for (int tile = 0; tile < cols; tile += TPB * IPT) {
        float items[IPT];
        Load(temp.load).Load(row + tile, items);
#pragma unroll
        for (int i = 0; i < IPT; ++i) {
            sum += items[i];
        }
        // The next tile's load (or the reduction) reuses the shared memory this one used.
        __syncthreads();
    }
    const float total = Reduce(temp.reduce).Sum(sum);
    if (threadIdx.x == 0) {
        out[blockIdx.x] = total;
    }
}
#endif

// out[i] = in[i] / 8 for i < n, grid-stride: integers 1..8 become eighths 1/8..1, whose sums
// of up to 2^21 terms are exact in float, in any order of addition.
__global__ void eighths(const unsigned* __restrict__ in, float* __restrict__ out, long long n)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = in[i] / 8.0f;
    }
}

// The application's kernels, compiled to PTX by its build script and shipped as text (as
// candle ships `candle_kernels::REDUCE`). The block size is whatever the launch says: each
// block normalises one row, its threads striding over the columns, and the block-wide max and
// sum go through warp shuffles and 32 floats of shared memory. Any multiple of 32 up to 1024
// threads is valid; other block sizes would leave lanes out of the shuffles.
#include <cuda_runtime.h>
#include <math_constants.h>

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// The block's reduction of v (max or sum): every thread gets the result.
template <bool Max>
__device__ float block_reduce(float v, float* shared)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = Max ? warp_max(v) : warp_sum(v);
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < warps ? shared[lane] : (Max ? -CUDART_INF_F : 0.0f);
    return Max ? warp_max(v) : warp_sum(v);
}

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y,
                                        int cols)
{
    __shared__ float shared[32];
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float m = -CUDART_INF_F;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    m = block_reduce<true>(m, shared);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(xr[c] - m);
    s = block_reduce<false>(s, shared);
    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = __expf(xr[c] - m) * inv;
}

// y = A x for a row-major m x k matrix A and a vector x of 16-bit floats (VALUE_T: __nv_bfloat16
// or __half), accumulated in float. Each warp computes ROWS consecutive rows: its lanes walk the
// row VEC elements at a time (one load of VEC * 2 bytes each), and the warp reduces at the end.
// k must be a multiple of 32 * VEC.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include "half_vec.cuh"

namespace cg = cooperative_groups;

__global__ void __launch_bounds__(TPB) gemv(const VALUE_T* __restrict__ a, const VALUE_T* __restrict__ x,
                                            float* __restrict__ y, int m, int k) {
    const auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    const long long first = ((long long)blockIdx.x * (TPB / 32) + warp.meta_group_rank()) * ROWS;
    float acc[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) acc[r] = 0.0f;
    for (int j = warp.thread_rank() * VEC; j < k; j += 32 * VEC) {
        float xs[VEC];
        load_floats<VEC>(x + j, xs);
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            if (first + r < m) {
                float as[VEC];
                load_floats<VEC>(a + (first + r) * k + j, as);
#pragma unroll
                for (int v = 0; v < VEC; ++v) acc[r] += as[v] * xs[v];
            }
        }
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const float sum = cg::reduce(warp, acc[r], cg::plus<float>());
        if (warp.thread_rank() == 0 && first + r < m) y[first + r] = sum;
    }
}

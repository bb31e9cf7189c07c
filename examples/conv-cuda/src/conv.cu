// A 2-D convolution (cross-correlation, as image filters compute it) with a 17 × 17 filter:
//   out[y][x] = sum over j < 17, i < 17 of in[y + j][x + i] * filter[j][i]
// `in` is (h + 16) × (w + 16), row-major: the border the filter reaches past the output is
// part of the input. `out` is h × w.
//
// A block of BLOCK_X × BLOCK_Y threads computes a tile of (BLOCK_X · TILE_X) × (BLOCK_Y ·
// TILE_Y) outputs: it first loads the input the tile needs (the tile plus the filter's reach)
// into shared memory, then each thread sums TILE_X × TILE_Y outputs spaced BLOCK_X and BLOCK_Y
// apart (so that a warp's reads of shared memory stay consecutive). PAD elements at the end of
// each shared row change its stride. BLOCK_X, BLOCK_Y, TILE_X, TILE_Y and PAD come from -D
// defines.

#define FILTER_W 17
#define FILTER_H 17

extern "C" __global__ void __launch_bounds__(BLOCK_X * BLOCK_Y)
conv(float* __restrict__ out, const float* __restrict__ in, const float* __restrict__ filter,
     int w, int h)
{
    constexpr int OUT_W = BLOCK_X * TILE_X;
    constexpr int OUT_H = BLOCK_Y * TILE_Y;
    constexpr int SH_W = OUT_W + FILTER_W - 1;
    constexpr int SH_H = OUT_H + FILTER_H - 1;
    __shared__ float sh[SH_H][SH_W + PAD];
    static_assert(sizeof(sh) <= 48 * 1024, "the input tile exceeds 48 KiB of static shared memory");

    const int in_w = w + FILTER_W - 1;
    const int in_h = h + FILTER_H - 1;
    const int x0 = blockIdx.x * OUT_W;
    const int y0 = blockIdx.y * OUT_H;

    for (int j = threadIdx.y; j < SH_H; j += BLOCK_Y) {
        for (int i = threadIdx.x; i < SH_W; i += BLOCK_X) {
            const int y = y0 + j;
            const int x = x0 + i;
            sh[j][i] = (y < in_h && x < in_w) ? in[(long long)y * in_w + x] : 0.0f;
        }
    }
    __syncthreads();

    float sum[TILE_Y][TILE_X];
#pragma unroll
    for (int ty = 0; ty < TILE_Y; ++ty)
#pragma unroll
        for (int tx = 0; tx < TILE_X; ++tx) sum[ty][tx] = 0.0f;

    for (int fj = 0; fj < FILTER_H; ++fj) {
#pragma unroll
        for (int fi = 0; fi < FILTER_W; ++fi) {
            const float f = __ldg(&filter[fj * FILTER_W + fi]);
#pragma unroll
            for (int ty = 0; ty < TILE_Y; ++ty)
#pragma unroll
                for (int tx = 0; tx < TILE_X; ++tx)
                    sum[ty][tx] += sh[threadIdx.y + ty * BLOCK_Y + fj][threadIdx.x + tx * BLOCK_X + fi] * f;
        }
    }

#pragma unroll
    for (int ty = 0; ty < TILE_Y; ++ty) {
#pragma unroll
        for (int tx = 0; tx < TILE_X; ++tx) {
            const int y = y0 + threadIdx.y + ty * BLOCK_Y;
            const int x = x0 + threadIdx.x + tx * BLOCK_X;
            if (y < h && x < w) out[(long long)y * w + x] = sum[ty][tx];
        }
    }
}

// C = A·B for row-major n×n matrices, n a multiple of the tiles. Each block computes a BM×BN
// tile of C from BK-wide slabs of A and B staged in dynamic shared memory (A transposed, so
// that a thread's TM values of a column are contiguous); each thread accumulates a TM×TN
// register tile. BM, BN, BK, TM, TN are the tuning parameters, passed as -D defines.
extern "C" __global__ void sgemm(const float* __restrict__ a, const float* __restrict__ b,
                                 float* __restrict__ c, int n) {
    extern __shared__ float smem[];
    float* as = smem;            // BK × BM
    float* bs = smem + BK * BM;  // BK × BN
    const int threads = (BM / TM) * (BN / TN);
    const int tid = threadIdx.x;
    const int tx = tid % (BN / TN), ty = tid / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < n; k0 += BK) {
        for (int i = tid; i < BM * BK; i += threads) {
            const int m = i / BK, k = i % BK;
            as[k * BM + m] = a[(size_t)(row0 + m) * n + k0 + k];
        }
        for (int i = tid; i < BK * BN; i += threads) {
            const int k = i / BN, j = i % BN;
            bs[k * BN + j] = b[(size_t)(k0 + k) * n + col0 + j];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float ra[TM], rb[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i) ra[i] = as[k * BM + ty * TM + i];
#pragma unroll
            for (int j = 0; j < TN; ++j) rb[j] = bs[k * BN + tx * TN + j];
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            c[(size_t)(row0 + ty * TM + i) * n + col0 + tx * TN + j] = acc[i][j];
}

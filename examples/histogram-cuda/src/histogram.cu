// A 256-bin histogram of 32-bit keys: bins[k] += the number of keys equal to k, for k < 256
// (keys of 256 or more are not counted). bins must be zeroed before the launch.
//
// Each block counts into COPIES private histograms in shared memory (warp w uses copy
// w % COPIES, so fewer threads contend for one bin), then adds them into bins with one global
// atomic per bin. Threads walk the keys grid-stride, IPT keys per thread and step, each load
// coalesced across the block. TPB (threads per block), IPT and COPIES come from -D defines;
// the grid (blocks per SM times the SMs) is the caller's.

#define BINS 256

extern "C" __global__ void __launch_bounds__(TPB)
histogram(const unsigned* __restrict__ keys, long long n, unsigned* __restrict__ bins)
{
    __shared__ unsigned local[COPIES * BINS];
    for (int i = threadIdx.x; i < COPIES * BINS; i += TPB) {
        local[i] = 0;
    }
    __syncthreads();

    unsigned* mine = local + ((threadIdx.x / 32) % COPIES) * BINS;
    const long long step = (long long)gridDim.x * TPB * IPT;
    for (long long first = (long long)blockIdx.x * TPB * IPT + threadIdx.x; first < n;
         first += step) {
        unsigned k[IPT];
#pragma unroll
        for (int j = 0; j < IPT; ++j) {
            const long long i = first + (long long)j * TPB;
            k[j] = i < n ? keys[i] : BINS;
        }
#pragma unroll
        for (int j = 0; j < IPT; ++j) {
            if (k[j] < BINS) {
                atomicAdd(&mine[k[j]], 1u);
            }
        }
    }
    __syncthreads();

    for (int b = threadIdx.x; b < BINS; b += TPB) {
        unsigned total = 0;
        for (int c = 0; c < COPIES; ++c) {
            total += local[c * BINS + b];
        }
        if (total != 0) {
            atomicAdd(&bins[b], total);
        }
    }
}

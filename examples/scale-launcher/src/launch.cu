// A kernel and its C++ launcher, as projects that build with nvcc (candle's GGUF kernels,
// mistral.rs, sppark) write them: the host function picks the grid and launches with <<<…>>>
// on the caller's stream. IPT and TPB come from -D defines; gputune compiles this file once
// per variant and renames each variant's `scale_launch` to a symbol of its own.
#include <cuda_runtime.h>

namespace {

template <int Ipt, int Tpb>
__global__ void __launch_bounds__(Tpb)
scale_kernel(const float* __restrict__ x, float* __restrict__ y, float a, unsigned long long n)
{
    const unsigned long long base = (unsigned long long)blockIdx.x * (Ipt * Tpb) + threadIdx.x;
#pragma unroll
    for (int k = 0; k < Ipt; ++k) {
        const unsigned long long i = base + (unsigned long long)k * Tpb;
        if (i < n) y[i] = a * x[i];
    }
}

}  // namespace

// Returns cudaGetLastError() after the launch: 0 on success.
extern "C" int scale_launch(const float* x, float* y, float a, unsigned long long n,
                            cudaStream_t stream)
{
    const unsigned long long per_block = (unsigned long long)IPT * TPB;
    const unsigned int blocks = (unsigned int)((n + per_block - 1) / per_block);
    scale_kernel<IPT, TPB><<<blocks > 0 ? blocks : 1, TPB, 0, stream>>>(x, y, a, n);
    return (int)cudaGetLastError();
}

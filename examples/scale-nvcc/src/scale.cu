// y[i] = a * x[i], the kernel of examples/scale-cuda compiled by nvcc at build time instead of
// NVRTC at run time. Its host part includes C++ library headers and defines a host function,
// which NVRTC cannot compile (it has no host compiler and no <cstdio>): such a file is tuned
// through the nvcc path. IPT and TPB come from -D defines, one fatbin per variant.
#include <cmath>
#include <cstdio>

// A host-side description of the variant, as a real project's diagnostics would print it.
void describe_variant(FILE* out)
{
    std::fprintf(out, "scale: %d items per thread, %d threads per block (log2 %.0f)\n", IPT, TPB,
                 std::log2(static_cast<double>(TPB)));
}

extern "C" __global__ void __launch_bounds__(TPB)
scale(const float* __restrict__ x, float* __restrict__ y, float a, unsigned long long n)
{
    const unsigned long long base =
        (unsigned long long)blockIdx.x * (IPT * TPB) + threadIdx.x;
    float v[IPT];
#pragma unroll
    for (int k = 0; k < IPT; ++k) {
        const unsigned long long i = base + (unsigned long long)k * TPB;
        v[k] = i < n ? x[i] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < IPT; ++k) {
        const unsigned long long i = base + (unsigned long long)k * TPB;
        if (i < n) y[i] = a * v[k];
    }
}

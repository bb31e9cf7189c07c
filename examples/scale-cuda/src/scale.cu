// y[i] = a * x[i]. Each block covers IPT * TPB consecutive elements; thread t of a block
// handles elements base + t + k * TPB for k < IPT, so every warp access is coalesced and each
// thread has IPT independent loads in flight. VALUE_T, IPT and TPB come from -D defines.
extern "C" __global__ void __launch_bounds__(TPB)
scale(const VALUE_T* __restrict__ x, VALUE_T* __restrict__ y, VALUE_T a, unsigned long long n)
{
    const unsigned long long base =
        (unsigned long long)blockIdx.x * (IPT * TPB) + threadIdx.x;
    VALUE_T v[IPT];
#pragma unroll
    for (int k = 0; k < IPT; ++k) {
        const unsigned long long i = base + (unsigned long long)k * TPB;
        v[k] = i < n ? x[i] : VALUE_T(0);
    }
#pragma unroll
    for (int k = 0; k < IPT; ++k) {
        const unsigned long long i = base + (unsigned long long)k * TPB;
        if (i < n) y[i] = a * v[k];
    }
}

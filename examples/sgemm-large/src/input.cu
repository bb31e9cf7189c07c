// The bench's matrices, made on the device: x[i] = eighth(i, seed) of lib.rs for i < n
// (grid-stride), the same 32-bit multiplicative hash as the host's: an integer 1 to 8 over 8,
// exact in float.

extern "C" __global__ void fill_eighths(float* __restrict__ x, unsigned long long n,
                                        unsigned seed)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const unsigned h = (((unsigned)i ^ seed) * 2654435761u) >> 29;
        x[i] = (float)(h + 1) / 8.0f;
    }
}

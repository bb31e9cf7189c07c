// The sum's test input, made on the device: x[i] = input_value(i) of lib.rs, converted to
// VALUE_T, for i < n (grid-stride). The same splitmix64 hash as on the host, so the host's
// exact sum of input_value over 0..n is this input's exact sum.

extern "C" __global__ void fill_input(VALUE_T* __restrict__ x, unsigned long long n)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        unsigned long long z = i + 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        const unsigned long long h = z ^ (z >> 31);
        // Magnitude 1 to 4 from bits 63-62, sign from bit 61.
        const int magnitude = (int)(h >> 62) + 1;
        const int sign = 1 - 2 * (int)((h >> 61) & 1);
        x[i] = (VALUE_T)(magnitude * sign);
    }
}

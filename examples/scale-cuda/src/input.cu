// The bench's input and answer, made on the device: x[i] = factor * input_value(i) of lib.rs,
// as VALUE_T, for i < n (grid-stride). input_value(i) = ((i % 1021) + 1) / 2 is a half of a
// small integer, and factor 1 or 3 keeps the product exact, so these are the host's values bit
// for bit in both precisions.

extern "C" __global__ void fill_input(VALUE_T* __restrict__ x, unsigned long long n, VALUE_T factor)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const VALUE_T value = (VALUE_T)(unsigned)(i % 1021 + 1) * (VALUE_T)0.5;
        x[i] = factor * value;
    }
}

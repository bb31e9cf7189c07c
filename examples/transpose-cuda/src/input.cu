// The bench's input, made on the device: x[r * cols + c] = input_value(r, c) of lib.rs, as
// VALUE_T, for r < rows and c < cols. Rows step over the grid's y (grid-stride), columns over
// its x threads (grid-stride, consecutive threads on consecutive columns: coalesced). The same
// 64-bit hash as the host's, whose values are integers 1 to 2^23: exact in float and double.

extern "C" __global__ void fill_input(VALUE_T* __restrict__ x, unsigned long long rows,
                                      unsigned long long cols)
{
    const unsigned long long col_stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long r = blockIdx.y; r < rows; r += gridDim.y) {
        for (unsigned long long c = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
             c < cols; c += col_stride) {
            unsigned long long h = r * 0x9E3779B97F4A7C15ull ^ c * 0xC2B2AE3D27D4EB4Full;
            h ^= h >> 29;
            h *= 0xBF58476D1CE4E5B9ull;
            h ^= h >> 32;
            x[r * cols + c] = (VALUE_T)(float)((h >> 41) + 1);
        }
    }
}

// out[i] = in[i] / 8 as VALUE_T: inputs whose products and sums are exact in float.
#include "half_vec.cuh"

__global__ void eighths(const unsigned* in, VALUE_T* out, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        out[i] = from_float<VALUE_T>(in[i] / 8.0f);
    }
}

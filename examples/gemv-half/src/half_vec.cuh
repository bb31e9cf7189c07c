// Half-precision helpers shared by the crate's kernels: conversions for both 16-bit types and
// a load of N consecutive values as floats in one aligned access of N * 2 bytes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ inline float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ inline float to_float(__half v) { return __half2float(v); }

template <typename T> __device__ T from_float(float v);
template <> __device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ inline __half from_float<__half>(float v) { return __float2half(v); }

// The unsigned vector type of N 16-bit values.
template <int N> struct Packed;
template <> struct Packed<2> { using type = unsigned int; };
template <> struct Packed<4> { using type = uint2; };
template <> struct Packed<8> { using type = uint4; };

// p must be aligned to N * 2 bytes.
template <int N, typename T>
__device__ inline void load_floats(const T* p, float (&out)[N]) {
    const typename Packed<N>::type raw = __ldg(reinterpret_cast<const typename Packed<N>::type*>(p));
    const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = to_float(v[i]);
}

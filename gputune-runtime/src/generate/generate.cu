// Device-side data generators of gputune_runtime::generate. The host mirror in host.rs is the
// specification: every value depends only on (seed, index), through Philox-4x32-10 with
// key = seed and counter = (group, draw, 0), so the grid's shape never changes the data.
//
// Defines: GEN_T (the element's C++ type), GEN_BITS (its width: 32 or 64), GEN_FLOAT (1 for
// float and double, 0 for integers).

#if GEN_BITS == 32
typedef unsigned int gen_word;
#elif GEN_BITS == 64
typedef unsigned long long gen_word;
#else
#error "GEN_BITS must be 32 or 64"
#endif

typedef unsigned long long gen_u64;

// Philox-4x32-10 (Salmon et al., SC'11; Random123's constants and key schedule).
__device__ __forceinline__ uint4 gen_philox(gen_u64 group, unsigned int draw, gen_u64 seed)
{
    uint4 c = make_uint4((unsigned int)group, (unsigned int)(group >> 32), draw, 0u);
    unsigned int k0 = (unsigned int)seed;
    unsigned int k1 = (unsigned int)(seed >> 32);
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const unsigned int hi0 = __umulhi(0xD2511F53u, c.x);
        const unsigned int lo0 = 0xD2511F53u * c.x;
        const unsigned int hi1 = __umulhi(0xCD9E8D57u, c.z);
        const unsigned int lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
    }
    return c;
}

// Words 2j and 2j+1 of one Philox output as one 64-bit word, the first the low half.
__device__ __forceinline__ gen_u64 gen_join(unsigned int lo, unsigned int hi)
{
    return ((gen_u64)hi << 32) | lo;
}

// The PER values of one group, stored with one vector store where the group is whole and
// the buffer aligned (it is, from cudaMalloc), else one by one.
template <typename V, int PER>
struct alignas(sizeof(V) * PER) gen_pack {
    V v[PER];
};

template <typename V, int PER>
__device__ __forceinline__ void gen_store(V* out, gen_u64 n, gen_u64 group, const gen_pack<V, PER>& p)
{
    const gen_u64 first = group * PER;
    if (first + PER <= n && reinterpret_cast<gen_u64>(out) % sizeof(p) == 0) {
        *reinterpret_cast<gen_pack<V, PER>*>(out + first) = p;
    } else {
#pragma unroll
        for (int j = 0; j < PER; ++j) {
            if (first + j < n) out[first + j] = p.v[j];
        }
    }
}

// Each thread takes groups of PER consecutive elements (one Philox output each), striding by
// the grid, so any grid covers any length.
#define GEN_FOR_EACH_GROUP(group, n, PER)                                                   \
    for (gen_u64 group = (gen_u64)blockIdx.x * blockDim.x + threadIdx.x,                  \
                 gen_groups = ((n) + (PER) - 1) / (PER);                                    \
         group < gen_groups; group += (gen_u64)gridDim.x * blockDim.x)

#if GEN_FLOAT
#if GEN_BITS == 32
#define GEN_FMA fmaf
#else
#define GEN_FMA fma
#endif

// lo + u·(hi − lo) as (1 − u)·lo + u·hi, which cannot overflow for finite lo and hi, kept in
// [lo, hi): rounding can land on hi (then the float below it, which the host passes) or a hair
// below lo. When lo == hi, every value is lo.
__device__ __forceinline__ GEN_T gen_between(GEN_T u, GEN_T lo, GEN_T hi, GEN_T below_hi)
{
    GEN_T v = GEN_FMA(u, hi, GEN_FMA(-u, lo, lo));
    if (v >= hi) v = below_hi;
    if (v < lo) v = lo;
    return v;
}
#endif

// Uniform values: floats in [lo, hi), integers in [lo, hi] (span = hi − lo + 1 modulo 2^64;
// 0 stands for 2^64). Integers are lo + floor(r·span / 2^B) for a B-bit random fraction r, with
// B = 64 for 32-bit types and 128 for 64-bit ones, so no value is favoured by more than 2^-32
// of its probability.
extern "C" __global__ void gen_uniform(GEN_T* out, gen_u64 n, GEN_T lo, GEN_T hi, GEN_T below_hi,
                                       gen_u64 span, gen_u64 seed)
{
#if GEN_FLOAT && GEN_BITS == 32
    GEN_FOR_EACH_GROUP(group, n, 4)
    {
        const uint4 x = gen_philox(group, 0, seed);
        const unsigned int w[4] = {x.x, x.y, x.z, x.w};
        gen_pack<GEN_T, 4> p;
#pragma unroll
        for (int j = 0; j < 4; ++j) p.v[j] = gen_between((float)(w[j] >> 8) * 0x1p-24f, lo, hi, below_hi);
        gen_store(out, n, group, p);
    }
#elif GEN_FLOAT
    GEN_FOR_EACH_GROUP(group, n, 2)
    {
        const uint4 x = gen_philox(group, 0, seed);
        const gen_u64 w[2] = {gen_join(x.x, x.y), gen_join(x.z, x.w)};
        gen_pack<GEN_T, 2> p;
#pragma unroll
        for (int j = 0; j < 2; ++j) p.v[j] = gen_between((double)(w[j] >> 11) * 0x1p-53, lo, hi, below_hi);
        gen_store(out, n, group, p);
    }
#elif GEN_BITS == 32
    // span <= 2^32, so the 64-bit product's high word is the offset.
    const gen_word base = (gen_word)lo;
    GEN_FOR_EACH_GROUP(group, n, 2)
    {
        const uint4 x = gen_philox(group, 0, seed);
        const gen_u64 r[2] = {gen_join(x.x, x.y), gen_join(x.z, x.w)};
        gen_pack<GEN_T, 2> p;
#pragma unroll
        for (int j = 0; j < 2; ++j) p.v[j] = (GEN_T)(base + (gen_word)__umul64hi(r[j], span));
        gen_store(out, n, group, p);
    }
#else
    const gen_word base = (gen_word)lo;
    GEN_FOR_EACH_GROUP(group, n, 1)
    {
        const uint4 x = gen_philox(group, 0, seed);
        const gen_u64 r_lo = gen_join(x.x, x.y);
        const gen_u64 r_hi = gen_join(x.z, x.w);
        gen_u64 offset;
        if (span == 0) {
            offset = r_hi;
        } else {
            // floor((r_hi·2^64 + r_lo)·span / 2^128), exactly: the high word of
            // r_hi·span + floor(r_lo·span / 2^64).
            const gen_u64 low = r_hi * span;
            const gen_u64 sum = low + __umul64hi(r_lo, span);
            offset = __umul64hi(r_hi, span) + (sum < low ? 1 : 0);
        }
        gen_pack<GEN_T, 1> p;
        p.v[0] = (GEN_T)(base + offset);
        gen_store(out, n, group, p);
    }
#endif
}

#if GEN_FLOAT
// Normal values by Box–Muller: each pair of uniforms u1 in (0, 1], u2 in [0, 1) gives
// r·cos(2π·u2) and r·sin(2π·u2) with r = sqrt(−2·ln u1), then mean + stdev·z.
extern "C" __global__ void gen_normal(GEN_T* out, gen_u64 n, GEN_T mean, GEN_T stdev, gen_u64 seed)
{
#if GEN_BITS == 32
    GEN_FOR_EACH_GROUP(group, n, 4)
    {
        const uint4 x = gen_philox(group, 0, seed);
        const unsigned int w[4] = {x.x, x.y, x.z, x.w};
        gen_pack<GEN_T, 4> p;
#pragma unroll
        for (int j = 0; j < 4; j += 2) {
            const float u1 = (float)((w[j] >> 8) + 1) * 0x1p-24f;
            const float u2 = (float)(w[j + 1] >> 8) * 0x1p-24f;
            const float r = sqrtf(-2.0f * logf(u1));
            float s, c;
            sincospif(2.0f * u2, &s, &c);
            p.v[j] = fmaf(stdev, r * c, mean);
            p.v[j + 1] = fmaf(stdev, r * s, mean);
        }
        gen_store(out, n, group, p);
    }
#else
    GEN_FOR_EACH_GROUP(group, n, 2)
    {
        const uint4 x = gen_philox(group, 0, seed);
        const double u1 = (double)((gen_join(x.x, x.y) >> 11) + 1) * 0x1p-53;
        const double u2 = (double)(gen_join(x.z, x.w) >> 11) * 0x1p-53;
        const double r = sqrt(-2.0 * log(u1));
        double s, c;
        sincospi(2.0 * u2, &s, &c);
        gen_pack<GEN_T, 2> p;
        p.v[0] = fma(stdev, r * c, mean);
        p.v[1] = fma(stdev, r * s, mean);
        gen_store(out, n, group, p);
    }
#endif
}
#endif

// Floats keep every bit pattern but infinities and NaNs: an all-ones exponent loses its
// lowest bit, so the values are finite (as CUB's, which AND finite values, are).
__device__ __forceinline__ gen_word gen_finite(gen_word w)
{
#if GEN_FLOAT && GEN_BITS == 32
    if ((w & 0x7F800000u) == 0x7F800000u) w &= ~0x00800000u;
#elif GEN_FLOAT
    if ((w & 0x7FF0000000000000ull) == 0x7FF0000000000000ull) w &= ~0x0010000000000000ull;
#endif
    return w;
}

// CUB's reduced-entropy bit patterns: each element is the AND of `words` random words (draws
// 0 .. words−1 of its group), so each bit is 1 with probability 2^−words. words == 0 is
// entropy 0.000: every element is the same value, the first element's one-word pattern.
extern "C" __global__ void gen_entropy(gen_word* out, gen_u64 n, unsigned int words, gen_u64 seed)
{
    constexpr int PER = 128 / GEN_BITS;
    gen_word constant = 0;
    if (words == 0) {
        const uint4 first = gen_philox(0, 0, seed);
#if GEN_BITS == 32
        constant = gen_finite(first.x);
#else
        constant = gen_finite(gen_join(first.x, first.y));
#endif
    }
    GEN_FOR_EACH_GROUP(group, n, PER)
    {
        gen_pack<gen_word, PER> p;
        if (words == 0) {
#pragma unroll
            for (int j = 0; j < PER; ++j) p.v[j] = constant;
        } else {
            uint4 x = gen_philox(group, 0, seed);
            for (unsigned int d = 1; d < words; ++d) {
                const uint4 y = gen_philox(group, d, seed);
                x = make_uint4(x.x & y.x, x.y & y.y, x.z & y.z, x.w & y.w);
            }
#if GEN_BITS == 32
            const gen_word w[4] = {x.x, x.y, x.z, x.w};
#else
            const gen_word w[2] = {gen_join(x.x, x.y), gen_join(x.z, x.w)};
#endif
#pragma unroll
            for (int j = 0; j < PER; ++j) p.v[j] = gen_finite(w[j]);
        }
        gen_store(out, n, group, p);
    }
}

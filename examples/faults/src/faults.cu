// Fault injection on the GPU: y[i] = 2·x[i] + 1 after GPUTUNE_WORK rounds of busy work that
// cannot change the result, or one of the injected faults. Compiled by NVRTC with
// -DGPUTUNE_FAULT=FAULT_… -DGPUTUNE_WORK=… -DGPUTUNE_TPB=… (see cuda.rs).

#define FAULT_NONE 0
#define FAULT_COMPILE 1
#define FAULT_LAUNCH 2
#define FAULT_CRASH 3
#define FAULT_HANG 4
#define FAULT_WRONG 5

#if !defined(GPUTUNE_FAULT) || !defined(GPUTUNE_WORK) || !defined(GPUTUNE_TPB)
#error "compile with -DGPUTUNE_FAULT=FAULT_… -DGPUTUNE_WORK=… -DGPUTUNE_TPB=…"
#endif

#if GPUTUNE_FAULT == FAULT_COMPILE
#error "injected fault: this variant does not compile"
#endif

// `zero` is 0 and `nowhere` is a null pointer, both passed at run time so that the compiler
// can neither drop the busy work nor the faulting store. `never` points at a zero word that
// nobody sets.
extern "C" __global__ void __launch_bounds__(GPUTUNE_TPB)
affine(const float* x, float* y, unsigned long long n, unsigned int zero, float* nowhere,
       const volatile unsigned int* never)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
#if GPUTUNE_FAULT == FAULT_CRASH
    // A store to address 0: an illegal address, which leaves the context unusable.
    if (i == 0) {
        nowhere[threadIdx.x] = 1.0f;
    }
#elif GPUTUNE_FAULT == FAULT_HANG
    // Spins for ever: only the watchdog of `cargo gputune` ends it (with the process).
    if (i == 0) {
        while (*never == 0u) {
        }
    }
#endif
    if (i >= n) {
        return;
    }
#if GPUTUNE_FAULT == FAULT_WRONG
    // Skips the work and the arithmetic: faster than any correct variant, and wrong.
    y[i] = x[i];
#else
    // A non-linear recurrence with a trip count known only at run time: the compiler can
    // neither unroll it away nor find a closed form, so GPUTUNE_WORK sets the cost.
    unsigned int h = (unsigned int)i;
    for (unsigned int r = 0; r < GPUTUNE_WORK * 256u + zero; ++r) {
        h = h * (h | 1u) + 1013904223u;
    }
    y[i] = 2.0f * x[i] + 1.0f + (float)(h & zero);
#endif
}

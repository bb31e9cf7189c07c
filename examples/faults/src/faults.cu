// Fault injection on the GPU: y[i] = 2·x[i] + 1 after GPUTUNE_WORK rounds of busy work that
// cannot change the result, or one of the injected faults. Compiled by NVRTC with
// -DGPUTUNE_TPB=… -DGPUTUNE_FAULT=… -DGPUTUNE_WORK=… (see cuda.rs), the fault by its name in
// `#[tune]`: none, compile, launch, crash, hang or wrong.

// FAULT is the number of the fault GPUTUNE_FAULT names, which is pasted onto FAULT_ into one
// of the macros below (none → FAULT_none). Pasted rather than defined itself: a macro named
// `none` or `launch` would reach NVRTC's built-in headers too.
#define FAULT_PASTE(a, b) a##b
#define FAULT_OF(name) FAULT_PASTE(FAULT_, name)
#define FAULT FAULT_OF(GPUTUNE_FAULT)
#define FAULT_none 1
#define FAULT_compile 2
#define FAULT_launch 3
#define FAULT_crash 4
#define FAULT_hang 5
#define FAULT_wrong 6

#if !defined(GPUTUNE_FAULT) || !defined(GPUTUNE_WORK) || !defined(GPUTUNE_TPB)
#error "compile with -DGPUTUNE_FAULT=… -DGPUTUNE_WORK=… -DGPUTUNE_TPB=…"
#endif
// An unknown name pastes into a macro that does not exist, which #if reads as 0.
#if FAULT == 0
#error "GPUTUNE_FAULT is none of none, compile, launch, crash, hang, wrong"
#endif

#if FAULT == FAULT_compile
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
#if FAULT == FAULT_crash
    // A store to address 0: an illegal address, which leaves the context unusable.
    if (i == 0) {
        nowhere[threadIdx.x] = 1.0f;
    }
#elif FAULT == FAULT_hang
    // Spins for ever: only the watchdog of `cargo gputune` ends it (with the process).
    if (i == 0) {
        while (*never == 0u) {
        }
    }
#endif
    if (i >= n) {
        return;
    }
#if FAULT == FAULT_wrong
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

//! Bench of the CUDA fault-injection kernel (feature `cuda`): each variant compiled by NVRTC,
//! verified on the GPU against base on poisoned outputs, then timed.
//!
//! Meant for `cargo gputune search --features cuda --bench faults-cuda` (or a bundle, see
//! `scripts/gpu/gpu-faults.sh`), whose watchdog ends the hanging variants and whose fresh
//! processes carry on after a crash; run by hand, `--variant fault_kernel.fault_hang.work_1`
//! never returns. Without an NVIDIA driver it exits 3 with one line.

use gputune_example_faults::cuda::fault_kernel;
use gputune_runtime::device::BackendKind;
use gputune_runtime::{Bench, BenchResult, BoxError, State};

fn faults_cuda(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<f32>(n as u64);
    state.add_global_memory_writes::<f32>(n as u64);
    // The input (non-zero and index-dependent: never verify on zeros), the output and the
    // zero word the `hang` fault waits on, made once per workload and process.
    let make = |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        let host: Vec<f32> = (0..n).map(|i| ((i % 1021) as f32 + 1.0) * 0.5).collect();
        let (x, y) = (stream.clone_htod(&host)?, stream.alloc_zeros::<f32>(n)?);
        Ok::<_, BoxError>((x, y, stream.alloc_zeros::<u32>(1)?))
    };
    // A variant that does not compile, cannot be launched, crashes or hangs fails in the
    // verification (base, then the variant), before it is timed; a wrong one fails it.
    state.with_setup(make, |state, (x, y, never)| {
        state.exec_verified(y, |launch, y| fault_kernel(launch.stream()?, x, y, never))
    })?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("faults-cuda", faults_cuda)
        .tunes("fault_kernel")
        .add_int64_power_of_two_axis("Elements{io}", [20, 22])
        .backend(BackendKind::Cuda)]);
}

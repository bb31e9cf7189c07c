//! Bench of the CUDA fault-injection kernel (feature `cuda`): each variant compiled by NVRTC,
//! verified on the GPU against base on poisoned outputs, then timed.
//!
//! Meant for `cargo gputune search --features cuda --bench faults-cuda` (or a bundle, see
//! `scripts/gpu-faults.sh`), whose watchdog ends the hanging variants and whose fresh
//! processes carry on after a crash; run by hand, `--variant fault_kernel.fault_hang.work_1`
//! never returns. Without an NVIDIA driver it exits 3 with one line.

use gputune_example_faults::cuda::fault_kernel;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{Bench, BenchResult, State};

fn faults_cuda(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    let cuda = state.cuda()?.clone();
    // Non-zero, index-dependent input: never verify on zeros.
    let host: Vec<f32> = (0..n).map(|i| ((i % 1021) as f32 + 1.0) * 0.5).collect();
    let x = cuda.stream.clone_htod(&host)?;
    let mut y = cuda.stream.alloc_zeros::<f32>(n)?;
    let never = cuda.stream.alloc_zeros::<u32>(1)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<f32>(n as u64);
    state.add_global_memory_writes::<f32>(n as u64);

    // `verify` runs base, then the variant: the kernel kept last is the variant's. A variant
    // that does not compile, cannot be launched, crashes or hangs fails here, before timing.
    let mut compiled = None;
    state.verify(&mut y, Tolerance::EXACT, |y| {
        let kernel = fault_kernel(&cuda)?;
        let config = kernel.config(n)?;
        kernel.launch(&cuda.stream, config, &x, y, &never)?;
        compiled = Some((kernel, config));
        Ok(())
    })?;
    let (kernel, config) = compiled.ok_or("the verification compiled no kernel")?;
    state.exec(|launch| kernel.launch(launch.stream()?, config, &x, &mut y, &never));
    Ok(())
}

fn main() {
    gputune_runtime::main(vec![Bench::new("faults-cuda", faults_cuda)
        .tunes("fault_kernel")
        .add_int64_power_of_two_axis("Elements{io}", [20, 22])
        .backend(BackendKind::Cuda)]);
}

//! The large-space SGEMM bench: `cargo gputune search -p gputune-example-sgemm-large`.
//!
//! The matrices are made on the device (`fill_eighths`, one launch each), not on the host and
//! copied over. Base is checked on the host against its product's specification
//! (`check_product`: the exact sums at a grid of 65 × 65 elements, from the formula of
//! the matrices, `eighth`); every other variant against base as before (`exec_verified`).

use gputune_example_sgemm_large::{check_product, fill_eighths, sgemm};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::{Bench, BenchResult, BoxError, State};

fn bench(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("N{io}")?)?;
    if n > 1 << 18 {
        // Beyond, sums of the inputs' products may round, and variants differ from base.
        return Err(format!("the inputs are exact for n ≤ 2^18, not n = {n}").into());
    }
    // Items are floating-point operations: Elem/s reads as FLOP/s.
    state.add_element_count(2 * (n * n * n) as u64);
    // A and B (different patterns, so that a swapped or transposed operand shows) and C, made
    // on the device once per workload and process however many variants it runs.
    let matrices = |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        let (mut a, mut b) = (
            stream.alloc_zeros::<f32>(n * n)?,
            stream.alloc_zeros::<f32>(n * n)?,
        );
        fill_eighths(stream, &mut a, 0xa)?;
        fill_eighths(stream, &mut b, 0xb)?;
        let c = stream.alloc_zeros::<f32>(n * n)?;
        Ok::<_, BoxError>((a, b, c))
    };
    state.with_setup(matrices, |state, (a, b, c)| {
        // Base against the specification's exact product, on the host; every other variant
        // against base's C.
        if matches!(state.variant(), None | Some("base")) {
            let stream = state.cuda()?.stream.clone();
            let run = |c: &mut CudaSlice<f32>| sgemm(&stream, (a, b), c, n);
            state.verify_with(c, run, |c| {
                let host = c.stream().clone_dtoh(c).map_err(|e| e.to_string())?;
                check_product(&host, n, (0xa, 0xb))
            })?;
            state.exec(|launch| sgemm(launch.stream()?, (a, b), c, n));
            Ok(())
        } else {
            state.exec_verified(c, |launch, c| sgemm(launch.stream()?, (a, b), c, n))
        }
    })?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("sgemm", bench)
        .tunes("sgemm")
        .add_int64_power_of_two_axis("N{io}", [10])
        .backend(BackendKind::Cuda)]);
}

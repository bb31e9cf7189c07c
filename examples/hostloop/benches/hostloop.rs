//! The benches of `sgemm` and `partial_sums`, inputs filled on the host by plain loops and
//! copied to the device once per workload and process (`State::with_setup`):
//! `cargo bench -p gputune-example-hostloop`, or `cargo gputune search -p
//! gputune-example-hostloop` to tune both.
//!
//! One bench target for both functions: one `main`, one binary per batch, and each bench
//! process runs only the bench of the function it tunes (its setup included).

use std::cell::Cell;

use gputune_example_hostloop::{
    check_partials, eighths, max_partials, partial_sums, sgemm, small_integers,
};
use gputune_runtime::device::BackendKind;
use gputune_runtime::{Bench, BenchResult, BoxError, State};

/// C = A·B for n×n matrices of random eighths, verified against base.
fn bench_sgemm(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("N")?)?;
    state.add_element_count((2 * n * n * n) as u64); // flops
    state.add_global_memory_reads::<f32>((2 * n * n) as u64);
    state.add_global_memory_writes::<f32>((n * n) as u64);
    let make_matrices = |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        let (a, b) = (eighths(n * n, 1), eighths(n * n, 2));
        let (a, b) = (stream.clone_htod(&a)?, stream.clone_htod(&b)?);
        Ok::<_, BoxError>((a, b, stream.alloc_zeros::<f32>(n * n)?))
    };
    state.with_setup(make_matrices, |state, (a, b, c)| {
        state.exec_verified(c, |launch, c| sgemm(launch.stream()?, (a, b), c, n))
    })?
}

/// The first pass of the sum of `Elements` random small integers: every variant's partial
/// sums (copied back) must add up to the exact sum, computed on the host.
fn bench_reduce(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<f32>(n as u64);
    let make_input = |state: &State<'_>| {
        let cuda = state.cuda()?;
        let (x, exact) = small_integers(n, 3);
        let x = cuda.stream.clone_htod(&x)?;
        let partials = cuda
            .stream
            .alloc_zeros::<f32>(max_partials(&cuda.context)?)?;
        Ok::<_, BoxError>((x, exact, partials))
    };
    state.with_setup(make_input, |state, (x, exact, partials)| {
        let stream = state.cuda()?.stream.clone();
        // The variant's grid depends on its occupancy: the check reads as many partials as
        // the verified run wrote.
        let blocks = Cell::new(0);
        state.verify_with(
            partials,
            |partials| {
                blocks.set(partial_sums(&stream, x, partials)?);
                Ok(())
            },
            |partials| {
                let got = stream.clone_dtoh(partials).map_err(|e| e.to_string())?;
                check_partials(&got, blocks.get(), *exact)
            },
        )?;
        state.exec(|launch| partial_sums(launch.stream()?, x, partials).map(|_| ()));
        Ok(())
    })?
}

fn main() {
    gputune_runtime::main(vec![
        Bench::new("sgemm", bench_sgemm)
            .tunes("sgemm")
            .add_int64_axis("N", [4096])
            .backend(BackendKind::Cuda),
        Bench::new("reduce", bench_reduce)
            .tunes("partial_sums")
            .add_int64_power_of_two_axis("Elements{io}", [28])
            .backend(BackendKind::Cuda),
    ]);
}

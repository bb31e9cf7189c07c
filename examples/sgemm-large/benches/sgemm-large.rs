//! The large-space SGEMM bench: `cargo gputune search -p gputune-example-sgemm-large`.

use gputune_example_sgemm_large::{eighths, sgemm};
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
    // once per workload and process however many variants it runs.
    let matrices = |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        let a = stream.clone_htod(&eighths(n, 0xa))?;
        let b = stream.clone_htod(&eighths(n, 0xb))?;
        let c = stream.alloc_zeros::<f32>(n * n)?;
        Ok::<_, BoxError>((a, b, c))
    };
    state.with_setup(matrices, |state, (a, b, c)| {
        state.exec_verified(c, |launch, c| sgemm(launch.stream()?, (a, b), c, n))
    })?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("sgemm", bench)
        .tunes("sgemm")
        .add_int64_power_of_two_axis("N{io}", [10])
        .backend(BackendKind::Cuda)]);
}

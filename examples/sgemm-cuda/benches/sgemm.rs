//! The SGEMM bench: `cargo gputune search -p gputune-example-sgemm-cuda`.

use gputune_example_sgemm_cuda::sgemm;
use gputune_runtime::device::BackendKind;
use gputune_runtime::{Bench, BenchResult, BoxError, State};

fn bench(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("N{io}")?)?;
    // Items are floating-point operations: Elem/s reads as FLOP/s.
    state.add_element_count(2 * (n * n * n) as u64);
    // A, B (values 1/8…1 in eighths: every product and sum is exact in f32) and C, made once.
    let matrices = |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        let values: Vec<f32> = (0..n * n)
            .map(|i| ((i * 7 + 3) % 8 + 1) as f32 / 8.0)
            .collect();
        let c = stream.alloc_zeros::<f32>(n * n)?;
        Ok::<_, BoxError>((stream.clone_htod(&values)?, stream.clone_htod(&values)?, c))
    };
    state.with_setup(matrices, |state, (a, b, c)| {
        state.exec_verified(c, |launch, c| sgemm(launch.stream()?, (a, b), c, n))
    })?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("sgemm", bench)
        .tunes("sgemm")
        .add_int64_power_of_two_axis("N{io}", [12])
        .backend(BackendKind::Cuda)]);
}

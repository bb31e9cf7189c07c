//! The bench of the shipped softmax: `cargo gputune search -p gputune-example-softmax-ptx`.
//! Rows of a batch of attention scores or of logits over a vocabulary; inputs are made on the
//! device once per workload and process.

use gputune_example_softmax_ptx::softmax_rows;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{generate, Bench, BenchResult, State};

fn bench_softmax(state: &mut State<'_>) -> BenchResult {
    let rows = usize::try_from(state.get_int64("Rows")?)?;
    let cols = usize::try_from(state.get_int64("Cols{io}")?)?;
    let n = rows * cols;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<f32>(n as u64);
    state.add_global_memory_writes::<f32>(n as u64);
    state.with_setup(
        |state| {
            let stream = &state.cuda()?.stream;
            let mut x = stream.alloc_zeros::<f32>(n)?;
            generate::uniform(stream, &mut x, -8.0, 8.0, 1)?;
            Ok::<_, gputune_runtime::BoxError>((x, stream.alloc_zeros::<f32>(n)?))
        },
        |state, (x, y)| {
            let stream = state.cuda()?.stream.clone();
            // Probabilities as small as 1e-9 are checked relatively, not against a floor.
            state.verify(y, Tolerance::new(0.0, 1e-4), |y| {
                softmax_rows(&stream, x, y, rows, cols)
            })?;
            state.exec(|launch| softmax_rows(launch.stream()?, x, y, rows, cols));
            Ok(())
        },
    )?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("softmax", bench_softmax)
        .tunes("softmax_rows")
        .add_int64_axis("Rows", [64, 1024])
        .add_int64_power_of_two_axis("Cols{io}", [10, 12, 15, 17])
        .backend(BackendKind::Cuda)]);
}

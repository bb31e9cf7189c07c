//! The bench of the C++-launched scale kernel: `cargo gputune search -p
//! gputune-example-scale-launcher`. Its input is made on the device once per workload and process.

use gputune_example_scale_launcher::scale_cxx;
use gputune_runtime::device::BackendKind;
use gputune_runtime::{generate, Bench, BenchResult, State};

const A: f32 = 3.0;

fn bench_scale(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<f32>(n as u64);
    state.add_global_memory_writes::<f32>(n as u64);
    state.with_setup(
        |state| {
            let stream = &state.cuda()?.stream;
            let mut x = stream.alloc_zeros::<f32>(n)?;
            generate::uniform(stream, &mut x, -1.0, 1.0, 1)?;
            Ok::<_, gputune_runtime::BoxError>((x, stream.alloc_zeros::<f32>(n)?))
        },
        |state, (x, y)| state.exec_verified(y, |launch, y| scale_cxx(launch.stream()?, x, y, A)),
    )?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("scale", bench_scale)
        .tunes("scale_cxx")
        .add_int64_power_of_two_axis("Elements{io}", [16, 20, 24, 26, 28])
        .backend(BackendKind::Cuda)]);
}

//! Bench of the chunked reduction: `cargo bench -p gputune-example-reduce-cpu`.

use gputune_example_reduce_cpu::{sum_chunked, Element};
use gputune_runtime::{type_instances, Bench, BenchResult, State};

fn reduce<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    let threads = usize::try_from(state.get_int64("Threads")?)?;
    let chunk = usize::try_from(state.get_int64("Chunk")?)?;
    let data: Vec<T> = (0..n).map(T::from_index).collect();
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(1);
    state.exec(|_| {
        std::hint::black_box(sum_chunked(std::hint::black_box(&data), threads, chunk));
        Ok(())
    });
    Ok(())
}

fn main() {
    gputune_runtime::main(vec![Bench::with_types(
        "reduce",
        &["T{ct}"],
        type_instances!(reduce; [f32, f64]),
    )
    .add_int64_power_of_two_axis("Elements{io}", [16, 20, 24])
    .add_int64_axis("Threads", [1, 2])
    .add_int64_axis("Chunk", [4096, 65536])]);
}

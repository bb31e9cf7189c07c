//! Bench of the tuned reduction: `cargo bench -p gputune-example-reduce-cpu`, or
//! `cargo gputune search -p gputune-example-reduce-cpu` to tune it.

use gputune_example_reduce_cpu::{sum, Element};
use gputune_runtime::{type_instances, Bench, BenchResult, State};

fn reduce<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    let data: Vec<T> = (0..n).map(T::from_index).collect();
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(1);
    state.exec(|_| {
        std::hint::black_box(sum(std::hint::black_box(&data)));
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
    .tunes("sum")
    .add_int64_power_of_two_axis("Elements{io}", [16, 20, 24])]);
}

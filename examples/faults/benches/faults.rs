//! Bench of the fault-injection function: the input made once per workload and process, and
//! each variant verified against base (by default, exactly: the output is an integer), then
//! timed.

use gputune_example_faults::checksum;
use gputune_runtime::{Bench, BenchResult, BoxError, State};

fn faults(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<u64>(n as u64);
    let input = |_: &State<'_>| {
        let data: Vec<u64> = (0..n as u64)
            .map(|i| i * 2_654_435_761 % 1_000_003)
            .collect();
        Ok::<_, BoxError>(data)
    };
    state.with_setup(input, |state, data| {
        let mut out = vec![0u64; 1];
        state.exec_verified(&mut out, |_, out| {
            out[0] = checksum(data)?;
            Ok(())
        })
    })?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("faults", faults)
        .tunes("checksum")
        .add_int64_power_of_two_axis("Elements{io}", [14, 16])]);
}

//! Bench of the fault-injection function: each variant verified against base, then timed.

use gputune_example_faults::checksum;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{Bench, BenchResult, State};

fn faults(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    let data: Vec<u64> = (0..n as u64)
        .map(|i| i * 2_654_435_761 % 1_000_003)
        .collect();
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<u64>(n as u64);
    let mut out = vec![0u64; 1];
    state.verify(&mut out, Tolerance::EXACT, |out| {
        out[0] = checksum(&data)?;
        Ok(())
    })?;
    state.exec(|_| {
        std::hint::black_box(checksum(&data)?);
        Ok(())
    });
    Ok(())
}

fn main() {
    gputune_runtime::main(vec![Bench::new("faults", faults)
        .tunes("checksum")
        .add_int64_power_of_two_axis("Elements{io}", [14, 16])]);
}

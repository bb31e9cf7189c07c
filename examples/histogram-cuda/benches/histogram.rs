//! The histogram bench: `cargo gputune search -p gputune-example-histogram-cuda`.

use gputune_example_histogram_cuda::{histogram, host_histogram, BINS};
use gputune_runtime::device::BackendKind;
use gputune_runtime::generate;
use gputune_runtime::{Bench, BenchResult, BoxError, State};

fn bench(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Keys{io}")?)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<u32>(n as u64);
    state.add_global_memory_writes::<u32>(BINS as u64);
    // Keys made on the device once per process (uniform in 0..=255) and kept across the
    // variants, with their histogram counted on the host from a copy.
    let data = |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        let mut keys = stream.alloc_zeros::<u32>(n)?;
        generate::uniform::<u32>(stream, &mut keys, 0, 255, 1)?;
        let expected = host_histogram(&stream.clone_dtoh(&keys)?);
        let bins = stream.alloc_zeros::<u32>(BINS)?;
        Ok::<_, BoxError>((keys, expected, bins))
    };
    state.with_setup(data, |state, (keys, expected, bins)| {
        // Base against the host's counts; every other variant against base's, exactly.
        if matches!(state.variant(), None | Some("base")) {
            let stream = state.cuda()?.stream.clone();
            let run = |b: &mut _| histogram(&stream, keys, b);
            state.verify_with(bins, run, |b| {
                let got = b.stream().clone_dtoh(b).map_err(|e| e.to_string())?;
                if got == *expected {
                    Ok(())
                } else {
                    Err("the counts differ from the host's".to_string())
                }
            })?;
            state.exec(|launch| histogram(launch.stream()?, keys, bins));
            Ok(())
        } else {
            state.exec_verified(bins, |launch, b| histogram(launch.stream()?, keys, b))
        }
    })?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("histogram", bench)
        .tunes("histogram")
        .add_int64_power_of_two_axis("Keys{io}", [16, 20, 23, 26])
        .backend(BackendKind::Cuda)]);
}

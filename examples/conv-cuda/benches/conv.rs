//! The convolution bench: `cargo gputune search -p gputune-example-conv-cuda`.
//!
//! The input and the filter are made on the device (`fill_eighths`, one launch each), not on
//! the host and copied over: setup does no host-side work in proportion to the input, and
//! base is still checked on the host against outputs computed from the data's specification
//! (`eighth`), never from a copy of what the device made.

use gputune_example_conv_cuda::{conv, eighth, fill_eighths, output_of, FILTER};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{Bench, BenchResult, BoxError, State};

fn bench(state: &mut State<'_>) -> BenchResult {
    let side = usize::try_from(state.get_int64("Side{io}")?)?;
    let in_side = side + FILTER - 1;
    state.add_element_count((side * side) as u64);
    state.add_global_memory_reads::<f32>((in_side * in_side) as u64);
    state.add_global_memory_writes::<f32>((side * side) as u64);
    // Made on the device once per process, kept across the variants: the input with seed 1,
    // the filter with seed 2 (the specification's `eighth(i, 1)` and `eighth(i, 2)`).
    let data = |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        let mut d_input = stream.alloc_zeros::<f32>(in_side * in_side)?;
        let mut d_filter = stream.alloc_zeros::<f32>(FILTER * FILTER)?;
        fill_eighths(stream, &mut d_input, 1)?;
        fill_eighths(stream, &mut d_filter, 2)?;
        let out = stream.alloc_zeros::<f32>(side * side)?;
        Ok::<_, BoxError>((d_input, d_filter, out))
    };
    state.with_setup(data, |state, (d_input, d_filter, out)| {
        let stream = state.cuda()?.stream.clone();
        let run = |o: &mut CudaSlice<f32>| conv(&stream, d_input, d_filter, o, (side, side));
        // Base is checked against the host on a grid of outputs (corners and edges included),
        // computed from the data's specification; the variants against base's outputs, bit for
        // bit (sums of eighths are exact).
        if matches!(state.variant(), None | Some("base")) {
            state.verify_with(out, run, |o| {
                let host = o.stream().clone_dtoh(o).map_err(|e| e.to_string())?;
                let step = (side / 61).max(1);
                for y in (0..side).step_by(step).chain([side - 1]) {
                    for x in (0..side).step_by(step).chain([side - 1]) {
                        let want = output_of(|i| eighth(i, 1), |i| eighth(i, 2), side, (x, y));
                        if host[y * side + x] != want {
                            return Err(format!(
                                "out[{y}][{x}] = {}, not {want}",
                                host[y * side + x]
                            ));
                        }
                    }
                }
                Ok(())
            })?;
        } else {
            state.verify(out, Tolerance::EXACT, run)?;
        }
        state.exec(|launch| conv(launch.stream()?, d_input, d_filter, out, (side, side)));
        Ok(())
    })?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("conv", bench)
        .tunes("conv")
        .add_int64_power_of_two_axis("Side{io}", [12])
        .backend(BackendKind::Cuda)]);
}

//! The convolution bench: `cargo gputune search -p gputune-example-conv-cuda`.

use gputune_example_conv_cuda::{conv, eighths, output_at, FILTER};
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
    // Made and uploaded once per process, kept across the variants.
    let data = |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        let input = eighths(in_side * in_side, 1);
        let filter = eighths(FILTER * FILTER, 2);
        let (d_input, d_filter) = (stream.clone_htod(&input)?, stream.clone_htod(&filter)?);
        let out = stream.alloc_zeros::<f32>(side * side)?;
        Ok::<_, BoxError>((input, filter, d_input, d_filter, out))
    };
    state.with_setup(data, |state, (input, filter, d_input, d_filter, out)| {
        let stream = state.cuda()?.stream.clone();
        let run = |o: &mut CudaSlice<f32>| conv(&stream, d_input, d_filter, o, (side, side));
        // Base is checked against the host on a grid of outputs (corners and edges included);
        // the variants against base's outputs, bit for bit (sums of eighths are exact).
        if matches!(state.variant(), None | Some("base")) {
            state.verify_with(out, run, |o| {
                let host = o.stream().clone_dtoh(o).map_err(|e| e.to_string())?;
                let step = (side / 61).max(1);
                for y in (0..side).step_by(step).chain([side - 1]) {
                    for x in (0..side).step_by(step).chain([side - 1]) {
                        let want = output_at(input, filter, side, (x, y));
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

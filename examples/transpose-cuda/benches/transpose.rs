//! Benches of the tuned transpose kernel and of a device-to-device copy of the same size
//! (the roof a transpose is compared with: both read and write every element once, measured
//! in the same run): `cargo bench -p gputune-example-transpose-cuda`, or
//! `cargo gputune search -p gputune-example-transpose-cuda` to tune `transpose`.
//!
//! A search runs many variants of `transpose` in one process, each over the same states: the
//! kernel handle compiles all of them in the background from the first call, and
//! `State::with_setup` makes each workload's buffers once, not once per variant (a 16384²
//! `f64` matrix is 2 GiB).
//!
//! The input is made on the device (`fill_input`, one launch), not filled on the host's cores
//! and copied over, which took seconds of every search's setup at 2^28 elements. Base is still
//! checked against the host's specification (`input_value`, through `check_transposed`) on
//! its output copied back, so a device that made the wrong input fails base's check.

use gputune_example_transpose_cuda::{check_transposed, fill_input, transpose, Element};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{type_instances, Bench, BenchResult, BoxError, State};

/// Sides of the square matrices, as powers of two: 1024² to 16384² elements.
const SIDES: [u32; 4] = [10, 12, 13, 14];

/// What a bench does with the side of its state's square matrix, the input and the output.
type Body<'f, T> =
    &'f mut dyn FnMut(&mut State<'_>, usize, &CudaSlice<T>, &mut CudaSlice<T>) -> BenchResult;

/// Runs `f` on the state's matrix: its side, its input (made on the device once per workload
/// and process) and an output, the traffic of one pass declared (every element read once and
/// written once).
fn with_matrix<T: Element>(state: &mut State<'_>, f: Body<'_, T>) -> BenchResult {
    let side = usize::try_from(state.get_int64("Side{io}")?)?;
    let n = (side * side) as u64;
    state.add_element_count(n);
    state.add_global_memory_reads::<T>(n);
    state.add_global_memory_writes::<T>(n);
    let make = |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        let mut input = stream.alloc_zeros::<T>(side * side)?;
        fill_input(stream, &mut input, side, side)?;
        Ok::<_, BoxError>((input, stream.alloc_zeros::<T>(side * side)?))
    };
    state.with_setup(make, |state, (input, output)| f(state, side, input, output))?
}

fn bench_transpose<T: Element>(state: &mut State<'_>) -> BenchResult {
    with_matrix::<T>(state, &mut |state, side, input, output| {
        let stream = state.cuda()?.stream.clone();
        let run = |out: &mut CudaSlice<T>| transpose(&stream, input, out, side, side);
        // Not `exec_verified`, whose float tolerance is relative: a transpose moves values, so
        // every variant must match base bit for bit. Base is checked on the host against the
        // answer the specification of the input gives (not against a copy of the input).
        if matches!(state.variant(), None | Some("base")) {
            let host = |out: &CudaSlice<T>| out.stream().clone_dtoh(out).map_err(|e| e.to_string());
            state.verify_with(output, run, |out| check_transposed(&host(out)?, side, side))?;
        } else {
            state.verify(output, Tolerance::EXACT, run)?;
        }
        state.exec(|launch| transpose(launch.stream()?, input, output, side, side));
        Ok(())
    })
}

fn bench_copy<T: Element>(state: &mut State<'_>) -> BenchResult {
    with_matrix::<T>(state, &mut |state, _, input, output| {
        state.exec(|launch| {
            launch.stream()?.memcpy_dtod(input, output)?;
            Ok(())
        });
        Ok(())
    })
}

fn main() {
    gputune_runtime::main(vec![
        Bench::with_types(
            "transpose",
            &["T{ct}"],
            type_instances!(bench_transpose; [f32, f64]),
        )
        .tunes("transpose")
        .add_int64_power_of_two_axis("Side{io}", SIDES)
        .backend(BackendKind::Cuda),
        Bench::with_types("copy", &["T{ct}"], type_instances!(bench_copy; [f32, f64]))
            .add_int64_power_of_two_axis("Side{io}", SIDES)
            .backend(BackendKind::Cuda),
    ]);
}

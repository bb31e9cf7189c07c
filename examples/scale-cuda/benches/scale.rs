//! Benches of the tuned scale kernel and of a device-to-device copy of the same size (the
//! roof a memory-bound kernel is compared with, measured in the same run):
//! `cargo bench -p gputune-example-scale-cuda`, or
//! `cargo gputune search -p gputune-example-scale-cuda` to tune `scale`.
//!
//! A search runs many variants of `scale` in one process, each over the same states: the
//! kernel handle compiles all of them in the background from the first call, and
//! `State::with_setup` makes each workload's buffers once, not once per variant.
//!
//! The input and the exact answer are made on the device (`fill_input`, one launch each), not
//! filled on the host and copied over: at 2^28 `f64` elements they are 2 GiB each, which took
//! the host's cores seconds of every search's setup. The answer is still the host's
//! specification (`input_value`, exact in both precisions), and setup checks that the device
//! made it by copying back a spread sample of both buffers (`check_input`).

use gputune_example_scale_cuda::{check_input, fill_input, scale, Element, A};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{type_instances, Bench, BenchResult, BoxError, State};

/// Reads the workload's size and declares what one execution moves.
fn workload<T: Element>(state: &mut State<'_>) -> Result<usize, BoxError> {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(n as u64);
    Ok(n)
}

/// `x`, `y` and the exact answer `A·x`, made on the device once per workload and process by
/// `State::with_setup`; `x` and the answer are checked against the host's values at a sample
/// of elements spread over them.
fn buffers<T: Element>(state: &State<'_>, n: usize) -> Result<[CudaSlice<T>; 3], BoxError> {
    let stream = &state.cuda()?.stream;
    let (mut x, mut answer) = (stream.alloc_zeros::<T>(n)?, stream.alloc_zeros::<T>(n)?);
    fill_input(stream, &mut x, 1.0)?;
    fill_input(stream, &mut answer, A)?;
    check_input(&x, 1.0)?;
    check_input(&answer, A)?;
    let y = stream.alloc_zeros::<T>(n)?;
    Ok([x, y, answer])
}

fn bench_scale<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = workload::<T>(state)?;
    let a = T::from(A);
    state.with_setup(
        |state| buffers::<T>(state, n),
        |state, [x, y, answer]| {
            // Base is every other variant's reference: it is checked against the answer.
            if matches!(state.variant(), None | Some("base")) {
                let stream = state.cuda()?.stream.clone();
                state.verify_against(y, answer, Tolerance::EXACT, |y| scale(&stream, x, y, a))?;
            }
            state.exec_verified(y, |launch, y| scale(launch.stream()?, x, y, a))
        },
    )?
}

fn bench_copy<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = workload::<T>(state)?;
    state.with_setup(
        |state| buffers::<T>(state, n),
        |state, [x, y, _]| {
            state.exec(|launch| {
                launch.stream()?.memcpy_dtod(x, y)?;
                Ok(())
            });
        },
    )
}

fn main() {
    gputune_runtime::main(vec![
        Bench::with_types(
            "scale",
            &["T{ct}"],
            type_instances!(bench_scale; [f32, f64]),
        )
        .tunes("scale")
        .add_int64_power_of_two_axis("Elements{io}", [16, 20, 24, 26, 28])
        .backend(BackendKind::Cuda),
        Bench::with_types("copy", &["T{ct}"], type_instances!(bench_copy; [f32, f64]))
            .add_int64_power_of_two_axis("Elements{io}", [16, 20, 24, 26, 28])
            .backend(BackendKind::Cuda),
    ]);
}

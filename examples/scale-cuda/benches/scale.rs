//! Benches of the tuned scale kernel and of a device-to-device copy of the same size (the
//! roof a memory-bound kernel is compared with, measured in the same run):
//! `cargo bench -p gputune-example-scale-cuda`, or
//! `cargo gputune search -p gputune-example-scale-cuda` to tune `scale`.
//!
//! A search runs many variants of `scale` in one process, each over the same states: the
//! kernel handle compiles all of them in the background from the first call, and
//! `State::with_setup` makes each workload's buffers once, not once per variant.

use gputune_example_scale_cuda::{scale, Element};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{type_instances, Bench, BenchResult, BoxError, State};

/// The factor of `y = a·x`.
const A: f32 = 3.0;

/// Input element `i`: non-zero and index-dependent (never time or verify on zeros), and
/// exactly representable, so `A · x` is exact in both precisions.
fn input_value(i: usize) -> f32 {
    ((i % 1021) as f32 + 1.0) * 0.5
}

/// Reads the workload's size and declares what one execution moves.
fn workload<T: Element>(state: &mut State<'_>) -> Result<usize, BoxError> {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(n as u64);
    Ok(n)
}

/// `x`, `y` and the exact answer `A·x` on the device, made once per workload and process by
/// `State::with_setup`.
fn buffers<T: Element>(state: &State<'_>, n: usize) -> Result<[CudaSlice<T>; 3], BoxError> {
    let stream = &state.cuda()?.stream;
    let x: Vec<T> = (0..n).map(|i| T::from(input_value(i))).collect();
    let answer: Vec<T> = (0..n).map(|i| T::from(A * input_value(i))).collect();
    let y = stream.alloc_zeros::<T>(n)?;
    Ok([stream.clone_htod(&x)?, y, stream.clone_htod(&answer)?])
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

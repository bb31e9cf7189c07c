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
use gputune_runtime::{type_instances, Bench, BenchResult, BoxError, State};

/// The factor of `y = a·x`.
const A: f64 = 3.0;

/// Input element `i`: non-zero and index-dependent (never time or verify on zeros), and
/// exactly representable, so `A · x` is exact in both precisions.
fn input_value(i: usize) -> f64 {
    ((i % 1021) as f64 + 1.0) * 0.5
}

/// An input and an output buffer of one element type and length.
struct Buffers<T> {
    x: CudaSlice<T>,
    y: CudaSlice<T>,
}

/// The buffers for `n` elements of `T` (the input copied from the host), made once per
/// workload and process by `State::with_setup`.
fn buffers<T: Element>(state: &State<'_>, n: usize) -> Result<Buffers<T>, BoxError> {
    let stream = &state.cuda()?.stream;
    let host: Vec<T> = (0..n).map(|i| T::from_f64(input_value(i))).collect();
    Ok(Buffers {
        x: stream.clone_htod(&host)?,
        y: stream.alloc_zeros::<T>(n)?,
    })
}

fn bench_scale<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(n as u64);
    let a = T::from_f64(A);
    state.with_setup(
        |state| buffers::<T>(state, n),
        |state, Buffers { x, y }| {
            // Base is every other variant's reference: it is checked against the answer.
            if matches!(state.variant(), None | Some("base")) {
                let stream = state.cuda()?.stream.clone();
                state.verify_with(y, |y| scale(&stream, x, y, a), |y| check_on_host(y))?;
            }
            state.exec_verified(y, |launch, y| scale(launch.stream()?, x, y, a))
        },
    )?
}

/// Whether `y` holds `A · x` exactly.
fn check_on_host<T: Element>(y: &CudaSlice<T>) -> Result<(), String> {
    let out = y
        .stream()
        .clone_dtoh(y)
        .map_err(|e| format!("copying the outputs back: {e}"))?;
    match (0..out.len()).find(|&i| out[i].to_f64() != T::from_f64(A * input_value(i)).to_f64()) {
        Some(i) => Err(format!(
            "wrong result at {i}: {} != {A} * {}",
            out[i].to_f64(),
            input_value(i)
        )),
        None => Ok(()),
    }
}

fn bench_copy<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(n as u64);
    state.with_setup(
        |state| buffers::<T>(state, n),
        |state, Buffers { x, y }| {
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

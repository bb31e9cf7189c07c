//! Benches of the tuned scale kernel and of a device-to-device copy of the same size (the
//! roof a memory-bound kernel is compared with, measured in the same run):
//! `cargo bench -p gputune-example-scale-cuda`, or
//! `cargo gputune search -p gputune-example-scale-cuda` to tune `scale`.
//!
//! A search runs many variants of `scale` in one process, each over the same states, so
//! everything that does not depend on the variant is done once per process: the kernels of
//! all requested variants start compiling in the background before the first state
//! (`precompile`), and the device buffers of each workload are kept from one variant to
//! the next instead of being filled again from the host.

use gputune_example_scale_cuda::{precompile, scale, Element};
use gputune_runtime::backend::cuda::{precompile_once, CudaHandles};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{kept, type_instances, Bench, BenchResult, BoxError, State};

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

/// Runs `f` on the buffers for `n` elements of `T`, kept for the process's later states
/// (the input copied from the host once).
fn with_buffers<T: Element>(
    cuda: &CudaHandles,
    n: usize,
    f: impl FnOnce(&mut Buffers<T>) -> BenchResult,
) -> BenchResult {
    let make = || -> Result<Buffers<T>, BoxError> {
        let host: Vec<T> = (0..n).map(|i| T::from_f64(input_value(i))).collect();
        Ok(Buffers {
            x: cuda.stream.clone_htod(&host)?,
            y: cuda.stream.alloc_zeros::<T>(n)?,
        })
    };
    kept::with(n, make, f)?
}

fn bench_scale<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    let cuda = state.cuda()?.clone();
    precompile_once(T::CUDA_TYPE, || precompile::<T>(&cuda))?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(n as u64);

    with_buffers::<T>(&cuda, n, |Buffers { x, y }| {
        let a = T::from_f64(A);
        let stream = cuda.stream.clone();
        let run = |y: &mut CudaSlice<T>| scale(&stream, x, y, a);
        let verified = match state.variant() {
            // Base (or the production choice) is checked against the answer on the host;
            // every other variant against base's outputs, on the GPU.
            None | Some("base") => state.verify_with(y, run, |y| check_on_host(y)),
            Some(_) => state.verify(y, Tolerance::EXACT, run),
        };
        if verified.is_ok() {
            state.exec(|launch| scale(launch.stream()?, x, y, a));
        }
        verified
    })
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
    let cuda = state.cuda()?.clone();
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(n as u64);
    with_buffers::<T>(&cuda, n, |Buffers { x, y }| {
        state.exec(|launch| {
            launch.stream()?.memcpy_dtod(x, y)?;
            Ok(())
        });
        Ok(())
    })
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

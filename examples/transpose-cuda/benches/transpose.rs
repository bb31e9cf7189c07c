//! Benches of the tuned transpose kernel and of a device-to-device copy of the same size
//! (the roof a transpose is compared with: both read and write every element once, measured
//! in the same run): `cargo bench -p gputune-example-transpose-cuda`, or
//! `cargo gputune search -p gputune-example-transpose-cuda` to tune `transpose`.
//!
//! A search runs many variants of `transpose` in one process, each over the same states,
//! so everything that does not depend on the variant is done once per process: the kernels
//! of all requested variants start compiling in the background before the first state
//! (`precompile`), and the device buffers of each workload are kept from one variant to the
//! next instead of being filled again from the host (a 16384² `f64` matrix is 2 GiB).

use gputune_example_transpose_cuda::{
    check_transposed, fill_input, precompile, transpose, Element,
};
use gputune_runtime::backend::cuda::{precompile_once, CudaHandles};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{kept, type_instances, Bench, BenchResult, BoxError, State};

/// Sides of the square matrices, as powers of two: 1024² to 16384² elements.
const SIDES: [u32; 4] = [10, 12, 13, 14];

/// An input and an output buffer of one element type and length.
struct Buffers<T> {
    input: CudaSlice<T>,
    output: CudaSlice<T>,
}

/// Runs `f` on the buffers for a `side × side` matrix of `T`, kept for the process's later
/// states (the input generated on all cores and copied from the host once).
fn with_buffers<T: Element>(
    cuda: &CudaHandles,
    side: usize,
    f: impl FnOnce(&mut Buffers<T>) -> BenchResult,
) -> BenchResult {
    let make = || -> Result<Buffers<T>, BoxError> {
        let host: Vec<T> = fill_input(side, side);
        Ok(Buffers {
            input: cuda.stream.clone_htod(&host)?,
            output: cuda.stream.alloc_zeros::<T>(side * side)?,
        })
    };
    kept::with(side, make, f)?
}

/// The side of the state's square matrix.
fn side(state: &State<'_>) -> Result<usize, BoxError> {
    Ok(usize::try_from(state.get_int64("Side{io}")?)?)
}

/// Declares the traffic of one pass over a `side × side` matrix: every element read once
/// and written once.
fn add_traffic<T>(state: &mut State<'_>, side: usize) {
    let n = (side * side) as u64;
    state.add_element_count(n);
    state.add_global_memory_reads::<T>(n);
    state.add_global_memory_writes::<T>(n);
}

fn bench_transpose<T: Element>(state: &mut State<'_>) -> BenchResult {
    let side = side(state)?;
    let cuda = state.cuda()?.clone();
    precompile_once(T::CUDA_TYPE, || precompile::<T>(&cuda))?;
    add_traffic::<T>(state, side);

    with_buffers::<T>(&cuda, side, |Buffers { input, output }| {
        let stream = cuda.stream.clone();
        let run = |out: &mut CudaSlice<T>| transpose(&stream, input, out, side, side);
        let verified = match state.variant() {
            // Base (or the production choice) is checked against the answer on the host;
            // every other variant against base's outputs, on the GPU, bit for bit.
            None | Some("base") => state.verify_with(output, run, |out| {
                let host = out
                    .stream()
                    .clone_dtoh(out)
                    .map_err(|e| format!("copying the outputs back: {e}"))?;
                check_transposed(&host, side, side)
            }),
            Some(_) => state.verify(output, Tolerance::EXACT, run),
        };
        if verified.is_ok() {
            state.exec(|launch| transpose(launch.stream()?, input, output, side, side));
        }
        verified
    })
}

fn bench_copy<T: Element>(state: &mut State<'_>) -> BenchResult {
    let side = side(state)?;
    let cuda = state.cuda()?.clone();
    add_traffic::<T>(state, side);
    with_buffers::<T>(&cuda, side, |Buffers { input, output }| {
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

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

use std::any::{Any, TypeId};
use std::sync::{Mutex, MutexGuard};

use gputune_example_transpose_cuda::{
    check_transposed, fill_input, precompile, transpose, Element,
};
use gputune_runtime::backend::cuda::{CudaHandles, Precompile};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{type_instances, Bench, BenchResult, BoxError, State};

/// Sides of the square matrices, as powers of two: 1024² to 16384² elements.
const SIDES: [u32; 4] = [10, 12, 13, 14];

/// An input and an output buffer of one element type and length.
struct Buffers<T> {
    input: CudaSlice<T>,
    output: CudaSlice<T>,
}

/// Buffers by element type and length, kept across the variants a process runs. A static,
/// never dropped: the driver frees device memory when the process ends, and nothing at exit
/// waits on a device that may be in trouble.
static BUFFERS: Mutex<Vec<Kept>> = Mutex::new(Vec::new());

/// One workload's buffers: element type, length, and the `Buffers<T>`.
type Kept = (TypeId, usize, Box<dyn Any + Send>);

/// Element types whose kernels were handed to `precompile`, and the compilations in flight.
static PRECOMPILED: Mutex<(Vec<TypeId>, Vec<Precompile>)> = Mutex::new((Vec::new(), Vec::new()));

/// Locks `m`; a poisoned lock only means a bench function panicked, and the data is whole.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The buffers for a `side × side` matrix of `T`: the kept ones, else new ones (the input
/// generated on all cores and copied from the host). Give them back with [`keep`].
fn buffers<T: Element>(cuda: &CudaHandles, side: usize) -> Result<Buffers<T>, BoxError> {
    let n = side * side;
    let kept = {
        let mut all = lock(&BUFFERS);
        let found = all
            .iter()
            .position(|(t, len, _)| *t == TypeId::of::<T>() && *len == n);
        found.map(|i| all.swap_remove(i).2)
    };
    if let Some(b) = kept.and_then(|b| b.downcast::<Buffers<T>>().ok()) {
        return Ok(*b);
    }
    let host: Vec<T> = fill_input(side, side);
    Ok(Buffers {
        input: cuda.stream.clone_htod(&host)?,
        output: cuda.stream.alloc_zeros::<T>(n)?,
    })
}

/// Keeps `b` for the next state of the same workload.
fn keep<T: Element>(side: usize, b: Buffers<T>) {
    lock(&BUFFERS).push((TypeId::of::<T>(), side * side, Box::new(b)));
}

/// Starts compiling every requested variant's kernel for `T`, once per process and type,
/// and reports finished background compilations on stderr.
fn start_precompile<T: Element>(cuda: &CudaHandles) -> BenchResult {
    let first = {
        let mut p = lock(&PRECOMPILED);
        let first = !p.0.contains(&TypeId::of::<T>());
        if first {
            p.0.push(TypeId::of::<T>());
        }
        first
    };
    if first {
        if let Some(work) = precompile::<T>(cuda)? {
            lock(&PRECOMPILED).1.push(work);
        }
    }
    let done: Vec<Precompile> = {
        let pending = &mut lock(&PRECOMPILED).1;
        let (done, running) = std::mem::take(pending)
            .into_iter()
            .partition(Precompile::is_finished);
        *pending = running;
        done
    };
    for work in done {
        let s = work.wait();
        eprintln!(
            "Note: precompiled {} kernel(s) in {:.2} s on {} thread(s): {} compiled, {} from the \
             disk cache, {} already in memory, {} failed",
            s.compiled + s.from_disk + s.in_memory + s.failed.len(),
            s.seconds,
            s.threads,
            s.compiled,
            s.from_disk,
            s.in_memory,
            s.failed.len()
        );
    }
    Ok(())
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
    start_precompile::<T>(&cuda)?;
    let Buffers { input, mut output } = buffers::<T>(&cuda, side)?;
    add_traffic::<T>(state, side);

    let stream = cuda.stream.clone();
    let run = |out: &mut CudaSlice<T>| transpose(&stream, &input, out, side, side);
    let verified = match state.variant() {
        // Base (or the production choice) is checked against the answer on the host; every
        // other variant against base's outputs, on the GPU, bit for bit.
        None | Some("base") => state.verify_with(&mut output, run, |out| {
            let host = out
                .stream()
                .clone_dtoh(out)
                .map_err(|e| format!("copying the outputs back: {e}"))?;
            check_transposed(&host, side, side)
        }),
        Some(_) => state.verify(&mut output, Tolerance::EXACT, run),
    };
    if verified.is_ok() {
        state.exec(|launch| transpose(launch.stream()?, &input, &mut output, side, side));
    }
    keep(side, Buffers { input, output });
    verified
}

fn bench_copy<T: Element>(state: &mut State<'_>) -> BenchResult {
    let side = side(state)?;
    let cuda = state.cuda()?.clone();
    let Buffers { input, mut output } = buffers::<T>(&cuda, side)?;
    add_traffic::<T>(state, side);
    state.exec(|launch| {
        launch.stream()?.memcpy_dtod(&input, &mut output)?;
        Ok(())
    });
    keep(side, Buffers { input, output });
    Ok(())
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

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

use std::any::{Any, TypeId};
use std::sync::{Mutex, MutexGuard};

use gputune_example_scale_cuda::{precompile, scale, Element};
use gputune_runtime::backend::cuda::{CudaHandles, Precompile};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::Tolerance;
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

/// The buffers for `n` elements of `T`: the kept ones, else new ones (input copied from the
/// host). Give them back with [`keep`].
fn buffers<T: Element>(cuda: &CudaHandles, n: usize) -> Result<Buffers<T>, BoxError> {
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
    let host: Vec<T> = (0..n).map(|i| T::from_f64(input_value(i))).collect();
    Ok(Buffers {
        x: cuda.stream.clone_htod(&host)?,
        y: cuda.stream.alloc_zeros::<T>(n)?,
    })
}

/// Keeps `b` for the next state of the same workload.
fn keep<T: Element>(n: usize, b: Buffers<T>) {
    lock(&BUFFERS).push((TypeId::of::<T>(), n, Box::new(b)));
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

fn bench_scale<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    let cuda = state.cuda()?.clone();
    start_precompile::<T>(&cuda)?;
    let Buffers { x, mut y } = buffers::<T>(&cuda, n)?;
    let a = T::from_f64(A);
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(n as u64);

    let stream = cuda.stream.clone();
    let run = |y: &mut CudaSlice<T>| scale(&stream, &x, y, a);
    let verified = match state.variant() {
        // Base (or the production choice) is checked against the answer on the host; every
        // other variant against base's outputs, on the GPU.
        None | Some("base") => state.verify_with(&mut y, run, |y| check_on_host(y)),
        Some(_) => state.verify(&mut y, Tolerance::EXACT, run),
    };
    if verified.is_ok() {
        state.exec(|launch| scale(launch.stream()?, &x, &mut y, a));
    }
    keep(n, Buffers { x, y });
    verified
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
    let Buffers { x, mut y } = buffers::<T>(&cuda, n)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(n as u64);
    state.exec(|launch| {
        launch.stream()?.memcpy_dtod(&x, &mut y)?;
        Ok(())
    });
    keep(n, Buffers { x, y });
    Ok(())
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

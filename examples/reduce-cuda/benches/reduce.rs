//! Benches of the tuned device-wide sum and of a device-to-device copy of the same size (the
//! roof a memory-bound kernel is compared with, measured in the same run):
//! `cargo bench -p gputune-example-reduce-cuda`, or
//! `cargo gputune search -p gputune-example-reduce-cuda` to tune `sum`.
//!
//! A search runs many variants of `sum` in one process over the same states, so the kernels
//! of all requested variants start compiling in the background before the first state
//! (`precompile`), and each workload's device buffers (and the exact sum of its input) are
//! made once per process and kept from one variant to the next.

use gputune_example_reduce_cuda::{input, max_partials, precompile, sum, Element};
use gputune_runtime::backend::cuda::{precompile_once, CudaHandles};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::{Tolerance, Verify};
use gputune_runtime::{kept, type_instances, Bench, BenchResult, BoxError, State};

/// The buffers of one workload (element type and length).
struct Workload<T> {
    /// The input ([`input`]).
    x: CudaSlice<T>,
    /// Its exact sum.
    exact: i64,
    /// The first pass's per-block sums, as many as any variant writes.
    partials: CudaSlice<T>,
    /// The sum.
    out: CudaSlice<T>,
    /// The copy bench's destination, made on its first use.
    copy: Option<CudaSlice<T>>,
}

/// Runs `f` on the workload of `n` elements of `T`: the kept one, else a new one (input
/// made on the host's cores and copied over), kept again afterwards.
fn with_workload<T: Element>(
    cuda: &CudaHandles,
    n: usize,
    f: impl FnOnce(&mut Workload<T>) -> BenchResult,
) -> BenchResult {
    let make = || -> Result<Workload<T>, BoxError> {
        let (host, exact) = input::<T>(n);
        Ok(Workload {
            x: cuda.stream.clone_htod(&host)?,
            exact,
            partials: cuda.stream.alloc_zeros::<T>(max_partials(&cuda.context)?)?,
            out: cuda.stream.alloc_zeros::<T>(1)?,
            copy: None,
        })
    };
    kept::with(n, make, f)?
}

fn bench_sum<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    let cuda = state.cuda()?.clone();
    precompile_once(T::CUDA_TYPE, || precompile::<T>(&cuda))?;
    // CUB's counting: the input read once and the one result written; the partials (a few
    // KiB, in L2) are not counted.
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(1);

    with_workload::<T>(&cuda, n, |w| {
        let Workload {
            x,
            exact,
            partials,
            out,
            ..
        } = w;
        let stream = cuda.stream.clone();
        // Verification poisons `out`; the partials are poisoned here too, so that a variant
        // which skips writing some of them cannot pass on what base left there.
        let run = |out: &mut CudaSlice<T>| {
            partials.poison()?;
            sum(&stream, x, partials, out)
        };
        let verified = match state.variant() {
            // Base (or the production choice) is checked against the exact sum; every other
            // variant against base's result, on the GPU, for equality: the sum is exact in
            // every order of the additions (see `input_value`).
            None | Some("base") => state.verify_with(out, run, |out| check(out, *exact)),
            Some(_) => state.verify(out, Tolerance::EXACT, run),
        };
        if verified.is_ok() {
            state.exec(|launch| sum(launch.stream()?, x, partials, out));
        }
        verified
    })
}

/// Whether `out[0]` is `exact`.
fn check<T: Element>(out: &CudaSlice<T>, exact: i64) -> Result<(), String> {
    let got = out
        .stream()
        .clone_dtoh(out)
        .map_err(|e| format!("copying the sum back: {e}"))?;
    // |exact| < 2^53, so the f64 comparison is exact.
    match got.first().map(|v| v.to_f64()) {
        Some(v) if v == exact as f64 => Ok(()),
        Some(v) => Err(format!("the sum is {v}, the exact sum is {exact}")),
        None => Err("no output element".to_string()),
    }
}

fn bench_copy<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    let cuda = state.cuda()?.clone();
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(n as u64);
    with_workload::<T>(&cuda, n, |w| {
        let y = match w.copy.take() {
            Some(y) => y,
            // SAFETY: the copy overwrites every element before anything reads one.
            None => unsafe { cuda.stream.alloc::<T>(n) }?,
        };
        let y = w.copy.insert(y);
        let x = &w.x;
        state.exec(|launch| {
            launch.stream()?.memcpy_dtod(x, y)?;
            Ok(())
        });
        Ok(())
    })
}

fn main() {
    gputune_runtime::main(vec![
        Bench::with_types("sum", &["T{ct}"], type_instances!(bench_sum; [f32, f64]))
            .tunes("sum")
            .add_int64_power_of_two_axis("Elements{io}", [16, 20, 24, 26, 28])
            .backend(BackendKind::Cuda),
        Bench::with_types("copy", &["T{ct}"], type_instances!(bench_copy; [f32, f64]))
            .add_int64_power_of_two_axis("Elements{io}", [16, 20, 24, 26, 28])
            .backend(BackendKind::Cuda),
    ]);
}

//! Benches of the tuned device-wide sum and of a device-to-device copy of the same size (the
//! roof a memory-bound kernel is compared with, measured in the same run):
//! `cargo bench -p gputune-example-reduce-cuda`, or
//! `cargo gputune search -p gputune-example-reduce-cuda` to tune `sum`.
//!
//! A search runs many variants of `sum` in one process over the same states: the kernel
//! handle compiles all of them in the background from the first call, and
//! `State::with_setup` makes each workload's buffers (the input on the device, and its exact
//! sum) once, not once per variant.

use gputune_example_reduce_cuda::{fill_input, input_sum, max_partials, sum, Element};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::{Tolerance, Verify};
use gputune_runtime::{type_instances, Bench, BenchResult, BoxError, State};

/// The state's element count `n`, declared: each execution reads `n` elements of `T` and
/// writes all of them (the copy) or one (the sum).
fn elements<T>(state: &mut State<'_>, writes_all: bool) -> Result<usize, BoxError> {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(if writes_all { n as u64 } else { 1 });
    Ok(n)
}

fn bench_sum<T: Element>(state: &mut State<'_>) -> BenchResult {
    // CUB's counting: the input read once and the one result written; the partials (a few
    // KiB, in L2) are not counted.
    let n = elements::<T>(state, false)?;
    // The input (made on the device), its exact sum (on the host's cores, from the same
    // hash), the partials (as many as any variant writes) and the sum.
    let make = |state: &State<'_>| {
        let cuda = state.cuda()?;
        let mut x = cuda.stream.alloc_zeros::<T>(n)?;
        fill_input(&cuda.stream, &mut x)?;
        let partials = cuda.stream.alloc_zeros::<T>(max_partials(&cuda.context)?)?;
        Ok::<_, BoxError>((x, input_sum(n), partials, cuda.stream.alloc_zeros::<T>(1)?))
    };
    state.with_setup(make, |state, (x, exact, partials, out)| {
        let stream = state.cuda()?.stream.clone();
        // Not `exec_verified`: the partials are poisoned before each verifying run too, so
        // that a variant which skips writing some cannot pass on what base left there, and
        // the comparison is exact even for floats (the sum is an exact integer in every order
        // of the additions, see `input_value`). Base is checked against the exact sum, every
        // other variant against base's result.
        let run = |out: &mut CudaSlice<T>| {
            partials.poison()?;
            sum(&stream, x, partials, out)
        };
        if matches!(state.variant(), None | Some("base")) {
            state.verify_with(out, run, |out| check(out, *exact))?;
        } else {
            state.verify(out, Tolerance::EXACT, run)?;
        }
        state.exec(|launch| sum(launch.stream()?, x, partials, out));
        Ok(())
    })?
}

/// Whether `out[0]` is `exact` (|exact| < 2^53, so the comparison in `f64` is exact).
fn check<T: Element>(out: &CudaSlice<T>, exact: i64) -> Result<(), String> {
    let got = out.stream().clone_dtoh(out).map_err(|e| e.to_string())?;
    let got: Option<f64> = got.first().map(|&v| v.into());
    if got == Some(exact as f64) {
        Ok(())
    } else {
        Err(format!("the sum is {got:?}, the exact sum is {exact}"))
    }
}

fn bench_copy<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = elements::<T>(state, true)?;
    let make = |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        // SAFETY: the copy overwrites every element before anything reads one.
        let y = unsafe { stream.alloc::<T>(n) }?;
        let mut x = stream.alloc_zeros::<T>(n)?;
        fill_input(stream, &mut x)?;
        Ok::<_, BoxError>((x, y))
    };
    state.with_setup(make, |state, (x, y)| {
        state.exec(|launch| {
            launch.stream()?.memcpy_dtod(x, y)?;
            Ok(())
        });
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

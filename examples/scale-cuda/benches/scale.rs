//! Benches of the scale kernel and of a device-to-device copy of the same size (the roof a
//! memory-bound kernel is compared with, measured in the same run):
//! `cargo bench -p gputune-example-scale-cuda`.

use gputune_example_scale_cuda::{Element, Scale};
use gputune_runtime::device::BackendKind;
use gputune_runtime::{type_instances, Bench, BenchResult, State};

/// Non-zero, index-dependent input: never time or verify on zeros.
fn input<T: Element>(n: usize) -> Vec<T> {
    (0..n)
        .map(|i| T::from_f64(((i % 1021) as f64 + 1.0) * 0.5))
        .collect()
}

fn scale<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    let ipt = u32::try_from(state.get_int64("IPT")?)?;
    let tpb = u32::try_from(state.get_int64("TPB")?)?;
    let cuda = state.cuda()?.clone();
    let kernel = Scale::compile::<T>(&cuda, ipt, tpb)?;
    let host = input::<T>(n);
    let x = cuda.stream.clone_htod(&host)?;
    let mut y = cuda.stream.alloc_zeros::<T>(n)?;
    let a = T::from_f64(3.0);

    // Check the variant once before timing it: poison the output with NaN, run, compare.
    cuda.stream
        .memcpy_htod(&vec![T::from_f64(f64::NAN); n], &mut y)?;
    kernel.launch(&cuda.stream, &x, &mut y, a)?;
    let out = cuda.stream.clone_dtoh(&y)?;
    if let Some(i) = (0..n).find(|&i| out[i].to_f64() != 3.0 * host[i].to_f64()) {
        return Err(format!(
            "wrong result at {i}: {} != 3 * {}",
            out[i].to_f64(),
            host[i].to_f64()
        )
        .into());
    }

    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(n as u64);
    state.exec(|launch| kernel.launch(launch.stream()?, &x, &mut y, a));
    Ok(())
}

fn copy<T: Element>(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    let cuda = state.cuda()?.clone();
    let x = cuda.stream.clone_htod(&input::<T>(n))?;
    let mut y = cuda.stream.alloc_zeros::<T>(n)?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<T>(n as u64);
    state.add_global_memory_writes::<T>(n as u64);
    state.exec(|launch| {
        launch.stream()?.memcpy_dtod(&x, &mut y)?;
        Ok(())
    });
    Ok(())
}

fn main() {
    gputune_runtime::main(vec![
        Bench::with_types("scale", &["T{ct}"], type_instances!(scale; [f32, f64]))
            .add_int64_power_of_two_axis("Elements{io}", [16, 20, 24, 26, 28])
            .add_int64_axis("IPT", [1, 8])
            .add_int64_axis("TPB", [128, 256])
            .backend(BackendKind::Cuda),
        Bench::with_types("copy", &["T{ct}"], type_instances!(copy; [f32, f64]))
            .add_int64_power_of_two_axis("Elements{io}", [16, 20, 24, 26, 28])
            .backend(BackendKind::Cuda),
    ]);
}

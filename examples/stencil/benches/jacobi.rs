//! The CUDA sweep at every block size, measured by gputune's bench runner: an independent
//! ranking to hold the runtime autotuner's choice against.
//! `cargo bench -p gputune-example-stencil --features cuda -- -a 'NX=4096' -a 'NY=4096'`.

use gputune_example_stencil::gpu::{block_size_candidates, GpuJacobi};
use gputune_example_stencil::{initial_field, step_reference, Shape};
use gputune_runtime::device::BackendKind;
use gputune_runtime::{Bench, BenchResult, State};

fn jacobi(state: &mut State<'_>) -> BenchResult {
    let shape = Shape {
        nx: usize::try_from(state.get_int64("NX")?)?,
        ny: usize::try_from(state.get_int64("NY")?)?,
    };
    let block = u32::try_from(state.get_int64("Block")?)?;
    let cuda = state.cuda()?.clone();
    let kernel = GpuJacobi::compile(&cuda)?;
    if block > kernel.max_threads_per_block() {
        state.skip(format!(
            "{block} threads per block exceeds the kernel's limit of {}",
            kernel.max_threads_per_block()
        ));
        return Ok(());
    }
    let n = shape.cells();
    let host = initial_field(shape);
    let src = cuda.stream.clone_htod(&host)?;
    let mut dst = cuda.stream.alloc_zeros::<f32>(n)?;

    // Check this block size once before timing it: poison the output, sweep, compare.
    cuda.stream.memcpy_htod(&vec![f32::NAN; n], &mut dst)?;
    kernel.launch(&cuda.stream, shape, &src, &mut dst, block)?;
    let out = cuda.stream.clone_dtoh(&dst)?;
    let mut expected = vec![0.0; n];
    step_reference(shape, &host, &mut expected);
    if let Some(i) = (0..n).find(|&i| out[i].to_bits() != expected[i].to_bits()) {
        return Err(format!("block {block}: cell {i} is {}, not {}", out[i], expected[i]).into());
    }

    state.add_element_count(n as u64);
    state.add_global_memory_reads::<f32>(n as u64);
    state.add_global_memory_writes::<f32>(n as u64);
    state.exec(|launch| kernel.launch(launch.stream()?, shape, &src, &mut dst, block));
    Ok(())
}

fn main() {
    gputune_runtime::main(vec![Bench::new("jacobi", jacobi)
        .add_int64_axis("NX", [4096])
        .add_int64_axis("NY", [4096])
        .add_int64_axis("Block", block_size_candidates().into_iter().map(i64::from))
        .backend(BackendKind::Cuda)]);
}

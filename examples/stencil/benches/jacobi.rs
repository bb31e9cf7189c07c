//! The CUDA sweep as a `#[tune]` bench: `cargo gputune search -p gputune-example-stencil
//! --features cuda` ranks its 32 block sizes, an independent ranking to hold the runtime
//! autotuner's choice against. By hand: `cargo bench -p gputune-example-stencil --features cuda`.

use gputune_example_stencil::gpu::{sweep, GpuJacobi};
use gputune_example_stencil::{initial_field, Shape};
use gputune_runtime::device::BackendKind;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{Bench, BenchResult, State};

fn jacobi(state: &mut State<'_>) -> BenchResult {
    let shape = Shape {
        nx: usize::try_from(state.get_int64("NX")?)?,
        ny: usize::try_from(state.get_int64("NY")?)?,
    };
    let cuda = state.cuda()?.clone();
    let kernel = GpuJacobi::compile(&cuda)?;
    let n = shape.cells();
    let src = cuda.stream.clone_htod(&initial_field(shape))?;
    let mut dst = cuda.stream.alloc_zeros::<f32>(n)?;
    // Every block size computes the same sweep, bit for bit: checked against base's output
    // on the GPU before the variant is timed.
    state.verify(&mut dst, Tolerance::EXACT, |dst| {
        sweep(&kernel, &cuda.stream, shape, &src, dst)
    })?;
    state.add_element_count(n as u64);
    state.add_global_memory_reads::<f32>(n as u64);
    state.add_global_memory_writes::<f32>(n as u64);
    state.exec(|launch| sweep(&kernel, launch.stream()?, shape, &src, &mut dst));
    Ok(())
}

fn main() {
    gputune_runtime::main(vec![Bench::new("jacobi", jacobi)
        .tunes("sweep")
        .add_int64_axis("NX", [4096])
        .add_int64_axis("NY", [4096])
        .backend(BackendKind::Cuda)]);
}

//! Benches of candle's rmsnorm, layernorm and softmax as candle ships them, at the shapes a
//! Llama-3-8B run launches them with (hidden size 4096, 32 heads, vocabulary 128,256; one
//! token while decoding, 512 while prefilling) and a BERT-base layer norm (768):
//! `cargo gputune search --manifest-path examples/candle-ops/Cargo.toml`.
//!
//! Every variant is checked against candle's own launch of the same kernel on the same inputs
//! (computed once per workload and process), within the type's tolerance, before it is timed.

use gputune_example_candle_ops::mmvq::{
    self, launcher, matches_candle, mmvq, run, Matvec, Quant, CANDLE, Q4K, Q8_0,
};
use gputune_example_candle_ops::{
    close, layernorm, layernorm_with, rmsnorm, rmsnorm_with, row_input_value, softmax,
    softmax_with, Dtype, Shape, BF16, F16, F32,
};
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream};
use gputune_runtime::device::BackendKind;
use gputune_runtime::{type_instances, Bench, BenchResult, BoxError, State};
use std::sync::Arc;

/// A device buffer of `n` values of stream `seed` in rows of `row` ([`row_input_value`]),
/// scaled by `scale`, as `T`.
fn input<T: Dtype>(
    stream: &Arc<CudaStream>,
    (n, row): (usize, usize),
    seed: u64,
    scale: f32,
) -> Result<CudaSlice<T::Storage>, BoxError> {
    let host: Vec<T::Storage> = (0..n as u64)
        .map(|i| T::from_f32(scale * row_input_value(seed, i, row as u64)))
        .collect();
    Ok(stream.clone_htod(&host)?)
}

/// The buffer's values as `f32`.
fn values<T: Dtype>(
    stream: &Arc<CudaStream>,
    buffer: &CudaSlice<T::Storage>,
) -> Result<Vec<f32>, String> {
    let host = stream.clone_dtoh(buffer).map_err(|e| e.to_string())?;
    Ok(host.into_iter().map(T::to_f32).collect())
}

/// The workload's rows and columns, and what one call moves.
fn shape<T: Dtype>(state: &mut State<'_>) -> Result<(usize, usize), BoxError> {
    let rows = usize::try_from(state.get_int64("Rows{io}")?)?;
    let cols = usize::try_from(state.get_int64("Cols{io}")?)?;
    let n = (rows * cols) as u64;
    let bytes = std::mem::size_of::<T::Storage>() as u64;
    state.add_element_count(n);
    state.add_global_memory_reads::<u8>(n * bytes);
    state.add_global_memory_writes::<u8>(n * bytes);
    Ok((rows, cols))
}

/// Checks the variant against `reference` (candle's launch), then measures it.
fn verified<T: Dtype>(
    state: &mut State<'_>,
    dst: &mut CudaSlice<T::Storage>,
    reference: &[f32],
    mut run: impl FnMut(&Arc<CudaStream>, &mut CudaSlice<T::Storage>) -> BenchResult,
) -> BenchResult {
    let stream = state.cuda()?.stream.clone();
    state.verify_with(
        dst,
        |dst| run(&stream, dst),
        |dst| close(&values::<T>(&stream, dst)?, reference, T::TOLERANCE),
    )?;
    state.exec(|launch| run(launch.stream()?, dst));
    Ok(())
}

fn bench_rmsnorm<T: Dtype>(state: &mut State<'_>) -> BenchResult {
    let (rows, cols) = shape::<T>(state)?;
    state.with_setup(
        |state| {
            let stream = &state.cuda()?.stream;
            let x = input::<T>(stream, (rows * cols, cols), 1, 1.0)?;
            let alpha = input::<T>(stream, (cols, cols), 2, 0.5)?;
            let mut dst = stream.alloc_zeros::<T::Storage>(rows * cols)?;
            rmsnorm_with::<T>(
                Shape::CANDLE_NORM,
                stream,
                (&x, &alpha),
                &mut dst,
                (rows, cols),
            )?;
            let reference = values::<T>(stream, &dst)?;
            Ok::<_, BoxError>((x, alpha, dst, reference))
        },
        |state, (x, alpha, dst, reference)| {
            verified::<T>(state, dst, reference, |stream, dst| {
                rmsnorm_with::<T>(
                    rmsnorm::<T>((rows, cols)),
                    stream,
                    (x, alpha),
                    dst,
                    (rows, cols),
                )
            })
        },
    )?
}

fn bench_layernorm<T: Dtype>(state: &mut State<'_>) -> BenchResult {
    let (rows, cols) = shape::<T>(state)?;
    state.with_setup(
        |state| {
            let stream = &state.cuda()?.stream;
            let x = input::<T>(stream, (rows * cols, cols), 3, 1.0)?;
            let alpha = input::<T>(stream, (cols, cols), 4, 0.5)?;
            let beta = input::<T>(stream, (cols, cols), 5, 0.25)?;
            let mut dst = stream.alloc_zeros::<T::Storage>(rows * cols)?;
            let inputs = (&x, &alpha, &beta);
            layernorm_with::<T>(Shape::CANDLE_NORM, stream, inputs, &mut dst, (rows, cols))?;
            let reference = values::<T>(stream, &dst)?;
            Ok::<_, BoxError>((x, alpha, beta, dst, reference))
        },
        |state, (x, alpha, beta, dst, reference)| {
            verified::<T>(state, dst, reference, |stream, dst| {
                let shape = layernorm::<T>((rows, cols));
                layernorm_with::<T>(shape, stream, (x, alpha, beta), dst, (rows, cols))
            })
        },
    )?
}

fn bench_softmax<T: Dtype>(state: &mut State<'_>) -> BenchResult {
    let (rows, cols) = shape::<T>(state)?;
    state.with_setup(
        |state| {
            let stream = &state.cuda()?.stream;
            // Attention scores and logits: spread enough that the maximum matters.
            let x = input::<T>(stream, (rows * cols, cols), 6, 4.0)?;
            let mut dst = stream.alloc_zeros::<T::Storage>(rows * cols)?;
            softmax_with::<T>(Shape::CANDLE_SOFTMAX, stream, &x, &mut dst, (rows, cols))?;
            let reference = values::<T>(stream, &dst)?;
            Ok::<_, BoxError>((x, dst, reference))
        },
        |state, (x, dst, reference)| {
            verified::<T>(state, dst, reference, |stream, dst| {
                softmax_with::<T>(softmax::<T>((rows, cols)), stream, x, dst, (rows, cols))
            })
        },
    )?
}

/// Shapes the Rows × Cols product makes that no Llama-3-8B matrix has.
const NOT_LLAMA: [(usize, usize); 3] = [(1024, 14336), (14336, 14336), (128256, 14336)];

fn bench_mmvq<Q: Quant>(state: &mut State<'_>) -> BenchResult {
    let rows = usize::try_from(state.get_int64("Rows{io}")?)?;
    let cols = usize::try_from(state.get_int64("Cols{io}")?)?;
    let batch = usize::try_from(state.get_int64("Batch{io}")?)?;
    if NOT_LLAMA.contains(&(rows, cols)) {
        state.skip(format!("no Llama-3-8B matrix is {rows} × {cols}"));
        return Ok(());
    }
    let shape = Matvec { rows, cols, batch };
    state.add_element_count((rows * cols * batch) as u64);
    state.add_global_memory_reads::<u8>((shape.weight_bytes::<Q>() + shape.q8_1_bytes()) as u64);
    state.add_global_memory_writes::<f32>((rows * batch) as u64);
    state.with_setup(
        |state| {
            let stream = &state.cuda()?.stream;
            let w = stream.clone_htod(&mmvq::weights::<Q>(shape, 7))?;
            let y = stream.clone_htod(&mmvq::activations(shape, 8))?;
            let mut dst = stream.alloc_zeros::<f32>(rows * batch)?;
            run::<Q>(
                launcher::<Q>(CANDLE, shape)?,
                stream,
                (&w, &y),
                &mut dst,
                shape,
            )?;
            let reference = stream.clone_dtoh(&dst)?;
            Ok::<_, BoxError>((w, y, dst, reference))
        },
        |state, (w, y, dst, reference)| {
            let stream = state.cuda()?.stream.clone();
            state.verify_with(
                dst,
                |dst| run::<Q>(mmvq::<Q>(shape)?, &stream, (w, y), dst, shape),
                |dst| {
                    matches_candle(
                        &stream.clone_dtoh(dst).map_err(|e| e.to_string())?,
                        reference,
                    )
                },
            )?;
            state.exec(|launch| run::<Q>(mmvq::<Q>(shape)?, launch.stream()?, (w, y), dst, shape));
            Ok(())
        },
    )?
}

fn main() {
    gputune_runtime::main(vec![
        // Llama-3-8B's RMS norms: one token (decode) and a 512-token prompt (prefill).
        Bench::with_types(
            "rmsnorm",
            &["T{ct}"],
            type_instances!(bench_rmsnorm; [F32, BF16, F16]),
        )
        .tunes("rmsnorm")
        .add_int64_axis("Rows{io}", [1, 512])
        .add_int64_axis("Cols{io}", [4096])
        .backend(BackendKind::Cuda),
        // BERT-base's (768) and a 4096-wide layer norm.
        Bench::with_types(
            "layernorm",
            &["T{ct}"],
            type_instances!(bench_layernorm; [F32, BF16, F16]),
        )
        .tunes("layernorm")
        .add_int64_axis("Rows{io}", [1, 512])
        .add_int64_axis("Cols{io}", [768, 4096])
        .backend(BackendKind::Cuda),
        // Attention rows (32 heads × 1 query while decoding, × 64 queries) over 512 and 4096
        // keys, and the sampler's softmax over the vocabulary.
        Bench::with_types(
            "softmax",
            &["T{ct}"],
            type_instances!(bench_softmax; [F32, BF16, F16]),
        )
        .tunes("softmax")
        .add_int64_axis("Rows{io}", [1, 32, 2048])
        .add_int64_axis("Cols{io}", [512, 4096, 128256])
        .backend(BackendKind::Cuda),
        // Llama-3-8B's matrices at one token (decode): q and o (4096 × 4096), k and v (1024),
        // gate and up (14336), down (4096 × 14336) and the vocabulary's (128256 × 4096).
        Bench::with_types("mmvq", &["Q{ct}"], type_instances!(bench_mmvq; [Q4K, Q8_0]))
            .tunes("mmvq")
            .add_int64_axis("Rows{io}", [1024, 4096, 14336, 128256])
            .add_int64_axis("Cols{io}", [4096, 14336])
            .add_int64_axis("Batch{io}", [1])
            .backend(BackendKind::Cuda),
    ]);
}

//! The norm and softmax launches of a Llama-3-8B forward pass, in the order and at the shapes
//! a 512-token prompt and 16 generated tokens make them (32 layers, hidden size 4096, 32
//! heads, the attention's softmax over the keys so far), run through this crate's tuned
//! launches of candle's kernels in bf16. Not a model: a program that launches what a model's
//! norms and attention softmax launch, so that `GPUTUNE_CAPTURE=DIR` records those workloads
//! (docs/candle.md). Each generated token also makes the quantized matrix-vector launches of a
//! Q4_K model's decode step (seven matrices a layer and the vocabulary's; zero weights: the
//! program records shapes, it computes nothing). Prints how many launches of each it made.

use gputune_runtime::BoxError;

use gputune_example_candle_ops::mmvq::{mmvq, run, Matvec, Q4K};
use gputune_example_candle_ops::{rmsnorm, rmsnorm_with, softmax, softmax_with, Dtype, BF16};
use gputune_runtime::cudarc::driver::CudaContext;

const LAYERS: usize = 32;
const HIDDEN: usize = 4096;
const HEADS: usize = 32;
const PROMPT: usize = 512;
const GENERATED: usize = 16;
const KV_HEADS: usize = 8;
const HEAD_DIM: usize = 128;
const FFN: usize = 14336;
const VOCAB: usize = 128_256;

/// A decode step's matrices, rows × columns, in a layer's order: q, k, v, o, gate, up, down.
const LAYER_MATRICES: [(usize, usize); 7] = [
    (HIDDEN, HIDDEN),
    (KV_HEADS * HEAD_DIM, HIDDEN),
    (KV_HEADS * HEAD_DIM, HIDDEN),
    (HIDDEN, HIDDEN),
    (FFN, HIDDEN),
    (FFN, HIDDEN),
    (HIDDEN, FFN),
];

fn main() -> Result<(), BoxError> {
    let context = CudaContext::new(0)?;
    let stream = context.default_stream();
    let most_rows = PROMPT * HEADS;
    let most_cols = PROMPT + GENERATED;
    let x = stream.alloc_zeros::<<BF16 as Dtype>::Storage>(most_rows * most_cols)?;
    let weight = stream.alloc_zeros::<<BF16 as Dtype>::Storage>(HIDDEN)?;
    let mut out = stream.alloc_zeros::<<BF16 as Dtype>::Storage>(most_rows * most_cols)?;
    let largest = Matvec {
        rows: VOCAB,
        cols: HIDDEN,
        batch: 1,
    };
    let weights = stream.alloc_zeros::<u8>(largest.weight_bytes::<Q4K>())?;
    let q8 = stream.alloc_zeros::<u8>(
        Matvec {
            rows: 1,
            cols: FFN,
            batch: 1,
        }
        .q8_1_bytes(),
    )?;
    let mut logits = stream.alloc_zeros::<f32>(VOCAB)?;
    let mut matvec = |rows, cols| {
        let shape = Matvec {
            rows,
            cols,
            batch: 1,
        };
        run::<Q4K>(
            mmvq::<Q4K>(shape)?,
            &stream,
            (&weights, &q8),
            &mut logits,
            shape,
        )
    };
    let (mut norms, mut softmaxes, mut matvecs) = (0, 0, 0);
    // The prompt: every token at once; then one token a step, attending to all before it.
    let steps = std::iter::once((PROMPT, PROMPT)).chain((1..=GENERATED).map(|t| (1, PROMPT + t)));
    for (tokens, keys) in steps {
        for _layer in 0..LAYERS {
            for _norm in 0..2 {
                let shape = rmsnorm::<BF16>((tokens, HIDDEN));
                rmsnorm_with::<BF16>(shape, &stream, (&x, &weight), &mut out, (tokens, HIDDEN))?;
                norms += 1;
            }
            let shape = softmax::<BF16>((tokens * HEADS, keys));
            softmax_with::<BF16>(shape, &stream, &x, &mut out, (tokens * HEADS, keys))?;
            softmaxes += 1;
            // A prompt's matrices take candle's batched kernels (more than 8 tokens).
            if tokens == 1 {
                for (rows, cols) in LAYER_MATRICES {
                    matvec(rows, cols)?;
                    matvecs += 1;
                }
            }
        }
        let shape = rmsnorm::<BF16>((tokens, HIDDEN));
        rmsnorm_with::<BF16>(shape, &stream, (&x, &weight), &mut out, (tokens, HIDDEN))?;
        norms += 1;
        if tokens == 1 {
            matvec(VOCAB, HIDDEN)?;
            matvecs += 1;
        }
    }
    stream.synchronize()?;
    gputune_runtime::capture::flush()?;
    println!("{norms} rmsnorm, {softmaxes} softmax and {matvecs} Q4_K matrix-vector launches");
    Ok(())
}

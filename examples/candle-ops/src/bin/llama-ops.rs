//! The norm and softmax launches of a Llama-3-8B forward pass, in the order and at the shapes
//! a 512-token prompt and 16 generated tokens make them (32 layers, hidden size 4096, 32
//! heads, the attention's softmax over the keys so far), run through this crate's tuned
//! launches of candle's kernels in bf16. Not a model: a program that launches what a model's
//! norms and attention softmax launch, so that `GPUTUNE_CAPTURE=DIR` records those workloads
//! (docs/candle.md). Prints how many launches of each it made.

use gputune_runtime::BoxError;

use gputune_example_candle_ops::{rmsnorm, softmax, Dtype, BF16};
use gputune_runtime::cudarc::driver::CudaContext;

const LAYERS: usize = 32;
const HIDDEN: usize = 4096;
const HEADS: usize = 32;
const PROMPT: usize = 512;
const GENERATED: usize = 16;

fn main() -> Result<(), BoxError> {
    let context = CudaContext::new(0)?;
    let stream = context.default_stream();
    let most_rows = PROMPT * HEADS;
    let most_cols = PROMPT + GENERATED;
    let x = stream.alloc_zeros::<<BF16 as Dtype>::Storage>(most_rows * most_cols)?;
    let weight = stream.alloc_zeros::<<BF16 as Dtype>::Storage>(HIDDEN)?;
    let mut out = stream.alloc_zeros::<<BF16 as Dtype>::Storage>(most_rows * most_cols)?;
    let (mut norms, mut softmaxes) = (0, 0);
    // The prompt: every token at once; then one token a step, attending to all before it.
    let steps = std::iter::once((PROMPT, PROMPT)).chain((1..=GENERATED).map(|t| (1, PROMPT + t)));
    for (tokens, keys) in steps {
        for _layer in 0..LAYERS {
            for _norm in 0..2 {
                rmsnorm::<BF16>(&stream, (&x, &weight), &mut out, (tokens, HIDDEN))?;
                norms += 1;
            }
            softmax::<BF16>(&stream, &x, &mut out, (tokens * HEADS, keys))?;
            softmaxes += 1;
        }
        rmsnorm::<BF16>(&stream, (&x, &weight), &mut out, (tokens, HIDDEN))?;
        norms += 1;
    }
    stream.synchronize()?;
    gputune_runtime::capture::flush()?;
    println!("{norms} rmsnorm and {softmaxes} softmax launches");
    Ok(())
}

//! The benches of llm.c's kernels at llm.c's sizes (the `main` of each `.cu` file: B = 8,
//! T = 1024, C = 768 for the layer norm, B·T = 8192 rows of V = 50257 for softmax), with
//! llm.c's inputs made on the device: uniform in [-1, 1), and for softmax three values of each
//! row times 20, so that most probabilities are 1e-9 or less. Every variant is checked against
//! base before it is timed: the layer norm's three outputs each with `f32`'s default tolerance;
//! softmax's probabilities to within 1e-4 of each one's own value, with no floor (the
//! default's floor, relative to the largest probability, would pass any small one wrong). The
//! versions add in other orders: a float32 simulation of their orders on such rows puts their
//! row sums within 3.4e-5 of base's.

use gputune_example_llmc::{layernorm_forward, softmax_forward};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::{device::BackendKind, generate, verify, Bench, BenchResult, BoxError, State};

/// `len` seeded values uniform in [-1, 1) on the device (llm.c's `make_random_float`'s range).
fn random(state: &State<'_>, len: usize, seed: u64) -> Result<CudaSlice<f32>, BoxError> {
    let mut x = state.cuda()?.stream.alloc_zeros(len)?;
    generate::uniform(&state.cuda()?.stream, &mut x, -1.0, 1.0, seed)?;
    Ok(x)
}

fn layernorm(state: &mut State<'_>) -> BenchResult {
    let (b, t, c, n) = (8, 1024, 768, 8 * 1024); // layernorm_forward.cu's main(), n = B·T
    let setup = |state: &State<'_>| {
        let (s, r) = (&state.cuda()?.stream, |len, seed| random(state, len, seed));
        let outs = (s.alloc_zeros(n * c)?, s.alloc_zeros(n)?, s.alloc_zeros(n)?);
        Ok::<_, BoxError>(([r(n * c, 1)?, r(c, 2)?, r(c, 3)?], outs))
    };
    state.with_setup(setup, |state, (x, outs)| {
        state.exec_verified(outs, |l, o| layernorm_forward(l.stream()?, o, x, (b, t, c)))
    })?
}

fn softmax(state: &mut State<'_>) -> BenchResult {
    let (n, v) = (8 * 1024, 50257); // softmax_forward.cu's main(): B·T rows of V
    let setup = |state: &State<'_>| {
        let s = &state.cuda()?.stream;
        let (mut x, mut picks) = (s.clone_dtoh(&random(state, n * v, 4)?)?, vec![0; n * 3]);
        generate::host::uniform(&mut picks, 0, v as u32 - 1, 5)?;
        (0..n * 3).for_each(|i| x[i / 3 * v + picks[i] as usize] *= 20.0);
        let out = verify::Within::new(s.alloc_zeros(n * v)?, verify::Tolerance::new(0.0, 1e-4));
        Ok::<_, BoxError>((s.clone_htod(&x)?, out))
    };
    state.with_setup(setup, |state, (x, out)| {
        state.exec_verified(out, |l, out| {
            softmax_forward(l.stream()?, &mut out.outputs, x, (n, v))
        })
    })?
}

fn main() {
    let bench = |name, f: fn(&mut State<'_>) -> BenchResult| {
        Bench::new(name, f).tunes(name).backend(BackendKind::Cuda)
    };
    gputune_runtime::main(vec![
        bench("layernorm_forward", layernorm),
        bench("softmax_forward", softmax),
    ]);
}

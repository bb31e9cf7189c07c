//! The SGEMM bench: `cargo gputune search -p gputune-example-sgemm-cuda`.
//!
//! The matrices are made on the device, as README's "Your first tuned kernel" shows:
//! `generate::uniform` integers 1 to 8, turned into eighths by `eighths` (a host loop and a copy
//! of two 64 MiB matrices before). Base is checked against the exact product at a grid of
//! 63 × 63 elements, computed on the host from the integers copied back; every other
//! variant against base (`exec_verified`).

use gputune_example_sgemm_cuda::{checked_lines, column, eighths, exact_at, sgemm};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::generate;
use gputune_runtime::{Bench, BenchResult, BoxError, State};

fn bench(state: &mut State<'_>) -> BenchResult {
    let n = usize::try_from(state.get_int64("N{io}")?)?;
    // Items are floating-point operations: Elem/s reads as FLOP/s.
    state.add_element_count(2 * (n * n * n) as u64);
    // A and B (eighths 1/8…1 of seeded integers: every product and sum is exact in f32), C,
    // and the exact elements of A·B at the crossings of the checked rows and columns, made
    // once per workload and process.
    let matrices = |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        let (mut a_ints, mut b_ints) = (stream.alloc_zeros(n * n)?, stream.alloc_zeros(n * n)?);
        generate::uniform::<u32>(stream, &mut a_ints, 1, 8, 1)?;
        generate::uniform::<u32>(stream, &mut b_ints, 1, 8, 2)?;
        let (mut a, mut b) = (stream.alloc_zeros(n * n)?, stream.alloc_zeros(n * n)?);
        eighths(stream, &a_ints, &mut a)?;
        eighths(stream, &b_ints, &mut b)?;
        let (lines, b_host) = (checked_lines(n), stream.clone_dtoh(&b_ints)?);
        let b_cols: Vec<Vec<u32>> = lines.iter().map(|&k| column(&b_host, n, k)).collect();
        let mut expected = Vec::new();
        for &row in &lines {
            let a_row = stream.clone_dtoh(&a_ints.slice(row * n..(row + 1) * n))?;
            let exact = lines
                .iter()
                .zip(&b_cols)
                .map(|(&k, b_col)| (row, k, exact_at(&a_row, b_col)));
            expected.extend(exact);
        }
        Ok::<_, BoxError>((a, b, stream.alloc_zeros::<f32>(n * n)?, expected))
    };
    state.with_setup(matrices, |state, (a, b, c, expected)| {
        if matches!(state.variant(), None | Some("base")) {
            let stream = state.cuda()?.stream.clone();
            let run = |c: &mut CudaSlice<f32>| sgemm(&stream, (a, b), c, n);
            state.verify_with(c, run, |c| {
                let host = c.stream().clone_dtoh(c).map_err(|e| e.to_string())?;
                match expected
                    .iter()
                    .find(|&&(r, k, want)| host[r * n + k] != want)
                {
                    Some((r, k, want)) => {
                        Err(format!("C[{r}][{k}] = {}, not {want}", host[r * n + k]))
                    }
                    None => Ok(()),
                }
            })?;
            state.exec(|launch| sgemm(launch.stream()?, (a, b), c, n));
            Ok(())
        } else {
            state.exec_verified(c, |launch, c| sgemm(launch.stream()?, (a, b), c, n))
        }
    })?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("sgemm", bench)
        .tunes("sgemm")
        .add_int64_power_of_two_axis("N{io}", [12])
        .backend(BackendKind::Cuda)]);
}

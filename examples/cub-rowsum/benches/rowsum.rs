//! The row-sum bench: `cargo gputune search -p gputune-example-cub-rowsum`.

use gputune_example_cub_rowsum::{eighths, host_row_sum, rowsum};
use gputune_runtime::cudarc::driver::CudaSlice;
use gputune_runtime::device::BackendKind;
use gputune_runtime::generate;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{Bench, BenchResult, BoxError, State};

/// Rows whose sums base is checked against on the host: spread over the matrix, the first
/// and the last included. Each costs one row's copy and sum.
const CHECKED_ROWS: usize = 64;

fn bench(state: &mut State<'_>) -> BenchResult {
    let rows = usize::try_from(state.get_int64("Rows{io}")?)?;
    let cols = usize::try_from(state.get_int64("Cols")?)?;
    let elements = rows
        .checked_mul(cols)
        .ok_or_else(|| format!("a {rows}×{cols} matrix is too large"))?;
    state.add_element_count(elements as u64);
    state.add_global_memory_reads::<f32>(elements as u64);
    state.add_global_memory_writes::<f32>(rows as u64);
    // Made on the device once per process and kept across the variants, with the exact sums
    // of a sample of rows, computed on the host from those rows copied back.
    let data = move |state: &State<'_>| {
        let stream = &state.cuda()?.stream;
        let mut bits = stream.alloc_zeros::<u32>(elements)?;
        generate::uniform::<u32>(stream, &mut bits, 1, 8, 1)?;
        let mut x = stream.alloc_zeros::<f32>(elements)?;
        eighths(stream, &bits, &mut x)?;
        let step = (rows / CHECKED_ROWS).max(1);
        let mut sums = Vec::new();
        for r in (0..rows).step_by(step).chain(rows.checked_sub(1)) {
            let row = stream.clone_dtoh(&x.slice(r * cols..(r + 1) * cols))?;
            sums.push((r, host_row_sum(&row)));
        }
        let out = stream.alloc_zeros::<f32>(rows)?;
        Ok::<_, BoxError>((x, sums, out))
    };
    state.with_setup(data, |state, (x, sums, out)| {
        let stream = state.cuda()?.stream.clone();
        let run = |o: &mut CudaSlice<f32>| rowsum(&stream, x, o, (rows, cols));
        // Base is checked against the host's exact sums; the variants against base's outputs,
        // bit for bit (sums of eighths are exact in any order).
        if matches!(state.variant(), None | Some("base")) {
            state.verify_with(out, run, |o| {
                let host = o.stream().clone_dtoh(o).map_err(|e| e.to_string())?;
                for &(r, want) in sums.iter() {
                    if host[r] != want {
                        return Err(format!("out[{r}] = {}, not {want}", host[r]));
                    }
                }
                Ok(())
            })?;
        } else {
            state.verify(out, Tolerance::EXACT, run)?;
        }
        state.exec(|launch| rowsum(launch.stream()?, x, out, (rows, cols)));
        Ok(())
    })?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("rowsum", bench)
        .tunes("rowsum")
        .add_int64_power_of_two_axis("Rows{io}", [14])
        .add_int64_axis("Cols", [8192])
        .backend(BackendKind::Cuda)]);
}

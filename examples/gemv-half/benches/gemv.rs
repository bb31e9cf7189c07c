//! The half-precision GEMV bench: `cargo gputune search -p gputune-example-gemv-half`.

use gputune_example_gemv_half::{eighths, gemv, Half};
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream};
use gputune_runtime::device::BackendKind;
use gputune_runtime::generate;
use gputune_runtime::verify::Tolerance;
use gputune_runtime::{Bench, BenchResult, BoxError, State};

use std::sync::Arc;

/// Rows of `A` whose answers base is checked against on the host: spread over the matrix,
/// the last one included.
const CHECKED_ROWS: usize = 64;

/// The device inputs and output of one workload, and the exact answers of the checked rows.
struct Data {
    a: CudaSlice<u16>,
    x: CudaSlice<u16>,
    y: CudaSlice<f32>,
    expected: Vec<(usize, f32)>,
}

/// Inputs made on the device: integers 1 to 8 (`generate::uniform`), turned into eighths of
/// the 16-bit type. The answers of the checked rows come from the same integers, copied back.
fn make(stream: &Arc<CudaStream>, half: Half, (m, k): (usize, usize)) -> Result<Data, BoxError> {
    let mut ints = stream.alloc_zeros::<u32>(m * k)?;
    let mut x_ints = stream.alloc_zeros::<u32>(k)?;
    generate::uniform(stream, &mut ints, 1, 8, 1)?;
    generate::uniform(stream, &mut x_ints, 1, 8, 2)?;
    let (mut a, mut x) = (
        stream.alloc_zeros::<u16>(m * k)?,
        stream.alloc_zeros::<u16>(k)?,
    );
    eighths(stream, half, &ints, &mut a)?;
    eighths(stream, half, &x_ints, &mut x)?;
    let x_host = stream.clone_dtoh(&x_ints)?;
    let step = (m / CHECKED_ROWS).max(1);
    let mut expected = Vec::new();
    for row in (0..m).step_by(step).chain([m - 1]) {
        let a_row = stream.clone_dtoh(&ints.slice(row * k..(row + 1) * k))?;
        // Sums of products of eighths: integers over 64, exact in f64 and in f32.
        let sum: u64 = a_row
            .iter()
            .zip(&x_host)
            .map(|(&p, &q)| u64::from(p * q))
            .sum();
        expected.push((row, (sum as f64 / 64.0) as f32));
    }
    let y = stream.alloc_zeros::<f32>(m)?;
    Ok(Data { a, x, y, expected })
}

fn bench(state: &mut State<'_>) -> BenchResult {
    let half = Half::from_name(state.get_string("T")?)?;
    let m = usize::try_from(state.get_int64("Rows{io}")?)?;
    let k = usize::try_from(state.get_int64("Cols")?)?;
    state.add_element_count((m * k) as u64);
    state.add_global_memory_reads::<u16>((m * k + k) as u64);
    state.add_global_memory_writes::<f32>(m as u64);
    let data = |state: &State<'_>| make(&state.cuda()?.stream, half, (m, k));
    state.with_setup(data, |state, data| {
        let stream = state.cuda()?.stream.clone();
        let Data { a, x, y, expected } = data;
        let run = |y: &mut CudaSlice<f32>| gemv(&stream, half, (a, x), y, (m, k));
        if matches!(state.variant(), None | Some("base")) {
            state.verify_with(y, run, |y| {
                let host = y.stream().clone_dtoh(y).map_err(|e| e.to_string())?;
                match expected.iter().find(|(row, want)| host[*row] != *want) {
                    Some((row, want)) => Err(format!("y[{row}] = {}, not {want}", host[*row])),
                    None => Ok(()),
                }
            })?;
        } else {
            // Every sum is exact, so every variant must match base bit for bit.
            state.verify(y, Tolerance::EXACT, run)?;
        }
        state.exec(|launch| gemv(launch.stream()?, half, (a, x), y, (m, k)));
        Ok(())
    })?
}

fn main() {
    gputune_runtime::main(vec![Bench::new("gemv", bench)
        .tunes("gemv")
        .add_string_axis("T", ["bf16", "f16"])
        .add_int64_power_of_two_axis("Rows{io}", [13])
        .add_int64_axis("Cols", [8192])
        .backend(BackendKind::Cuda)]);
}

//! candle's GGUF matrix-vector kernels (`candle-kernels/src/mmvq_gguf.cu`, the token-by-token
//! path of a quantized model: candle-core's `fast_mmvq` calls their C++ launchers) tuned
//! through gputune's C++-launcher path. `src/mmvq_gguf.cu` is candle's file with the launch
//! shape it fixes in the source made two macros, `NWARPS` (warps a block) and
//! `ROWS_PER_BLOCK` (weight rows a block), where 0 is candle's rule (4 warps and 1 row for one
//! token; 2 rows from two tokens on, 2 warps from five). `build.rs` compiles it with nvcc once
//! per variant. [`mmvq`] is a lookup: it answers with the launcher of the variant that runs
//! for a shape on this GPU (candle's, or the winner `gputune.toml` applies), which candle-core's
//! `fast_mmvq` can call in place of its own, and [`run`] calls one on a stream.
//!
//! Base is candle's launch, compiled from the same file, and every variant is verified
//! against it on the same inputs.

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use gputune_macros::{launchers, tune};
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use gputune_runtime::kernel::{launch_status, Launchers};
use gputune_runtime::tuned::Tuned;
use gputune_runtime::verify::F16;
use gputune_runtime::{BoxError, Error};

static LAUNCH: Launchers = launchers!("src/mmvq_gguf.cu");

/// candle's `PlainLauncher` (candle-core `quantized/fast_mmvq.rs`): weights, Q8_1
/// activations, output, columns, rows, the activations' and output's column strides, the
/// batch (tokens, 1 to 8) and the stream.
type PlainLauncher = unsafe extern "C" fn(
    *const c_void,
    *const c_void,
    *mut c_void,
    i32,
    i32,
    i32,
    i32,
    i32,
    *mut c_void,
);

/// `mmvq_launch_status` in `src/mmvq_gguf.cu`: `cudaGetLastError()` after a launch.
type LaunchStatus = unsafe extern "C" fn() -> i32;

/// The most tokens one launch takes (candle's `MMVQ_MAX_BATCH`).
pub const MAX_BATCH: usize = 8;
/// Activations are quantized in rows padded to this many values (candle's
/// `MATRIX_ROW_PADDING`).
pub const ROW_PADDING: usize = 512;
/// Values a Q8_1 block holds.
pub const Q8_1_VALUES: usize = 32;
/// Bytes a Q8_1 block takes: two halves (scale and sum) and 32 signed bytes.
pub const Q8_1_BYTES: usize = 36;

/// A GGUF weight type with a launcher in `src/mmvq_gguf.cu`.
pub trait Quant: Send + Sync + 'static {
    /// candle's name of its f32-output launcher.
    const LAUNCHER: &'static str;
    /// Values one block holds.
    const BLOCK_VALUES: usize;
    /// Bytes one block takes.
    const BLOCK_BYTES: usize;
    /// Writes a block of plausible weights from the random `bits` (one word a byte): every
    /// scale a small finite half, every quant any value its type allows.
    fn block(bits: &mut impl FnMut() -> u64, out: &mut [u8]);
}

/// `Q4_K`: 256 values a block in 144 bytes (two half scales, 12 bytes of 6-bit sub-scales, 128
/// bytes of nibbles).
pub struct Q4K;
/// `Q8_0`: 32 values a block in 34 bytes (a half scale and 32 signed bytes).
pub struct Q8_0;

/// A half in `[1/1024, 1/64)`, the size of a quantized model's block scales, as its bits.
fn small_scale(bits: u64) -> [u8; 2] {
    let v = (1.0 + (bits % 15) as f32) / 1024.0;
    F16::from_f32(v).0.to_le_bytes()
}

impl Quant for Q4K {
    const LAUNCHER: &'static str = "launch_mmvq_gguf_q4_k_f32_plain";
    const BLOCK_VALUES: usize = 256;
    const BLOCK_BYTES: usize = 144;
    fn block(bits: &mut impl FnMut() -> u64, out: &mut [u8]) {
        out[0..2].copy_from_slice(&small_scale(bits()));
        out[2..4].copy_from_slice(&small_scale(bits()));
        for b in &mut out[4..] {
            *b = bits() as u8;
        }
    }
}

impl Quant for Q8_0 {
    const LAUNCHER: &'static str = "launch_mmvq_gguf_q8_0_f32_plain";
    const BLOCK_VALUES: usize = 32;
    const BLOCK_BYTES: usize = 34;
    fn block(bits: &mut impl FnMut() -> u64, out: &mut [u8]) {
        out[0..2].copy_from_slice(&small_scale(bits()));
        for b in &mut out[2..] {
            *b = bits() as u8;
        }
    }
}

/// The shape of one launch: `rows × cols` weights times `batch` activation vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matvec {
    /// Weight rows (outputs a token).
    pub rows: usize,
    /// Weight columns (the inner dimension).
    pub cols: usize,
    /// Tokens (activation vectors), 1 to [`MAX_BATCH`].
    pub batch: usize,
}

impl Matvec {
    /// Blocks of Q8_1 activations a token takes (its padded row).
    pub fn q8_1_blocks(&self) -> usize {
        self.cols.div_ceil(ROW_PADDING) * ROW_PADDING / Q8_1_VALUES
    }

    /// Bytes of the Q8_1 activations.
    pub fn q8_1_bytes(&self) -> usize {
        self.batch * self.q8_1_blocks() * Q8_1_BYTES
    }

    /// Bytes of the weights of type `Q`.
    pub fn weight_bytes<Q: Quant>(&self) -> usize {
        self.rows * self.cols / Q::BLOCK_VALUES * Q::BLOCK_BYTES
    }
}

/// Weights of type `Q` for `shape`, made by a host loop from `seed`.
pub fn weights<Q: Quant>(shape: Matvec, seed: u64) -> Vec<u8> {
    let mut out = vec![0u8; shape.weight_bytes::<Q>()];
    let mut state = seed;
    let mut bits = move || splitmix(&mut state);
    for block in out.chunks_exact_mut(Q::BLOCK_BYTES) {
        Q::block(&mut bits, block);
    }
    out
}

/// Q8_1 activations for `shape`, made by a host loop from `seed`: each block's quants in
/// `[-127, 127]`, its scale small, its sum the scale times the quants' sum (as candle's
/// quantize kernel writes it); the padding blocks zero.
pub fn activations(shape: Matvec, seed: u64) -> Vec<u8> {
    let mut out = vec![0u8; shape.q8_1_bytes()];
    let mut state = seed;
    let used = shape.cols / Q8_1_VALUES;
    for token in out.chunks_exact_mut(shape.q8_1_blocks() * Q8_1_BYTES) {
        for block in token.chunks_exact_mut(Q8_1_BYTES).take(used) {
            let mut sum = 0i32;
            for q in &mut block[4..] {
                let v = (splitmix(&mut state) % 255) as i32 - 127;
                sum += v;
                *q = v as i8 as u8;
            }
            let d = F16(u16::from_le_bytes(small_scale(splitmix(&mut state))));
            block[0..2].copy_from_slice(&d.0.to_le_bytes());
            let s = F16::from_f32(d.to_f32() * sum as f32);
            block[2..4].copy_from_slice(&s.0.to_le_bytes());
        }
    }
    out
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// candle's launch, compiled from `src/mmvq_gguf.cu` as base: the reference every variant is
/// verified against.
pub const CANDLE: Tuned = Tuned::new(
    "mmvq",
    &[
        ("nwarps", "NWARPS", "0"),
        ("rows_per_block", "ROWS_PER_BLOCK", "0"),
    ],
    "0\u{1f}0",
);

/// Rows a block of the variant `tuned` takes for `batch` tokens: its `ROWS_PER_BLOCK`, or
/// candle's rule where that is 0.
fn rows_per_block(tuned: Tuned, batch: usize) -> usize {
    let set = tuned
        .entries()
        .find(|(name, ..)| *name == "rows_per_block")
        .and_then(|(_, _, value, _)| value.parse::<usize>().ok())
        .unwrap_or(0);
    match (set, batch) {
        (0, 1) => 1,
        (0, _) => 2,
        (n, _) => n,
    }
}

/// The launcher of the variant `tuned` for `Q` weights at `shape`. [`Error::InvalidLaunch`]
/// where the rows do not divide into the variant's blocks (the kernel reads whole blocks of
/// rows); [`Error::Usage`] for a shape candle's kernels do not take.
pub fn launcher<Q: Quant>(tuned: Tuned, shape: Matvec) -> Result<PlainLauncher, BoxError> {
    let Matvec { rows, cols, batch } = shape;
    if !(1..=MAX_BATCH).contains(&batch) || cols % Q::BLOCK_VALUES != 0 {
        return Err(Error::Usage(format!(
            "{batch} tokens × {cols} columns: candle's kernels take 1 to {MAX_BATCH} tokens and \
             whole blocks of {} columns",
            Q::BLOCK_VALUES
        ))
        .into());
    }
    let per_block = rows_per_block(tuned, batch);
    if !rows.is_multiple_of(per_block) {
        return Err(Error::InvalidLaunch(format!(
            "{rows} rows do not divide into blocks of {per_block}"
        ))
        .into());
    }
    let pointer = LAUNCH.pointer(tuned, Q::LAUNCHER, &[])?;
    // SAFETY: PlainLauncher is the signature of the `Q::LAUNCHER` functions in mmvq_gguf.cu.
    Ok(unsafe { std::mem::transmute::<unsafe extern "C" fn(), PlainLauncher>(pointer) })
}

/// The launcher that runs for `Q` weights at `shape` on this GPU: in a search the variant's,
/// else the winner applied for the GPU and the shape, else candle's own.
///
/// Tuned: warps a block (0 is candle's rule, 1 to 16) × weight rows a block (0 is candle's
/// rule, 1 to 4), but not 16 warps with 4 rows (its partial sums overflow static shared
/// memory for 7 and 8 tokens): 23 points.
#[tune(
    nwarps = [0, 1, 2, 4, 8, 16],
    rows_per_block = [0, 1, 2, 4],
    require(nwarps * rows_per_block <= 32),
    base(nwarps = 0, rows_per_block = 0),
    size(Rows = shape.rows, Cols = shape.cols, Batch = shape.batch)
)]
pub fn mmvq<Q: Quant>(shape: Matvec) -> Result<PlainLauncher, BoxError> {
    launcher::<Q>(TUNED, shape)
}

/// `mmvq_launch_status` of base's object, looked up once: the CUDA runtime's last error is one
/// per thread, whichever variant's object reads it, and every build links base.
fn launch_status_reader() -> Result<LaunchStatus, BoxError> {
    static STATUS: OnceLock<LaunchStatus> = OnceLock::new();
    if let Some(status) = STATUS.get() {
        return Ok(*status);
    }
    let pointer = LAUNCH.pointer(CANDLE, "mmvq_launch_status", &[])?;
    // SAFETY: LaunchStatus is mmvq_launch_status's signature in mmvq_gguf.cu.
    let status = unsafe { std::mem::transmute::<unsafe extern "C" fn(), LaunchStatus>(pointer) };
    Ok(*STATUS.get_or_init(|| status))
}

/// `dst = W · y` for the `Q` weights `w` and the Q8_1 activations `y` of `shape`, by
/// `launch` (from [`mmvq`] or [`launcher`]) on `stream`.
pub fn run<Q: Quant>(
    launch: PlainLauncher,
    stream: &Arc<CudaStream>,
    (w, y): (&CudaSlice<u8>, &CudaSlice<u8>),
    dst: &mut CudaSlice<f32>,
    shape: Matvec,
) -> Result<(), BoxError> {
    let Matvec { rows, cols, batch } = shape;
    if w.len() < shape.weight_bytes::<Q>()
        || y.len() < shape.q8_1_bytes()
        || dst.len() < rows * batch
    {
        return Err(Error::Usage(format!("buffers too small for {shape:?}")).into());
    }
    let status = launch_status_reader()?;
    // The launcher's runtime calls run in the thread's current context: the stream's.
    stream.context().bind_to_thread()?;
    let (w, _w) = w.device_ptr(stream);
    let (y, _y) = y.device_ptr(stream);
    let (out, _out) = dst.device_ptr_mut(stream);
    let stride_y = i32::try_from(shape.q8_1_blocks())?;
    let (cols, rows, batch) = (i32::try_from(cols)?, i32::try_from(rows)?, batch as i32);
    // SAFETY: w holds rows × cols weights of type Q, y batch padded Q8_1 rows, out rows ×
    // batch floats (checked above), all on the stream's context; the launcher reads only
    // those and writes only out.
    let code = unsafe {
        launch(
            w as *const c_void,
            y as *const c_void,
            out as *mut c_void,
            cols,
            rows,
            stride_y,
            rows,
            batch,
            stream.cu_stream() as *mut c_void,
        );
        status()
    };
    launch_status(code)?;
    Ok(())
}

/// Whether `got` is candle's output `want` up to the order of the float sums: within 1e-4 of
/// each value plus 1e-5 of the largest (an output near zero is a cancellation, whose error
/// scales with the terms, not with itself). `Err` names the first value that is not.
pub fn matches_candle(got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} values, not {}", got.len(), want.len()));
    }
    let largest = want.iter().fold(0f32, |m, w| m.max(w.abs()));
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        // NaN is never close: hence the negation.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !((g - w).abs() <= 1e-4 * w.abs() + 1e-5 * largest) {
            return Err(format!("value {i} is {g}, candle's launch gives {w}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candle_s_launch_is_base() {
        assert_eq!(MMVQ_PARAMS, [("nwarps", "0"), ("rows_per_block", "0")]);
        let params: Vec<(&str, &str)> = CANDLE.entries().map(|(n, _, v, _)| (n, v)).collect();
        assert_eq!(params, MMVQ_PARAMS);
        assert_eq!(rows_per_block(CANDLE, 1), 1);
        assert_eq!(rows_per_block(CANDLE, 2), 2);
    }

    #[test]
    fn blocks_are_laid_out_as_ggml_s() {
        let shape = Matvec {
            rows: 4,
            cols: 512,
            batch: 2,
        };
        assert_eq!(weights::<Q4K>(shape, 1).len(), 4 * 2 * 144);
        assert_eq!(weights::<Q8_0>(shape, 1).len(), 4 * 16 * 34);
        let y = activations(Matvec { cols: 256, ..shape }, 2);
        // 256 columns pad to 512: 16 blocks a token, 8 of them used.
        assert_eq!(y.len(), 2 * 16 * 36);
        let block = &y[..36];
        let d = F16(u16::from_le_bytes([block[0], block[1]])).to_f32();
        let s = F16(u16::from_le_bytes([block[2], block[3]])).to_f32();
        let sum: i32 = block[4..].iter().map(|&q| q as i8 as i32).sum();
        assert!(d > 0.0 && d < 1.0 / 64.0);
        assert!((s - d * sum as f32).abs() <= 1e-3 * (d * sum as f32).abs() + 1e-6);
        assert!(
            y[8 * 36..16 * 36].iter().all(|&b| b == 0),
            "padding is zero"
        );
        assert!(
            y[16 * 36 + 4..16 * 36 + 36].iter().any(|&b| b != 0),
            "second token"
        );
    }

    #[test]
    fn a_difference_beyond_reordering_fails() {
        let want = [1000.0, -0.5, 0.001];
        assert_eq!(matches_candle(&[1000.05, -0.5, 0.0015], &want), Ok(()));
        assert!(matches_candle(&[1000.2, -0.5, 0.001], &want).is_err());
        assert!(matches_candle(&[1000.0, -0.5, 0.02], &want).is_err());
        assert!(matches_candle(&[f32::NAN, -0.5, 0.001], &want).is_err());
    }

    #[test]
    fn launches_that_cannot_cover_the_rows_or_columns_are_refused_before_the_gpu() {
        let four = Tuned::new(
            "mmvq",
            &[
                ("nwarps", "NWARPS", "4"),
                ("rows_per_block", "ROWS_PER_BLOCK", "4"),
            ],
            "4\u{1f}4",
        );
        assert_eq!(rows_per_block(four, 1), 4);
        assert_eq!(rows_per_block(CANDLE, 8), 2);
        let error = |tuned, shape| launcher::<Q4K>(tuned, shape).err().map(|e| e.to_string());
        let rows = error(
            four,
            Matvec {
                rows: 1026,
                cols: 4096,
                batch: 1,
            },
        );
        assert!(rows.is_some_and(|e| e.contains("do not divide into blocks of 4")));
        let cols = error(
            CANDLE,
            Matvec {
                rows: 1024,
                cols: 4000,
                batch: 1,
            },
        );
        assert!(cols.is_some_and(|e| e.contains("whole blocks of 256")));
        let batch = error(
            CANDLE,
            Matvec {
                rows: 1024,
                cols: 4096,
                batch: 9,
            },
        );
        assert!(batch.is_some_and(|e| e.contains("1 to 8 tokens")));
    }
}

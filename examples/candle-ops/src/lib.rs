//! candle's row-wise kernels tuned as candle ships them: `candle_kernels::REDUCE` holds the PTX
//! that candle-kernels 0.11.1's build script makes with nvcc, and each `#[tune]` function here
//! launches one of its kernels the way candle-nn 0.11.1's `ops.rs` does, with the launch values
//! candle hard-codes as base:
//!
//! - [`rmsnorm`] and [`layernorm`]: one block a row, `block_size = if n_cols < 1024 { 32 } else
//!   { 1024 }` (`ops.rs` ~580 and ~823). Tuned over the block size (0 is candle's own rule) and
//!   rows per block (`blockDim.y`, which the kernels read).
//! - [`softmax`]: `block_dim (1, 32, 1)`, one warp a row whatever the row length (~361). Tuned
//!   over the threads of a row (`blockDim.y`) and rows per block (`blockDim.x`).
//!
//! Nothing is compiled: the PTX module is handed to the driver once per process, as candle hands
//! it. Some launches compute wrong answers (the kernels assume their thread mapping: the
//! softmax reduces within one warp, the norms share 32 floats of shared memory between the rows
//! of a block and read entries no warp wrote); verification against candle's launch on the same
//! inputs records them `verify_failed`, and launches a row count cannot take are `invalid`.
//!
//! [`mmvq`]: candle's GGUF matrix-vector kernels of token generation, launched from C++ as
//! candle-core launches them, tuned through gputune's C++-launcher path.

pub mod mmvq;

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::{
    CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use gputune_runtime::kernel::Kernel;
use gputune_runtime::tuned::Tuned;
use gputune_runtime::verify::{Bf16, DeviceElement, F16 as Half};
use gputune_runtime::{BoxError, Error};

/// An element type candle's reduce kernels are instantiated for: `F32`, `BF16`, `F16`.
pub trait Dtype: Send + Sync + 'static {
    /// How a device buffer holds it (a half type's bits, verified by value).
    type Storage: DeviceRepr
        + ValidAsZeroBits
        + DeviceElement
        + Copy
        + Default
        + Send
        + Sync
        + std::fmt::Debug;
    /// candle's name suffix (`f32`, `bf16`, `f16`).
    const SUFFIX: &'static str;
    /// The kernels of this type: rmsnorm, layernorm, softmax.
    fn kernels() -> &'static [Kernel; 3];
    /// `v` rounded to the type.
    fn from_f32(v: f32) -> Self::Storage;
    /// The value as `f32`.
    fn to_f32(v: Self::Storage) -> f32;
    /// What a correct launch may differ from candle's by, relatively and absolutely: the sums'
    /// order changes with the block shape, and the result is rounded to the type.
    const TOLERANCE: f32;
}

macro_rules! kernels {
    ($t:literal) => {
        fn kernels() -> &'static [Kernel; 3] {
            static KERNELS: [Kernel; 3] = [
                Kernel::ptx_from(|| candle_kernels::REDUCE.ptx(), concat!("rmsnorm_", $t)),
                Kernel::ptx_from(|| candle_kernels::REDUCE.ptx(), concat!("layernorm_", $t)),
                Kernel::ptx_from(|| candle_kernels::REDUCE.ptx(), concat!("softmax_", $t)),
            ];
            &KERNELS
        }
    };
}

/// `f32`.
pub struct F32;
/// `bf16` (`__nv_bfloat16`).
pub struct BF16;
/// `f16` (`__half`).
pub struct F16;

impl Dtype for F32 {
    type Storage = f32;
    const SUFFIX: &'static str = "f32";
    kernels!("f32");
    fn from_f32(v: f32) -> f32 {
        v
    }
    fn to_f32(v: f32) -> f32 {
        v
    }
    const TOLERANCE: f32 = 1e-4;
}

impl Dtype for BF16 {
    type Storage = Bf16;
    const SUFFIX: &'static str = "bf16";
    kernels!("bf16");
    fn from_f32(v: f32) -> Bf16 {
        Bf16::from_f32(v)
    }
    fn to_f32(v: Bf16) -> f32 {
        v.to_f32()
    }
    const TOLERANCE: f32 = 2e-2;
}

impl Dtype for F16 {
    type Storage = Half;
    const SUFFIX: &'static str = "f16";
    kernels!("f16");
    fn from_f32(v: f32) -> Half {
        Half::from_f32(v)
    }
    fn to_f32(v: Half) -> f32 {
        v.to_f32()
    }
    const TOLERANCE: f32 = 4e-3;
}

/// The RMS norm's epsilon in Llama models.
pub const EPS: f32 = 1e-5;

/// candle's block size for a norm over `cols` columns.
pub fn candle_norm_block(cols: usize) -> u32 {
    if cols < 1024 {
        32
    } else {
        1024
    }
}

/// The launch of a norm over `rows × cols` with `block` threads a row (0: candle's rule) and
/// `rows_per_block` rows a block; [`Error::InvalidLaunch`] where the rows do not divide into
/// blocks (the kernels have no bounds check).
fn norm_launch(
    rows: usize,
    cols: usize,
    block: u32,
    rows_per_block: u32,
) -> Result<(LaunchConfig, u32), BoxError> {
    let block = if block == 0 {
        candle_norm_block(cols)
    } else {
        block
    };
    if !rows.is_multiple_of(rows_per_block as usize) {
        return Err(Error::InvalidLaunch(format!(
            "{rows} rows do not divide into blocks of {rows_per_block}"
        ))
        .into());
    }
    let blocks = u32::try_from(rows / rows_per_block as usize)?;
    Ok((
        LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (block, rows_per_block, 1),
            shared_mem_bytes: 0,
        },
        block,
    ))
}

/// A layer norm's inputs: `x`, the weights `alpha` and the biases `beta`.
pub type LayerNormInputs<'a, S> = (&'a CudaSlice<S>, &'a CudaSlice<S>, &'a CudaSlice<S>);

/// A launch shape: threads a row and rows a block. For the norms, `threads` 0 is candle's rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Threads a row (`blockDim.x` of the norms, `blockDim.y` of the softmax).
    pub threads: u32,
    /// Rows a block (`blockDim.y` of the norms, `blockDim.x` of the softmax).
    pub rows: u32,
}

impl Shape {
    /// candle's launch of the norms: its block-size rule, one row a block.
    pub const CANDLE_NORM: Shape = Shape {
        threads: 0,
        rows: 1,
    };
    /// candle's launch of the softmax: one warp a row.
    pub const CANDLE_SOFTMAX: Shape = Shape {
        threads: 32,
        rows: 1,
    };
}

/// candle's RMS norm of the `rows × cols` matrix `x` with weights `alpha` into `dst`, launched
/// with `shape`.
pub fn rmsnorm_with<T: Dtype>(
    shape: Shape,
    stream: &Arc<CudaStream>,
    (x, alpha): (&CudaSlice<T::Storage>, &CudaSlice<T::Storage>),
    dst: &mut CudaSlice<T::Storage>,
    (rows, cols): (usize, usize),
) -> Result<(), BoxError> {
    let (config, block) = norm_launch(rows, cols, shape.threads, shape.rows)?;
    let kernel = T::kernels()[0].get(Tuned::UNTUNED, stream, &[])?;
    let config = kernel.check(config)?;
    let (cols, block, eps) = (i32::try_from(cols)?, block as i32, EPS);
    let mut launch = stream.launch_builder(kernel.function());
    launch
        .arg(x)
        .arg(dst)
        .arg(alpha)
        .arg(&cols)
        .arg(&block)
        .arg(&eps);
    // SAFETY: rmsnorm_T(const T* x, T* dst, const T* alpha, int ncols, int block_size, float
    // eps) over rows × cols elements, which x and dst hold (alpha: cols).
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// The launch shape of candle's RMS norm over `shape` (rows × columns) on this GPU: the
/// variant's in a search, else the winner `gputune.toml` applies for the GPU and the shape,
/// else candle's own (base). A lookup, not a launch, so that candle's launch code (or any
/// launcher that takes a block shape) can ask it; [`rmsnorm_with`] launches it.
///
/// Tuned: block sizes 0 (candle's rule), 32 to 1024 × rows per block 1, 2, 4, of which
/// `require` keeps the 18 with at most 1024 threads (candle's rule may still make more: `invalid`).
#[tune(
    block = [0, 32, 64, 128, 256, 512, 1024],
    rows_per_block = [1, 2, 4],
    require(max(block, 32) * rows_per_block <= 1024),
    base(block = 0, rows_per_block = 1),
    size(Rows = shape.0, Cols = shape.1)
)]
pub fn rmsnorm<T: Dtype>(shape: (usize, usize)) -> Shape {
    Shape {
        threads: BLOCK as u32,
        rows: ROWS_PER_BLOCK as u32,
    }
}

/// candle's layer norm of `x` with weights `alpha` and biases `beta` into `dst`, launched
/// with `shape`.
pub fn layernorm_with<T: Dtype>(
    shape: Shape,
    stream: &Arc<CudaStream>,
    (x, alpha, beta): LayerNormInputs<'_, T::Storage>,
    dst: &mut CudaSlice<T::Storage>,
    (rows, cols): (usize, usize),
) -> Result<(), BoxError> {
    let (config, block) = norm_launch(rows, cols, shape.threads, shape.rows)?;
    let kernel = T::kernels()[1].get(Tuned::UNTUNED, stream, &[])?;
    let config = kernel.check(config)?;
    let (cols, block, eps) = (i32::try_from(cols)?, block as i32, EPS);
    let mut launch = stream.launch_builder(kernel.function());
    launch
        .arg(x)
        .arg(dst)
        .arg(alpha)
        .arg(beta)
        .arg(&cols)
        .arg(&block)
        .arg(&eps);
    // SAFETY: layernorm_T(const T* x, T* dst, const T* alpha, const T* beta, int ncols, int
    // block_size, float eps) over rows × cols elements (alpha, beta: cols).
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// The launch shape of candle's layer norm over `shape` on this GPU, as [`rmsnorm`]'s;
/// [`layernorm_with`] launches it. Tuned as [`rmsnorm`].
#[tune(
    block = [0, 32, 64, 128, 256, 512, 1024],
    rows_per_block = [1, 2, 4],
    require(max(block, 32) * rows_per_block <= 1024),
    base(block = 0, rows_per_block = 1),
    size(Rows = shape.0, Cols = shape.1)
)]
pub fn layernorm<T: Dtype>(shape: (usize, usize)) -> Shape {
    Shape {
        threads: BLOCK as u32,
        rows: ROWS_PER_BLOCK as u32,
    }
}

/// candle's softmax over the last dimension of the `rows × cols` matrix `x` into `dst`,
/// launched with `shape`.
pub fn softmax_with<T: Dtype>(
    shape: Shape,
    stream: &Arc<CudaStream>,
    x: &CudaSlice<T::Storage>,
    dst: &mut CudaSlice<T::Storage>,
    (rows, cols): (usize, usize),
) -> Result<(), BoxError> {
    if !rows.is_multiple_of(shape.rows as usize) {
        return Err(Error::InvalidLaunch(format!(
            "{rows} rows do not divide into blocks of {}",
            shape.rows
        ))
        .into());
    }
    let kernel = T::kernels()[2].get(Tuned::UNTUNED, stream, &[])?;
    let config = kernel.check(LaunchConfig {
        grid_dim: (u32::try_from(rows / shape.rows as usize)?, 1, 1),
        block_dim: (shape.rows, shape.threads, 1),
        shared_mem_bytes: 0,
    })?;
    let cols = i32::try_from(cols)?;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(dst).arg(&cols);
    // SAFETY: softmax_T(const T* x, T* dst, int ncols) over rows × cols elements.
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// The launch shape of candle's softmax over the last dimension of `shape` on this GPU, as
/// [`rmsnorm`]'s; [`softmax_with`] launches it.
///
/// Tuned: threads a row (`blockDim.y`: 32 is candle's) × rows per block (`blockDim.x`: 1 is
/// candle's) = 12 points.
#[tune(
    row_threads = [32, 64, 128, 256],
    rows_per_block = [1, 2, 4],
    base(row_threads = 32, rows_per_block = 1),
    size(Rows = shape.0, Cols = shape.1)
)]
pub fn softmax<T: Dtype>(shape: (usize, usize)) -> Shape {
    Shape {
        threads: ROW_THREADS as u32,
        rows: ROWS_PER_BLOCK as u32,
    }
}

/// Whether `got` is `want` within `tolerance`, relatively and absolutely; `Err` names the
/// first element that is not (NaN never is).
pub fn close(got: &[f32], want: &[f32], tolerance: f32) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} elements, not {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        // NaN is never close: hence the negation.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !((g - w).abs() <= tolerance + tolerance * w.abs()) {
            return Err(format!("element {i} is {g}, candle's launch gives {w}"));
        }
    }
    Ok(())
}

/// A deterministic input value for element `i` of stream `seed`: in `[-2, 2)`, never all
/// equal (never time or verify on constants).
pub fn input_value(seed: u64, i: u64) -> f32 {
    let mut z = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(i.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z ^= z >> 31;
    z = z.wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 29;
    ((z >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
}

/// [`input_value`] for element `i` of a matrix in rows of `row` elements, each row on its own
/// scale and offset (×1 to ×3.25, −1 to +1): a launch that mixes two rows' sums (a warp
/// across rows, partial sums of one row reduced with another's) gives answers far from
/// candle's, where rows of one distribution would agree by chance within the tolerance.
pub fn row_input_value(seed: u64, i: u64, row: u64) -> f32 {
    let r = i / row.max(1);
    (1.0 + (r % 4) as f32 * 0.75) * input_value(seed, i) + ((r % 3) as f32 - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candle_s_rule_and_the_row_split_are_the_launches() {
        assert_eq!(candle_norm_block(4096), 1024);
        assert_eq!(candle_norm_block(768), 32);
        let (config, block) = norm_launch(512, 4096, 0, 1).expect("candle's launch");
        assert_eq!(
            (config.grid_dim.0, config.block_dim, block),
            (512, (1024, 1, 1), 1024)
        );
        let (config, _) = norm_launch(512, 4096, 32, 4).expect("4 rows a block");
        assert_eq!((config.grid_dim.0, config.block_dim), (128, (32, 4, 1)));
        assert!(
            norm_launch(1, 4096, 32, 2).is_err(),
            "1 row does not fill 2"
        );
    }

    #[test]
    fn the_spaces_are_the_launch_shapes() {
        assert_eq!(RMSNORM_PARAMS, [("block", "0"), ("rows_per_block", "1")]);
        assert_eq!(
            SOFTMAX_PARAMS,
            [("row_threads", "32"), ("rows_per_block", "1")]
        );
    }

    #[test]
    fn candle_ships_the_three_kernels_for_each_type() {
        let entries = gputune_runtime::kernel::ptx_entries(candle_kernels::REDUCE.ptx());
        for op in ["rmsnorm", "layernorm", "softmax"] {
            for t in ["f32", "bf16", "f16"] {
                let name = format!("{op}_{t}");
                assert!(entries.contains(&name), "{name} in candle's REDUCE");
            }
        }
    }

    #[test]
    fn inputs_vary_and_the_comparison_fails_where_it_should() {
        let v: Vec<f32> = (0..1000).map(|i| input_value(1, i)).collect();
        assert!(v.iter().all(|x| (-2.0..2.0).contains(x)));
        assert!(v.windows(2).any(|w| w[0] != w[1]));
        assert_eq!(close(&[1.0, 2.0], &[1.0, 2.0001], 1e-3), Ok(()));
        assert!(close(&[1.0, 2.1], &[1.0, 2.0], 1e-3).is_err());
        assert!(close(&[f32::NAN], &[1.0], 1e-3).is_err());
        // Rows differ in scale and offset; one row is the plain stream shifted.
        let mean = |r: u64| {
            (0..512)
                .map(|c| row_input_value(1, r * 512 + c, 512))
                .sum::<f32>()
                / 512.0
        };
        assert!((mean(0) - mean(1)).abs() > 0.5, "{} {}", mean(0), mean(1));
        assert_eq!(row_input_value(1, 7, 1 << 20), input_value(1, 7) - 1.0);
    }
}

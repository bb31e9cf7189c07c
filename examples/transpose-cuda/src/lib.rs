//! A 2-D matrix transpose in CUDA C++, tiled through shared memory and tuned by gputune on
//! the kernel handle (`gputune_runtime::kernel`): [`transpose`] is compiled by NVRTC with the
//! element type and its tuning parameters (tile side, rows of threads per block, padding of
//! the shared tile) as `-D` defines, every variant of a bench process compiling in the
//! background from the first call on.
//!
//! Unlike a 1-D kernel's, this space is not a hypercube: a block has one thread per tile
//! column and `rows` rows of threads, so `tile · rows` is bounded by CUDA's 1024 threads
//! per block, and the tile lives in static shared memory, which a block may hold at most
//! 48 KiB of. The `require`s of [`transpose`] cut the cross product down to the points that
//! can run.
//!
//! [`fill_input`] makes the bench's input on the device (a 16384² `f64` matrix is 2 GiB,
//! which the host's cores took seconds to fill and copy over); [`input_value`] is its
//! specification on the host, which [`input`] (for tests) and [`check_transposed`] follow, on
//! all cores: a 16384² matrix has 2^28 elements.

use std::fmt::Debug;
use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::{
    CudaSlice, CudaStream, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use gputune_runtime::kernel::{CudaType, Kernel};
use gputune_runtime::verify::DeviceElement;
use gputune_runtime::BoxError;

/// The kernel's CUDA C++ source.
pub const SOURCE: &str = include_str!("transpose.cu");

/// The kernel, for tests that compile the points of the space
/// ([`Kernel::label_defines`]). The parameter `rows` is `BLOCK_ROWS` in the source, as it was
/// before the kernel handle: the defines, and so the kernel cache's keys, stay the same.
pub static TRANSPOSE: Kernel = Kernel::new(SOURCE, "transpose").rename(&[("rows", "BLOCK_ROWS")]);

/// The input maker of `input.cu`: not tuned, compiled once per element type.
pub static FILL_INPUT: Kernel = Kernel::new(include_str!("input.cu"), "fill_input");

/// Threads per block of the input maker.
const FILL_TPB: u32 = 256;

/// The largest matrix side [`transpose`] takes: the kernel indexes with 32-bit unsigned
/// row and column numbers and adds up to a tile to them.
pub const MAX_SIDE: usize = 1 << 31;

/// An element type the kernel is compiled for (`f32`, `f64`): one that holds the test data
/// exactly and whose outputs verify on the GPU.
pub trait Element:
    CudaType + DeviceElement + ValidAsZeroBits + PartialEq + Debug + From<f32>
{
}

impl Element for f32 {}
impl Element for f64 {}

/// `output` (`cols × rows`, row-major) = the transpose of `input` (`rows × cols`,
/// row-major), enqueued on `stream`: one launch, no synchronisation, no allocation.
///
/// Tuned: `tile` is the side of the square tile a block moves (8 to 128), `rows` the rows of
/// threads of a block (a block is `tile × rows` threads, each moving `tile / rows` elements
/// each way), `pad` the elements added to each row of the shared tile against bank
/// conflicts. Of the 60 points of that cross product, the `require`s keep the 28 that run
/// and make sense:
/// - `tile % rows == 0`: the rows of threads step through the tile in whole strides;
/// - `tile * rows <= 1024`: CUDA's limit of threads per block;
/// - `tile * (tile + pad) * 8 <= 49152`: the tile of the widest element (`f64`, 8 bytes)
///   must fit the 48 KiB of static shared memory a block may hold (this drops tile 128,
///   whose `f32` tile would not fit either);
/// - `tile * rows >= 64`: an SM holds at most 32 blocks (sm_80 and sm_90), so blocks under
///   64 threads cannot fill its 2048 thread slots (a 32-thread block caps occupancy at
///   half, a sub-warp block also idles lanes), which a memory-bound kernel needs to keep
///   enough loads in flight.
///
/// Base is the textbook shape, 32 × 32 tiles moved by 32 × 8 threads with one element of
/// padding.
#[tune(
    tile = pow2(3..=7),
    rows = pow2(0..=5),
    pad = [0, 1],
    require(tile % rows == 0),
    require(tile * rows <= 1024),
    require(tile * (tile + pad) * 8 <= 49152),
    require(tile * rows >= 64),
    base(tile = 32, rows = 8, pad = 1)
)]
pub fn transpose<T: Element>(
    stream: &Arc<CudaStream>,
    input: &CudaSlice<T>,
    output: &mut CudaSlice<T>,
    rows: usize,
    cols: usize,
) -> Result<(), BoxError> {
    let n = rows.checked_mul(cols).ok_or("more elements than memory")?;
    if input.len() < n || output.len() < n {
        let (i, o) = (input.len(), output.len());
        let e = format!("a {rows} × {cols} transpose needs {n} elements in and out, not {i}, {o}");
        return Err(e.into());
    }
    if n == 0 {
        return Ok(());
    }
    let kernel = TRANSPOSE.get(TUNED, stream, &[("VALUE_T", T::CUDA_NAME)])?;
    let config = kernel.check(launch_config(rows, cols, TILE as u32, ROWS as u32)?)?;
    // Both fit: `launch_config` checked the sides against MAX_SIDE.
    let (rows, cols) = (rows as u32, cols as u32);
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(input).arg(output).arg(&rows).arg(&cols);
    // SAFETY: the arguments match `transpose(const T*, T*, unsigned, unsigned)` in
    // transpose.cu; the kernel reads only input[r * cols + c] and writes only
    // output[c * rows + r] for r < rows and c < cols, below n, which both slices hold.
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// The launch shape of a `rows × cols` input: one block of `tile × block_rows` threads per
/// `tile × tile` tile, the grid's x over column tiles and y over row tiles (partial tiles
/// at the right and bottom edges included).
pub fn launch_config(
    rows: usize,
    cols: usize,
    tile: u32,
    block_rows: u32,
) -> Result<LaunchConfig, BoxError> {
    if tile == 0 || block_rows == 0 || rows == 0 || cols == 0 || rows.max(cols) > MAX_SIDE {
        let what = format!("a {rows} × {cols} matrix in blocks of {tile} × {block_rows} threads");
        return Err(
            format!("cannot launch {what}: sides are 1 to {MAX_SIDE}, blocks not empty").into(),
        );
    }
    let tiles = |n: usize| u32::try_from(n.div_ceil(tile as usize)).unwrap_or(u32::MAX);
    Ok(LaunchConfig {
        grid_dim: (tiles(cols), tiles(rows), 1),
        block_dim: (tile, block_rows, 1),
        shared_mem_bytes: 0,
    })
}

/// Input element `(r, c)`: non-zero, index-dependent and hashed, so that an element moved
/// to the wrong place (a transposition that is off, an untransposed copy, a swapped pair)
/// almost never lands on its own value; an integer in `1..=2^23`, exactly representable in
/// `f32` and `f64`. `input.cu` computes the same values on the device.
pub fn input_value(r: usize, c: usize) -> f32 {
    let mut h = (r as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (c as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 32;
    ((h >> 41) + 1) as f32
}

/// Lines (rows or columns) per band so that `lines` lines split into about one band per core.
fn band_lines(lines: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    lines.div_ceil(cores).max(1)
}

/// Fills `x` with the `rows × cols` input matrix ([`input_value`]), row-major, on the device,
/// enqueued on `stream`: what [`input`] makes on the host, bit for bit, in about a millisecond
/// a gigabyte.
pub fn fill_input<T: Element>(
    stream: &Arc<CudaStream>,
    x: &mut CudaSlice<T>,
    rows: usize,
    cols: usize,
) -> Result<(), BoxError> {
    let n = rows.checked_mul(cols).ok_or("more elements than memory")?;
    if x.len() < n {
        let e = format!(
            "a {rows} × {cols} input needs {n} elements, not {}",
            x.len()
        );
        return Err(e.into());
    }
    if n == 0 {
        return Ok(());
    }
    let kernel = FILL_INPUT.fixed(stream, &[("VALUE_T", T::CUDA_NAME)])?;
    // Grid-stride both ways: any grid is correct; a thread per column and a block row per
    // matrix row up to the grid's limits.
    let limits = kernel.limits().max_grid_dim;
    let blocks = |n: usize, limit: u32| u32::try_from(n).unwrap_or(u32::MAX).min(limit);
    let config = kernel.check(LaunchConfig {
        grid_dim: (
            blocks(cols.div_ceil(FILL_TPB as usize), limits[0]),
            blocks(rows, limits[1]),
            1,
        ),
        block_dim: (FILL_TPB, 1, 1),
        shared_mem_bytes: 0,
    })?;
    let (rows, cols) = (rows as u64, cols as u64);
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(&rows).arg(&cols);
    // SAFETY: the arguments match fill_input(VALUE_T*, unsigned long long, unsigned long
    // long) with VALUE_T the CUDA name of T; it writes x[r * cols + c] for r < rows and
    // c < cols, below rows · cols, which the slice holds (checked above).
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// The `rows × cols` input matrix ([`input_value`]), row-major, made on the host's cores:
/// the specification of [`fill_input`], for tests.
pub fn input<T: Element>(rows: usize, cols: usize) -> Vec<T> {
    let mut v = vec![T::from(0.0); rows * cols];
    let band = band_lines(rows) * cols.max(1);
    // Each thread fills its own band; the scope joins them (and passes a panic on).
    std::thread::scope(|s| {
        for (b, chunk) in v.chunks_mut(band).enumerate() {
            s.spawn(move || {
                for (i, slot) in (b * band..).zip(chunk) {
                    *slot = T::from(input_value(i / cols, i % cols));
                }
            });
        }
    });
    v
}

/// Whether `out` is the `cols × rows` transpose of the `rows × cols` matrix of
/// [`input_value`]s: `out[c · rows + r] == input_value(r, c)` exactly. Checked on all cores;
/// `Err` names the first wrong element.
pub fn check_transposed<T: Element>(out: &[T], rows: usize, cols: usize) -> Result<(), String> {
    let n = out.len();
    let out = out
        .get(..rows * cols)
        .ok_or(format!("{n} outputs for a {rows} × {cols} matrix"))?;
    let want = |r, c| T::from(input_value(r, c));
    // Each thread checks a band of output rows (input columns); the first band with a wrong
    // element names it.
    let band = band_lines(cols) * rows.max(1);
    let wrong = std::thread::scope(|s| {
        let bands: Vec<_> = (0..)
            .step_by(band)
            .zip(out.chunks(band))
            .map(|(first, chunk)| {
                let right = move |(i, &x): (usize, &T)| x == want(i % rows, i / rows);
                s.spawn(move || (first..).zip(chunk).find(|&e| !right(e)).map(|(i, _)| i))
            })
            .collect();
        // Checking compares numbers: a panic is a bug, passed on.
        let join = |b: std::thread::ScopedJoinHandle<'_, _>| {
            b.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        };
        bands.into_iter().find_map(join)
    });
    match wrong {
        Some(i) => {
            let (c, r) = (i / rows, i % rows);
            Err(format!(
                "wrong transpose: out[{c}][{r}] = {:?}, but in[{r}][{c}] = {:?}",
                out[i],
                want(r, c)
            ))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gputune_runtime::skipped;
    use gputune_runtime::tuned::Variant;

    /// Static shared memory a block may hold, in bytes (48 KiB on every CUDA architecture;
    /// more needs dynamic shared memory and an opt-in).
    const STATIC_SHARED_LIMIT: u32 = 48 * 1024;

    /// Threads a block may have on every CUDA architecture.
    const MAX_THREADS_PER_BLOCK: u32 = 1024;

    /// The parameters `(tile, rows, pad)` of a label (`tile_32.rows_8.pad_1`, or `base`).
    fn parameters(label: &str) -> Result<(u32, u32, u32), gputune_runtime::Error> {
        let v = Variant::parse(label, TRANSPOSE_PARAMS)?;
        Ok((v.get("tile")?, v.get("rows")?, v.get("pad")?))
    }

    /// The defines of point `(tile, rows, pad)` for the CUDA type `value_t`, as the kernel
    /// handle passes them.
    fn defines(value_t: &str, (tile, rows, pad): (u32, u32, u32)) -> Vec<(String, String)> {
        let label = format!("tile_{tile}.rows_{rows}.pad_{pad}");
        TRANSPOSE
            .label_defines(TRANSPOSE_PARAMS, &label, &[("VALUE_T", value_t)])
            .expect("a label")
    }

    /// The transpose of the `rows × cols` row-major `input`, on the host: the reference the
    /// tests check the helpers against.
    fn reference_transpose<T: Copy>(input: &[T], rows: usize, cols: usize) -> Vec<T> {
        (0..cols)
            .flat_map(|c| (0..rows).map(move |r| input[r * cols + c]))
            .collect()
    }

    /// `(tile, rows, pad)` of every point of the space, as the build script enumerated it.
    fn space() -> Vec<(u32, u32, u32)> {
        let manifest: serde_json::Value = serde_json::from_str(include_str!(concat!(
            env!("OUT_DIR"),
            "/gputune/manifest.json"
        )))
        .expect("the build script's manifest is JSON");
        let function = manifest["functions"]
            .as_array()
            .expect("functions")
            .iter()
            .find(|f| f["name"] == "transpose")
            .expect("transpose is a tuned function");
        let labels = function["labels"].as_array().expect("labels");
        assert_eq!(function["space_size"].as_u64(), Some(labels.len() as u64));
        labels
            .iter()
            .map(|l| parameters(l.as_str().expect("a label")).expect("a label of the space"))
            .collect()
    }

    /// Static shared memory of a tile of `bytes`-byte elements.
    fn shared_bytes(tile: u32, pad: u32, bytes: u32) -> u32 {
        tile * (tile + pad) * bytes
    }

    #[test]
    fn the_space_is_the_points_that_fit_the_limits() {
        let space = space();
        assert_eq!(space.len(), 28);
        // Every point respects the limits the requires stand for...
        for &(tile, rows, pad) in &space {
            let label = format!("tile_{tile}.rows_{rows}.pad_{pad}");
            assert_eq!(tile % rows, 0, "{label}");
            assert!(tile * rows <= MAX_THREADS_PER_BLOCK, "{label}");
            assert!(tile * rows >= 64, "{label}");
            assert!(shared_bytes(tile, pad, 8) <= STATIC_SHARED_LIMIT, "{label}");
            assert!(shared_bytes(tile, pad, 4) <= STATIC_SHARED_LIMIT, "{label}");
        }
        // ...and every point of the cross product that does is in the space.
        let mut expected = Vec::new();
        for tile in [8, 16, 32, 64, 128] {
            for rows in [1, 2, 4, 8, 16, 32] {
                for pad in [0, 1] {
                    if rows <= tile
                        && (64..=1024).contains(&(tile * rows))
                        && shared_bytes(tile, pad, 8) <= STATIC_SHARED_LIMIT
                    {
                        expected.push((tile, rows, pad));
                    }
                }
            }
        }
        let mut sorted = space.clone();
        sorted.sort_unstable();
        expected.sort_unstable();
        assert_eq!(sorted, expected);
        // Tile 128 is the one that shared memory drops: 128² floats are 64 KiB.
        assert!(space.iter().all(|&(tile, _, _)| tile <= 64));
        assert!(shared_bytes(128, 0, 4) > STATIC_SHARED_LIMIT);
        assert!(space.contains(&(8, 8, 1)) && space.contains(&(64, 16, 1)));
        // Base is a point of the space.
        assert!(space.contains(&parameters("base").expect("base")));
    }

    #[test]
    fn base_is_the_textbook_shape() {
        assert_eq!(
            TRANSPOSE_PARAMS,
            [("tile", "32"), ("rows", "8"), ("pad", "1")]
        );
        assert_eq!(parameters("base").expect("base"), (32, 8, 1));
    }

    #[test]
    fn labels_parse_into_parameters_and_defines() {
        assert_eq!(
            parameters("tile_64.rows_16.pad_0").expect("a label of the space"),
            (64, 16, 0)
        );
        assert!(parameters("tile_64.rows_16").is_err());
        assert!(parameters("tile_64.rows_16.pad_0.extra_1").is_err());
        // The defines and their order before the kernel handle: the kernel cache's keys stay.
        let d = defines("double", (64, 16, 0));
        let pairs: Vec<(&str, &str)> = d.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("VALUE_T", "double"),
                ("TILE", "64"),
                ("BLOCK_ROWS", "16"),
                ("PAD", "0")
            ]
        );
        for name in ["VALUE_T", "TILE", "BLOCK_ROWS", "PAD"] {
            assert!(SOURCE.contains(name), "{name}");
        }
        assert!(SOURCE.contains("extern \"C\" __global__"));
        assert!(SOURCE.contains("__launch_bounds__(TILE * BLOCK_ROWS)"));
    }

    #[test]
    fn the_grid_covers_every_tile() {
        let shape = |rows, cols, tile, block_rows| {
            let c = launch_config(rows, cols, tile, block_rows).expect("a valid shape");
            (c.grid_dim, c.block_dim, c.shared_mem_bytes)
        };
        assert_eq!(shape(1024, 1024, 32, 8), ((32, 32, 1), (32, 8, 1), 0));
        assert_eq!(shape(16384, 16384, 64, 16), ((256, 256, 1), (64, 16, 1), 0));
        // Sides that are not multiples of the tile: a partial tile at each far edge.
        assert_eq!(shape(1000, 777, 64, 4), ((13, 16, 1), (64, 4, 1), 0));
        assert_eq!(shape(33, 1, 32, 2), ((1, 2, 1), (32, 2, 1), 0));
        assert_eq!(shape(1, 1, 8, 8), ((1, 1, 1), (8, 8, 1), 0));
        assert!(launch_config(0, 5, 32, 8).is_err());
        assert!(launch_config(5, 5, 0, 8).is_err());
        assert!(launch_config(5, 5, 8, 0).is_err());
        assert!(launch_config(MAX_SIDE + 1, 1, 32, 8).is_err());
        // Every element is in exactly one tile.
        for (rows, cols, tile) in [(1000, 777, 64), (31, 33, 32), (8, 9, 8)] {
            let c = launch_config(rows, cols, tile, 1).expect("a valid shape");
            let t = tile as usize;
            assert!(c.grid_dim.0 as usize * t >= cols && (c.grid_dim.0 as usize - 1) * t < cols);
            assert!(c.grid_dim.1 as usize * t >= rows && (c.grid_dim.1 as usize - 1) * t < rows);
        }
    }

    #[test]
    fn the_host_reference_transposes() {
        let input: Vec<u32> = (0..6).collect();
        // [[0 1 2] [3 4 5]] → [[0 3] [1 4] [2 5]]
        assert_eq!(reference_transpose(&input, 2, 3), [0, 3, 1, 4, 2, 5]);
        assert_eq!(reference_transpose(&input, 1, 6), input);
        let twice = reference_transpose(&reference_transpose(&input, 2, 3), 3, 2);
        assert_eq!(twice, input);
    }

    #[test]
    fn the_test_data_is_exact_non_zero_and_checkable() {
        for (rows, cols) in [(1, 1), (3, 5), (37, 64), (130, 7)] {
            let input32 = input::<f32>(rows, cols);
            assert_eq!(input32.len(), rows * cols);
            for r in 0..rows {
                for c in 0..cols {
                    let v = input_value(r, c);
                    assert!((1.0..=(1u32 << 23) as f32).contains(&v));
                    // Below 2^24: an integer f32 holds exactly, and so does f64.
                    assert_eq!(v, v.trunc());
                    assert_eq!(input32[r * cols + c], v);
                }
            }
            let input64 = input::<f64>(rows, cols);
            let out = reference_transpose(&input64, rows, cols);
            assert_eq!(check_transposed(&out, rows, cols), Ok(()));
            let out32 = reference_transpose(&input32, rows, cols);
            assert_eq!(check_transposed(&out32, rows, cols), Ok(()));
        }
        // An untransposed square copy, a swapped pair and a short output are caught.
        let square = input::<f64>(16, 16);
        assert!(check_transposed(&square, 16, 16).is_err());
        let mut out = reference_transpose(&square, 16, 16);
        out.swap(17, 18);
        let e = check_transposed(&out, 16, 16).expect_err("a swapped pair");
        assert!(e.contains("out[1][1]") || e.contains("out[1][2]"), "{e}");
        assert!(check_transposed(&out[..10], 16, 16).is_err());
        // Hashed: hardly any element equals its mirror image.
        let same = (0..64)
            .flat_map(|r| (0..r).map(move |c| (r, c)))
            .filter(|&(r, c)| input_value(r, c) == input_value(c, r))
            .count();
        assert!(same <= 1, "{same}");
    }

    #[test]
    fn the_device_s_input_maker_compiles_for_both_types_where_nvrtc_is_installed() {
        for value_t in ["float", "double"] {
            match FILL_INPUT.compiles_for(&[], "base", &[("VALUE_T", value_t)], 90) {
                Ok(true) => {}
                Ok(false) => return skipped("needs NVRTC (the CUDA toolkit), which is not loaded"),
                Err(e) => panic!("fill_input does not compile for {value_t}: {e}"),
            }
        }
        // The device's hash is the host's: the same constants and shifts, in that order.
        let maker = include_str!("input.cu");
        for constant in [
            "0x9E3779B97F4A7C15",
            "0xC2B2AE3D27D4EB4F",
            "h >> 29",
            "0xBF58476D1CE4E5B9",
            "h >> 32",
            "(h >> 41) + 1",
        ] {
            assert!(maker.contains(constant), "{constant}");
        }
    }

    #[test]
    fn nvrtc_compiles_every_point_for_f32_and_f64_and_rejects_tile_128() {
        use gputune_runtime::backend::cuda::compiles_for;
        use gputune_runtime::Error;
        let space = space();
        for &point in &space {
            for value_t in ["float", "double"] {
                let defines = defines(value_t, point);
                let defines: Vec<(&str, String)> = defines
                    .iter()
                    .map(|(n, v)| (n.as_str(), v.clone()))
                    .collect();
                match compiles_for(SOURCE, &defines, 90) {
                    Ok(true) => {}
                    // NVRTC is part of the CUDA toolkit, which CI does not have.
                    Ok(false) => {
                        return skipped("needs NVRTC (the CUDA toolkit), which is not installed")
                    }
                    Err(e) => panic!("{defines:?} does not compile: {e}"),
                }
            }
        }
        // Outside the space, the kernel's own checks reject what the requires leave out.
        for (value_t, point) in [("float", (128, 8, 1)), ("double", (64, 3, 1))] {
            let defines = defines(value_t, point);
            let defines: Vec<(&str, String)> = defines
                .iter()
                .map(|(n, v)| (n.as_str(), v.clone()))
                .collect();
            match compiles_for(SOURCE, &defines, 90) {
                Err(Error::Compile(log)) => assert!(
                    log.contains("48 KiB") || log.contains("must divide"),
                    "{log}"
                ),
                other => panic!("{defines:?} compiled: {other:?}"),
            }
        }
    }
}

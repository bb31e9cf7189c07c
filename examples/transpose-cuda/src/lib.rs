//! A 2-D matrix transpose in CUDA C++, tiled through shared memory and tuned by gputune:
//! [`transpose`] is compiled by NVRTC with its tuning parameters (tile side, rows of threads
//! per block, padding of the shared tile) as `-D` defines.
//!
//! Unlike a 1-D kernel's, this space is not a hypercube: a block has one thread per tile
//! column and `rows` rows of threads, so `tile · rows` is bounded by CUDA's 1024 threads
//! per block, and the tile lives in static shared memory, which a block may hold at most
//! 48 KiB of. The `require`s of [`transpose`] cut the cross product down to the points that
//! can run.
//!
//! Compilation goes through the runtime's kernel cache (once per process, and on disk
//! across processes); [`precompile`] starts compiling every variant a bench process will run
//! on the CPU's cores, so that the GPU measures while they compile. The host helpers
//! ([`fill_input`], [`check_transposed`], [`reference_transpose`]) make and check test data
//! on all cores: a 16384² matrix has 2^28 elements.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gputune_macros::tune;
use gputune_runtime::backend::cuda::{CudaHandles, LaunchLimits, Precompile};
use gputune_runtime::cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use gputune_runtime::tuned::{self, Variant};
use gputune_runtime::verify::DeviceElement;
use gputune_runtime::BoxError;

/// The kernel's CUDA C++ source.
pub const SOURCE: &str = include_str!("transpose.cu");

/// Static shared memory a block may hold, in bytes (48 KiB on every CUDA architecture; more
/// needs dynamic shared memory and an opt-in).
pub const STATIC_SHARED_LIMIT: u32 = 48 * 1024;

/// Threads a block may have on every CUDA architecture.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

/// The largest matrix side [`transpose`] takes: the kernel indexes with 32-bit unsigned
/// row and column numbers and adds up to a tile to them.
pub const MAX_SIDE: usize = 1 << 31;

/// An element type the kernel is compiled for (and whose outputs verify on the GPU).
pub trait Element:
    DeviceRepr
    + DeviceElement
    + ValidAsZeroBits
    + Copy
    + Default
    + PartialEq
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
    /// The CUDA C++ type name.
    const CUDA_TYPE: &'static str;
    /// Converts from `f64` (test data).
    fn from_f64(v: f64) -> Self;
    /// Converts to `f64` (checking).
    fn to_f64(self) -> f64;
}

impl Element for f32 {
    const CUDA_TYPE: &'static str = "float";
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Element for f64 {
    const CUDA_TYPE: &'static str = "double";
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

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
/// padding. The kernel of each variant is compiled on its first call in a process (or found
/// in the kernel cache) and reused after that.
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
    Transpose::get::<T>(stream, TILE as u32, ROWS as u32, PAD as u32)?
        .launch(stream, input, output, rows, cols)
}

/// The defines that compile the kernel for `T` at one parameter point: the one place that
/// spells them, so that [`precompile`] fills exactly the cache entries [`transpose`] reads.
pub fn defines<T: Element>(tile: u32, block_rows: u32, pad: u32) -> Vec<(&'static str, String)> {
    vec![
        ("VALUE_T", T::CUDA_TYPE.to_string()),
        ("TILE", tile.to_string()),
        ("BLOCK_ROWS", block_rows.to_string()),
        ("PAD", pad.to_string()),
    ]
}

/// The parameters `(tile, rows, pad)` of a label of [`transpose`] (`tile_32.rows_8.pad_1`,
/// or `base`).
pub fn parameters(label: &str) -> Result<(u32, u32, u32), gputune_runtime::Error> {
    let v = Variant::parse(label, TRANSPOSE_PARAMS)?;
    Ok((v.get("tile")?, v.get("rows")?, v.get("pad")?))
}

/// Starts compiling, in the background, the kernels for `T` of every variant of
/// [`transpose`] this process was asked to run (`--variant`), base first (verification runs
/// it in every state), then in the order they run. `None` when no variant was requested: the
/// production choice is one kernel, compiled on first use.
pub fn precompile<T: Element>(cuda: &CudaHandles) -> Result<Option<Precompile>, BoxError> {
    let labels = tuned::to_prepare("transpose");
    if labels.is_empty() {
        return Ok(None);
    }
    let sets = labels
        .iter()
        .map(|label| {
            let (tile, block_rows, pad) = parameters(label)?;
            Ok(defines::<T>(tile, block_rows, pad))
        })
        .collect::<Result<Vec<_>, gputune_runtime::Error>>()?;
    Ok(Some(cuda.precompile(SOURCE, &sets)?))
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
    if tile == 0 || block_rows == 0 {
        return Err(format!("tile ({tile}) and rows ({block_rows}) must be positive").into());
    }
    if rows == 0 || cols == 0 {
        return Err(format!("a {rows} × {cols} matrix is empty: nothing to launch").into());
    }
    if rows > MAX_SIDE || cols > MAX_SIDE {
        return Err(format!(
            "a {rows} × {cols} matrix has a side over {MAX_SIDE}, more than the kernel indexes"
        )
        .into());
    }
    let tiles = |n: usize| u32::try_from(n.div_ceil(tile as usize)).unwrap_or(u32::MAX);
    Ok(LaunchConfig {
        grid_dim: (tiles(cols), tiles(rows), 1),
        block_dim: (tile, block_rows, 1),
        shared_mem_bytes: 0,
    })
}

/// The transpose kernel compiled for one element type and one parameter point.
#[derive(Debug, Clone)]
pub struct Transpose {
    function: CudaFunction,
    /// Read once when compiled: checking a launch against them is then arithmetic, cheap
    /// enough for every call in a timed loop.
    limits: LaunchLimits,
    tile: u32,
    block_rows: u32,
}

impl Transpose {
    /// Compiles the kernel for `T` with `tile × tile` tiles, blocks of `tile × block_rows`
    /// threads and `pad` elements of padding per tile row.
    pub fn compile<T: Element>(
        cuda: &CudaHandles,
        tile: u32,
        block_rows: u32,
        pad: u32,
    ) -> Result<Transpose, BoxError> {
        if tile == 0 || block_rows == 0 || tile % block_rows != 0 {
            return Err(
                format!("rows ({block_rows}) must be positive and divide tile ({tile})").into(),
            );
        }
        let module = cuda.compile(SOURCE, &defines::<T>(tile, block_rows, pad))?;
        let function = module.load_function("transpose")?;
        let limits = LaunchLimits::of(&function)?;
        Ok(Transpose {
            function,
            limits,
            tile,
            block_rows,
        })
    }

    /// [`Transpose::compile`] on `stream`'s context, once per context, type and point per
    /// process: `transpose` runs inside timed loops, where even a cache lookup by source text
    /// would cost more than a launch of a small kernel.
    pub fn get<T: Element>(
        stream: &Arc<CudaStream>,
        tile: u32,
        block_rows: u32,
        pad: u32,
    ) -> Result<Transpose, BoxError> {
        type Compiled = HashMap<(usize, &'static str, u32, u32, u32), Transpose>;
        static COMPILED: Mutex<Option<Compiled>> = Mutex::new(None);
        let key = (
            stream.context().cu_ctx() as usize,
            T::CUDA_TYPE,
            tile,
            block_rows,
            pad,
        );
        // A poisoned lock only means a thread panicked while inserting; the map is whole.
        let lock = || COMPILED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = lock().get_or_insert_with(HashMap::new).get(&key) {
            return Ok(t.clone());
        }
        let cuda = CudaHandles {
            context: stream.context().clone(),
            stream: stream.clone(),
        };
        let compiled = Transpose::compile::<T>(&cuda, tile, block_rows, pad)?;
        lock()
            .get_or_insert_with(HashMap::new)
            .insert(key, compiled.clone());
        Ok(compiled)
    }

    /// The launch shape for a `rows × cols` input (see [`launch_config`]).
    pub fn config(&self, rows: usize, cols: usize) -> Result<LaunchConfig, BoxError> {
        launch_config(rows, cols, self.tile, self.block_rows)
    }

    /// Enqueues `output = transpose(input)` on `stream`, for a `rows × cols` input. An empty
    /// matrix launches nothing; a launch over the kernel's or the device's limits is
    /// [`gputune_runtime::Error::InvalidLaunch`] (recorded `invalid` by a search), not a
    /// failed launch.
    pub fn launch<T: Element>(
        &self,
        stream: &Arc<CudaStream>,
        input: &CudaSlice<T>,
        output: &mut CudaSlice<T>,
        rows: usize,
        cols: usize,
    ) -> Result<(), BoxError> {
        let n = rows
            .checked_mul(cols)
            .ok_or_else(|| format!("a {rows} × {cols} matrix has more elements than memory"))?;
        if input.len() < n || output.len() < n {
            return Err(format!(
                "a {rows} × {cols} transpose needs {n} elements in and out, but the input holds \
                 {} and the output {}",
                input.len(),
                output.len()
            )
            .into());
        }
        if n == 0 {
            return Ok(());
        }
        let config = self.config(rows, cols)?;
        self.limits.check(&config)?;
        // Both fit: `launch_config` checked the sides against MAX_SIDE.
        let (rows32, cols32) = (rows as u32, cols as u32);
        let mut builder = stream.launch_builder(&self.function);
        builder.arg(input).arg(output).arg(&rows32).arg(&cols32);
        // SAFETY: the argument list matches `transpose(const T*, T*, unsigned, unsigned)` in
        // transpose.cu; the kernel reads only input[r * cols + c] and writes only
        // output[c * rows + r] for r < rows and c < cols, below n, which both slices hold.
        unsafe { builder.launch(config) }?;
        Ok(())
    }
}

/// Input element `(r, c)`: non-zero, index-dependent and hashed, so that an element moved
/// to the wrong place (a transposition that is off, an untransposed copy, a swapped pair)
/// almost never lands on its own value; an integer in `1..=2^23`, exactly representable in
/// `f32` and `f64`.
pub fn input_value(r: usize, c: usize) -> f64 {
    let mut h = (r as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (c as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 29;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 32;
    ((h >> 41) + 1) as f64
}

/// Lines (rows or columns) per band so that `lines` lines split into about one band per core.
fn band_lines(lines: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    lines.div_ceil(cores).max(1)
}

/// Joins a scoped thread, passing its panic on (test data generation only panics on a bug).
fn join<R>(handle: std::thread::ScopedJoinHandle<'_, R>) -> R {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// The `rows × cols` input matrix ([`input_value`]), row-major, generated on all cores.
pub fn fill_input<T: Element>(rows: usize, cols: usize) -> Vec<T> {
    let n = rows * cols;
    let mut v: Vec<T> = Vec::with_capacity(n);
    if n == 0 {
        return v;
    }
    let band = band_lines(rows);
    std::thread::scope(|s| {
        let handles: Vec<_> = v.spare_capacity_mut()[..n]
            .chunks_mut(band * cols)
            .enumerate()
            .map(|(b, chunk)| {
                s.spawn(move || {
                    let first = b * band;
                    for (i, slot) in chunk.iter_mut().enumerate() {
                        slot.write(T::from_f64(input_value(first + i / cols, i % cols)));
                    }
                })
            })
            .collect();
        handles.into_iter().for_each(join);
    });
    // SAFETY: the chunks cover the first n slots of the spare capacity, and every slot of
    // every chunk was written by a thread that has been joined.
    unsafe { v.set_len(n) };
    v
}

/// Whether `out` is the `cols × rows` transpose of the `rows × cols` matrix of
/// [`input_value`]s: `out[c · rows + r] == input_value(r, c)` exactly. Checked on all cores;
/// `Err` names the first wrong element.
pub fn check_transposed<T: Element>(out: &[T], rows: usize, cols: usize) -> Result<(), String> {
    let n = rows * cols;
    if out.len() < n {
        return Err(format!(
            "{} output elements for a {rows} × {cols} matrix",
            out.len()
        ));
    }
    if n == 0 {
        return Ok(());
    }
    // Bands of output rows, which are input columns.
    let band = band_lines(cols);
    let first_wrong = std::thread::scope(|s| {
        let handles: Vec<_> = (0..cols)
            .step_by(band)
            .map(|c0| {
                s.spawn(move || {
                    (c0..(c0 + band).min(cols)).find_map(|c| {
                        (0..rows).find_map(|r| {
                            let (got, want) = (out[c * rows + r], T::from_f64(input_value(r, c)));
                            (got != want).then(|| {
                                format!("out[{c}][{r}] = {got:?}, but in[{r}][{c}] = {want:?}")
                            })
                        })
                    })
                })
            })
            .collect();
        handles.into_iter().map(join).collect::<Vec<_>>()
    });
    match first_wrong.into_iter().flatten().next() {
        Some(wrong) => Err(format!("wrong transpose: {wrong}")),
        None => Ok(()),
    }
}

/// The transpose of the `rows × cols` row-major `input`, on the host: the reference the
/// tests check the helpers against.
pub fn reference_transpose<T: Copy>(input: &[T], rows: usize, cols: usize) -> Vec<T> {
    (0..cols)
        .flat_map(|c| (0..rows).map(move |r| input[r * cols + c]))
        .collect()
}

#[cfg(test)]
mod tests {
    /// Says on stderr, past libtest's capture (so it shows without `--nocapture` too), that the
    /// running test checked nothing on this machine: a pass that returned early must not read as
    /// a check that passed.
    fn skipped(why: &str) {
        use std::io::Write;
        let test = std::thread::current().name().unwrap_or("test").to_owned();
        let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
    }
    use super::*;

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
        assert_eq!(
            defines::<f64>(64, 16, 0),
            [
                ("VALUE_T", "double".to_string()),
                ("TILE", "64".to_string()),
                ("BLOCK_ROWS", "16".to_string()),
                ("PAD", "0".to_string())
            ]
        );
        assert_eq!(
            defines::<f32>(32, 8, 1)[0],
            ("VALUE_T", "float".to_string())
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
            let input = fill_input::<f32>(rows, cols);
            assert_eq!(input.len(), rows * cols);
            for r in 0..rows {
                for c in 0..cols {
                    let v = input_value(r, c);
                    assert!(v >= 1.0 && v <= f64::from(1u32 << 23));
                    assert_eq!(input[r * cols + c].to_f64(), v, "exact in f32");
                }
            }
            let input64 = fill_input::<f64>(rows, cols);
            let out = reference_transpose(&input64, rows, cols);
            assert_eq!(check_transposed(&out, rows, cols), Ok(()));
            let out32 = reference_transpose(&input, rows, cols);
            assert_eq!(check_transposed(&out32, rows, cols), Ok(()));
        }
        // An untransposed square copy, a swapped pair and a short output are caught.
        let input = fill_input::<f64>(16, 16);
        assert!(check_transposed(&input, 16, 16).is_err());
        let mut out = reference_transpose(&input, 16, 16);
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
    fn nvrtc_compiles_every_point_for_f32_and_f64_and_rejects_tile_128() {
        use gputune_runtime::backend::cuda::compiles_for;
        use gputune_runtime::Error;
        let space = space();
        for &(tile, rows, pad) in &space {
            for defines in [
                defines::<f32>(tile, rows, pad),
                defines::<f64>(tile, rows, pad),
            ] {
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
        for defines in [defines::<f32>(128, 8, 1), defines::<f64>(64, 3, 1)] {
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

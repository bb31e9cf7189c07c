//! gputune's winners in candle (the `tuned` feature, built by `tuned/` against the patched
//! candle): the choosers that candle-nn's and candle-core's launch hooks call, answered by
//! the production lookups of `examples/candle-ops` (the winners `gputune.toml` applies for the
//! running GPU and the launch's shape, else candle's own launch).

use std::collections::BTreeMap;
use std::sync::Mutex;

use candle_core::quantized::fast_mmvq::{self, PlainLauncher};
use candle_core::quantized::GgmlDType;
use candle_core::DType;
use gputune_example_candle_ops as ops;
use ops::mmvq::{Matvec, Q4K, Q8_0};

/// A launch the choosers were asked for: the kernel, its type and its shape.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Asked {
    /// `rmsnorm`, `layernorm`, `softmax` or `mmvq_q4k`, `mmvq_q8_0`.
    pub kernel: String,
    /// candle's dtype of the data (of the output, for `mmvq_*`).
    pub dtype: String,
    /// Rows × columns (× batch for `mmvq_*`).
    pub shape: Vec<usize>,
}

/// What the choosers answered for each distinct launch, and how often they were asked:
/// evidence that the hooks ran, and which launches the winners changed.
static ASKED: Mutex<BTreeMap<Asked, (String, u64)>> = Mutex::new(BTreeMap::new());

fn note(asked: Asked, answer: impl FnOnce() -> String) {
    // A poisoned map only loses the record; the launch goes on.
    if let Ok(mut map) = ASKED.lock() {
        map.entry(asked).or_insert_with(|| (answer(), 0)).1 += 1;
    }
}

/// Every distinct launch the choosers were asked for, with their answer and the count.
pub fn asked() -> Vec<(Asked, String, u64)> {
    ASKED
        .lock()
        .map(|m| {
            m.iter()
                .map(|(k, (a, n))| (k.clone(), a.clone(), *n))
                .collect()
        })
        .unwrap_or_default()
}

/// Registers both choosers; an error if something registered one before.
pub fn register() -> anyhow::Result<()> {
    anyhow::ensure!(
        candle_nn::ops::set_cuda_launch_chooser(row_launch),
        "candle-nn's launch chooser was set already"
    );
    anyhow::ensure!(
        fast_mmvq::set_launcher_chooser(matvec_launcher),
        "candle-core's matrix-vector launcher chooser was set already"
    );
    Ok(())
}

/// The lookup's `(threads a row, rows a block)` for a row-wise kernel of candle-nn, with the
/// norms' 0 threads (candle's rule) spelled out; `None` for kernels and types it has none for.
pub fn row_shape(kernel: &str, dtype: DType, rows: usize, cols: usize) -> Option<(u32, u32)> {
    let shape = (rows, cols);
    let s = match (kernel, dtype) {
        ("rmsnorm", DType::F32) => ops::rmsnorm::<ops::F32>(shape),
        ("rmsnorm", DType::BF16) => ops::rmsnorm::<ops::BF16>(shape),
        ("rmsnorm", DType::F16) => ops::rmsnorm::<ops::F16>(shape),
        ("layernorm", DType::F32) => ops::layernorm::<ops::F32>(shape),
        ("layernorm", DType::BF16) => ops::layernorm::<ops::BF16>(shape),
        ("layernorm", DType::F16) => ops::layernorm::<ops::F16>(shape),
        ("softmax", DType::F32) => ops::softmax::<ops::F32>(shape),
        ("softmax", DType::BF16) => ops::softmax::<ops::BF16>(shape),
        ("softmax", DType::F16) => ops::softmax::<ops::F16>(shape),
        _ => return None,
    };
    let threads = match (kernel, s.threads) {
        ("rmsnorm" | "layernorm", 0) => ops::candle_norm_block(cols),
        (_, t) => t,
    };
    Some((threads, s.rows))
}

/// candle-nn's chooser: [`row_shape`], noted.
fn row_launch(kernel: &'static str, dtype: DType, rows: usize, cols: usize) -> Option<(u32, u32)> {
    let answer = row_shape(kernel, dtype, rows, cols);
    note(
        Asked {
            kernel: kernel.to_string(),
            dtype: dtype.as_str().to_string(),
            shape: vec![rows, cols],
        },
        || format!("{answer:?}"),
    );
    answer
}

/// The lookup's launcher for candle's matrix-vector product of `w` weights (rows × cols)
/// and `batch` vectors into `out`; `None` (candle's own) where the lookups have none: only
/// Q4_K and Q8_0 weights with f32 output are built, and a shape the kernels cannot take
/// (the lookup's error) keeps candle's launch, which decides what to do with it.
pub fn matvec(
    w: GgmlDType,
    out: DType,
    rows: usize,
    cols: usize,
    batch: usize,
) -> Option<Result<PlainLauncher, String>> {
    let shape = Matvec { rows, cols, batch };
    let found = match (w, out) {
        (GgmlDType::Q4K, DType::F32) => ops::mmvq::mmvq::<Q4K>(shape),
        (GgmlDType::Q8_0, DType::F32) => ops::mmvq::mmvq::<Q8_0>(shape),
        _ => return None,
    };
    Some(found.map_err(|e| e.to_string()))
}

/// candle-core's chooser: [`matvec`], noted (a lookup error is noted as the answer, and
/// candle's launcher runs).
fn matvec_launcher(
    w: GgmlDType,
    out: DType,
    rows: usize,
    cols: usize,
    batch: usize,
) -> Option<PlainLauncher> {
    let found = matvec(w, out, rows, cols, batch);
    note(
        Asked {
            kernel: format!("mmvq_{w:?}").to_lowercase(),
            dtype: out.as_str().to_string(),
            shape: vec![rows, cols, batch],
        },
        || match &found {
            None => "None".to_string(),
            Some(Ok(_)) => "gputune's launcher".to_string(),
            Some(Err(e)) => format!("lookup failed, candle's launcher: {e}"),
        },
    );
    found.and_then(Result::ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Without a gputune.toml entry for this machine the lookups answer base: candle's own
    // launch, which the mapping must turn back into candle's numbers.

    #[test]
    fn the_norms_map_every_dtype_to_candles_launch() {
        for kernel in ["rmsnorm", "layernorm"] {
            for dtype in [DType::F32, DType::BF16, DType::F16] {
                assert_eq!(row_shape(kernel, dtype, 512, 4096), Some((1024, 1)));
                assert_eq!(row_shape(kernel, dtype, 1, 768), Some((32, 1)));
            }
        }
    }

    #[test]
    fn the_softmax_maps_every_dtype_to_one_warp_a_row() {
        for dtype in [DType::F32, DType::BF16, DType::F16] {
            assert_eq!(row_shape("softmax", dtype, 32 * 512, 512), Some((32, 1)));
        }
    }

    #[test]
    fn other_kernels_and_types_keep_candles_launch() {
        assert_eq!(row_shape("rmsnorm", DType::F64, 1, 4096), None);
        assert_eq!(row_shape("softmax", DType::U32, 1, 4096), None);
        assert_eq!(row_shape("rope", DType::F32, 1, 4096), None);
    }

    #[test]
    fn only_q4k_and_q8_0_with_f32_output_have_launchers() {
        assert!(matches!(
            matvec(GgmlDType::Q4K, DType::F32, 4096, 4096, 1),
            Some(Ok(_))
        ));
        assert!(matches!(
            matvec(GgmlDType::Q8_0, DType::F32, 14336, 4096, 1),
            Some(Ok(_))
        ));
        assert!(matvec(GgmlDType::Q4K, DType::BF16, 4096, 4096, 1).is_none());
        assert!(matvec(GgmlDType::Q4K, DType::F16, 4096, 4096, 1).is_none());
        assert!(matvec(GgmlDType::Q6K, DType::F32, 4096, 4096, 1).is_none());
        // Nine tokens are past candle's kernels: the lookup says so, candle's launch runs.
        assert!(matches!(
            matvec(GgmlDType::Q4K, DType::F32, 4096, 4096, 9),
            Some(Err(_))
        ));
        assert!(matvec_launcher(GgmlDType::Q4K, DType::F32, 4096, 4096, 9).is_none());
    }

    #[test]
    fn the_choosers_note_what_they_were_asked() {
        assert_eq!(row_launch("rmsnorm", DType::BF16, 3, 4096), Some((1024, 1)));
        assert_eq!(row_launch("rmsnorm", DType::BF16, 3, 4096), Some((1024, 1)));
        let noted = asked();
        let (_, answer, count) = noted
            .iter()
            .find(|(a, ..)| a.kernel == "rmsnorm" && a.shape == [3, 4096])
            .unwrap();
        assert_eq!((answer.as_str(), *count), ("Some((1024, 1))", 2));
    }
}

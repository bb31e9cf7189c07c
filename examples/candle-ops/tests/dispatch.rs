//! The production dispatch of the winners `gputune.toml` applies (searched on an H200 on the
//! workloads llama-ops launched), checked without a GPU: `GPUTUNE_DEVICE` names the model whose
//! entries apply, and each lookup answers with its shape's winner, by every axis of the shape,
//! and with candle's own launch elsewhere. Its own test binary: the device is read once per
//! process.

use gputune_example_candle_ops::mmvq::{mmvq, Matvec, Q4K, Q8_0};
use gputune_example_candle_ops::{layernorm, rmsnorm, softmax, Shape, BF16, F32};
use gputune_runtime::tuned::{refresh, resolved};

/// What `function` ran in `call`: the dispatch reports the first resolution after a refresh.
fn ran<R>(function: &str, call: impl FnOnce() -> R) -> (R, String) {
    refresh(function);
    let out = call();
    (out, resolved(function).map(|r| r.label).unwrap_or_default())
}

#[test]
fn each_shape_runs_its_winner_on_the_gpu_it_won_on_and_candle_s_launch_elsewhere() {
    std::env::set_var("GPUTUNE_DEVICE", "NVIDIA H200");
    std::env::set_var("GPUTUNE_ARCH", "sm_90");
    // Nothing beat candle's norm and softmax launches (two rows a softmax block was faster,
    // and wrong: verify_failed), so they run candle's at every shape.
    assert_eq!(softmax::<BF16>((16384, 512)), Shape::CANDLE_SOFTMAX);
    assert_eq!(softmax::<F32>((32, 513)), Shape::CANDLE_SOFTMAX);
    assert_eq!(rmsnorm::<BF16>((512, 4096)), Shape::CANDLE_NORM);
    // BERT's f32 layer norm (768 columns, captured from candle-llama's BERT) takes 1024
    // threads a row at every shape (one entry); bf16's has none.
    let wide = Shape {
        threads: 1024,
        rows: 1,
    };
    assert_eq!(layernorm::<F32>((1, 768)), wide);
    assert_eq!(layernorm::<F32>((512, 768)), wide);
    assert_eq!(layernorm::<BF16>((512, 768)), Shape::CANDLE_NORM);

    // The vocabulary's matrix takes 2 warps and 2 rows a block, k and v's 1024 rows 8 warps;
    // the same 4096 columns at another height candle's launch. Q8_0's vocabulary matrix 4
    // warps and 2 rows, its k and v candle's.
    let launcher = |rows, cols| {
        ran("mmvq", || {
            mmvq::<Q4K>(Matvec {
                rows,
                cols,
                batch: 1,
            })
        })
    };
    let (vocabulary, label) = launcher(128256, 4096);
    let nvcc = match vocabulary {
        Ok(_) => true,
        Err(e) if e.to_string().contains("nvcc was not found") => false,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(label, "nwarps_2.rows_per_block_2");
    let (kv, label) = launcher(1024, 4096);
    assert_eq!(
        (kv.is_ok(), label.as_str()),
        (nvcc, "nwarps_8.rows_per_block_1")
    );
    let (down, label) = launcher(4096, 14336);
    assert_eq!((down.is_ok(), label.as_str()), (nvcc, "base"));
    let (q8, label) = ran("mmvq", || {
        mmvq::<Q8_0>(Matvec {
            rows: 128256,
            cols: 4096,
            batch: 1,
        })
    });
    assert_eq!(
        (q8.is_ok(), label.as_str()),
        (nvcc, "nwarps_4.rows_per_block_2")
    );
    let (q8_kv, label) = ran("mmvq", || {
        mmvq::<Q8_0>(Matvec {
            rows: 1024,
            cols: 4096,
            batch: 1,
        })
    });
    assert_eq!((q8_kv.is_ok(), label.as_str()), (nvcc, "base"));
    if !nvcc {
        gputune_runtime::skipped("the launchers' addresses need nvcc; the dispatch was checked");
    }
}

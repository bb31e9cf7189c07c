//! A half-precision matrix-vector product, `y = A·x` with `A` and `x` in bf16 or fp16 and `y`
//! in f32, tuned by gputune: a kernel kept in a `.cu` file that includes CUDA's headers
//! (`<cuda_bf16.h>`, `<cuda_fp16.h>`, cooperative groups) and a header of the crate
//! (`half_vec.cuh`), with a register limit among its tuning parameters. Written for the issue
//! "real kernels compile", as a newcomer would: no include path is written anywhere.

use std::sync::Arc;

use gputune_macros::{kernel, tune};
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::{Kernel, OptionRule};
use gputune_runtime::BoxError;

/// The product's kernel, with `half_vec.cuh` embedded; `maxrreg` is `--maxrregcount`.
pub static GEMV: Kernel =
    kernel!("src/gemv.cu", "gemv").option_params(&[("maxrreg", OptionRule::MaxRegisters)]);

/// The kernel that makes the inputs on the device.
static EIGHTHS: Kernel = kernel!("src/eighths.cu", "eighths");

/// The 16-bit float type of `A` and `x`, held as raw bits (`u16`) on the Rust side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    /// bfloat16 (`__nv_bfloat16`).
    Bf16,
    /// IEEE half precision (`__half`).
    F16,
}

impl Half {
    /// The CUDA C++ type, for the `VALUE_T` define.
    pub fn cuda_name(self) -> &'static str {
        match self {
            Half::Bf16 => "__nv_bfloat16",
            Half::F16 => "__half",
        }
    }

    /// The type named `bf16` or `f16`.
    pub fn from_name(name: &str) -> Result<Half, BoxError> {
        match name {
            "bf16" => Ok(Half::Bf16),
            "f16" => Ok(Half::F16),
            other => Err(format!("no 16-bit float type {other:?} (bf16 or f16)").into()),
        }
    }
}

/// `y = A·x` for a row-major `m`×`k` matrix `a` and a vector `x` of `half` values, `k` a
/// multiple of 256, enqueued on `stream`.
///
/// Tuned over threads per block (`tpb`), values per load (`vec`: 4, 8 or 16 bytes), rows per
/// warp (`rows`: each warp reuses its slice of `x` for that many rows) and the registers a
/// thread may use (`maxrreg`, `--maxrregcount`; 0 for no limit): 72 points.
#[tune(
    tpb = [64, 128, 256, 512],
    vec = [2, 4, 8],
    rows = [1, 2, 4],
    maxrreg = [0, 32],
    base(tpb = 256, vec = 4, rows = 1, maxrreg = 0)
)]
pub fn gemv(
    stream: &Arc<CudaStream>,
    half: Half,
    (a, x): (&CudaSlice<u16>, &CudaSlice<u16>),
    y: &mut CudaSlice<f32>,
    (m, k): (usize, usize),
) -> Result<(), BoxError> {
    if k % 256 != 0 || a.len() < m * k || x.len() < k || y.len() < m {
        return Err(format!(
            "gemv needs an m×k matrix, k values and m outputs, with k a multiple of 256 \
             (m = {m}, k = {k})"
        )
        .into());
    }
    if m == 0 {
        return Ok(());
    }
    let kernel = GEMV.get(TUNED, stream, &[("VALUE_T", half.cuda_name())])?;
    let rows_per_block = TPB / 32 * ROWS;
    let config = kernel.check(LaunchConfig {
        grid_dim: (u32::try_from(m.div_ceil(rows_per_block))?, 1, 1),
        block_dim: (TPB as u32, 1, 1),
        shared_mem_bytes: 0,
    })?;
    let (m, k) = (i32::try_from(m)?, i32::try_from(k)?);
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(a).arg(x).arg(y).arg(&m).arg(&k);
    // SAFETY: the arguments match gemv(const T*, const T*, float*, int, int) with T a 16-bit
    // type; it reads a[0..m·k] and x[0..k] and writes y[0..m], which the slices hold.
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// `out[i] = input[i] / 8` as `half` values: inputs (from integers 1 to 8) whose products and
/// sums of up to 2^16 terms are exact in f32.
pub fn eighths(
    stream: &Arc<CudaStream>,
    half: Half,
    input: &CudaSlice<u32>,
    out: &mut CudaSlice<u16>,
) -> Result<(), BoxError> {
    let n = input.len().min(out.len());
    if n == 0 {
        return Ok(());
    }
    let kernel = EIGHTHS.fixed(stream, &[("VALUE_T", half.cuda_name())])?;
    let config = kernel.check(LaunchConfig {
        grid_dim: (u32::try_from(n.div_ceil(256).min(65_535))?, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    })?;
    let n = i64::try_from(n)?;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(input).arg(out).arg(&n);
    // SAFETY: eighths(const unsigned*, T*, long long) touches indices below n, which both
    // slices hold.
    unsafe { launch.launch(config) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use gputune_runtime::skipped;

    /// Every label of the space, from the build script's manifest.
    fn labels() -> Vec<String> {
        let path = concat!(env!("OUT_DIR"), "/gputune/manifest.json");
        let text = std::fs::read_to_string(path).expect("the build script's manifest");
        let m: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        m["functions"][0]["labels"]
            .as_array()
            .expect("labels")
            .iter()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect()
    }

    #[test]
    fn the_header_is_embedded_and_the_register_limit_is_an_option() {
        let program = GEMV
            .program([("maxrreg", "32"), ("tpb", "256")])
            .expect("a program");
        assert_eq!(program.headers()[0].0, "half_vec.cuh");
        assert!(program.headers()[0].1.contains("load_floats"));
        assert_eq!(program.options(), ["--maxrregcount=32"]);
        let unlimited = GEMV.program([("maxrreg", "0")]).expect("a program");
        assert!(unlimited.options().is_empty());
    }

    #[test]
    fn points_of_every_shape_compile_in_both_precisions() {
        let labels = labels();
        assert_eq!(labels.len(), 72);
        // Each compilation takes about a second (cooperative groups' headers): every shape of
        // the inner loop (vec × rows) at base's block and register limit, both ends of the
        // other two parameters, in both precisions. The GPU search compiles all 144.
        let shapes = labels.iter().filter(|l| {
            (l.starts_with("tpb_256.") && l.ends_with("maxrreg_0"))
                || l.as_str() == "tpb_64.vec_8.rows_4.maxrreg_32"
                || l.as_str() == "tpb_512.vec_2.rows_1.maxrreg_32"
        });
        let shapes: Vec<&String> = shapes.collect();
        assert_eq!(shapes.len(), 11);
        for half in [Half::Bf16, Half::F16] {
            for label in &shapes {
                let extra = [("VALUE_T", half.cuda_name())];
                match GEMV.compiles_for(GEMV_PARAMS, label, &extra, 90) {
                    Ok(true) => {}
                    Ok(false) => return skipped("needs NVRTC (the CUDA toolkit), not installed"),
                    Err(e) => panic!("{label} ({half:?}) does not compile: {e}"),
                }
            }
        }
    }
}

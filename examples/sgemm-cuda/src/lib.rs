//! A tiled SGEMM, `C = A·B`, tuned by gputune: written from scratch on the kernel handle
//! (`gputune_runtime::kernel`), as a newcomer would.

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::Kernel;
use gputune_runtime::BoxError;

/// The CUDA C++ source of the kernel.
pub const SOURCE: &str = include_str!("sgemm.cu");

static SGEMM: Kernel = Kernel::new(SOURCE, "sgemm");

/// `c = a·b` for row-major `n`×`n` matrices (`n` a multiple of 128), enqueued on `stream`.
///
/// Tuned over the block tile (`bm`×`bn`), the slab depth `bk` and each thread's register tile
/// (`tm`×`tn`): 64 points. A point whose shared memory is over what a block may use without
/// opting in (48 KiB) is `invalid` on the GPU, as is one whose registers do not fit its block.
#[tune(
    bm = [64, 128], bn = [64, 128], bk = [8, 16, 32, 64], tm = [4, 8], tn = [4, 8],
    require((bm / tm) * (bn / tn) <= 1024),
    require((bm + bn) * bk * 4 <= 98304),
    base(bm = 64, bn = 64, bk = 16, tm = 4, tn = 4)
)]
pub fn sgemm(
    stream: &Arc<CudaStream>,
    (a, b): (&CudaSlice<f32>, &CudaSlice<f32>),
    c: &mut CudaSlice<f32>,
    n: usize,
) -> Result<(), BoxError> {
    if n % 128 != 0 || a.len() < n * n || b.len() < n * n || c.len() < n * n {
        return Err(
            format!("sgemm needs n×n matrices with n a multiple of 128, not n = {n}").into(),
        );
    }
    let kernel = SGEMM.get(TUNED, stream, &[])?;
    let config = kernel.check(LaunchConfig {
        grid_dim: ((n / BN) as u32, (n / BM) as u32, 1),
        block_dim: ((BM / TM * (BN / TN)) as u32, 1, 1),
        shared_mem_bytes: ((BM + BN) * BK * 4) as u32,
    })?;
    let n = i32::try_from(n)?;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(a).arg(b).arg(c).arg(&n);
    // SAFETY: the arguments match sgemm(const float*, const float*, float*, int), and every
    // index the kernel touches is below n·n, which all three slices hold (checked above).
    unsafe { launch.launch(config) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped(why: &str) {
        use std::io::Write;
        let test = std::thread::current().name().unwrap_or("test").to_owned();
        let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
    }

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
    fn the_space_has_64_points_and_each_compiles() {
        let labels = labels();
        assert_eq!(labels.len(), 64);
        for label in labels {
            let defines = SGEMM
                .label_defines(SGEMM_PARAMS, &label, &[])
                .expect("a label");
            let defines: Vec<(&str, String)> = defines
                .iter()
                .map(|(n, v)| (n.as_str(), v.clone()))
                .collect();
            match gputune_runtime::backend::cuda::compiles_for(SOURCE, &defines, 90) {
                Ok(true) => {}
                Ok(false) => {
                    return skipped("needs NVRTC (the CUDA toolkit), which is not installed")
                }
                Err(e) => panic!("{label} {defines:?} does not compile: {e}"),
            }
        }
    }
}

//! Launch-only tuning of a kernel an application ships: [`KERNELS`] is PTX text that the
//! application's build script made with nvcc (as `candle_kernels::REDUCE` is), and
//! [`softmax_rows`] launches its `softmax_rows` with the block size of the variant. The module
//! is handed to the driver once per process, as the application hands it; nothing is compiled
//! per variant, because the tuning parameter changes only the launch.

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::Kernel;
use gputune_runtime::BoxError;

/// The application's kernels as shipped: PTX text (empty where nvcc was missing at build).
pub const KERNELS: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

static SOFTMAX: Kernel = Kernel::ptx(KERNELS, "softmax_rows");

/// The row-wise softmax of the `rows × cols` matrix `x` into `y`, one block a row, enqueued
/// on `stream`. The application launches it with one warp a row (base); the block size is
/// tuned from one warp to a full block.
#[tune(tpb = [32, 64, 128, 256, 512, 1024], base(tpb = 32))]
pub fn softmax_rows(
    stream: &Arc<CudaStream>,
    x: &CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
    rows: usize,
    cols: usize,
) -> Result<(), BoxError> {
    if x.len() < rows * cols || y.len() < rows * cols {
        return Err("x and y hold fewer than rows × cols elements".into());
    }
    let kernel = SOFTMAX.get(TUNED, stream, &[])?;
    let config = kernel.check(LaunchConfig {
        grid_dim: (u32::try_from(rows)?, 1, 1),
        block_dim: (TPB as u32, 1, 1),
        shared_mem_bytes: 0,
    })?;
    let cols = i32::try_from(cols)?;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(y).arg(&cols);
    // SAFETY: softmax_rows(const float*, float*, int) reads and writes rows × cols elements,
    // which both slices hold.
    unsafe { launch.launch(config) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use gputune_runtime::skipped;

    #[test]
    fn the_shipped_module_holds_the_kernel_where_nvcc_built_it() {
        if KERNELS.is_empty() {
            return skipped("needs nvcc (the CUDA toolkit or PyPI's wheels) at build time");
        }
        assert_eq!(
            gputune_runtime::kernel::ptx_entries(KERNELS),
            ["softmax_rows"]
        );
    }
}

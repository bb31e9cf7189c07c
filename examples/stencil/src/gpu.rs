//! The CUDA variant: the sweep compiled by NVRTC once, launched with whatever block size the
//! autotuner hands out, or (through [`sweep`], under `#[tune]`) with a compile-time block size
//! for `cargo gputune search` to rank: the same kernel, tuned both ways, so the two choices can
//! be held against each other.

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::autotune::{self, Autotuner, AutotunerBuilder};
use gputune_runtime::backend::cuda::CudaHandles;
use gputune_runtime::cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use gputune_runtime::BoxError;

use crate::Shape;

/// The kernel's CUDA C++ source.
pub const SOURCE: &str = include_str!("jacobi.cu");

/// The autotuner name of the CUDA variant (its name in the cache).
pub const GPU_TUNER: &str = "jacobi-cuda";

/// Block sizes tried: 32 to 1024 in steps of 32 (whole warps), before clamping.
pub fn block_size_candidates() -> Vec<u32> {
    (32..=1024).step_by(32).collect()
}

/// The sweep kernel, loaded.
#[derive(Debug, Clone)]
pub struct GpuJacobi {
    function: CudaFunction,
    max_threads_per_block: u32,
}

impl GpuJacobi {
    /// Compiles the kernel for the device of `cuda` and reads its block-size limit.
    pub fn compile(cuda: &CudaHandles) -> Result<GpuJacobi, BoxError> {
        let module = cuda.compile(SOURCE, &[])?;
        let function = module.load_function("jacobi")?;
        let max_threads_per_block = autotune::max_threads_per_block(&function)?;
        Ok(GpuJacobi {
            function,
            max_threads_per_block,
        })
    }

    /// The largest block this kernel can be launched with on this device.
    pub fn max_threads_per_block(&self) -> u32 {
        self.max_threads_per_block
    }

    /// The autotuner for this kernel: [`block_size_candidates`] clamped to
    /// [`max_threads_per_block`](Self::max_threads_per_block), before its cache and logging
    /// are chosen.
    pub fn tuner(&self) -> AutotunerBuilder<u32> {
        Autotuner::builder(GPU_TUNER, block_size_candidates())
            .clamp_block_sizes(self.max_threads_per_block)
    }

    /// The launch shape of one sweep of `shape` with `block` threads per block.
    pub fn config(shape: Shape, block: u32) -> Result<LaunchConfig, BoxError> {
        let nx = u32::try_from(shape.nx)?;
        let ny = u32::try_from(shape.ny)?;
        if block == 0 || ny > 65_535 {
            return Err(format!(
                "cannot launch a {}x{} sweep with {block} threads per block (rows must be \
                 at most 65535 and blocks non-empty)",
                shape.nx, shape.ny
            )
            .into());
        }
        Ok(LaunchConfig {
            grid_dim: (nx.div_ceil(block).max(1), ny.max(1), 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        })
    }

    /// Enqueues one sweep of `src` into `dst` on `stream` with `block` threads per block.
    pub fn launch(
        &self,
        stream: &Arc<CudaStream>,
        shape: Shape,
        src: &CudaSlice<f32>,
        dst: &mut CudaSlice<f32>,
        block: u32,
    ) -> Result<(), BoxError> {
        if src.len() != shape.cells() || dst.len() != shape.cells() {
            return Err(format!(
                "buffers of {} and {} floats for a grid of {} cells",
                src.len(),
                dst.len(),
                shape.cells()
            )
            .into());
        }
        if block > self.max_threads_per_block {
            return Err(format!(
                "{block} threads per block exceeds this kernel's limit of {}",
                self.max_threads_per_block
            )
            .into());
        }
        if shape.cells() == 0 {
            return Ok(());
        }
        let config = Self::config(shape, block)?;
        let (nx, ny) = (u32::try_from(shape.nx)?, u32::try_from(shape.ny)?);
        let mut builder = stream.launch_builder(&self.function);
        builder.arg(src).arg(dst).arg(&nx).arg(&ny);
        // SAFETY: the arguments match `jacobi(const float*, float*, unsigned, unsigned)` in
        // jacobi.cu; both buffers hold nx * ny floats (checked above) and the kernel touches
        // only indices below that.
        unsafe { builder.launch(config) }?;
        Ok(())
    }
}

/// One sweep of `src` into `dst` with the variant's block size: the kernel the autotuner
/// tunes at run time, here a `#[tune]` function with the same 32 candidates.
#[tune(block = (32..=1024).step_by(32), base(block = 256))]
pub fn sweep(
    kernel: &GpuJacobi,
    stream: &Arc<CudaStream>,
    shape: Shape,
    src: &CudaSlice<f32>,
    dst: &mut CudaSlice<f32>,
) -> Result<(), BoxError> {
    kernel.launch(stream, shape, src, dst, BLOCK as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_whole_warps_up_to_1024() {
        let c = block_size_candidates();
        assert_eq!((c.len(), c.first(), c.last()), (32, Some(&32), Some(&1024)));
        assert!(c.iter().all(|b| b % 32 == 0));
    }

    #[test]
    fn the_grid_covers_every_row_and_column() {
        let shape = Shape { nx: 4096, ny: 100 };
        let c = GpuJacobi::config(shape, 96).map(|c| (c.grid_dim, c.block_dim));
        assert_eq!(c.ok(), Some(((43, 100, 1), (96, 1, 1))));
        assert!(GpuJacobi::config(shape, 0).is_err());
        assert!(GpuJacobi::config(Shape { nx: 8, ny: 70_000 }, 32).is_err());
        assert!(SOURCE.contains("extern \"C\" __global__ void jacobi"));
    }
}

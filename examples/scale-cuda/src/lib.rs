//! A memory-bound CUDA kernel, `y = a·x`, compiled by NVRTC with its tuning parameters
//! (items per thread, threads per block) as `-D` defines.

use std::sync::Arc;

use gputune_runtime::backend::cuda::CudaHandles;
use gputune_runtime::cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use gputune_runtime::BoxError;

/// The kernel's CUDA C++ source.
pub const SOURCE: &str = include_str!("scale.cu");

/// An element type the kernel is compiled for.
pub trait Element: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static {
    /// The CUDA C++ type name.
    const CUDA_TYPE: &'static str;
    /// Converts from `f64` (for test data and the scale factor).
    fn from_f64(v: f64) -> Self;
    /// Converts to `f64` (for checking).
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

/// The scale kernel compiled for one element type and one parameter point.
#[derive(Debug, Clone)]
pub struct Scale {
    function: CudaFunction,
    ipt: u32,
    tpb: u32,
}

impl Scale {
    /// Compiles the kernel for `T` with `ipt` items per thread and `tpb` threads per block.
    pub fn compile<T: Element>(cuda: &CudaHandles, ipt: u32, tpb: u32) -> Result<Scale, BoxError> {
        if ipt == 0 || tpb == 0 {
            return Err(format!("ipt ({ipt}) and tpb ({tpb}) must be positive").into());
        }
        let module = cuda.compile(
            SOURCE,
            &[
                ("VALUE_T", T::CUDA_TYPE.to_string()),
                ("IPT", ipt.to_string()),
                ("TPB", tpb.to_string()),
            ],
        )?;
        let function = module.load_function("scale")?;
        Ok(Scale { function, ipt, tpb })
    }

    /// The launch shape for `n` elements.
    pub fn config(&self, n: usize) -> LaunchConfig {
        let per_block = u64::from(self.ipt) * u64::from(self.tpb);
        let blocks = (n as u64).div_ceil(per_block).max(1);
        LaunchConfig {
            grid_dim: (u32::try_from(blocks).unwrap_or(u32::MAX), 1, 1),
            block_dim: (self.tpb, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Enqueues `y = a·x` on `stream`.
    pub fn launch<T: Element>(
        &self,
        stream: &Arc<CudaStream>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
        a: T,
    ) -> Result<(), BoxError> {
        let n = x.len().min(y.len());
        let per_block = u64::from(self.ipt) * u64::from(self.tpb);
        if (n as u64).div_ceil(per_block) > u64::from(u32::MAX) {
            return Err(format!(
                "{n} elements need more than 2^32 blocks at ipt={} tpb={}",
                self.ipt, self.tpb
            )
            .into());
        }
        let n64 = n as u64;
        let mut builder = stream.launch_builder(&self.function);
        builder.arg(x).arg(y).arg(&a).arg(&n64);
        // SAFETY: the argument list matches `scale(const T*, T*, T, unsigned long long)` in
        // scale.cu, and the kernel touches only indices below n, which both slices hold.
        unsafe { builder.launch(self.config(n)) }?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_covers_every_element() {
        // Needs no device: only the arithmetic of the launch shape.
        let shape = |n: usize, ipt: u64, tpb: u32| {
            let per_block = ipt * u64::from(tpb);
            ((n as u64).div_ceil(per_block).max(1), tpb)
        };
        assert_eq!(shape(1 << 20, 4, 256), (1024, 256));
        assert_eq!(shape(1000, 8, 128), (1, 128));
        assert_eq!(shape(1025, 1, 1024), (2, 1024));
        assert!(SOURCE.contains("extern \"C\" __global__"));
    }
}

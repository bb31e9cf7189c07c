//! A memory-bound CUDA kernel, `y = a·x`, tuned by gputune on the kernel handle
//! (`gputune_runtime::kernel`): [`scale`] is compiled by NVRTC with its tuning parameters
//! (items per thread, threads per block) and the element type as `-D` defines, every variant
//! of a bench process compiling in the background from the first call on.

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::{
    CudaSlice, CudaStream, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use gputune_runtime::kernel::{CudaType, Kernel};
use gputune_runtime::verify::DeviceElement;
use gputune_runtime::BoxError;

/// The kernel's CUDA C++ source.
pub const SOURCE: &str = include_str!("scale.cu");

static SCALE: Kernel = Kernel::new(SOURCE, "scale");

/// An element type the kernel is compiled for (`f32`, `f64`): one whose outputs verify on
/// the GPU and that holds the test data (halves of small integers) exactly.
pub trait Element:
    CudaType + DeviceElement + ValidAsZeroBits + Default + From<f32> + Into<f64>
{
}

impl<T: CudaType + DeviceElement + ValidAsZeroBits + Default + From<f32> + Into<f64>> Element
    for T
{
}

/// `y[i] = a·x[i]` for the first `min(x.len(), y.len())` elements, enqueued on `stream`.
///
/// Tuned: 5 items-per-thread values × 31 block sizes (64 to 1024 in steps of 32) = 155
/// variants; base is 4 items per thread in blocks of 256 threads.
#[tune(
    ipt = [1, 2, 4, 8, 16],
    tpb = (64..=1024).step_by(32),
    base(ipt = 4, tpb = 256)
)]
pub fn scale<T: Element>(
    stream: &Arc<CudaStream>,
    x: &CudaSlice<T>,
    y: &mut CudaSlice<T>,
    a: T,
) -> Result<(), BoxError> {
    let n = x.len().min(y.len());
    let kernel = SCALE.get(TUNED, stream, &[("VALUE_T", T::CUDA_NAME)])?;
    let config = kernel.check(LaunchConfig {
        grid_dim: (u32::try_from(n.div_ceil(IPT * TPB).max(1))?, 1, 1),
        block_dim: (TPB as u32, 1, 1),
        shared_mem_bytes: 0,
    })?;
    let n = n as u64;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(y).arg(&a).arg(&n);
    // SAFETY: the arguments match `scale(const T*, T*, T, unsigned long long)` in scale.cu,
    // and the kernel touches only indices below n, which both slices hold.
    unsafe { launch.launch(config) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameters_are_the_issue_s_space_and_base_and_become_defines() {
        assert_eq!(SCALE_PARAMS, [("ipt", "4"), ("tpb", "256")]);
        let defines = SCALE
            .label_defines(SCALE_PARAMS, "ipt_16.tpb_1024", &[("VALUE_T", "double")])
            .expect("a label of the space");
        let pairs: Vec<(&str, &str)> = defines
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [("VALUE_T", "double"), ("IPT", "16"), ("TPB", "1024")]
        );
        assert!(SOURCE.contains("extern \"C\" __global__"));
    }
}

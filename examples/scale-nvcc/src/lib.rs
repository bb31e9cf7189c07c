//! `y = a·x` through the nvcc path: `build.rs` compiles `src/scale.cu` with nvcc once per
//! variant the build compiles in (base and the applied winners in a production build; the
//! variants a search selects in a bench build), and [`scale`] launches its variant's image.
//! Nothing is compiled on the GPU host. The space is `examples/scale-cuda`'s, so the two
//! paths compare on the same kernel.

use std::sync::Arc;

use gputune_macros::{nvcc_kernel, tune};
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::Kernel;
use gputune_runtime::BoxError;

static SCALE: Kernel = nvcc_kernel!("src/scale.cu", "scale");

/// `y[i] = a·x[i]` for the first `min(x.len(), y.len())` elements, enqueued on `stream`.
///
/// Tuned: 5 items-per-thread values × 31 block sizes = 155 variants, base 4 × 256.
#[tune(
    ipt = [1, 2, 4, 8, 16],
    tpb = (64..=1024).step_by(32),
    base(ipt = 4, tpb = 256),
    size(Elements = x.len().min(y.len()))
)]
pub fn scale(
    stream: &Arc<CudaStream>,
    x: &CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
    a: f32,
) -> Result<(), BoxError> {
    let n = x.len().min(y.len());
    let kernel = SCALE.get(TUNED, stream, &[])?;
    let config = kernel.check(LaunchConfig {
        grid_dim: (u32::try_from(n.div_ceil(IPT * TPB).max(1))?, 1, 1),
        block_dim: (TPB as u32, 1, 1),
        shared_mem_bytes: 0,
    })?;
    let n = n as u64;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(y).arg(&a).arg(&n);
    // SAFETY: the arguments match `scale(const float*, float*, float, unsigned long long)`,
    // which touches only indices below n, which both slices hold.
    unsafe { launch.launch(config) }?;
    Ok(())
}

#[cfg(test)]
mod tests {

    use gputune_runtime::skipped;

    /// The build compiled base with nvcc (where nvcc is installed): its image holds the
    /// kernel under its name, for the architecture asked.
    #[test]
    fn the_build_compiled_base_with_nvcc_where_it_is_installed() {
        let images: &[gputune_runtime::kernel::NvccImage] =
            include!(concat!(env!("OUT_DIR"), "/gputune/nvcc/src_scale_cu.rs"));
        let base = images
            .iter()
            .find(|i| i.function == "scale" && i.values == "4\u{1f}256")
            .expect("base is always compiled in");
        if base.error.contains("nvcc was not found") {
            return skipped("needs nvcc (the CUDA toolkit or PyPI's wheels)");
        }
        assert_eq!(base.error, "", "nvcc compiled base");
        assert!(!base.image.is_empty());
        assert!(
            base.entries.contains(&("scale", "scale")),
            "{:?}",
            base.entries
        );
        assert!(
            base.options[0].starts_with("nvcc 13."),
            "{:?}",
            base.options
        );
    }
}

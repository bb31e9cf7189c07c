//! Shared memory filled with NaN before every verifying run, as outputs are: a kernel that
//! reads shared memory it never wrote (candle's norms read 32 per-warp partial sums that only
//! a 1024-thread block fills) otherwise passes verification whenever the SM's shared memory
//! happens to hold zeros, and becomes a winner that is wrong in production. Shared memory
//! keeps its contents from one kernel to the next on an SM, so one block per SM writing all
//! the shared memory a block may take leaves NaN (`0xffffffff`: NaN as f32, f16 and bf16
//! pairs) where the next kernel's blocks find it.

use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig};
use cudarc::nvrtc::Ptx;

use super::errors::{describe, device_error};
use crate::error::{Error, Result};

/// Entry point of the kernel in [`POISON_PTX`].
const POISON_KERNEL: &str = "gputune_poison_shared";

/// Threads a block of the poison kernel.
const THREADS: u32 = 1024;

/// Each thread writes `0xffffffff` over the block's dynamic shared memory, a word at a time.
/// Hand-written PTX, so that no compiler is needed where none is (the shipped-module path).
const POISON_PTX: &str = r"
.version 7.0
.target sm_52
.address_size 64

.extern .shared .align 16 .b8 gputune_poison_smem[];

.visible .entry gputune_poison_shared()
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;

	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %dynamic_smem_size;
	shr.u32 	%r3, %r3, 2;
	mov.u32 	%r5, -1;
	mov.u32 	%r6, gputune_poison_smem;
$L_poison_loop:
	setp.ge.u32 	%p1, %r1, %r3;
	@%p1 bra 	$L_poison_done;
	shl.b32 	%r4, %r1, 2;
	add.u32 	%r7, %r6, %r4;
	st.volatile.shared.u32 	[%r7], %r5;
	add.u32 	%r1, %r1, %r2;
	bra.uni 	$L_poison_loop;
$L_poison_done:
	ret;
}
";

/// The loaded poison kernel and how it is launched on this device.
pub(super) struct SharedPoison {
    kernel: CudaFunction,
    /// One block per SM.
    blocks: u32,
    /// The most dynamic shared memory a block may take (the opt-in maximum).
    bytes: u32,
}

impl SharedPoison {
    /// Loads the kernel into `context` for a device of `sm_count` SMs, allowed the device's
    /// opt-in maximum of shared memory a block.
    pub(super) fn load(context: &Arc<CudaContext>, sm_count: Option<u32>) -> Result<SharedPoison> {
        let module = context
            .load_module(Ptx::from_src(POISON_PTX))
            .map_err(device_error(
                "loading the shared-memory poison kernel (PTX JIT)",
            ))?;
        let kernel = module
            .load_function(POISON_KERNEL)
            .map_err(device_error("finding the shared-memory poison kernel"))?;
        let optin = context
            .attribute(
                sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )
            .map_err(device_error("reading the device's shared memory per block"))?;
        let bytes = u32::try_from(optin).unwrap_or(0) / 4 * 4;
        // cudarc does not make the function's context current for set_attribute.
        context
            .bind_to_thread()
            .map_err(device_error("binding the device's context"))?;
        kernel
            .set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                i32::try_from(bytes).unwrap_or(i32::MAX),
            )
            .map_err(|e| {
                Error::Device(format!(
                    "allowing the shared-memory poison kernel {bytes} bytes: {}",
                    describe(e)
                ))
            })?;
        Ok(SharedPoison {
            kernel,
            blocks: sm_count.unwrap_or(1).max(1),
            bytes,
        })
    }

    /// Enqueues the poison on `stream`, ahead of the run it prepares.
    pub(super) fn launch(&self, stream: &Arc<CudaStream>) -> Result<()> {
        let config = LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: self.bytes,
        };
        // SAFETY: the kernel takes no arguments and writes only its own block's dynamic
        // shared memory, `bytes` of it, which the launch allots.
        unsafe { stream.launch_builder(&self.kernel).launch(config) }.map_err(device_error(
            "filling shared memory with NaN before verifying",
        ))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poison_kernel_is_one_entry_taking_no_arguments() {
        assert!(POISON_PTX.contains(&format!(".visible .entry {POISON_KERNEL}()")));
        assert_eq!(POISON_PTX.matches(".entry").count(), 1);
        assert!(POISON_PTX.contains("%dynamic_smem_size"));
    }
}

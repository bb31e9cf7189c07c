//! What a launch must respect, checked before it is launched.

use cudarc::driver::{result as driver, sys, CudaFunction, LaunchConfig};

use super::errors::driver_error;
use crate::error::{Error, Result};

/// The limits one kernel's launches must respect on its device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Threads per block the kernel can be launched with
    /// (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`: the device's limit lowered by the kernel's
    /// registers and `__launch_bounds__`).
    pub max_threads_per_block: u32,
    /// Dynamic shared memory per block in bytes (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`,
    /// 48 KiB until raised).
    pub max_dynamic_shared_bytes: u32,
    /// What the dynamic shared memory may be raised to: the device's opt-in limit per block
    /// (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`) less the kernel's static shared
    /// memory. [`Compiled::check`](crate::kernel::Compiled::check) raises the limit up to it.
    pub max_dynamic_shared_optin: u32,
    /// The device's largest block, per dimension.
    pub max_block_dim: [u32; 3],
    /// The device's largest grid, per dimension.
    pub max_grid_dim: [u32; 3],
}

impl LaunchLimits {
    /// Reads the limits of `function` from the driver.
    pub fn of(function: &CudaFunction) -> Result<LaunchLimits> {
        use sys::CUdevice_attribute as D;
        use sys::CUfunction_attribute as F;
        let what = "reading the kernel's launch limits";
        let non_negative = |v: i32| u32::try_from(v).unwrap_or(0);
        let attribute = |a: F| {
            function
                .get_attribute(a)
                .map(non_negative)
                .map_err(|e| driver_error(what, e))
        };
        // `get_attribute` made the function's context current, so its device is this one.
        let max_threads_per_block = attribute(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
        let max_dynamic_shared_bytes =
            attribute(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?;
        let static_shared = attribute(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
        let mut device: sys::CUdevice = 0;
        // SAFETY: an out-pointer to a local; a context is current (bound just above).
        unsafe { sys::cuCtxGetDevice(&mut device) }
            .result()
            .map_err(|e| driver_error(what, e))?;
        let device_attribute = |a: D| {
            // SAFETY: `device` came from the driver.
            unsafe { driver::device::get_attribute(device, a) }
                .map(non_negative)
                .map_err(|e| driver_error(what, e))
        };
        let optin = device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        Ok(LaunchLimits {
            max_threads_per_block,
            max_dynamic_shared_bytes,
            max_dynamic_shared_optin: optin
                .saturating_sub(static_shared)
                .max(max_dynamic_shared_bytes),
            max_block_dim: [
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dim: [
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                device_attribute(D::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
        })
    }

    /// Whether `config` is a launch these limits allow; [`Error::InvalidLaunch`] saying which
    /// limit it exceeds if not.
    pub fn check(&self, config: &LaunchConfig) -> Result<()> {
        let (bx, by, bz) = config.block_dim;
        let (gx, gy, gz) = config.grid_dim;
        let invalid = |what: String| Err(Error::InvalidLaunch(what));
        if bx == 0 || by == 0 || bz == 0 || gx == 0 || gy == 0 || gz == 0 {
            return invalid(format!(
                "an empty launch: grid {gx}×{gy}×{gz}, block {bx}×{by}×{bz}"
            ));
        }
        let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
        if threads > u64::from(self.max_threads_per_block) {
            return invalid(format!(
                "a block of {threads} threads ({bx}×{by}×{bz}) is more than this kernel can be \
                 launched with, {} (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: the device's limit, \
                 lowered by the kernel's registers and __launch_bounds__)",
                self.max_threads_per_block
            ));
        }
        for (axis, (block, max)) in ["x", "y", "z"]
            .into_iter()
            .zip([bx, by, bz].into_iter().zip(self.max_block_dim))
        {
            if block > max {
                return invalid(format!(
                    "the block's {axis} dimension {block} is larger than the device allows, {max}"
                ));
            }
        }
        for (axis, (grid, max)) in ["x", "y", "z"]
            .into_iter()
            .zip([gx, gy, gz].into_iter().zip(self.max_grid_dim))
        {
            if grid > max {
                return invalid(format!(
                    "the grid's {axis} dimension {grid} is larger than the device allows, {max}"
                ));
            }
        }
        if config.shared_mem_bytes > self.max_dynamic_shared_optin {
            return invalid(format!(
                "{} bytes of dynamic shared memory per block are more than this kernel may use on \
                 this device, {} (the device's opt-in limit per block, less the kernel's static \
                 shared memory)",
                config.shared_mem_bytes, self.max_dynamic_shared_optin
            ));
        }
        if config.shared_mem_bytes > self.max_dynamic_shared_bytes {
            return invalid(format!(
                "{} bytes of dynamic shared memory per block are more than this kernel may use, {} \
                 (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: `Compiled::check` of the \
                 kernel handle raises it up to the device's opt-in limit, {})",
                config.shared_mem_bytes, self.max_dynamic_shared_bytes, self.max_dynamic_shared_optin
            ));
        }
        Ok(())
    }

    /// A one-dimensional launch of `block` threads per block for a grid-stride loop over `n`
    /// items: one thread per item up to the device's largest grid (the loop covers the rest,
    /// so any grid is correct), checked like [`LaunchLimits::check`]. What input makers and
    /// other untuned element-wise kernels launch with; `n` = 0 is an empty launch, refused.
    pub fn grid_stride(&self, n: usize, block: u32) -> Result<LaunchConfig> {
        let blocks = u32::try_from(n.div_ceil(block.max(1) as usize)).unwrap_or(u32::MAX);
        let config = LaunchConfig {
            grid_dim: (blocks.min(self.max_grid_dim[0]), 1, 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        self.check(&config)?;
        Ok(config)
    }
}

/// Checks a launch of `function` with `config` against the kernel's and the device's limits
/// before launching it: block size (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`), dynamic
/// shared memory (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`), and block and grid
/// dimensions.
///
/// A launch over a limit fails in the driver anyway, with an error that says less; checked
/// here it is [`Error::InvalidLaunch`], which `cargo gputune` records as `invalid`: the
/// variant is not a point the kernel can run, rather than one that failed. Call it where the
/// launch shape is decided (it costs a few attribute queries), not in the timed loop.
pub fn check_launch(function: &CudaFunction, config: &LaunchConfig) -> Result<()> {
    LaunchLimits::of(function)?.check(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn h100_limits() -> LaunchLimits {
        LaunchLimits {
            max_threads_per_block: 256,
            max_dynamic_shared_bytes: 48 * 1024,
            max_dynamic_shared_optin: 227 * 1024,
            max_block_dim: [1024, 1024, 64],
            max_grid_dim: [i32::MAX as u32, 65535, 65535],
        }
    }

    fn config(grid: (u32, u32, u32), block: (u32, u32, u32), shared: u32) -> LaunchConfig {
        LaunchConfig {
            grid_dim: grid,
            block_dim: block,
            shared_mem_bytes: shared,
        }
    }

    #[test]
    fn a_grid_stride_launch_covers_n_up_to_the_largest_grid_and_is_checked() {
        let shape = |c: LaunchConfig| (c.grid_dim, c.block_dim, c.shared_mem_bytes);
        let limits = h100_limits();
        let fits = |l: &LaunchLimits, n, block| shape(l.grid_stride(n, block).expect("fits"));
        assert_eq!(fits(&limits, 1000, 256), ((4, 1, 1), (256, 1, 1), 0));
        assert_eq!(fits(&limits, 256, 256), ((1, 1, 1), (256, 1, 1), 0));
        let small_grid = LaunchLimits {
            max_grid_dim: [8, 1, 1],
            ..limits
        };
        assert_eq!(
            fits(&small_grid, 1 << 20, 128),
            ((8, 1, 1), (128, 1, 1), 0),
            "the loop covers what the grid does not"
        );
        let refused = |n, block| {
            limits
                .grid_stride(n, block)
                .map(shape)
                .map_err(|e| e.kind())
        };
        assert_eq!(refused(0, 256), Err(ErrorKind::Invalid), "empty");
        assert_eq!(
            refused(10, 512),
            Err(ErrorKind::Invalid),
            "too many threads"
        );
    }

    #[test]
    fn launches_within_the_kernel_s_limits_pass() {
        let limits = h100_limits();
        assert!(limits
            .check(&config((1 << 20, 1, 1), (256, 1, 1), 0))
            .is_ok());
        assert!(limits
            .check(&config((4, 4, 4), (16, 16, 1), 48 * 1024))
            .is_ok());
    }

    #[test]
    fn launches_over_a_limit_are_invalid_and_say_which() {
        let limits = h100_limits();
        let invalid = |c: LaunchConfig| match limits.check(&c) {
            Err(e @ Error::InvalidLaunch(_)) => {
                assert_eq!(e.kind(), ErrorKind::Invalid);
                e.to_string()
            }
            other => panic!("expected an invalid launch, got {other:?}"),
        };
        let msg = invalid(config((1, 1, 1), (512, 1, 1), 0));
        assert!(msg.contains("512 threads"), "{msg}");
        assert!(
            msg.contains("CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"),
            "{msg}"
        );
        // The product counts, not one dimension.
        let msg = invalid(config((1, 1, 1), (32, 16, 1), 0));
        assert!(msg.contains("512 threads (32×16×1)"), "{msg}");
        let msg = invalid(config((1, 1, 1), (128, 1, 1), 48 * 1024 + 1));
        assert!(
            msg.contains("CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"),
            "{msg}"
        );
        let msg = invalid(config((1, 1, 1), (128, 1, 1), 227 * 1024 + 1));
        assert!(msg.contains("the device's opt-in limit"), "{msg}");
        let msg = invalid(config((1, 70_000, 1), (128, 1, 1), 0));
        assert!(msg.contains("grid's y dimension 70000"), "{msg}");
        let msg = invalid(config((1, 1, 1), (1, 1, 128), 0));
        assert!(msg.contains("block's z dimension 128"), "{msg}");
        let msg = invalid(config((0, 1, 1), (128, 1, 1), 0));
        assert!(msg.contains("empty launch"), "{msg}");
    }
}

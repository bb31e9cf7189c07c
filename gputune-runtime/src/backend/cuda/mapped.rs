//! Host memory the helper kernels and the host share while a sample runs.

use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Arc;

use cudarc::driver::{result as driver, sys, CudaContext, DriverError};

/// Layout of the host-mapped words the helper kernels share with the host.
#[repr(C)]
pub(super) struct Shared {
    /// 0 holds the spin kernel, non-zero releases it.
    pub(super) flag: AtomicU32,
    /// Non-zero when the spin kernel released itself by timeout.
    pub(super) timeout_marker: AtomicU32,
    /// globaltimer ns and clock64 before the start event, then after the stop event.
    pub(super) timestamps: [AtomicU64; 4],
}

/// Pinned host memory mapped into the device's address space.
///
/// The host writes the flag while the spin kernel runs, which no stream-ordered copy could
/// do; the kernels' results land here directly, so no copy back is needed.
pub(super) struct MappedWords {
    host: *mut Shared,
    device: sys::CUdeviceptr,
    context: Arc<CudaContext>,
}

// SAFETY: the pinned allocation belongs to the process, not to a thread, and the host only
// touches it through atomics.
unsafe impl Send for MappedWords {}
// SAFETY: as above.
unsafe impl Sync for MappedWords {}

impl MappedWords {
    pub(super) fn new(context: &Arc<CudaContext>) -> std::result::Result<Self, DriverError> {
        context.bind_to_thread()?;
        let flags = sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE;
        // SAFETY: a plain allocation; it is initialised below before any use.
        let host =
            unsafe { driver::malloc_host(std::mem::size_of::<Shared>(), flags) }?.cast::<Shared>();
        // SAFETY: `host` is a fresh, page-aligned allocation of the right size.
        unsafe {
            host.write(Shared {
                flag: AtomicU32::new(1),
                timeout_marker: AtomicU32::new(0),
                timestamps: Default::default(),
            });
        }
        let mut device: sys::CUdeviceptr = 0;
        // SAFETY: `host` was allocated with DEVICEMAP in this (current) context. With UVA the
        // device address usually equals `host`, but only the driver can say.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) };
        if let Err(e) = mapped.result() {
            // SAFETY: `host` came from `malloc_host` and is not used again.
            let _ = unsafe { driver::free_host(host.cast()) };
            return Err(e);
        }
        Ok(MappedWords {
            host,
            device,
            context: context.clone(),
        })
    }

    pub(super) fn shared(&self) -> &Shared {
        // SAFETY: `host` is live and initialised until `free`, which only `Drop` calls.
        unsafe { &*self.host }
    }

    pub(super) fn device_ptr(&self, offset: usize) -> sys::CUdeviceptr {
        self.device + offset as sys::CUdeviceptr
    }

    pub(super) fn free(&mut self) {
        if self.host.is_null() {
            return;
        }
        let _ = self.context.bind_to_thread();
        // SAFETY: `host` came from `malloc_host`; it is nulled so it is freed once.
        let _ = unsafe { driver::free_host(self.host.cast()) };
        self.host = std::ptr::null_mut();
    }
}

impl Drop for MappedWords {
    fn drop(&mut self) {
        self.free();
    }
}

#[cfg(test)]
mod tests {
    use std::mem::offset_of;

    use super::*;

    #[test]
    fn shared_words_have_the_offsets_the_kernels_assume() {
        // The spin kernel writes a u32 marker; the timestamp kernel writes 16 bytes per slot.
        assert_eq!(offset_of!(Shared, flag), 0);
        assert_eq!(offset_of!(Shared, timeout_marker), 4);
        assert_eq!(offset_of!(Shared, timestamps) % 8, 0);
        assert_eq!(std::mem::size_of::<Shared>(), 8 + 32);
    }
}

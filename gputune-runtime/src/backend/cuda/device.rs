//! Which device this is: its attributes as the driver reports them, mapped to [`DeviceInfo`],
//! and the driver's version.

use std::sync::Arc;

use cudarc::driver::{result as driver, sys, CudaContext, DriverError};

use super::errors::device_error;
use super::quiet::quietly;
use crate::device::{BackendKind, DeviceInfo};
use crate::error::Result;

/// The driver API version the cudarc bindings were generated for (`cuda-13000`); an older
/// driver lacks versioned entry points such as `cuEventElapsedTime_v2`, and cudarc panics on
/// the first call to a missing symbol.
pub(super) const MIN_DRIVER_VERSION: i32 = 13000;

/// The device's compute capability as `major * 10 + minor`.
pub(crate) fn device_cc(context: &Arc<CudaContext>) -> Result<i32> {
    let (major, minor) = context.compute_capability().map_err(device_error(
        "reading the compute capability before compiling a kernel",
    ))?;
    Ok(major * 10 + minor)
}

/// Device attributes as the driver reports them; `None` where the query failed.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct RawAttributes {
    name: Option<String>,
    compute_capability: Option<(i32, i32)>,
    multiprocessor_count: Option<i32>,
    clock_rate_khz: Option<i32>,
    memory_clock_rate_khz: Option<i32>,
    global_memory_bus_width_bits: Option<i32>,
    total_memory_bytes: Option<usize>,
    l2_cache_size_bytes: Option<i32>,
    max_threads_per_block: Option<i32>,
    max_shared_memory_per_block_optin: Option<i32>,
    ecc_enabled: Option<i32>,
}

impl RawAttributes {
    /// Reads the attributes of `device` (from `cuDeviceGet`), which needs no context.
    pub(super) fn read(device: sys::CUdevice) -> Self {
        use sys::CUdevice_attribute as A;
        // SAFETY: `device` came from the driver; the queries only write their results.
        let get = |a: A| unsafe { driver::device::get_attribute(device, a) }.ok();
        RawAttributes {
            name: driver::device::get_name(device).ok(),
            compute_capability: get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
                .zip(get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
            multiprocessor_count: get(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            clock_rate_khz: get(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            memory_clock_rate_khz: get(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
            global_memory_bus_width_bits: get(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
            // SAFETY: as above.
            total_memory_bytes: unsafe { driver::device::total_mem(device) }.ok(),
            l2_cache_size_bytes: get(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
            max_threads_per_block: get(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
            max_shared_memory_per_block_optin: get(
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            ),
            ecc_enabled: get(A::CU_DEVICE_ATTRIBUTE_ECC_ENABLED),
        }
    }
}

/// Maps raw attributes to [`DeviceInfo`].
///
/// CUDA 13 deprecates some attributes (the clocks among them) and a deprecated attribute may
/// read 0, so 0 means "unknown" here, except for ECC, where 0 is a real "disabled".
pub(super) fn device_info(ordinal: u32, raw: &RawAttributes) -> DeviceInfo {
    let positive = |v: Option<i32>| v.and_then(|v| u32::try_from(v).ok()).filter(|&v| v > 0);
    let khz_to_hz = |v: Option<i32>| positive(v).map(|khz| f64::from(khz) * 1e3);
    DeviceInfo {
        id: ordinal,
        backend: BackendKind::Cuda,
        name: raw
            .name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map_or_else(|| format!("CUDA device {ordinal}"), str::to_owned),
        sm_version: raw.compute_capability.and_then(|(major, minor)| {
            let major = positive(Some(major))?;
            let minor = u32::try_from(minor).ok()?;
            Some(major * 10 + minor)
        }),
        sm_count: positive(raw.multiprocessor_count),
        sm_default_clock_rate: khz_to_hz(raw.clock_rate_khz),
        memory_clock_rate: khz_to_hz(raw.memory_clock_rate_khz),
        memory_bus_width: positive(raw.global_memory_bus_width_bits),
        global_memory_size: raw.total_memory_bytes.map(|b| b as u64).filter(|&b| b > 0),
        cache_size: positive(raw.l2_cache_size_bytes).map(u64::from),
        max_threads_per_block: positive(raw.max_threads_per_block),
        shared_memory_per_block: positive(raw.max_shared_memory_per_block_optin).map(u64::from),
        ecc_enabled: raw.ecc_enabled.map(|v| v != 0),
    }
}

/// The model name (as the store records it: `NVIDIA H200`) and `sm_XY` of the current
/// context's device, or of device 0 when no context is current; `None` without a usable
/// driver. Picks applied `gputune.toml` entries in production.
pub(crate) fn current_device() -> Option<(String, String)> {
    if !crate::backend::cuda::library::driver_present() {
        return None;
    }
    quietly(|| -> std::result::Result<(String, String), DriverError> {
        if driver_version()? < MIN_DRIVER_VERSION {
            return Err(DriverError(sys::CUresult::CUDA_ERROR_NOT_SUPPORTED));
        }
        driver::init()?;
        let mut context: sys::CUcontext = std::ptr::null_mut();
        let mut device: sys::CUdevice = 0;
        // SAFETY: out-pointers to locals; a null context means none is current.
        unsafe {
            sys::cuCtxGetCurrent(&mut context).result()?;
            if context.is_null() {
                sys::cuDeviceGet(&mut device, 0).result()?;
            } else {
                sys::cuCtxGetDevice(&mut device).result()?;
            }
        }
        let attribute = |a| {
            let mut v = 0;
            // SAFETY: out-pointer to a local; `device` came from the driver.
            unsafe { sys::cuDeviceGetAttribute(&mut v, a, device) }
                .result()
                .map(|()| v)
        };
        use sys::CUdevice_attribute as A;
        let major = attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        // The name exactly as `device_info` makes it for the store, so that the model key
        // `apply` writes is the one found here.
        let raw = RawAttributes {
            name: driver::device::get_name(device).ok(),
            ..RawAttributes::default()
        };
        let name = device_info(0, &raw).name;
        Ok((name, format!("sm_{major}{minor}")))
    })
    .ok()?
    .ok()
}

pub(super) fn driver_version() -> std::result::Result<i32, DriverError> {
    let mut version = 0;
    // SAFETY: writes one int; needs no cuInit.
    unsafe { sys::cuDriverGetVersion(&mut version) }.result()?;
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> RawAttributes {
        RawAttributes {
            name: Some("NVIDIA H100 80GB HBM3".into()),
            compute_capability: Some((9, 0)),
            multiprocessor_count: Some(132),
            clock_rate_khz: Some(1_980_000),
            memory_clock_rate_khz: Some(2_619_000),
            global_memory_bus_width_bits: Some(5120),
            total_memory_bytes: Some(85_029_158_912),
            l2_cache_size_bytes: Some(52_428_800),
            max_threads_per_block: Some(1024),
            max_shared_memory_per_block_optin: Some(232_448),
            ecc_enabled: Some(1),
        }
    }

    #[test]
    fn attributes_map_to_device_info_in_si_units() {
        let info = device_info(3, &h100());
        assert_eq!(info.id, 3);
        assert_eq!(info.backend, BackendKind::Cuda);
        assert_eq!(info.name, "NVIDIA H100 80GB HBM3");
        assert_eq!(info.sm_version, Some(90));
        assert_eq!(info.sm_count, Some(132));
        assert_eq!(info.sm_default_clock_rate, Some(1.98e9));
        assert_eq!(info.memory_clock_rate, Some(2.619e9));
        assert_eq!(info.memory_bus_width, Some(5120));
        assert_eq!(info.global_memory_size, Some(85_029_158_912));
        assert_eq!(info.cache_size, Some(52_428_800));
        assert_eq!(info.max_threads_per_block, Some(1024));
        assert_eq!(info.shared_memory_per_block, Some(232_448));
        assert_eq!(info.ecc_enabled, Some(true));
        let bandwidth = info.peak_bandwidth().unwrap_or_default();
        assert!((bandwidth - 3.35232e12).abs() < 1.0, "{bandwidth}");
    }

    #[test]
    fn failed_or_zero_attributes_are_unknown() {
        let raw = RawAttributes {
            clock_rate_khz: Some(0),
            memory_clock_rate_khz: None,
            global_memory_bus_width_bits: Some(0),
            l2_cache_size_bytes: Some(0),
            multiprocessor_count: Some(-1),
            total_memory_bytes: Some(0),
            ..h100()
        };
        let info = device_info(0, &raw);
        assert_eq!(info.sm_default_clock_rate, None);
        assert_eq!(info.memory_clock_rate, None);
        assert_eq!(info.memory_bus_width, None);
        assert_eq!(info.cache_size, None);
        assert_eq!(info.sm_count, None);
        assert_eq!(info.global_memory_size, None);
        assert_eq!(info.peak_bandwidth(), None);
        assert_eq!(info.sm_version, Some(90));

        let info = device_info(2, &RawAttributes::default());
        assert_eq!(info.name, "CUDA device 2");
        assert_eq!(info.sm_version, None);
        assert_eq!(info.ecc_enabled, None);
        assert_eq!(info.shared_memory_per_block, None);
        assert_eq!(info.max_threads_per_block, None);
    }

    #[test]
    fn ecc_zero_means_disabled_not_unknown() {
        let raw = RawAttributes {
            ecc_enabled: Some(0),
            ..h100()
        };
        assert_eq!(device_info(0, &raw).ecc_enabled, Some(false));
    }

    #[test]
    fn compute_capability_is_major_times_ten_plus_minor() {
        let raw = RawAttributes {
            compute_capability: Some((12, 1)),
            ..h100()
        };
        assert_eq!(device_info(0, &raw).sm_version, Some(121));
        let raw = RawAttributes {
            compute_capability: Some((0, 0)),
            ..h100()
        };
        assert_eq!(device_info(0, &raw).sm_version, None);
    }
}

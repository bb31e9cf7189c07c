//! The CUDA side of a pass's provenance: which card, which driver and NVRTC, and what its
//! clocks, power limit and modes are set to, read (never set) from the driver, NVRTC and NVML.

use cudarc::driver::sys;
use gputune_protocol::CudaProvenance;

use super::device::driver_version;
use super::nvml::{Clock, Nvml, NvmlDevice, NvmlError};
use super::nvrtc::nvrtc_version;
use super::quiet::quietly;
use super::timing::CudaBackend;
use crate::backend::Backend;

impl CudaBackend {
    /// What this device's driver, NVRTC and NVML say now (every call reads them again: a
    /// pass's clocks and power limit are those at its start). Where NVML is missing, its
    /// fields are `None` and [`CudaProvenance::nvml_error`] says why.
    pub fn provenance(&self) -> CudaProvenance {
        let ordinal = self.device().id;
        // A driver symbol that is missing makes cudarc panic: such a field is unknown.
        let (uuid, pci_bus_id) = quietly(|| identity(ordinal)).unwrap_or((None, None));
        let mut out = CudaProvenance {
            device: ordinal,
            uuid,
            pci_bus_id,
            driver: None,
            driver_api: quietly(driver_version)
                .ok()
                .and_then(Result::ok)
                .and_then(|v| u32::try_from(v).ok()),
            nvrtc: nvrtc_version()
                .ok()
                .map(|(major, minor)| format!("{major}.{minor}")),
            application_sm_clock: None,
            application_memory_clock: None,
            power_limit: None,
            persistence_mode: None,
            ecc_mode: None,
            nvml_error: None,
        };
        if let Err(e) = from_nvml(&mut out) {
            out.nvml_error = Some(e.to_string());
        }
        out
    }
}

/// The UUID (`GPU-…`) and PCI bus id (`0000:65:00.0`) of CUDA device `ordinal`.
pub(super) fn identity(ordinal: u32) -> (Option<String>, Option<String>) {
    let mut device: sys::CUdevice = 0;
    let Ok(index) = i32::try_from(ordinal) else {
        return (None, None);
    };
    // SAFETY: an out-pointer to a local; the driver was initialised when the backend opened.
    if unsafe { sys::cuDeviceGet(&mut device, index) }
        .result()
        .is_err()
    {
        return (None, None);
    }
    let mut uuid = sys::CUuuid { bytes: [0; 16] };
    // SAFETY: writes 16 bytes into the local.
    let uuid = unsafe { sys::cuDeviceGetUuid_v2(&mut uuid, device) }
        .result()
        .ok()
        .map(|()| format_uuid(&uuid.bytes.map(|b| b as u8)));
    let mut bus = [0 as std::ffi::c_char; 32];
    // SAFETY: the driver writes at most `len` bytes, NUL included.
    let bus_id = unsafe { sys::cuDeviceGetPCIBusId(bus.as_mut_ptr(), bus.len() as i32, device) }
        .result()
        .ok()
        // SAFETY: NUL-terminated within the buffer on success.
        .map(|()| unsafe { std::ffi::CStr::from_ptr(bus.as_ptr()) })
        .map(|s| s.to_string_lossy().trim().to_string())
        .filter(|s| !s.is_empty());
    (uuid, bus_id)
}

/// A UUID as `nvidia-smi` writes a GPU's: `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
fn format_uuid(bytes: &[u8; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Fills `out`'s NVML fields. NVML that is missing, or does not know the device, is an
/// error (every field unknown, and why); a query the GPU does not support leaves its field
/// `None` alone.
fn from_nvml(out: &mut CudaProvenance) -> Result<(), NvmlError> {
    let nvml = Nvml::shared()?;
    let bus_id = out.pci_bus_id.clone().ok_or_else(|| {
        NvmlError::Argument("the driver did not say the device's PCI bus id".into())
    })?;
    let device = nvml.device_by_pci_bus_id(&bus_id)?;
    out.driver = optional(nvml.driver_version())?;
    fill(out, &device)
}

fn fill(out: &mut CudaProvenance, device: &NvmlDevice<'_>) -> Result<(), NvmlError> {
    out.application_sm_clock = optional(device.application_clock(Clock::Sm))?;
    out.application_memory_clock = optional(device.application_clock(Clock::Memory))?;
    out.power_limit = optional(device.enforced_power_limit())?;
    out.persistence_mode = optional(device.persistence_mode())?;
    out.ecc_mode = optional(device.ecc_mode())?;
    Ok(())
}

/// A query's value; `None` where the GPU does not support it, the error otherwise.
fn optional<T>(result: Result<T, NvmlError>) -> Result<Option<T>, NvmlError> {
    match result {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_not_supported() => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_read_as_nvidia_smi_writes_them() {
        let bytes = [
            0x5b, 0x0b, 0x6f, 0x1c, 0x8f, 0x3e, 0x4d, 0x1a, 0x9a, 0x55, 0x3c, 0x1f, 0x0e, 0x9d,
            0x2a, 0x71,
        ];
        assert_eq!(
            format_uuid(&bytes),
            "GPU-5b0b6f1c-8f3e-4d1a-9a55-3c1f0e9d2a71"
        );
    }

    #[test]
    fn an_unsupported_query_is_unknown_and_a_failure_is_an_error() {
        let unsupported: Result<f64, NvmlError> = Err(NvmlError::Call {
            call: "nvmlDeviceGetApplicationsClock",
            code: 3,
            message: "Not Supported".into(),
        });
        assert_eq!(optional(unsupported), Ok(None));
        assert_eq!(optional(Ok(700.0)), Ok(Some(700.0)));
        let lost: Result<f64, NvmlError> = Err(NvmlError::Call {
            call: "nvmlDeviceGetEnforcedPowerLimit",
            code: 15,
            message: "GPU is lost".into(),
        });
        assert!(optional(lost).is_err());
    }
}

//! Where and how a bench process measured: the toolchain that built it, the host, and the
//! GPU's driver, compiler and settings. A bench reads it (never sets anything) at the start of
//! each pass and sends it as a `provenance` event; `cargo gputune` stores it beside every row
//! that pass produced, `report` shows it and `check` says when a baseline was measured under
//! another one.

use serde::{Deserialize, Serialize};

/// Where and how a bench process measured, read at the start of a pass.
///
/// Fields the process cannot know are `None`: a CPU bench has no [`CudaProvenance`]; a CUDA
/// bench on a host without NVML has no driver version string, clocks or power limit, and
/// says why in [`CudaProvenance::nvml_error`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The host's name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`).
    pub host: Option<String>,
    /// The gputune version the bench binary was built with.
    pub gputune: String,
    /// `rustc -V` of the toolchain that built the bench binary's gputune-runtime
    /// (`rustc 1.89.0 (29483883e 2025-08-04)`).
    pub rustc: Option<String>,
    /// The cargo profile directory it was built into: `release` (also for the `bench`
    /// profile), `debug` (the `dev` and `test` profiles), or a custom profile's name.
    pub profile: Option<String>,
    /// The optimisation level of that build (`3`, `s`).
    pub opt_level: Option<String>,
    /// Whether debug assertions were on.
    pub debug_assertions: Option<bool>,
    /// The CUDA device's side, for a process that opened one; `None` for a CPU-only run.
    pub cuda: Option<CudaProvenance>,
}

/// The CUDA device a pass measured on: its driver, compiler and the settings that change
/// its timings, as the driver, NVRTC and NVML report them at the start of the pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CudaProvenance {
    /// The CUDA ordinal (`--device`) as the process saw it: 0 where `cargo gputune` showed
    /// the process its one GPU (`CUDA_VISIBLE_DEVICES`); [`Self::uuid`] says which it was.
    pub device: u32,
    /// The GPU's UUID (`GPU-…`, `cuDeviceGetUuid`): which physical card it was.
    pub uuid: Option<String>,
    /// Its PCI bus id (`0000:65:00.0`, `cuDeviceGetPCIBusId`).
    pub pci_bus_id: Option<String>,
    /// The driver's version (`580.159.04`, `nvmlSystemGetDriverVersion`).
    pub driver: Option<String>,
    /// The CUDA driver API version (`cuDriverGetVersion`: 13000 is CUDA 13.0).
    pub driver_api: Option<u32>,
    /// NVRTC's version (`13.0`, `nvrtcVersion`); `None` where NVRTC cannot be loaded.
    pub nvrtc: Option<String>,
    /// The SM application clock in Hz (`nvmlDeviceGetApplicationsClock`): the clock the
    /// GPU runs kernels at unless power or heat hold it back.
    pub application_sm_clock: Option<f64>,
    /// The memory application clock in Hz.
    pub application_memory_clock: Option<f64>,
    /// The enforced power limit in watts (`nvmlDeviceGetEnforcedPowerLimit`).
    pub power_limit: Option<f64>,
    /// Whether persistence mode is on (`nvmlDeviceGetPersistenceMode`).
    pub persistence_mode: Option<bool>,
    /// Whether ECC is on now (`nvmlDeviceGetEccMode`, current mode).
    pub ecc_mode: Option<bool>,
    /// Why the NVML fields (driver, clocks, power limit, persistence and ECC mode) are
    /// `None`: NVML could not be loaded, or did not know the device. `None` when NVML
    /// answered (a field it does not support on this GPU is `None` alone).
    pub nvml_error: Option<String>,
}

impl CudaProvenance {
    /// The CUDA version of the driver API as people write it: 13000 is `13.0`.
    pub fn cuda_version(&self) -> Option<String> {
        self.driver_api
            .map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_api_version_reads_as_cuda_writes_it() {
        let mut cuda = CudaProvenance {
            device: 0,
            uuid: None,
            pci_bus_id: None,
            driver: None,
            driver_api: Some(13000),
            nvrtc: None,
            application_sm_clock: None,
            application_memory_clock: None,
            power_limit: None,
            persistence_mode: None,
            ecc_mode: None,
            nvml_error: None,
        };
        assert_eq!(cuda.cuda_version().as_deref(), Some("13.0"));
        cuda.driver_api = Some(12080);
        assert_eq!(cuda.cuda_version().as_deref(), Some("12.8"));
        cuda.driver_api = None;
        assert_eq!(cuda.cuda_version(), None);
    }
}

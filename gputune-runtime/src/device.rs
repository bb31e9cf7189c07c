//! Identity and limits of the device a bench runs on, as plain data.

use serde::Serialize;

/// Which backend measures a state (the protocol's type).
pub use gputune_protocol::documents::Backend as BackendKind;

/// What is known about a device. Fields a backend cannot know are `None`.
///
/// The peak global-memory bandwidth follows nvbench: 2 · memory clock · bus width / 8
/// (the factor two is the double data rate).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceInfo {
    /// Ordinal of the device within its backend.
    pub id: u32,
    /// Backend the device belongs to.
    pub backend: BackendKind,
    /// Marketing name (`NVIDIA H100 80GB HBM3`, or the CPU model).
    pub name: String,
    /// Compute capability as `major * 10 + minor` (CUDA only).
    pub sm_version: Option<u32>,
    /// Number of streaming multiprocessors, or CPU cores.
    pub sm_count: Option<u32>,
    /// Default SM clock in Hz (CUDA only).
    pub sm_default_clock_rate: Option<f64>,
    /// Peak memory clock in Hz (CUDA only).
    pub memory_clock_rate: Option<f64>,
    /// Global memory bus width in bits (CUDA only).
    pub memory_bus_width: Option<u32>,
    /// Global memory size in bytes.
    pub global_memory_size: Option<u64>,
    /// Last-level cache size in bytes (L2 on a GPU, L3 or L2 on a CPU).
    pub cache_size: Option<u64>,
    /// Maximum threads per block (CUDA only).
    pub max_threads_per_block: Option<u32>,
    /// Shared memory per block in bytes, opt-in maximum (CUDA only).
    pub shared_memory_per_block: Option<u64>,
    /// Whether ECC is enabled (CUDA only).
    pub ecc_enabled: Option<bool>,
}

impl DeviceInfo {
    /// A device of `backend` named `name` of which nothing else is known: what tests build
    /// their simulated devices from.
    #[cfg(test)]
    pub(crate) fn bare(backend: BackendKind, name: &str) -> DeviceInfo {
        DeviceInfo {
            id: 0,
            backend,
            name: name.into(),
            sm_version: None,
            sm_count: None,
            sm_default_clock_rate: None,
            memory_clock_rate: None,
            memory_bus_width: None,
            global_memory_size: None,
            cache_size: None,
            max_threads_per_block: None,
            shared_memory_per_block: None,
            ecc_enabled: None,
        }
    }

    /// Peak global-memory bandwidth in bytes per second, when the clock and bus are known.
    pub fn peak_bandwidth(&self) -> Option<f64> {
        match (self.memory_clock_rate, self.memory_bus_width) {
            (Some(clock), Some(width)) => Some(2.0 * clock * f64::from(width) / 8.0),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_bandwidth_is_double_data_rate_times_bus() {
        let mut d = DeviceInfo {
            id: 0,
            backend: BackendKind::Cuda,
            name: "x".into(),
            sm_version: Some(90),
            sm_count: Some(132),
            sm_default_clock_rate: Some(1.98e9),
            memory_clock_rate: Some(2.619e9),
            memory_bus_width: Some(5120),
            global_memory_size: None,
            cache_size: None,
            max_threads_per_block: None,
            shared_memory_per_block: None,
            ecc_enabled: None,
        };
        // 2 * 2.619e9 * 5120 / 8 = 3.352_32e12
        let bw = d.peak_bandwidth().unwrap_or_default();
        assert!((bw - 3.35232e12).abs() < 1.0);
        d.memory_bus_width = None;
        assert_eq!(d.peak_bandwidth(), None);
    }
}

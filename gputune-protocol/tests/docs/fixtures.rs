//! Fully populated values of the types protocol 8 and 9 added (every `Option` is `Some`, every
//! list has an entry), for `docs.rs`.

use gputune_protocol::{CudaProvenance, EnergyBatch, EnergyRecord, Provenance};

/// A provenance with every field known.
pub fn provenance() -> Provenance {
    Provenance {
        host: Some("gpu-node-7".into()),
        gputune: "0.1.0".into(),
        rustc: Some("rustc 1.89.0 (29483883e 2025-08-04)".into()),
        profile: Some("release".into()),
        opt_level: Some("3".into()),
        debug_assertions: Some(false),
        cuda: Some(CudaProvenance {
            device: 0,
            uuid: Some("GPU-5b0b6f1c-8f3e-4d1a-9a55-3c1f0e9d2a71".into()),
            pci_bus_id: Some("0000:65:00.0".into()),
            driver: Some("580.159.04".into()),
            driver_api: Some(13000),
            nvrtc: Some("13.0".into()),
            application_sm_clock: Some(1_980_000_000.0),
            application_memory_clock: Some(2_619_000_000.0),
            power_limit: Some(700.0),
            persistence_mode: Some(true),
            ecc_mode: Some(true),
            nvml_error: Some("libnvidia-ml.so.1: cannot open shared object file".into()),
        }),
    }
}

/// An energy record with every field set (as no bench writes one: `unavailable` and batches).
pub fn energy() -> EnergyRecord {
    EnergyRecord {
        unavailable: Some("NVML is not available".into()),
        counter_interval: Some(0.02),
        batches: vec![EnergyBatch {
            launches: 4096,
            joules: 40.5,
            seconds: 0.1,
            gpu_seconds: 0.099,
        }],
    }
}

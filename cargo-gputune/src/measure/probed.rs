//! The device a plan records its rows for, found by a probe of the bench binary (`--devices`).
//!
//! The probe is a process that starts the GPU driver (0.15–0.26 s on an H200 host, 2026-11-26):
//! on a search's critical path it delays the first bench process by that much. A
//! [`ProbedDevice`] lets the probe run beside that process instead: it is asked for only when a
//! row is written, or when the store must be read by device, and waits for the probe then.

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;

use anyhow::{anyhow, Result};

use crate::measure::protocol;

/// A device identity and architecture (`sm_90`, `cpu`), as [`protocol::device`] returns them.
type Found = std::result::Result<(String, String), String>;

/// The probe's thread.
type Probe = JoinHandle<Result<(String, String)>>;

/// The device of a plan: known, or being probed in the background.
pub(crate) struct ProbedDevice {
    found: OnceLock<Found>,
    probe: Mutex<Option<Probe>>,
}

impl ProbedDevice {
    /// A device already known.
    pub(crate) fn known(device: String, arch: String) -> ProbedDevice {
        ProbedDevice {
            found: OnceLock::from(Ok((device, arch))),
            probe: Mutex::new(None),
        }
    }

    /// Starts probing device `ordinal` of `bench` in the binary `bin`, in the background.
    pub(crate) fn probe(bin: PathBuf, bench: String, ordinal: u32) -> ProbedDevice {
        let spawned = std::thread::Builder::new()
            .name("gputune-device-probe".into())
            .spawn(move || protocol::device(&bin, &bench, ordinal));
        match spawned {
            Ok(handle) => ProbedDevice {
                found: OnceLock::new(),
                probe: Mutex::new(Some(handle)),
            },
            Err(e) => ProbedDevice {
                found: OnceLock::from(Err(format!("cannot start the device probe: {e}"))),
                probe: Mutex::new(None),
            },
        }
    }

    /// The device's identity and architecture, waiting for the probe the first time.
    pub(crate) fn get(&self) -> Result<(&str, &str)> {
        let found = self.found.get_or_init(|| {
            let handle = self.probe.lock().unwrap_or_else(|e| e.into_inner()).take();
            match handle.map(JoinHandle::join) {
                Some(Ok(Ok(found))) => Ok(found),
                Some(Ok(Err(e))) => Err(format!("{e:#}")),
                Some(Err(_)) => Err("the device probe panicked".into()),
                None => Err("the device probe was lost".into()),
            }
        });
        match found {
            Ok((device, arch)) => Ok((device.as_str(), arch.as_str())),
            Err(e) => Err(anyhow!("{e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_device_is_itself_and_a_failed_probe_fails_every_time() {
        let known = ProbedDevice::known("NVIDIA H200|sm_90".into(), "sm_90".into());
        assert_eq!(known.get().expect("known"), ("NVIDIA H200|sm_90", "sm_90"));
        let missing = ProbedDevice::probe("/nonexistent/bench".into(), "b".into(), 0);
        let first = missing.get().expect_err("no such binary").to_string();
        let again = missing.get().expect_err("still none").to_string();
        assert_eq!(first, again, "the probe runs once");
        assert!(first.contains("/nonexistent/bench"), "{first}");
    }
}

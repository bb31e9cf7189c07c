//! The device a plan records its rows for: named by its bench process, or found by a probe of
//! the bench binary (`--devices`).
//!
//! A probe is a process that starts the GPU driver (0.15–0.26 s on an H200 host, 2026-11-26;
//! more where several processes start it at once: two bench processes and two probes took 0.9 s
//! each on two H200s, where one alone takes 0.53 s). A bench process names its device in its
//! first event ([`ProbedDevice::learn`]), so a [`ProbedDevice`] waits for that
//! ([`ProbedDevice::deferred`]) and probes only where it is asked for the device first (a
//! store that holds the bench already is read by device before any process starts) or where
//! the bench does not name it ([`ProbedDevice::start`]).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use anyhow::{anyhow, Result};

use crate::host::usage::Usage;
use crate::measure::protocol;

/// A device identity and architecture (`sm_90`, `cpu`), as [`protocol::device`] returns them.
type Found = std::result::Result<(String, String), Failed>;

/// Why a probe found no device, kept for every caller: its message, and whether it is the
/// user's to fix (no driver, no such GPU: the bench's exit 3, a [`Usage`] error).
#[derive(Debug, Clone)]
struct Failed {
    message: String,
    usage: bool,
}

impl Failed {
    fn of(e: &anyhow::Error) -> Failed {
        Failed {
            message: format!("{e:#}"),
            usage: e.chain().any(|c| c.is::<Usage>()),
        }
    }

    fn other(message: &str) -> Failed {
        Failed {
            message: message.to_string(),
            usage: false,
        }
    }
}

/// The probe's thread.
type Probe = JoinHandle<Result<(String, String)>>;

/// The device of a plan: known, or being probed in the background. A clone shares the probe
/// (the plans of a search on several GPUs and the search itself ask the same probes).
#[derive(Clone)]
pub(crate) struct ProbedDevice {
    inner: Arc<Inner>,
}

/// What the clones of a [`ProbedDevice`] share.
struct Inner {
    found: OnceLock<Found>,
    probe: Mutex<Option<Source>>,
}

/// Where a device not known yet comes from.
enum Source {
    /// A probe's thread.
    Probe(Probe),
    /// The first of these that is found ([`ProbedDevice::first_of`]).
    FirstOf(Vec<ProbedDevice>),
    /// A probe not started yet ([`ProbedDevice::deferred`]): the binary, bench and ordinal.
    Deferred(PathBuf, String, u32),
}

impl ProbedDevice {
    /// A device already known.
    #[cfg(test)]
    pub(crate) fn known(device: String, arch: String) -> ProbedDevice {
        ProbedDevice::of(OnceLock::from(Ok((device, arch))), None)
    }

    /// Probes device `ordinal` of `bench` in `bin` once [`ProbedDevice::start`] is called (a
    /// bench process of the plan has opened its device), or when it is first asked for.
    pub(crate) fn deferred(bin: PathBuf, bench: String, ordinal: u32) -> ProbedDevice {
        ProbedDevice::of(OnceLock::new(), Some(Source::Deferred(bin, bench, ordinal)))
    }

    /// Starts a deferred probe in the background; nothing for any other.
    pub(crate) fn start(&self) {
        if self.inner.found.get().is_some() {
            return;
        }
        let mut source = self.inner.probe.lock().unwrap_or_else(|e| e.into_inner());
        let Some(Source::Deferred(bin, bench, ordinal)) = &*source else {
            return;
        };
        let (bin, bench, ordinal) = (bin.clone(), bench.clone(), *ordinal);
        let spawned = std::thread::Builder::new()
            .name("gputune-device-probe".into())
            .spawn(move || protocol::device(&bin, &bench, ordinal));
        // A thread that cannot start leaves the probe to the first who asks for the device.
        if let Ok(handle) = spawned {
            *source = Some(Source::Probe(handle));
        }
    }

    /// The device as a bench process of the plan described it (its `provenance` event): a
    /// deferred probe then never starts, and one running is not waited for (its thread ends on
    /// its own). Nothing where the device is known already.
    pub(crate) fn learn(&self, device: String, arch: String) {
        if self.inner.found.set(Ok((device, arch))).is_ok() {
            *self.inner.probe.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    /// The first of `devices` that is found, in their order: the device a search on several
    /// GPUs stores its rows for, should the first GPU's probe fail.
    pub(crate) fn first_of(devices: Vec<ProbedDevice>) -> ProbedDevice {
        ProbedDevice::of(OnceLock::new(), Some(Source::FirstOf(devices)))
    }

    fn of(found: OnceLock<Found>, probe: Option<Source>) -> ProbedDevice {
        ProbedDevice {
            inner: Arc::new(Inner {
                found,
                probe: Mutex::new(probe),
            }),
        }
    }

    /// The device's identity and architecture, waiting for the probe the first time.
    pub(crate) fn get(&self) -> Result<(&str, &str)> {
        let inner = &*self.inner;
        let found = inner.found.get_or_init(|| {
            let source = inner.probe.lock().unwrap_or_else(|e| e.into_inner()).take();
            match source {
                Some(Source::Probe(handle)) => match handle.join() {
                    Ok(Ok(found)) => Ok(found),
                    Ok(Err(e)) => Err(Failed::of(&e)),
                    Err(_) => Err(Failed::other("the device probe panicked")),
                },
                Some(Source::Deferred(bin, bench, ordinal)) => {
                    protocol::device(&bin, &bench, ordinal).map_err(|e| Failed::of(&e))
                }
                Some(Source::FirstOf(devices)) => {
                    let mut errors = Vec::new();
                    for d in &devices {
                        match d.get() {
                            Ok((device, arch)) => return Ok((device.into(), arch.into())),
                            Err(e) => errors.push(Failed::of(&e)),
                        }
                    }
                    Err(Failed {
                        message: errors
                            .iter()
                            .map(|f| f.message.as_str())
                            .collect::<Vec<_>>()
                            .join("; "),
                        usage: errors.iter().any(|f| f.usage),
                    })
                }
                None => Err(Failed::other("the device probe was lost")),
            }
        });
        match found {
            Ok((device, arch)) => Ok((device.as_str(), arch.as_str())),
            Err(f) if f.usage => Err(anyhow::Error::new(Usage(f.message.clone()))),
            Err(f) => Err(anyhow!("{}", f.message)),
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
        let missing = ProbedDevice::deferred("/nonexistent/bench".into(), "b".into(), 0);
        missing.start();
        let first = missing.get().expect_err("no such binary").to_string();
        let again = missing.get().expect_err("still none").to_string();
        assert_eq!(first, again, "the probe runs once");
        let shared = missing
            .clone()
            .get()
            .expect_err("a clone shares it")
            .to_string();
        assert_eq!(first, shared);
        assert!(first.contains("/nonexistent/bench"), "{first}");
        // The first device found of several, in their order.
        let other = ProbedDevice::known("other|sm_80".into(), "sm_80".into());
        let first_of = ProbedDevice::first_of(vec![missing.clone(), known.clone(), other]);
        assert_eq!(
            first_of.get().expect("found"),
            ("NVIDIA H200|sm_90", "sm_90")
        );
        let none = ProbedDevice::first_of(vec![missing]);
        assert!(none.get().is_err());
    }

    #[test]
    fn a_probe_that_finds_no_device_stays_the_users_error_for_every_caller() {
        // A bench that cannot open a device exits 3: the user's to fix, exit 2, however many
        // ask (the search writing a row, the lanes, the store read by device).
        let dir = std::env::temp_dir().join(format!("gputune-probed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let bench = dir.join("bench");
        std::fs::write(
            &bench,
            "#!/bin/sh\necho 'error: no usable device: no driver here' >&2\nexit 3\n",
        )
        .expect("script");
        let mut perms = std::fs::metadata(&bench).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&bench, perms).expect("chmod");
        let probed = ProbedDevice::deferred(bench, "b".into(), 0);
        let first_of = ProbedDevice::first_of(vec![probed.clone()]);
        for e in [
            probed.get().expect_err("no device"),
            probed.get().expect_err("still none"),
            first_of.get().expect_err("none of them"),
        ] {
            assert!(e.chain().any(|c| c.is::<Usage>()), "{e:#}");
            assert!(e.to_string().contains("no driver here"), "{e:#}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_deferred_probe_runs_once_whether_started_or_asked_for() {
        let asked = ProbedDevice::deferred("/nonexistent/bench".into(), "b".into(), 1);
        let first = asked.get().expect_err("no such binary").to_string();
        assert!(first.contains("/nonexistent/bench"), "{first}");
        asked.start();
        assert_eq!(asked.get().expect_err("the same").to_string(), first);
        let started = ProbedDevice::deferred("/nonexistent/bench".into(), "b".into(), 1);
        started.start();
        started.start();
        let again = started.get().expect_err("no such binary").to_string();
        assert_eq!(again, first, "started, it fails as asked for");
        // A device its bench process described is never probed.
        let learned = ProbedDevice::deferred("/nonexistent/bench".into(), "b".into(), 1);
        learned.learn("NVIDIA H200|sm_90".into(), "sm_90".into());
        learned.start();
        assert_eq!(
            learned.get().expect("learned"),
            ("NVIDIA H200|sm_90", "sm_90")
        );
        learned.learn("other|sm_80".into(), "sm_80".into());
        assert_eq!(
            learned.get().expect("the first stays").0,
            "NVIDIA H200|sm_90"
        );
        // A known device has nothing to start.
        let known = ProbedDevice::known("NVIDIA H200|sm_90".into(), "sm_90".into());
        known.start();
        assert_eq!(known.get().expect("known").0, "NVIDIA H200|sm_90");
    }
}

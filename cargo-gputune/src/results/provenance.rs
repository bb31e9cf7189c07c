//! Provenance as people read it and as `check` compares it: the fields of a bench pass's
//! [`Provenance`] in words, which of them change what a time means, and the SM clocks of the
//! samples. `report` shows them ([`crate::results::report::provenance`]); `check` says where a
//! baseline and the current run differ in them ([`crate::results::check::provenance`]).

use std::sync::atomic::{AtomicBool, Ordering};

use gputune_protocol::Provenance;

use crate::host::output::Output;

/// A sample whose SM clock is under this share of the reference clock (the application
/// clock, else the fastest sample's) counts as down-clocked. GPUs step their clocks by about
/// 1 % (15 MHz at 1980 MHz), and the clock read around a sample moves by a few tenths of a per
/// cent; 5 % is a clock that power or heat held back.
pub const DOWN_CLOCKED: f64 = 0.95;

/// One field of a provenance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its key in `check`'s JSON (`driver`, `power_limit`).
    pub key: &'static str,
    /// Its name in words (`driver`, `power limit`).
    pub label: &'static str,
    /// Its value as shown (`580.159.04`, `700 W`), `None` where unknown.
    pub value: Option<String>,
    /// Whether `check` compares it: a field that changes what a time means (driver, CUDA,
    /// NVRTC, clocks, power limit). The host differs between CI runners by design, a new
    /// rustc or profile changes the code's revision, and ECC is part of the device identity.
    pub compared: bool,
}

/// `hz` in MHz, as clocks are written (`1980 MHz`).
pub fn mhz(hz: f64) -> String {
    format!("{:.0} MHz", hz / 1e6)
}

/// `on` or `off`.
fn on(b: bool) -> String {
    if b { "on" } else { "off" }.to_string()
}

/// Every field of `p`, compared ones first, in the order people read them.
pub fn fields(p: &Provenance) -> Vec<Field> {
    let cuda = p.cuda.as_ref();
    let field = |key, label, value: Option<String>, compared| Field {
        key,
        label,
        value,
        compared,
    };
    let watts = |w: f64| {
        if w.fract() == 0.0 {
            format!("{w:.0} W")
        } else {
            format!("{w:.1} W")
        }
    };
    vec![
        field(
            "driver",
            "driver",
            cuda.and_then(|c| c.driver.clone()),
            true,
        ),
        field("cuda", "CUDA", cuda.and_then(|c| c.cuda_version()), true),
        field("nvrtc", "NVRTC", cuda.and_then(|c| c.nvrtc.clone()), true),
        field(
            "application_sm_clock",
            "SM clock",
            cuda.and_then(|c| c.application_sm_clock).map(mhz),
            true,
        ),
        field(
            "application_memory_clock",
            "memory clock",
            cuda.and_then(|c| c.application_memory_clock).map(mhz),
            true,
        ),
        field(
            "power_limit",
            "power limit",
            cuda.and_then(|c| c.power_limit).map(watts),
            true,
        ),
        field(
            "persistence_mode",
            "persistence",
            cuda.and_then(|c| c.persistence_mode).map(on),
            false,
        ),
        field(
            "ecc_mode",
            "ECC",
            cuda.and_then(|c| c.ecc_mode).map(on),
            false,
        ),
        field("host", "host", p.host.clone(), false),
        field("rustc", "rustc", p.rustc.clone(), false),
        field(
            "profile",
            "profile",
            p.profile.as_ref().map(|profile| match &p.opt_level {
                Some(o) => format!("{profile} (opt-level {o})"),
                None => profile.clone(),
            }),
            false,
        ),
        field("gputune", "gputune", Some(p.gputune.clone()), false),
    ]
}

/// `p` in one line: where it ran and what built it, then the GPU's driver, compiler and
/// settings (`host gpu-7; driver 580.159.04, CUDA 13.0, NVRTC 13.0; SM clock 1980 MHz, …`),
/// and why NVML's fields are missing where they are.
pub fn summary(p: &Provenance) -> String {
    let fields = fields(p);
    let value = |key: &str| {
        fields
            .iter()
            .find(|f| f.key == key)
            .and_then(|f| f.value.clone())
    };
    let mut parts = Vec::new();
    let mut built = Vec::new();
    built.extend(value("host").map(|h| format!("host {h}")));
    built.extend(value("rustc"));
    built.extend(value("profile"));
    if !built.is_empty() {
        parts.push(built.join(", "));
    }
    if let Some(cuda) = &p.cuda {
        let mut software = Vec::new();
        for key in ["driver", "cuda", "nvrtc"] {
            let f = fields.iter().find(|f| f.key == key);
            if let Some((label, v)) = f.and_then(|f| Some((f.label, f.value.clone()?))) {
                software.push(format!("{label} {v}"));
            }
        }
        if !software.is_empty() {
            parts.push(software.join(", "));
        }
        let settings: Vec<String> = fields
            .iter()
            .filter(|f| {
                matches!(
                    f.key,
                    "application_sm_clock"
                        | "application_memory_clock"
                        | "power_limit"
                        | "persistence_mode"
                        | "ecc_mode"
                )
            })
            .filter_map(|f| Some(format!("{} {}", f.label, f.value.clone()?)))
            .collect();
        if !settings.is_empty() {
            parts.push(settings.join(", "));
        }
        if let Some(e) = &cuda.nvml_error {
            parts.push(format!("clocks, power limit and modes unknown: {e}"));
        }
    }
    parts.join("; ")
}

/// Says once per process that NVML did not answer (so the runs' driver version, clocks, power
/// limit and modes are not recorded), and why, the first time a pass says so.
pub fn note_missing_nvml(out: &mut Output, p: &Provenance) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if let Some(note) = missing_nvml(p, &SAID) {
        out.status(&note);
    }
}

/// The note about `p`'s missing NVML fields, unless `said` says it was given already.
fn missing_nvml(p: &Provenance, said: &AtomicBool) -> Option<String> {
    let why = p.cuda.as_ref()?.nvml_error.as_deref()?;
    (!said.swap(true, Ordering::Relaxed)).then(|| {
        format!(
            "Note: {why}; the runs' driver version, clocks, power limit, persistence and ECC \
             mode are not recorded (each sample's SM clock is)"
        )
    })
}

/// The SM clocks of a set of samples, against a reference clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Clocks {
    /// The slowest sample's, Hz.
    pub min: f64,
    /// The median sample's, Hz.
    pub median: f64,
    /// The fastest sample's, Hz.
    pub max: f64,
    /// Samples with a clock.
    pub samples: usize,
    /// Of those, the ones under [`DOWN_CLOCKED`] of `reference`.
    pub down_clocked: usize,
    /// What they are held against: the application clock, else the fastest sample's.
    pub reference: f64,
}

impl Clocks {
    /// The clocks of `hz` against `application` (the fastest sample's where `None`); `None`
    /// without clocks.
    pub fn of(hz: &[f64], application: Option<f64>) -> Option<Clocks> {
        let mut sorted: Vec<f64> = hz.iter().copied().filter(|c| *c > 0.0).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let max = sorted[sorted.len() - 1];
        let reference = application.filter(|a| *a > 0.0).unwrap_or(max);
        Some(Clocks {
            min: sorted[0],
            median: crate::results::median(sorted.clone())?,
            max,
            samples: sorted.len(),
            down_clocked: sorted
                .iter()
                .filter(|c| **c < DOWN_CLOCKED * reference)
                .count(),
            reference,
        })
    }
}

#[cfg(test)]
mod tests {
    use gputune_protocol::CudaProvenance;

    use super::*;

    fn gpu(nvml_error: Option<&str>) -> Provenance {
        let nvml = nvml_error.is_none();
        Provenance {
            host: Some("gpu-7".into()),
            gputune: "0.1.0".into(),
            rustc: Some("rustc 1.89.0 (29483883e 2025-08-04)".into()),
            profile: Some("release".into()),
            opt_level: Some("3".into()),
            debug_assertions: Some(false),
            cuda: Some(CudaProvenance {
                device: 0,
                uuid: None,
                pci_bus_id: Some("0000:65:00.0".into()),
                driver: nvml.then(|| "580.159.04".into()),
                driver_api: Some(13000),
                nvrtc: Some("13.0".into()),
                application_sm_clock: nvml.then_some(1.98e9),
                application_memory_clock: nvml.then_some(2.619e9),
                power_limit: nvml.then_some(700.0),
                persistence_mode: nvml.then_some(true),
                ecc_mode: nvml.then_some(true),
                nvml_error: nvml_error.map(str::to_string),
            }),
        }
    }

    #[test]
    fn a_gpu_run_reads_as_one_line() {
        assert_eq!(
            summary(&gpu(None)),
            "host gpu-7, rustc 1.89.0 (29483883e 2025-08-04), release (opt-level 3); driver \
             580.159.04, CUDA 13.0, NVRTC 13.0; SM clock 1980 MHz, memory clock 2619 MHz, \
             power limit 700 W, persistence on, ECC on"
        );
        let without = summary(&gpu(Some("NVML is not available (libnvidia-ml.so.1: x)")));
        assert!(without.contains("CUDA 13.0, NVRTC 13.0"), "{without}");
        assert!(!without.contains("driver "), "{without}");
        assert!(
            without.ends_with("clocks, power limit and modes unknown: NVML is not available (libnvidia-ml.so.1: x)"),
            "{without}"
        );
        let cpu = Provenance {
            cuda: None,
            ..gpu(None)
        };
        assert_eq!(
            summary(&cpu),
            "host gpu-7, rustc 1.89.0 (29483883e 2025-08-04), release (opt-level 3)"
        );
    }

    #[test]
    fn the_compared_fields_are_those_that_change_a_time() {
        let compared: Vec<&str> = fields(&gpu(None))
            .into_iter()
            .filter(|f| f.compared)
            .map(|f| f.key)
            .collect();
        assert_eq!(
            compared,
            [
                "driver",
                "cuda",
                "nvrtc",
                "application_sm_clock",
                "application_memory_clock",
                "power_limit"
            ]
        );
    }

    #[test]
    fn down_clocked_samples_are_counted_against_the_application_clock() {
        let hz = [1.98e9, 1.98e9, 1.965e9, 1.755e9, 0.0];
        let c = Clocks::of(&hz, Some(1.98e9)).expect("clocks");
        assert_eq!((c.samples, c.down_clocked), (4, 1));
        assert_eq!((c.min, c.max), (1.755e9, 1.98e9));
        assert_eq!(c.median, (1.965e9 + 1.98e9) / 2.0);
        // Without an application clock, against the fastest sample.
        let c = Clocks::of(&[1.5e9, 1.6e9], None).expect("clocks");
        assert_eq!((c.reference, c.down_clocked), (1.6e9, 1));
        assert!(Clocks::of(&[], Some(1.98e9)).is_none());
    }

    #[test]
    fn missing_nvml_is_said_once_and_only_when_missing() {
        let said = AtomicBool::new(false);
        assert_eq!(missing_nvml(&gpu(None), &said), None);
        let missing = gpu(Some("NVML is not available (libnvidia-ml.so.1: not found)"));
        let note = missing_nvml(&missing, &said).expect("said the first time");
        assert!(
            note.starts_with("Note: NVML is not available (libnvidia-ml.so.1: not found); "),
            "{note}"
        );
        assert_eq!(missing_nvml(&missing, &said), None, "not again");
        let cpu = Provenance {
            cuda: None,
            ..gpu(None)
        };
        assert_eq!(missing_nvml(&cpu, &AtomicBool::new(false)), None);
    }
}

//! The human table: one markdown table per bench, in nvbench's columns.

use crate::device::{BackendKind, DeviceInfo};
use crate::stats::Summary;

use super::{BenchReport, RunReport};

/// `1.234 ms`-style durations (the protocol crate's, shared with `cargo gputune`).
pub use gputune_protocol::units::format_duration;

fn format_rate(v: f64, unit: &str) -> String {
    let (scaled, prefix) = if v >= 1e12 {
        (v / 1e12, "T")
    } else if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "K")
    } else {
        (v, "")
    };
    format!("{scaled:.3}{prefix}{unit}")
}

fn percent(v: f64) -> String {
    if v.is_finite() {
        format!("{:.2}%", v * 100.0)
    } else {
        "inf".into()
    }
}

/// The names of the time columns: nvbench's on a GPU; on the CPU the measured time is the
/// monotonic clock around the launches, not a GPU's, and the host column is wall time.
struct TimeLabels {
    host: &'static str,
    device: &'static str,
    batch: &'static str,
}

impl TimeLabels {
    const GPU: TimeLabels = TimeLabels {
        host: "CPU Time",
        device: "GPU Time",
        batch: "Batch GPU",
    };
    const CPU: TimeLabels = TimeLabels {
        host: "Wall Time",
        device: "Time",
        batch: "Batch Time",
    };

    /// By the devices the bench's states ran on, else (nothing ran) by the backend it declares.
    fn of(report: &RunReport, bench: &BenchReport) -> TimeLabels {
        let mut ran = bench
            .states
            .iter()
            .filter_map(|s| s.device.and_then(|i| report.devices.get(i)))
            .map(|d| d.backend)
            .peekable();
        let on_cpu = match ran.peek() {
            Some(_) => ran.all(|b| b == BackendKind::Cpu),
            None => bench.backend == BackendKind::Cpu,
        };
        if on_cpu {
            TimeLabels::CPU
        } else {
            TimeLabels::GPU
        }
    }
}

/// The human table: one markdown table per bench, in nvbench's columns.
pub fn to_table(report: &RunReport) -> String {
    let mut out = String::new();
    for b in &report.benchmarks {
        out.push_str(&format!("## {}\n\n", b.name));
        // A variant column only when the run asked for variants (or tuned ones ran).
        let with_variant = b
            .states
            .iter()
            .any(|s| s.outcome.variant.as_deref().is_some_and(|v| v != "base"));
        let mut header: Vec<String> = Vec::new();
        if with_variant {
            header.push("Variant".into());
        }
        header.extend(b.axes.iter().map(|a| a.name.clone()));
        let labels = TimeLabels::of(report, b);
        header.extend(
            [
                "Samples",
                labels.host,
                "Noise",
                labels.device,
                "Noise",
                "Elem/s",
                "GlobalMem BW",
                "BWUtil",
                "Samples",
                labels.batch,
            ]
            .map(String::from),
        );
        // Energy columns only when a state measured energy (`--energy` on a device with a
        // counter): the table of a time-only run stays as it was.
        let with_energy = b.states.iter().any(|s| {
            matches!(
                s.outcome.energy,
                Some(crate::measure::energy::Energy::Measured(_))
            )
        });
        if with_energy {
            header.extend(["Energy", "Noise", "Power"].map(String::from));
        }
        let mut rows: Vec<Vec<String>> = Vec::new();
        for s in &b.states {
            let mut row: Vec<String> = Vec::new();
            if with_variant {
                row.push(s.outcome.variant.clone().unwrap_or_default());
            }
            row.extend(b.axes.iter().map(|a| {
                s.axis_values
                    .iter()
                    .find(|(n, _)| n == &a.name)
                    .map(|(_, v)| v.display())
                    .unwrap_or_default()
            }));
            let o = &s.outcome;
            if let Some(reason) = &o.skipped {
                row.push(format!("skipped: {reason}"));
            } else if let (Some(e), None) = (&o.error, &o.cold) {
                row.push(format!("FAILED: {e}"));
            } else if let Some(cold) = &o.cold {
                let device = s.device.and_then(|i| report.devices.get(i));
                let gpu = Summary::of(&cold.gpu_times);
                let cpu = Summary::of(&cold.cpu_times);
                let timeout = if cold.timed_out {
                    " (timeout)"
                } else if cold.raced.is_some() {
                    " (raced)"
                } else if cold.tied.is_some() {
                    " (tied)"
                } else {
                    ""
                };
                row.push(format!("{}x{timeout}", cold.gpu_times.len()));
                row.push(cpu.map_or("n/a".into(), |c| format_duration(c.mean)));
                row.push(cpu.map_or("n/a".into(), |c| percent(c.stdev_relative)));
                row.push(gpu.map_or("n/a".into(), |g| format_duration(g.mean)));
                row.push(gpu.map_or("n/a".into(), |g| percent(g.stdev_relative)));
                let mean = gpu.map_or(f64::NAN, |g| g.mean);
                row.push(if o.element_count > 0 {
                    format_rate(o.element_count as f64 / mean, "")
                } else {
                    String::new()
                });
                let bytes = (o.read_bytes + o.write_bytes) as f64;
                row.push(if bytes > 0.0 {
                    format_rate(bytes / mean, "B/s")
                } else {
                    String::new()
                });
                row.push(match device.and_then(DeviceInfo::peak_bandwidth) {
                    Some(peak) if bytes > 0.0 => percent(bytes / mean / peak),
                    _ => String::new(),
                });
                match &o.hot {
                    Some(h) => {
                        row.push(format!("{}x", h.executions));
                        row.push(format_duration(h.mean()));
                    }
                    None => row.extend([String::new(), String::new()]),
                }
                if with_energy {
                    row.extend(energy_cells(o.energy.as_ref()));
                }
                if let Some(e) = &o.error {
                    row.push(format!("FAILED: {e}"));
                }
            }
            rows.push(row);
        }
        let cols = header.len();
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                rows.iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .chain([header[c].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut l = String::from("|");
            for (i, c) in cells.iter().enumerate() {
                let w = widths.get(i).copied().unwrap_or(0);
                l.push_str(&format!(" {c:>w$} |"));
            }
            l.push('\n');
            l
        };
        out.push_str(&line(&header));
        out.push('|');
        for w in &widths {
            out.push_str(&format!("{}|", "-".repeat(w + 2)));
        }
        out.push('\n');
        for r in &rows {
            out.push_str(&line(r));
        }
        out.push('\n');
    }
    out
}

/// The energy columns of a state: joules per execution (mean over the batches), their noise,
/// and the mean power; empty where nothing was measured.
fn energy_cells(energy: Option<&crate::measure::energy::Energy>) -> [String; 3] {
    let Some(crate::measure::energy::Energy::Measured(m)) = energy else {
        return [String::new(), String::new(), String::new()];
    };
    let per_launch: Vec<f64> = m.batches.iter().map(|b| b.joules_per_launch()).collect();
    let watts: Vec<f64> = m.batches.iter().map(|b| b.watts()).collect();
    match (Summary::of(&per_launch), Summary::of(&watts)) {
        (Some(j), Some(w)) => [
            gputune_protocol::units::format_energy(j.mean),
            percent(j.stdev_relative),
            format!("{:.1} W", w.mean),
        ],
        _ => [String::new(), String::new(), String::new()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::ColdMeasurement;
    use crate::output::StateReport;
    use crate::state::Outcome;

    fn device(backend: BackendKind) -> DeviceInfo {
        DeviceInfo::bare(backend, &backend.to_string())
    }

    /// A bench declaring `backend` with one measured state on `device` (an index into
    /// [`report`]'s devices), or one that ran nowhere (skipped).
    fn bench(backend: BackendKind, device: Option<usize>) -> BenchReport {
        let cold = ColdMeasurement {
            gpu_times: vec![1e-3, 1.1e-3],
            cpu_times: vec![1e-3, 1.1e-3],
            sm_clock_rates: Vec::new(),
            throttled_samples: 0,
            timed_out: false,
            raced: None,
            tied: None,
            wall_time: 2.1e-3,
        };
        let outcome = match device {
            Some(_) => Outcome {
                cold: Some(cold),
                ..Outcome::default()
            },
            None => Outcome {
                skipped: Some("this bench needs CUDA".into()),
                ..Outcome::default()
            },
        };
        BenchReport {
            name: backend.to_string(),
            index: 0,
            tunes: None,
            backend,
            axes: Vec::new(),
            states: vec![StateReport {
                name: "Device=0".into(),
                device,
                type_config_index: 0,
                axis_values: Vec::new(),
                outcome,
            }],
        }
    }

    /// The time columns of each bench's header: host, device, batch.
    fn time_columns(benches: Vec<BenchReport>) -> Vec<[String; 3]> {
        let report = RunReport {
            argv: Vec::new(),
            devices: vec![device(BackendKind::Cpu), device(BackendKind::Cuda)],
            benchmarks: benches,
            provenance: None,
        };
        to_table(&report)
            .lines()
            .filter(|l| l.contains(" Noise |"))
            .map(|l| {
                let cells: Vec<String> = l.split('|').map(|c| c.trim().to_owned()).collect();
                // "", Samples, host, Noise, device, Noise, …, Samples, batch, ""
                [
                    cells[2].clone(),
                    cells[4].clone(),
                    cells[cells.len() - 2].clone(),
                ]
            })
            .collect()
    }

    #[test]
    fn cpu_benches_label_their_times_as_clock_times_not_gpu_times() {
        let columns = time_columns(vec![
            bench(BackendKind::Cpu, Some(0)),
            bench(BackendKind::Cuda, Some(1)),
            // A CUDA bench skipped by `--cpu` ran nowhere: it keeps its GPU columns.
            bench(BackendKind::Cuda, None),
        ]);
        assert_eq!(
            columns,
            [
                ["Wall Time", "Time", "Batch Time"],
                ["CPU Time", "GPU Time", "Batch GPU"],
                ["CPU Time", "GPU Time", "Batch GPU"],
            ]
        );
    }

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(format_duration(1.5), "1.500 s");
        assert_eq!(format_duration(0.0025), "2.500 ms");
        assert_eq!(format_duration(12.5e-6), "12.500 us");
        assert_eq!(format_duration(3e-9), "3.000 ns");
        assert_eq!(format_rate(3.2e12, "B/s"), "3.200TB/s");
    }
}

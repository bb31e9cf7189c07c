//! The run's results as nvbench-layout JSON and as a human table.
//!
//! The JSON layout is documented in `docs/bench-json.md` at the repository root; the
//! version in `meta.version.json` changes whenever a field changes meaning.

use serde_json::{json, Value};

use crate::axis::{Axis, AxisValue, AxisValues};
use crate::device::{BackendKind, DeviceInfo};
use crate::error::ErrorKind;
use crate::state::Outcome;
use crate::stats::Summary;

/// Version of the JSON document (major changes break readers).
/// 1.3 added `error_kind` to states.
pub const JSON_VERSION: (u32, u32, u32) = (1, 4, 0);

/// Everything one run produced, as plain data.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The command line.
    pub argv: Vec<String>,
    /// Devices states ran on.
    pub devices: Vec<DeviceInfo>,
    /// Benches, in registration order.
    pub benchmarks: Vec<BenchReport>,
}

/// One bench's results.
#[derive(Debug, Clone)]
pub struct BenchReport {
    /// Bench name.
    pub name: String,
    /// Index in the binary's registration order.
    pub index: usize,
    /// The tuned function it tunes, if declared.
    pub tunes: Option<String>,
    /// The backend it declares.
    pub backend: BackendKind,
    /// Its axes after `-a` overrides.
    pub axes: Vec<Axis>,
    /// Its states, in run order.
    pub states: Vec<StateReport>,
}

/// One state's results.
#[derive(Debug, Clone)]
pub struct StateReport {
    /// `Device=0 T{ct}=f32 Elements{io}=2^20`.
    pub name: String,
    /// Index into [`RunReport::devices`], if it ran on a device.
    pub device: Option<usize>,
    /// Index of the type instance.
    pub type_config_index: usize,
    /// Axis values by full name.
    pub axis_values: Vec<(String, AxisValue)>,
    /// What happened.
    pub outcome: Outcome,
}

impl StateReport {
    /// `ok`, `skipped`, `failed` or `timeout` (the cold loop hit its wall-clock limit; its
    /// samples are still reported).
    pub fn status(&self) -> &'static str {
        if self.outcome.skipped.is_some() {
            "skipped"
        } else if self.outcome.error.is_some() {
            "failed"
        } else if self.outcome.cold.as_ref().is_some_and(|c| c.timed_out) {
            "timeout"
        } else if self.outcome.cold.is_none() {
            "failed"
        } else {
            "ok"
        }
    }
}

fn summary(tag: &str, name: &str, hint: &str, description: &str, value: Value) -> Value {
    let ty = match &value {
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        _ => "string",
    };
    json!({
        "tag": tag,
        "name": name,
        "hint": hint,
        "description": description,
        "data": [{ "name": "value", "type": ty, "value": value.to_string().trim_matches('"') }],
    })
}

fn f(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// The summaries of a state, in nvbench's tags (and `gputune/…` for ours).
pub fn summaries(outcome: &Outcome, device: Option<&DeviceInfo>) -> Vec<Value> {
    let mut out = Vec::new();
    for (tag, name, value) in &outcome.notes {
        out.push(summary(
            tag,
            name,
            "string",
            "Added by the bench",
            json!(value),
        ));
    }
    if let Some(cold) = &outcome.cold {
        out.push(summary(
            "nv/cold/sample_size",
            "Samples",
            "sample_size",
            "Number of cold samples kept",
            json!(cold.gpu_times.len()),
        ));
        if let Some(cpu) = Summary::of(&cold.cpu_times) {
            out.push(summary(
                "nv/cold/time/cpu/mean",
                "CPU Time",
                "duration",
                "Mean isolated kernel execution time (measured on host CPU)",
                f(cpu.mean),
            ));
            out.push(summary(
                "nv/cold/time/cpu/stdev/relative",
                "Noise",
                "percentage",
                "Relative standard deviation of isolated CPU times",
                f(cpu.stdev_relative),
            ));
        }
        if let Some(gpu) = Summary::of(&cold.gpu_times) {
            let s = |t: &str, n: &str, h: &str, d: &str, v: f64| summary(t, n, h, d, f(v));
            out.push(s("nv/cold/time/gpu/mean", "GPU Time", "duration", "Mean isolated kernel execution time (measured with CUDA events on a GPU, the monotonic clock on a CPU)", gpu.mean));
            out.push(s(
                "nv/cold/time/gpu/stdev/relative",
                "Noise",
                "percentage",
                "Relative standard deviation of isolated GPU times",
                gpu.stdev_relative,
            ));
            out.push(s(
                "nv/cold/time/gpu/stdev/absolute",
                "Stdev",
                "duration",
                "Standard deviation of isolated GPU times",
                gpu.stdev,
            ));
            out.push(s(
                "nv/cold/time/gpu/min",
                "Min GPU Time",
                "duration",
                "Fastest isolated GPU time",
                gpu.min,
            ));
            out.push(s(
                "nv/cold/time/gpu/max",
                "Max GPU Time",
                "duration",
                "Slowest isolated GPU time",
                gpu.max,
            ));
            out.push(s(
                "nv/cold/time/gpu/median",
                "Median GPU Time",
                "duration",
                "Median isolated GPU time",
                gpu.median,
            ));
            out.push(s(
                "nv/cold/time/gpu/q1",
                "Q1 GPU Time",
                "duration",
                "First quartile of isolated GPU times",
                gpu.q1,
            ));
            out.push(s(
                "nv/cold/time/gpu/q3",
                "Q3 GPU Time",
                "duration",
                "Third quartile of isolated GPU times",
                gpu.q3,
            ));
            out.push(s(
                "nv/cold/time/gpu/iqr",
                "IQR",
                "duration",
                "Interquartile range of isolated GPU times",
                gpu.iqr,
            ));
            if outcome.element_count > 0 {
                out.push(s(
                    "nv/cold/bw/item_rate",
                    "Elem/s",
                    "item_rate",
                    "Number of input elements processed per second",
                    outcome.element_count as f64 / gpu.mean,
                ));
            }
            let bytes = outcome.read_bytes + outcome.write_bytes;
            if bytes > 0 {
                let bw = bytes as f64 / gpu.mean;
                out.push(s(
                    "nv/cold/bw/global/bytes_per_second",
                    "GlobalMem BW",
                    "byte_rate",
                    "Number of bytes read/written per second",
                    bw,
                ));
                if let Some(peak) = device.and_then(DeviceInfo::peak_bandwidth) {
                    out.push(s(
                        "nv/cold/bw/global/utilization",
                        "BWUtil",
                        "percentage",
                        "Global device memory utilization as a percentage of peak bandwidth",
                        bw / peak,
                    ));
                }
            }
        }
        if let Some(clock) = Summary::of(&cold.sm_clock_rates) {
            out.push(summary(
                "nv/cold/sm_clock_rate/mean",
                "Clock Rate",
                "frequency",
                "Mean SM clock rate during the kept samples",
                f(clock.mean),
            ));
        }
        out.push(summary(
            "gputune/cold/throttled_samples",
            "Throttled",
            "sample_size",
            "Samples discarded because the SM clock was throttled",
            json!(cold.throttled_samples),
        ));
        out.push(summary(
            "nv/cold/walltime",
            "Walltime",
            "duration",
            "Wall time of the cold loop, warm-up included",
            f(cold.wall_time),
        ));
        out.push(summary(
            "gputune/cold/timed_out",
            "Timed out",
            "flag",
            "Whether the wall-clock timeout ended the cold loop",
            json!(if cold.timed_out { 1 } else { 0 }),
        ));
        if let Some(race) = &cold.raced {
            out.push(summary(
                "gputune/cold/raced/best",
                "Raced",
                "duration",
                "The cold loop stopped early: its first quartile was more than the margin above \
                 this best median of an earlier variant (--race)",
                f(race.best),
            ));
            out.push(summary(
                "gputune/cold/raced/margin",
                "Race margin",
                "percentage",
                "The --race margin the state lost by",
                f(race.margin),
            ));
        }
    }
    if let Some(hot) = &outcome.hot {
        out.push(summary(
            "nv/batch/sample_size",
            "Samples",
            "sample_size",
            "Number of batched executions",
            json!(hot.executions),
        ));
        out.push(summary(
            "nv/batch/time/gpu/mean",
            "Batch GPU",
            "duration",
            "Mean batched kernel execution time",
            f(hot.mean()),
        ));
        if let Some(b) = Summary::of(&hot.batch_means) {
            out.push(summary(
                "nv/batch/time/gpu/stdev/relative",
                "Noise",
                "percentage",
                "Relative standard deviation of the batch means",
                f(b.stdev_relative),
            ));
        }
    }
    out
}

/// A device as the JSON document lists it.
pub fn device_json(d: &DeviceInfo) -> Value {
    json!({
        "id": d.id,
        "backend": d.backend,
        "name": d.name,
        "sm_version": d.sm_version,
        "sm_default_clock_rate": d.sm_default_clock_rate,
        "number_of_sms": d.sm_count,
        "max_threads_per_block": d.max_threads_per_block,
        "global_memory_size": d.global_memory_size,
        "global_memory_bus_peak_clock_rate": d.memory_clock_rate,
        "global_memory_bus_width": d.memory_bus_width,
        "global_memory_bus_bandwidth": d.peak_bandwidth(),
        "l2_cache_size": d.cache_size,
        "shared_memory_per_block": d.shared_memory_per_block,
        "ecc_state": d.ecc_enabled,
    })
}

/// The axes as `--list` and the JSON document describe them.
pub fn axes_json(axes: &[Axis]) -> Value {
    let list: Vec<Value> = axes
        .iter()
        .map(|a| {
            let parsed = a.parsed_name();
            let values: Vec<Value> = (0..a.values.len())
                .filter_map(|i| a.values.value(i))
                .map(|v| {
                    let mut o = json!({ "input_string": v.display(), "description": "" });
                    match v {
                        AxisValue::Int64(x) | AxisValue::Int64Pow2 { value: x, .. } => {
                            o["value"] = json!(x)
                        }
                        AxisValue::Float64(x) => o["value"] = f(x),
                        AxisValue::String(s) | AxisValue::Type(s) => o["value"] = json!(s),
                    }
                    o
                })
                .collect();
            json!({
                "name": a.name,
                "plain_name": parsed.plain,
                "compile_time": parsed.compile_time,
                "importance_ordered": parsed.importance_ordered,
                "type": a.values.kind(),
                "flags": if matches!(a.values, AxisValues::Int64Pow2(_)) { "pow2" } else { "" },
                "values": values,
            })
        })
        .collect();
    Value::Array(list)
}

fn axis_value_json(name: &str, v: &AxisValue) -> Value {
    match v {
        AxisValue::Int64(x) | AxisValue::Int64Pow2 { value: x, .. } => {
            json!({ "name": name, "type": "int64", "value": x.to_string() })
        }
        AxisValue::Float64(x) => json!({ "name": name, "type": "float64", "value": x.to_string() }),
        AxisValue::String(s) => json!({ "name": name, "type": "string", "value": s }),
        AxisValue::Type(s) => json!({ "name": name, "type": "type", "value": s }),
    }
}

/// One state as the document's `states` entry (also a `--jsonl` line's `state`).
pub fn state_json(s: &StateReport, devices: &[DeviceInfo]) -> Value {
    let device = s.device.and_then(|i| devices.get(i));
    let o = &s.outcome;
    json!({
        "name": s.name,
        "device": device.map(|d| d.id),
        "type_config_index": s.type_config_index,
        "axis_values": s.axis_values.iter().map(|(n, v)| axis_value_json(n, v)).collect::<Vec<_>>(),
        "summaries": summaries(o, device),
        "is_skipped": o.skipped.is_some(),
        "skip_reason": o.skipped,
        "status": s.status(),
        "error": o.error,
        "error_kind": o.error.as_ref().map(|_| o.error_kind.unwrap_or(ErrorKind::Other)),
        "variant": o.variant,
        "verification": o.verification,
        "criterion": o.criterion.as_ref().map(|(n, p)| json!({
            "name": n,
            "params": p.iter().map(|(k, v)| (k.clone(), f(*v))).collect::<serde_json::Map<_, _>>(),
        })),
        "element_count": o.element_count,
        "global_memory_read_bytes": o.read_bytes,
        "global_memory_write_bytes": o.write_bytes,
        "samples": o.cold.as_ref().map(|c| json!({ "gpu": c.gpu_times, "cpu": c.cpu_times })),
        "batch": o.hot.as_ref().map(|h| json!({ "batch_size": h.batch_size, "batch_means": h.batch_means })),
    })
}

/// The whole run as an nvbench-layout JSON document.
pub fn to_json(report: &RunReport) -> Value {
    let benchmarks: Vec<Value> = report
        .benchmarks
        .iter()
        .map(|b| {
            let states: Vec<Value> = b
                .states
                .iter()
                .map(|s| state_json(s, &report.devices))
                .collect();
            json!({
                "name": b.name,
                "index": b.index,
                "tunes": b.tunes,
                "backend": b.backend,
                "axes": axes_json(&b.axes),
                "states": states,
            })
        })
        .collect();
    json!({
        "meta": {
            "argv": report.argv,
            "version": {
                "json": { "major": JSON_VERSION.0, "minor": JSON_VERSION.1, "patch": JSON_VERSION.2,
                          "string": format!("{}.{}.{}", JSON_VERSION.0, JSON_VERSION.1, JSON_VERSION.2) },
                "gputune": { "string": env!("CARGO_PKG_VERSION") },
            },
        },
        "devices": report.devices.iter().map(device_json).collect::<Vec<_>>(),
        "benchmarks": benchmarks,
    })
}

/// `1.234 ms`-style durations.
pub fn format_duration(seconds: f64) -> String {
    let a = seconds.abs();
    if !a.is_finite() {
        "n/a".into()
    } else if a >= 1.0 {
        format!("{seconds:.3} s")
    } else if a >= 1e-3 {
        format!("{:.3} ms", seconds * 1e3)
    } else if a >= 1e-6 {
        format!("{:.3} us", seconds * 1e6)
    } else {
        format!("{:.3} ns", seconds * 1e9)
    }
}

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
        header.extend(
            [
                "Samples",
                "CPU Time",
                "Noise",
                "GPU Time",
                "Noise",
                "Elem/s",
                "GlobalMem BW",
                "BWUtil",
                "Samples",
                "Batch GPU",
            ]
            .map(String::from),
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(format_duration(1.5), "1.500 s");
        assert_eq!(format_duration(0.0025), "2.500 ms");
        assert_eq!(format_duration(12.5e-6), "12.500 us");
        assert_eq!(format_duration(3e-9), "3.000 ns");
        assert_eq!(format_rate(3.2e12, "B/s"), "3.200TB/s");
    }

    fn state(outcome: Outcome) -> StateReport {
        StateReport {
            name: "Device=0".into(),
            device: None,
            type_config_index: 0,
            axis_values: Vec::new(),
            outcome,
        }
    }

    #[test]
    fn a_failed_state_says_what_kind_of_failure_it_is() {
        let mut outcome = Outcome::default();
        outcome.fail("kernel compilation failed: …", ErrorKind::Compile);
        let json = state_json(&state(outcome), &[]);
        assert_eq!(json["status"], "failed");
        assert_eq!(json["error_kind"], "compile");

        // An error recorded without a kind is `other`; no error, no kind.
        let outcome = Outcome {
            error: Some("the bench's own error".into()),
            ..Outcome::default()
        };
        assert_eq!(state_json(&state(outcome), &[])["error_kind"], "other");
        assert!(state_json(&state(Outcome::default()), &[])["error_kind"].is_null());
    }

    #[test]
    fn a_lost_device_replaces_an_earlier_failure_and_nothing_else_does() {
        let mut outcome = Outcome::default();
        outcome.fail("first", ErrorKind::Launch);
        outcome.fail("second", ErrorKind::Compile);
        assert_eq!(outcome.error.as_deref(), Some("first"));
        outcome.fail("CUDA_ERROR_ILLEGAL_ADDRESS", ErrorKind::DeviceLost);
        assert!(outcome.device_lost());
        outcome.fail("later", ErrorKind::DeviceLost);
        assert_eq!(outcome.error.as_deref(), Some("CUDA_ERROR_ILLEGAL_ADDRESS"));
    }
}

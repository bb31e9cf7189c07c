//! The run's results as the protocol's typed documents (`gputune-protocol`): what `--json`,
//! `--jsonl`, `--list` and `--devices` write. Numbers stay numbers; a value that is not
//! finite (JSON has no infinity) is left out rather than written as something else.

use std::collections::BTreeMap;

use gputune_protocol::{
    AxisDoc, AxisKind, AxisValueDoc, AxisValueRecord, Batch, BenchResults, Comparison,
    CriterionRecord, Device, EnergyRecord, Meta, ResultsDoc, Samples, Scalar, StateRecord, Stop,
    Summary, Tolerance, VerificationRecord, VerifiedAgainst, PROTOCOL_VERSION,
};

use crate::axis::{Axis, AxisValue, AxisValues};
use crate::device::DeviceInfo;
use crate::error::ErrorKind;
use crate::state::Outcome;
use crate::stats;
use crate::verify::Verification;

use super::{RunReport, StateReport};

/// A float as a scalar, `None` when it is not finite.
fn float(v: f64) -> Option<Scalar> {
    v.is_finite().then_some(Scalar::Float(v))
}

/// The summaries of a state, in nvbench's tags (and `gputune/…` for ours).
pub fn summaries(outcome: &Outcome, device: Option<&DeviceInfo>) -> Vec<Summary> {
    let mut out = Vec::new();
    let mut push = |tag: &str, name: &str, hint: &str, description: &str, v: Option<Scalar>| {
        if let Some(v) = v {
            out.push(Summary::new(tag, name, hint, description, v));
        }
    };
    for (tag, name, value) in &outcome.notes {
        push(
            tag,
            name,
            "string",
            "Added by the bench",
            Some(Scalar::Text(value.clone())),
        );
    }
    let count = |n: u64| Some(Scalar::Int(i64::try_from(n).unwrap_or(i64::MAX)));
    if let Some(cold) = &outcome.cold {
        push(
            "nv/cold/sample_size",
            "Samples",
            "sample_size",
            "Number of cold samples kept",
            count(cold.gpu_times.len() as u64),
        );
        if let Some(cpu) = stats::Summary::of(&cold.cpu_times) {
            push(
                "nv/cold/time/cpu/mean",
                "CPU Time",
                "duration",
                "Mean isolated kernel execution time (measured on host CPU)",
                float(cpu.mean),
            );
            push(
                "nv/cold/time/cpu/stdev/relative",
                "Noise",
                "percentage",
                "Relative standard deviation of isolated CPU times",
                float(cpu.stdev_relative),
            );
        }
        if let Some(gpu) = stats::Summary::of(&cold.gpu_times) {
            let times = [
                ("nv/cold/time/gpu/mean", "GPU Time", "duration", "Mean isolated kernel execution time (measured with CUDA events on a GPU, the monotonic clock on a CPU)", gpu.mean),
                ("nv/cold/time/gpu/stdev/relative", "Noise", "percentage", "Relative standard deviation of isolated GPU times", gpu.stdev_relative),
                ("nv/cold/time/gpu/stdev/absolute", "Stdev", "duration", "Standard deviation of isolated GPU times", gpu.stdev),
                ("nv/cold/time/gpu/min", "Min GPU Time", "duration", "Fastest isolated GPU time", gpu.min),
                ("nv/cold/time/gpu/max", "Max GPU Time", "duration", "Slowest isolated GPU time", gpu.max),
                ("nv/cold/time/gpu/median", "Median GPU Time", "duration", "Median isolated GPU time", gpu.median),
                ("nv/cold/time/gpu/q1", "Q1 GPU Time", "duration", "First quartile of isolated GPU times", gpu.q1),
                ("nv/cold/time/gpu/q3", "Q3 GPU Time", "duration", "Third quartile of isolated GPU times", gpu.q3),
                ("nv/cold/time/gpu/iqr", "IQR", "duration", "Interquartile range of isolated GPU times", gpu.iqr),
            ];
            for (tag, name, hint, description, v) in times {
                push(tag, name, hint, description, float(v));
            }
            if outcome.element_count > 0 {
                push(
                    "nv/cold/bw/item_rate",
                    "Elem/s",
                    "item_rate",
                    "Number of input elements processed per second",
                    float(outcome.element_count as f64 / gpu.mean),
                );
            }
            let bytes = outcome.read_bytes + outcome.write_bytes;
            if bytes > 0 {
                let bw = bytes as f64 / gpu.mean;
                push(
                    "nv/cold/bw/global/bytes_per_second",
                    "GlobalMem BW",
                    "byte_rate",
                    "Number of bytes read/written per second",
                    float(bw),
                );
                if let Some(peak) = device.and_then(DeviceInfo::peak_bandwidth) {
                    push(
                        "nv/cold/bw/global/utilization",
                        "BWUtil",
                        "percentage",
                        "Global device memory utilization as a percentage of peak bandwidth",
                        float(bw / peak),
                    );
                }
            }
        }
        if let Some(clock) = stats::Summary::of(&cold.sm_clock_rates) {
            push(
                "nv/cold/sm_clock_rate/mean",
                "Clock Rate",
                "frequency",
                "Mean SM clock rate during the kept samples",
                float(clock.mean),
            );
        }
        push(
            "gputune/cold/throttled_samples",
            "Throttled",
            "sample_size",
            "Samples discarded because the SM clock was throttled",
            count(cold.throttled_samples),
        );
        push(
            "gputune/cold/timed_out",
            "Timed out",
            "flag",
            "Whether the wall-clock timeout ended the loop (see also `stop`)",
            Some(Scalar::Int(i64::from(cold.timed_out))),
        );
        push(
            "nv/cold/walltime",
            "Walltime",
            "duration",
            "Wall time of the cold loop, warm-up included",
            float(cold.wall_time),
        );
    }
    if let Some(hot) = &outcome.hot {
        push(
            "nv/batch/sample_size",
            "Samples",
            "sample_size",
            "Number of batched executions",
            count(hot.executions),
        );
        push(
            "nv/batch/time/gpu/mean",
            "Batch GPU",
            "duration",
            "Mean batched kernel execution time",
            float(hot.mean()),
        );
        if let Some(b) = stats::Summary::of(&hot.batch_means) {
            push(
                "nv/batch/time/gpu/stdev/relative",
                "Noise",
                "percentage",
                "Relative standard deviation of the batch means",
                float(b.stdev_relative),
            );
        }
    }
    if let Some(crate::measure::energy::Energy::Measured(e)) = &outcome.energy {
        let per_launch: Vec<f64> = e.batches.iter().map(|b| b.joules_per_launch()).collect();
        let watts: Vec<f64> = e.batches.iter().map(|b| b.watts()).collect();
        push(
            "gputune/energy/sample_size",
            "Batches",
            "sample_size",
            "Energy batches, each from one update of the energy counter to a later one",
            count(e.batches.len() as u64),
        );
        if let Some(j) = stats::Summary::of(&per_launch) {
            push(
                "gputune/energy/joules_per_launch/mean",
                "Energy",
                "energy",
                "Mean energy of one execution over the energy batches (joules)",
                float(j.mean),
            );
            push(
                "gputune/energy/joules_per_launch/median",
                "Energy Median",
                "energy",
                "Median energy of one execution over the energy batches (joules)",
                float(j.median),
            );
            push(
                "gputune/energy/joules_per_launch/stdev/relative",
                "Energy Noise",
                "percentage",
                "Relative standard deviation of the batches' energy per execution",
                float(j.stdev_relative),
            );
        }
        if let Some(w) = stats::Summary::of(&watts) {
            push(
                "gputune/energy/power/mean",
                "Power",
                "power",
                "Mean power over the energy batches (watts, the whole board)",
                float(w.mean),
            );
        }
        push(
            "gputune/energy/counter_interval",
            "Counter Interval",
            "duration",
            "Update interval of the energy counter under load, which sized the batches",
            float(e.counter_interval),
        );
    }
    out
}

/// A device as the protocol describes it.
pub fn device_record(d: &DeviceInfo) -> Device {
    Device {
        id: d.id,
        backend: d.backend,
        name: d.name.clone(),
        sm_version: d.sm_version,
        sm_default_clock_rate: d.sm_default_clock_rate,
        number_of_sms: d.sm_count,
        max_threads_per_block: d.max_threads_per_block,
        global_memory_size: d.global_memory_size,
        global_memory_bus_peak_clock_rate: d.memory_clock_rate,
        global_memory_bus_width: d.memory_bus_width,
        global_memory_bus_bandwidth: d.peak_bandwidth(),
        l2_cache_size: d.cache_size,
        shared_memory_per_block: d.shared_memory_per_block,
        ecc_state: d.ecc_enabled,
    }
}

fn axis_kind(values: &AxisValues) -> AxisKind {
    match values {
        AxisValues::Int64(_) | AxisValues::Int64Pow2(_) => AxisKind::Int64,
        AxisValues::Float64(_) => AxisKind::Float64,
        AxisValues::String(_) => AxisKind::String,
        AxisValues::Type(_) => AxisKind::Type,
    }
}

fn scalar(v: &AxisValue) -> Scalar {
    match v {
        AxisValue::Int64(x) | AxisValue::Int64Pow2 { value: x, .. } => Scalar::Int(*x),
        // Axis values are parsed as finite numbers.
        AxisValue::Float64(x) => Scalar::Float(*x),
        AxisValue::String(s) | AxisValue::Type(s) => Scalar::Text(s.clone()),
    }
}

/// The axes as `--list` and the results document describe them.
pub fn axis_docs(axes: &[Axis]) -> Vec<AxisDoc> {
    axes.iter()
        .map(|a| {
            let parsed = a.parsed_name();
            AxisDoc {
                name: a.name.clone(),
                plain_name: parsed.plain.to_string(),
                compile_time: parsed.compile_time,
                importance_ordered: parsed.importance_ordered,
                kind: axis_kind(&a.values),
                flags: if matches!(a.values, AxisValues::Int64Pow2(_)) {
                    "pow2".into()
                } else {
                    String::new()
                },
                values: (0..a.values.len())
                    .filter_map(|i| a.values.value(i))
                    .map(|v| AxisValueDoc {
                        input_string: v.display(),
                        description: String::new(),
                        value: scalar(&v),
                    })
                    .collect(),
            }
        })
        .collect()
}

fn axis_value_record(name: &str, v: &AxisValue) -> AxisValueRecord {
    let kind = match v {
        AxisValue::Int64(_) | AxisValue::Int64Pow2 { .. } => AxisKind::Int64,
        AxisValue::Float64(_) => AxisKind::Float64,
        AxisValue::String(_) => AxisKind::String,
        AxisValue::Type(_) => AxisKind::Type,
    };
    AxisValueRecord {
        name: name.to_string(),
        kind,
        value: scalar(v),
        input_string: v.display(),
    }
}

fn verification_record(v: &Verification) -> VerificationRecord {
    VerificationRecord {
        against: match v.against {
            "base" => VerifiedAgainst::Base,
            "expected" => VerifiedAgainst::Expected,
            _ => VerifiedAgainst::Check,
        },
        passed: v.passed,
        tolerance: v.tolerance.map(|t| Tolerance {
            atol: t.atol,
            rtol: t.rtol,
            floor: t.floor,
        }),
        comparison: v.comparison.as_ref().map(|c| Comparison {
            checked: c.checked,
            mismatches: c.mismatches,
            max_abs_error: c.max_abs_error.is_finite().then_some(c.max_abs_error),
            max_rel_error: c.max_rel_error.is_finite().then_some(c.max_rel_error),
            worst_index: c.worst_index,
        }),
        message: v.message.clone(),
    }
}

/// One state as the protocol records it (the document's `states` entry and a `--jsonl`
/// line's `state`).
pub fn state_record(s: &StateReport, devices: &[DeviceInfo]) -> StateRecord {
    let device = s.device.and_then(|i| devices.get(i));
    let o = &s.outcome;
    StateRecord {
        name: s.name.clone(),
        device: device.map(|d| d.id),
        type_config_index: s.type_config_index,
        axis_values: s
            .axis_values
            .iter()
            .map(|(n, v)| axis_value_record(n, v))
            .collect(),
        status: s.status(),
        is_skipped: o.skipped.is_some(),
        skip_reason: o.skipped.clone(),
        error: o.error.clone(),
        error_kind: o
            .error
            .as_ref()
            .map(|_| o.error_kind.unwrap_or(ErrorKind::Other)),
        stop: o
            .cold
            .as_ref()
            .map(|c| match (c.raced, c.tied, c.timed_out) {
                (Some(r), _, _) => Stop::Raced {
                    best: r.best,
                    margin: r.margin,
                },
                (None, Some(r), _) => Stop::Tied {
                    best: r.best,
                    margin: r.tie,
                },
                (None, None, true) => Stop::Timeout,
                (None, None, false) => Stop::Criterion,
            }),
        verification: o.verification.as_ref().map(verification_record),
        variant: o.variant.clone(),
        criterion: o.criterion.as_ref().map(|(name, params)| CriterionRecord {
            name: name.clone(),
            params: params.iter().cloned().collect::<BTreeMap<String, f64>>(),
        }),
        element_count: o.element_count,
        global_memory_read_bytes: o.read_bytes,
        global_memory_write_bytes: o.write_bytes,
        summaries: summaries(o, device),
        samples: o.cold.as_ref().map(|c| Samples {
            gpu: c.gpu_times.clone(),
            cpu: c.cpu_times.clone(),
            // One clock per kept sample, or none: a backend that read some clocks and not
            // others would misalign them.
            sm_clock: if c.sm_clock_rates.len() == c.gpu_times.len() {
                c.sm_clock_rates.clone()
            } else {
                Vec::new()
            },
        }),
        batch: o.hot.as_ref().map(|h| Batch {
            batch_size: h.batch_size,
            batch_means: h.batch_means.clone(),
        }),
        kernels: o.kernels.clone(),
        energy: o.energy.as_ref().map(energy_record),
    }
}

/// A state's energy as the protocol records it.
fn energy_record(e: &crate::measure::energy::Energy) -> EnergyRecord {
    use crate::measure::energy::Energy;
    match e {
        Energy::Unavailable(why) => EnergyRecord {
            unavailable: Some(why.clone()),
            counter_interval: None,
            batches: Vec::new(),
        },
        Energy::Measured(m) => EnergyRecord {
            unavailable: None,
            counter_interval: Some(m.counter_interval),
            batches: m.batches.clone(),
        },
    }
}

/// The whole run as the results document.
pub fn results_doc(report: &RunReport) -> ResultsDoc {
    ResultsDoc {
        meta: Meta {
            argv: report.argv.clone(),
            protocol: PROTOCOL_VERSION,
            gputune: env!("CARGO_PKG_VERSION").to_string(),
            provenance: report.provenance.clone(),
        },
        devices: report.devices.iter().map(device_record).collect(),
        benchmarks: report
            .benchmarks
            .iter()
            .map(|b| BenchResults {
                name: b.name.clone(),
                index: b.index,
                tunes: b.tunes.clone(),
                backend: b.backend,
                axes: axis_docs(&b.axes),
                states: b
                    .states
                    .iter()
                    .map(|s| state_record(s, &report.devices))
                    .collect(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use gputune_protocol::StateStatus;

    use super::*;

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
        let record = state_record(&state(outcome), &[]);
        assert_eq!(record.status, StateStatus::Failed);
        assert_eq!(record.error_kind, Some(ErrorKind::Compile));
        let json = serde_json::to_value(&record).expect("serialises");
        assert_eq!(json["status"], "failed");
        assert_eq!(json["error_kind"], "compile");

        // An error recorded without a kind is `other`; no error, no kind.
        let outcome = Outcome {
            error: Some("the bench's own error".into()),
            ..Outcome::default()
        };
        assert_eq!(
            state_record(&state(outcome), &[]).error_kind,
            Some(ErrorKind::Other)
        );
        assert_eq!(
            state_record(&state(Outcome::default()), &[]).error_kind,
            None
        );
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

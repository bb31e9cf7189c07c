//! Energy per launch (`--energy`): the device's energy counter read around batches of
//! back-to-back launches.
//!
//! NVML's counter (`nvmlDeviceGetTotalEnergyConsumption`) advances in steps: the driver adds
//! what it measured at each of its updates, tens of milliseconds apart. Two readings taken
//! anywhere would count a partial step at either end, an error of up to one update interval
//! each. So a batch here runs from one update of the counter to a later one: the loop runs
//! the launches in short sub-batches (about [`EnergySettings::sub_batch_time`] each), reads
//! the counter after each, and notes the moment it changes. A batch spans at least
//! [`EnergySettings::min_updates`] updates and [`EnergySettings::window`] seconds, whichever
//! is longer, its length sized from the update interval seen under load (as nvbench sizes
//! its hot batches from the time of one launch). Its energy is the counter's advance from
//! the update that opens it to the one that closes it, and its launches those that ran
//! in between; an update lands somewhere inside the sub-batch after which it is seen, at
//! either end alike, so the two ends' errors cancel on average and what remains is part of
//! the batches' spread, the noise this reports.
//!
//! What the counter measures is the whole board: the launches, the short gaps between the
//! sub-batches (a few tens of microseconds each on a GPU), and the board's idle draw. That
//! is the energy a user pays for; it is why energy per launch is the counter's advance over
//! the launches and not a model of the kernel alone. Nothing is set: clocks, power limits
//! and modes stay as they are.

use serde::Serialize;

use crate::backend::{Backend, Launches};
use crate::error::Result;

/// How energy is measured.
#[derive(Debug, Clone, PartialEq)]
pub struct EnergySettings {
    /// Batches to measure; their spread is the noise. Default 5 (`--energy-batches`).
    pub batches: u64,
    /// A batch lasts at least this long, seconds. Default 0.1 (`--energy-window`).
    pub window: f64,
    /// A batch spans at least this many updates of the counter. Default 4.
    pub min_updates: u64,
    /// Each sub-batch (between two readings of the counter) aims at this much device time,
    /// seconds. Default 0.005: short against a batch, long against the host's gap between
    /// two sub-batches.
    pub sub_batch_time: f64,
    /// Updates to observe before the first batch: the interval is taken from them, and the
    /// device reaches its working power meanwhile. Default 3.
    pub probe_updates: u64,
    /// Give up when the counter has not moved for this long under load, seconds. Default 2.
    pub stall: f64,
    /// Wall-clock limit of the whole measurement, seconds. Default 15 (`--timeout`).
    pub timeout: f64,
}

impl Default for EnergySettings {
    fn default() -> Self {
        EnergySettings {
            batches: 5,
            window: 0.1,
            min_updates: 4,
            sub_batch_time: 0.005,
            probe_updates: 3,
            stall: 2.0,
            timeout: 15.0,
        }
    }
}

/// One batch, as the protocol carries it: from one update of the counter to a later one.
pub use gputune_protocol::EnergyBatch;

/// What the energy measurement found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Energy {
    /// The device has no counter, or it could not be read: why.
    Unavailable(String),
    /// Measured.
    Measured(EnergyMeasurement),
}

/// The batches of a measured state.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnergyMeasurement {
    /// The counter's update interval under load, seconds (the median gap between updates).
    pub counter_interval: f64,
    /// Executions per sub-batch.
    pub sub_batch: u64,
    /// The batches.
    pub batches: Vec<EnergyBatch>,
    /// Whether the timeout ended it before every batch was in.
    pub timed_out: bool,
}

/// One observed update of the counter: when the host saw it, its value, the executions and
/// device time so far.
#[derive(Debug, Clone, Copy)]
struct Update {
    wall: f64,
    joules: f64,
    launches: u64,
    gpu_seconds: f64,
}

/// What running sub-batches until the counter changes came to.
enum Next {
    Update(Update),
    Unavailable(String),
    TimedOut,
}

/// Measures the energy of `launches`, whose one execution takes about `estimate` seconds
/// (the cold mean), with the wall clock `clock` (seconds from any fixed point).
pub fn measure_energy_with_clock(
    backend: &mut dyn Backend,
    launches: &mut Launches<'_>,
    estimate: f64,
    settings: &EnergySettings,
    clock: &dyn Fn() -> f64,
) -> Result<Energy> {
    let mut last = match backend.energy_counter() {
        Ok(j) => j,
        Err(why) => return Ok(Energy::Unavailable(why)),
    };
    let sub_batch = if estimate > 0.0 && estimate.is_finite() {
        ((settings.sub_batch_time / estimate).ceil() as u64).clamp(1, 1 << 20)
    } else {
        1
    };
    let start = clock();
    let (mut launched, mut gpu_seconds) = (0u64, 0.0f64);
    let mut since_update = start;
    let mut updates: Vec<Update> = Vec::new();
    // Runs sub-batches until the counter next changes.
    let mut next_update =
        |backend: &mut dyn Backend, launches: &mut Launches<'_>| -> Result<Next> {
            loop {
                gpu_seconds += backend.hot_batch(launches, sub_batch)?;
                launched += sub_batch;
                let joules = match backend.energy_counter() {
                    Ok(j) => j,
                    Err(why) => return Ok(Next::Unavailable(why)),
                };
                let now = clock();
                if joules != last {
                    last = joules;
                    since_update = now;
                    return Ok(Next::Update(Update {
                        wall: now,
                        joules,
                        launches: launched,
                        gpu_seconds,
                    }));
                }
                if now - since_update > settings.stall {
                    return Ok(Next::Unavailable(format!(
                        "the energy counter did not advance in {} s of launches",
                        settings.stall
                    )));
                }
                if now - start > settings.timeout {
                    return Ok(Next::TimedOut);
                }
            }
        };
    // The probe: a few updates under load, for the interval (and the working power).
    while (updates.len() as u64) < settings.probe_updates.max(2) {
        match next_update(backend, launches)? {
            Next::Update(u) => updates.push(u),
            Next::Unavailable(why) => return Ok(Energy::Unavailable(why)),
            Next::TimedOut => {
                return Ok(Energy::Unavailable(format!(
                    "the timeout ({} s) came before the energy counter had advanced {} times",
                    settings.timeout, settings.probe_updates
                )))
            }
        }
    }
    let mut gaps: Vec<f64> = updates.windows(2).map(|w| w[1].wall - w[0].wall).collect();
    gaps.sort_by(f64::total_cmp);
    let interval = gaps[gaps.len() / 2];
    let per_batch = settings
        .min_updates
        .max((settings.window / interval.max(1e-9)).ceil() as u64)
        .max(1);
    let mut m = EnergyMeasurement {
        counter_interval: interval,
        sub_batch,
        batches: Vec::new(),
        timed_out: false,
    };
    // The probe took at least two updates.
    let mut open = updates[updates.len() - 1];
    'batches: while (m.batches.len() as u64) < settings.batches {
        let mut close = open;
        for _ in 0..per_batch {
            match next_update(backend, launches)? {
                Next::Update(u) => close = u,
                Next::TimedOut => {
                    m.timed_out = true;
                    break 'batches;
                }
                Next::Unavailable(why) => return Ok(Energy::Unavailable(why)),
            }
        }
        m.batches.push(EnergyBatch {
            launches: close.launches - open.launches,
            joules: close.joules - open.joules,
            seconds: close.wall - open.wall,
            gpu_seconds: close.gpu_seconds - open.gpu_seconds,
        });
        open = close;
    }
    Ok(Energy::Measured(m))
}

/// [`measure_energy_with_clock`] with the monotonic clock.
pub fn measure_energy(
    backend: &mut dyn Backend,
    launches: &mut Launches<'_>,
    estimate: f64,
    settings: &EnergySettings,
) -> Result<Energy> {
    let start = std::time::Instant::now();
    measure_energy_with_clock(backend, launches, estimate, settings, &|| {
        start.elapsed().as_secs_f64()
    })
}

#[cfg(test)]
mod tests;

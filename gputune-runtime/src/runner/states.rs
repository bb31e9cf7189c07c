//! Running benches state by state: each variant, type instance and point of the value axes.

use std::fmt;

use super::backends::Backends;
use super::events::EventStream;
use super::progress::Progress;
use super::race::RaceBook;
use super::variant;
use super::workloads::Listed;
use crate::axis::{AxisValue, AxisValues};
use crate::backend::Backend;
use crate::bench::{Bench, BenchFn};
use crate::cli::Cli;
use crate::device::DeviceInfo;
use crate::error::{ErrorKind, Result};
use crate::output::{BenchReport, StateReport};
use crate::state::{ExecConfig, Outcome, State};

/// Runs states and keeps what spans them: the devices, the `--race` book, the progress
/// count, the event stream, and whether the device was lost.
pub(super) struct Runner {
    exec: ExecConfig,
    backends: Backends,
    devices: Vec<DeviceInfo>,
    events: EventStream,
    race: RaceBook,
    progress: Progress,
    cpu_only: bool,
    lost: Option<LostDevice>,
    /// The pass's `--workloads`: the states outside it are not run.
    listed: Listed,
}

/// One variant of one bench: what its states share.
#[derive(Clone, Copy)]
struct Pass<'a> {
    bench: &'a Bench,
    /// The bench's index among all the binary's benches.
    index: usize,
    /// The variant label requested, `None` for the production choice.
    variant: Option<&'a str>,
}

impl Runner {
    /// `states` is how many the run will start, for the progress lines; `listed`, which.
    pub(super) fn new(
        exec: ExecConfig,
        backends: Backends,
        events: EventStream,
        cli: &Cli,
        (states, listed): (usize, Listed),
    ) -> Runner {
        Runner {
            exec,
            devices: backends.devices(),
            backends,
            events,
            race: RaceBook::new(cli.race, cli.decide, cli.tie_margin),
            progress: Progress::new(states),
            cpu_only: cli.cpu,
            lost: None,
            listed,
        }
    }

    /// The devices states run on; a state's report indexes into them.
    pub(super) fn devices(&self) -> &[DeviceInfo] {
        &self.devices
    }

    /// Ends the event stream with where the process's time went.
    pub(super) fn process_done(&mut self) -> Result<()> {
        self.events.process()
    }

    /// Ends a pass of `--more-on-stdin`.
    pub(super) fn pass_done(&mut self) -> Result<()> {
        self.events.pass_done()
    }

    /// A pass starts: where and how it measures, read now, goes out as its first event.
    /// Returns it, for the results document.
    pub(super) fn pass_starts(&mut self) -> Result<gputune_protocol::Provenance> {
        let provenance = self.backends.provenance();
        // The first open device, as `--devices` would list it first for these benches.
        let device = self
            .backends
            .devices()
            .first()
            .map(crate::output::device_record);
        self.events.provenance(&provenance, device)?;
        Ok(provenance)
    }

    /// The registered criteria, taken out for the next pass's settings ([`Runner::next_pass`]).
    pub(super) fn take_criteria(&mut self) -> crate::criterion::Criteria {
        self.exec.criteria.take()
    }

    /// Measures the next pass with `exec` and `cli`'s race settings, over `states` states,
    /// those `listed`; the devices, the event stream and everything the process keeps carry
    /// over.
    pub(super) fn next_pass(
        &mut self,
        exec: ExecConfig,
        cli: &Cli,
        (states, listed): (usize, Listed),
    ) {
        self.exec = exec;
        self.race = RaceBook::new(cli.race, cli.decide, cli.tie_margin);
        self.progress = Progress::new(states);
        self.listed = listed;
    }

    /// The state that lost the device, once one has: nothing more may run.
    pub(super) fn lost(&self) -> Option<&LostDevice> {
        self.lost.as_ref()
    }

    /// Runs `bench` (`index`: among all the binary's benches) under each of `variants` in
    /// turn, until a state loses the device.
    pub(super) fn bench(
        &mut self,
        bench: &Bench,
        index: usize,
        variants: &[Option<String>],
    ) -> Result<BenchReport> {
        let mut states = Vec::new();
        // Variants outermost: a process that dies part-way has finished whole variants.
        for variant in variants {
            states.extend(self.variant(bench, index, variant.as_deref())?);
            if self.lost.is_some() {
                break;
            }
        }
        Ok(BenchReport {
            name: bench.name.clone(),
            index,
            tunes: bench.tunes.clone(),
            backend: bench.backend,
            axes: bench.axes.clone(),
            states,
        })
    }

    /// Runs one variant of `bench` (a `--variant` as written, `None` for the production
    /// choice) over all its states, up to one that loses the device.
    fn variant(
        &mut self,
        bench: &Bench,
        index: usize,
        variant: Option<&str>,
    ) -> Result<Vec<StateReport>> {
        let pass = Pass {
            bench,
            index,
            variant: variant::request(bench, variant),
        };
        self.exec.variant = pass.variant.map(str::to_string);
        self.events.variant(&bench.name, pass.variant)?;
        let mut states = Vec::new();
        for (type_index, inst) in bench.live_instances() {
            for point in value_points(bench) {
                let axis_values = axis_values(bench, &inst.types, point);
                if !self.listed.admits(&axis_values) {
                    continue;
                }
                let state = self.state(pass, type_index, &inst.function, axis_values);
                self.events
                    .state(&bench.name, pass.variant, &state, &self.devices)?;
                if state.outcome.device_lost() {
                    // Every later CUDA call would fail with the same error: report this
                    // state and end, so that the next variant gets a fresh context.
                    self.lost = Some(LostDevice::new(pass, &state));
                }
                states.push(state);
                if self.lost.is_some() {
                    return Ok(states);
                }
            }
        }
        Ok(states)
    }

    /// Runs one state on its bench's device, with the progress lines around it, and keeps
    /// its median if it is the best so far.
    fn state(
        &mut self,
        pass: Pass<'_>,
        type_config_index: usize,
        function: &BenchFn,
        axis_values: Vec<(String, AxisValue)>,
    ) -> StateReport {
        let (device, backend) = self.backends.for_bench(pass.bench.backend, self.cpu_only);
        let name = state_name(
            backend.as_ref().map_or(0, |be| be.device().id),
            &axis_values,
        );
        self.progress.start(&pass.bench.name, &name);
        let outcome = match backend {
            None => Outcome {
                skipped: Some("this bench needs CUDA and --cpu was given".into()),
                ..Default::default()
            },
            Some(backend) => {
                self.exec.cold.race = self.race.against(pass.index, &name);
                measure(backend, &self.exec, pass, function, axis_values.clone())
            }
        };
        let state = StateReport {
            name,
            device,
            type_config_index,
            axis_values,
            outcome,
        };
        self.race.record(pass.index, &state);
        self.progress.finish(&state);
        state
    }
}

/// Calls the bench function on one state and fails the state where it measured nothing,
/// or not the variant asked for.
fn measure(
    backend: &mut dyn Backend,
    exec: &ExecConfig,
    pass: Pass<'_>,
    function: &BenchFn,
    axis_values: Vec<(String, AxisValue)>,
) -> Outcome {
    let tunes = pass.bench.tunes.as_deref();
    if let Some(function) = tunes {
        variant::begin_state(function, pass.variant);
    }
    let mut state = State::new(axis_values, backend, exec, tunes, &pass.bench.name);
    crate::launched::begin_state();
    if let Err(e) = function(&mut state) {
        state.outcome.fail_with(e.as_ref());
    }
    state.outcome.kernels = crate::launched::take();
    if !state.executed && state.outcome.skipped.is_none() && state.outcome.error.is_none() {
        state
            .outcome
            .fail("the bench function never called exec", ErrorKind::Other);
    }
    if let Some(function) = tunes {
        variant::check(function, pass.variant, &mut state.outcome);
    }
    state.outcome
}

/// A state lost the device (a sticky CUDA error made the context unusable); displays as
/// `in BENCH [STATE] variant V: ERROR`.
pub(super) struct LostDevice(String);

impl LostDevice {
    fn new(pass: Pass<'_>, state: &StateReport) -> LostDevice {
        LostDevice(format!(
            "in {} [{}]{}: {}",
            pass.bench.name,
            state.name,
            pass.variant
                .map_or(String::new(), |v| format!(" variant {v}")),
            state
                .outcome
                .error
                .as_deref()
                .unwrap_or("a sticky CUDA error"),
        ))
    }
}

impl fmt::Display for LostDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `Device=0 T=f32 Elements=1048576`.
fn state_name(device_id: u32, axis_values: &[(String, AxisValue)]) -> String {
    std::iter::once(format!("Device={device_id}"))
        .chain(
            axis_values
                .iter()
                .map(|(n, v)| format!("{n}={}", v.display())),
        )
        .collect::<Vec<_>>()
        .join(" ")
}

/// How many states of `bench` a variant runs: those of its live type instances and points of
/// its value axes that `listed` admits.
pub(super) fn state_count(bench: &Bench, listed: &Listed) -> usize {
    bench
        .live_instances()
        .map(|(_, inst)| {
            value_points(bench)
                .into_iter()
                .filter(|p| listed.admits(&axis_values(bench, &inst.types, p.clone())))
                .count()
        })
        .sum()
}

/// A state's axis values: its type instance's types, then its point of the value axes.
fn axis_values(
    bench: &Bench,
    types: &[String],
    point: Vec<(String, AxisValue)>,
) -> Vec<(String, AxisValue)> {
    let mut values: Vec<(String, AxisValue)> = bench
        .type_axis_names
        .iter()
        .zip(types)
        .map(|(n, t)| (n.clone(), AxisValue::Type(t.clone())))
        .collect();
    values.extend(point);
    values
}

/// The Cartesian product of the value (non-type) axes, last axis fastest.
fn value_points(b: &Bench) -> Vec<Vec<(String, AxisValue)>> {
    let mut points: Vec<Vec<(String, AxisValue)>> = vec![Vec::new()];
    for axis in b
        .axes
        .iter()
        .filter(|a| !matches!(a.values, AxisValues::Type(_)))
    {
        let mut next = Vec::new();
        for p in &points {
            for i in 0..axis.values.len() {
                if let Some(v) = axis.values.value(i) {
                    let mut q = p.clone();
                    q.push((axis.name.clone(), v));
                    next.push(q);
                }
            }
        }
        points = next;
    }
    points
}

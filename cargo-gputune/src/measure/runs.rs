//! Running built bench binaries and storing what they measure: the stage that `search`
//! and `run-bundle` share. It needs no cargo and no workspace, only the binaries, what their
//! `--list` says, and the function's manifest.
//!
//! A `Plan` says how to run one bench; `Measured` is what the store already holds for it
//! and grows as base and the built variants run. Each variant's rows are committed the
//! moment its last state is streamed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use gputune_protocol::manifest::Function;
use gputune_protocol::{BenchArgs, StateRecord, StateStatus, Status, Stop, StopReason};

use crate::host::cargo::BenchTarget;
use crate::host::output::Output;
use crate::host::process::{self, Exit};
pub use crate::measure::counters::Counters;
pub(crate) use crate::measure::counters::Ran;
pub(crate) use crate::measure::measured::{record_failure, Measured};
use crate::measure::probed::ProbedDevice;
use crate::measure::protocol::{self, Axis, BenchInfo, Session};
use crate::results::score;
use crate::results::store::{Measurement, Store};

/// Smallest base build time the build limit is computed from: a build that was already fresh
/// takes a fraction of a second, and ten times that would kill every real build.
pub(crate) const MIN_BASE_BUILD: f64 = 5.0;
/// Smallest base run time the run limit is computed from.
pub(crate) const MIN_BASE_RUN: f64 = 2.0;

/// One compile-time workload: its key, the `-a` arguments that select it, and its value of
/// each compile-time axis (plain name, value as `-a` writes it).
#[derive(Debug, Clone)]
pub(crate) struct CtWorkload {
    pub(crate) key: String,
    pub(crate) args: Vec<String>,
    pub(crate) values: Vec<(String, String)>,
}

/// The `-a` pairs of `user_axes` that `ct_args` (a process's one compile-time workload, `-a
/// T{ct}=f32`) leave: the user's own list of a compile-time axis (`-a T=[f32,bf16]`, as a
/// capture of two types makes it) would ask the process for values its compile-time workload
/// has already narrowed away.
pub(crate) fn beside_ct(user_axes: &[String], ct_args: &[String]) -> Vec<String> {
    let axis = crate::measure::protocol::spec_axis;
    let set: Vec<&str> = ct_args
        .chunks(2)
        .filter_map(|pair| pair.get(1).map(|spec| axis(spec)))
        .collect();
    user_axes
        .chunks(2)
        .filter(|pair| !matches!(pair.get(1), Some(spec) if set.contains(&axis(spec))))
        .flatten()
        .cloned()
        .collect()
}

pub(crate) fn ct_workloads(axes: &[Axis]) -> Vec<CtWorkload> {
    let mut out = vec![CtWorkload {
        key: String::new(),
        args: Vec::new(),
        values: Vec::new(),
    }];
    for a in axes.iter().filter(|a| a.compile_time) {
        out = out
            .into_iter()
            .flat_map(|w| {
                a.values.iter().map(move |v| {
                    let v = &v.input_string;
                    let mut w = w.clone();
                    if !w.key.is_empty() {
                        w.key.push(',');
                    }
                    w.key.push_str(&format!("{}={v}", a.plain_name));
                    w.args.push("-a".into());
                    w.args.push(format!("{}={v}", a.name));
                    w.values.push((a.plain_name.clone(), v.clone()));
                    w
                })
            })
            .collect();
    }
    for w in &mut out {
        if w.key.is_empty() {
            w.key = "*".into();
        }
    }
    out
}

/// The runtime workload key of a state (`Elements{io}=2^20 Mode=b`: its values of the
/// declared runtime axes, as `-a` writes them) and its `{io}` weight.
pub fn rt_workload(state: &StateRecord, declared: &[Axis]) -> (String, f64) {
    let mut parts = Vec::new();
    let mut weight = 1.0;
    for av in &state.axis_values {
        let Some(a) = declared.iter().find(|a| a.name == av.name) else {
            continue;
        };
        if a.compile_time {
            continue;
        }
        if a.importance_ordered {
            if let Some(i) = a
                .values
                .iter()
                .position(|v| v.input_string == av.input_string)
            {
                weight *= score::io_weight(i, a.values.len());
            }
        }
        parts.push(format!("{}={}", av.name, av.input_string));
    }
    let key = if parts.is_empty() {
        "*".to_string()
    } else {
        parts.join(" ")
    };
    (key, weight)
}

/// The stage's view of one bench: its plan, compile-time workloads and store.
pub(crate) struct RunContext<'a> {
    pub(crate) plan: &'a Plan<'a>,
    pub(crate) cts: &'a [CtWorkload],
    pub(crate) store: &'a Store,
}

/// One bench process's worth of work: which binary runs which variants on which
/// compile-time workload, under what limit.
pub(crate) struct RunRequest<'a> {
    pub(crate) bin: &'a Path,
    pub(crate) ct: &'a CtWorkload,
    pub(crate) labels: &'a [String],
    /// Counted from the last event, so it bounds each state, not the whole run.
    pub(crate) limit: Option<Duration>,
    /// The build time charged to each variant.
    pub(crate) build_seconds: Option<f64>,
    /// Which pass over the variants this is.
    pub(crate) pass: Pass,
    /// Run base first in every process, as the control of the variants after it: their rows
    /// carry its samples (`Measurement::control`).
    pub(crate) control: bool,
    /// Keep the last process waiting for another pass (`--more-on-stdin`) instead of ending
    /// it: [`Ran::kept`]. A deciding search's finals then run in the process that screened
    /// them, without a second start-up.
    pub(crate) keep: bool,
}

/// How long a process waiting for a pass may take to end once told no pass is coming.
pub(crate) const END_LIMIT: Duration = Duration::from_secs(60);

/// The longest `--variant` list passed as an argument; longer ones go through a file.
const VARIANTS_IN_ARGUMENT: usize = 32 * 1024;

/// A pass over a bench's variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// The first pass: with the screening flags when the search decides ([`Plan::screening`]),
    /// else with the plan's own flags (the only pass).
    First,
    /// The finalists of a deciding search, measured with the plan's own flags.
    Final,
}

/// Everything about one bench that the runs need.
pub(crate) struct Plan<'a> {
    pub(crate) target: &'a BenchTarget,
    pub(crate) info: &'a BenchInfo,
    pub(crate) function: &'a Function,
    pub(crate) declared: &'a [Axis],
    pub(crate) revision: String,
    /// The device the rows are recorded for, probed beside the first bench process.
    pub(crate) device: ProbedDevice,
    pub(crate) user_axes: Vec<String>,
    pub(crate) bench_args: BenchArgs,
    pub(crate) work_dir: PathBuf,
    /// The energy of rows not stored yet (`--energy`), and base's as their control.
    pub(crate) energy: crate::measure::energy::Pending,
}

/// The revision results are stored under: the code's revision and the measurement settings
/// (criterion, its parameters, racing, …). A rerun with other settings measures anew instead
/// of reporting numbers measured another way as its own.
pub(crate) fn measured_revision(code_revision: &str, bench_args: &BenchArgs) -> String {
    let mut h = gputune_protocol::hash::Fnv64::new();
    h.write(bench_args.measurement_settings().as_bytes());
    format!("{code_revision}.m{:08x}", h.finish() as u32)
}

impl Plan<'_> {
    /// The flags of a deciding search's first pass (`--decide`): every variant gets `--min-samples`
    /// cold samples (at least 2), unless its first three already place it far behind the best so
    /// far in its process (`--decide`'s early look, `Race` in the runtime); the finalists are
    /// measured with the plan's own flags afterwards ([`crate::measure::finals`]). `None` when the
    /// search does not decide: then its flags are the only pass.
    pub(crate) fn screening(&self) -> Option<BenchArgs> {
        self.bench_args.decide?;
        let mut a = self.bench_args.clone();
        a.stopping_criterion = Some("sample-count".into());
        a.target_samples = a.min_samples.max(2);
        a.min_samples = a.target_samples;
        a.race = None;
        Some(a)
    }

    pub(crate) fn row(
        &self,
        ct: &str,
        variant: &str,
        rt: &str,
        weight: f64,
        status: Status,
    ) -> Result<Measurement> {
        let (device, arch) = self.device.get()?;
        Ok(Measurement {
            revision: self.revision.clone(),
            device: device.to_string(),
            arch: arch.to_string(),
            package: self.target.package.clone(),
            bench: self.info.name.clone(),
            function: self.function.name.clone(),
            ct_workload: ct.to_string(),
            variant: variant.to_string(),
            rt_workload: rt.to_string(),
            rt_weight: weight,
            status,
            message: None,
            center: None,
            noise: None,
            bandwidth: None,
            samples: Vec::new(),
            build_seconds: None,
            run_seconds: None,
            stop: None,
            control: Vec::new(),
            kernels: Vec::new(),
            provenance: None,
            sm_clocks: Vec::new(),
        })
    }

    /// One variant's rows from the states it streamed.
    fn rows(
        &self,
        ct: &CtWorkload,
        variant: &str,
        states: &[StateRecord],
        seconds: f64,
        build_seconds: Option<f64>,
    ) -> Result<Vec<Measurement>> {
        if states.is_empty() {
            let mut row = self.row(&ct.key, variant, "*", 0.0, Status::Crashed)?;
            row.message = Some("the bench reported no states for this variant".into());
            row.run_seconds = Some(seconds);
            row.build_seconds = build_seconds;
            return Ok(vec![row]);
        }
        states
            .iter()
            .map(|st| {
                let (rt, weight) = rt_workload(st, self.declared);
                let status = state_status(st);
                let mut row = self.row(&ct.key, variant, &rt, weight, status)?;
                row.message = st
                    .error
                    .clone()
                    .or_else(|| st.skip_reason.clone())
                    .or_else(|| raced(st));
                row.stop = st.stop.map(|s| s.reason());
                row.center = st.summary("nv/cold/time/gpu/median");
                row.noise = st.summary("nv/cold/time/gpu/stdev/relative");
                row.bandwidth = st.summary("nv/cold/bw/global/bytes_per_second");
                row.samples = st
                    .samples
                    .as_ref()
                    .map(|s| s.gpu.clone())
                    .unwrap_or_default();
                row.kernels.clone_from(&st.kernels);
                row.sm_clocks = st
                    .samples
                    .as_ref()
                    .map(|s| s.sm_clock.clone())
                    .unwrap_or_default();
                row.run_seconds = Some(seconds);
                row.build_seconds = build_seconds;
                Ok(row)
            })
            .collect()
    }

    /// The rows of a variant whose last state has arrived: `(label, states, started)`.
    fn finish(
        &self,
        ct: &CtWorkload,
        (label, states, started): (String, Vec<StateRecord>, Instant),
        build_seconds: Option<f64>,
    ) -> Result<(String, Vec<Measurement>)> {
        let secs = started.elapsed().as_secs_f64();
        let rows = self.rows(ct, &label, &states, secs, build_seconds)?;
        Ok((label, rows))
    }

    /// Runs `labels` on one compile-time workload in as few bench processes as it takes:
    /// one, unless a variant crashes or hangs; that variant is recorded and the rest go on
    /// in a fresh process. `finished` gets each variant's rows as soon as its last state has
    /// been streamed, so that a kill of this process loses nothing finished. `session`, a
    /// process kept waiting by an earlier call ([`RunRequest::keep`]), runs the first pass
    /// if it runs the same binary on the same workload, and is ended otherwise. Returns what
    /// ran, and the process kept waiting, if asked to keep one.
    pub(crate) fn run(
        &self,
        req: &RunRequest<'_>,
        session: Option<Session>,
        out: &mut Output,
        finished: &mut VariantSink<'_>,
    ) -> Result<Ran> {
        let RunRequest {
            bin,
            ct,
            labels,
            limit,
            build_seconds,
            pass,
            mut control,
            keep,
        } = *req;
        let f = &self.function.name;
        let screen = match pass {
            Pass::First => self.screening(),
            Pass::Final => None,
        };
        let screening = screen.is_some();
        let bench_args = screen.as_ref().unwrap_or(&self.bench_args);
        let mut remaining: Vec<String> = labels.to_vec();
        let mut ran = Ran::default();
        // A compile-time workload that no listed workload (`--workloads`) is on runs nothing:
        // its variants are skipped there, without a process.
        if let Some(why) = crate::measure::listed::unlisted(bench_args, ct) {
            for label in labels {
                let mut row = self.row(&ct.key, label, "*", 0.0, Status::Skipped)?;
                row.message = Some(why.clone());
                finished(label, vec![row], out)?;
            }
            match session {
                Some(s) if keep => ran.kept = Some(s),
                Some(s) => ran.ended(s, Some(END_LIMIT))?,
                None => {}
            }
            return Ok(ran);
        }
        let mut reuse = session;
        while !remaining.is_empty() {
            // What the process keeps over its passes, and what each pass says.
            let mut process_args = vec!["-b".to_string(), self.info.name.clone()];
            process_args.extend(ct.args.iter().cloned());
            process_args.extend(beside_ct(&self.user_axes, &ct.args));
            let mut args = vec!["--variant".to_string()];
            let variants = control
                .then_some("base")
                .into_iter()
                .chain(remaining.iter().map(String::as_str))
                .map(|l| format!("{f}.{l}"))
                .collect::<Vec<_>>()
                .join(",");
            // One argument may hold 128 KiB on Linux; a whole large space's labels go
            // through a file (`--variant @FILE`).
            if variants.len() > VARIANTS_IN_ARGUMENT {
                let file = self.work_dir.join("variants.txt");
                std::fs::write(&file, &variants)
                    .with_context(|| format!("writing {}", file.display()))?;
                args.push(format!("@{}", file.display()));
            } else {
                args.push(variants);
            }
            args.extend(crate::measure::listed::pass_args(
                bench_args,
                &self.work_dir,
            )?);
            // Base's samples in this process, per runtime workload: the control of the
            // variants after it.
            let mut controls: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            // Where and how the pass measures: its first event, kept with each of its rows.
            let pass_provenance = std::cell::RefCell::new(None);
            let mut finish = |done: (String, Vec<StateRecord>, Instant)| -> Result<_> {
                let states = self.bench_args.energy.then(|| done.1.clone());
                let (label, mut rows) = self.finish(ct, done, build_seconds)?;
                if let Some(states) = states {
                    self.energy.note(&rows, &states, control);
                }
                for row in &mut rows {
                    row.provenance.clone_from(&pass_provenance.borrow());
                }
                if control && label == "base" {
                    controls = rows
                        .iter()
                        .filter(|r| r.status == Status::Ok && r.samples.len() >= 2)
                        .map(|r| (r.rt_workload.clone(), r.samples.clone()))
                        .collect();
                } else {
                    for row in &mut rows {
                        row.control = controls.get(&row.rt_workload).cloned().unwrap_or_default();
                        // Stopped by the screening's sample count or by its early look: either
                        // way screened (the message says which).
                        if screening
                            && matches!(
                                row.stop,
                                Some(StopReason::Criterion | StopReason::Raced | StopReason::Tied)
                            )
                        {
                            row.stop = Some(StopReason::Screened);
                        }
                    }
                }
                Ok((label, rows))
            };
            // A process waiting from an earlier call goes on with this pass if it runs this
            // binary on this workload; otherwise it ends before another one starts.
            // A waiting process that has died since (killed from outside, say) cannot take
            // the pass: a fresh one does.
            let waiting = match reuse.take() {
                Some(mut s) if s.serves(bin, &ct.key) => match s.send(&args) {
                    Ok(()) => Ok(s),
                    Err(e) => {
                        out.verbose(&format!("{e:#}; a fresh process takes the pass"));
                        Err(Some(s))
                    }
                },
                other => Err(other),
            };
            let mut session = match waiting {
                Ok(s) => {
                    out.verbose(&format!("{} (next pass) {}", bin.display(), args.join(" ")));
                    s
                }
                Err(other) => {
                    if let Some(s) = other {
                        // Its results were taken as its passes ended; only its timeline
                        // is lost if it cannot be ended cleanly.
                        if let Err(e) = ran.ended(s, Some(END_LIMIT)) {
                            out.verbose(&format!("ending a waiting bench process: {e:#}"));
                        }
                    }
                    let mut all = process_args;
                    all.extend(args);
                    let more = if keep { " --more-on-stdin" } else { "" };
                    out.verbose(&format!("{} {}{more}", bin.display(), all.join(" ")));
                    let jsonl = self.work_dir.join("run.jsonl");
                    ran.processes += 1;
                    Session::start(bin, &ct.key, &all, &jsonl, keep)?
                }
            };
            let session_started = session.started();
            // The variant in progress, its states, and when it started.
            let mut current: Option<(String, Vec<StateRecord>, Instant)> = None;
            let mut started: Vec<String> = Vec::new();
            let mut timeline = None;
            let mut pass_done = false;
            let mut on_event = |event: protocol::Event| {
                match event {
                    protocol::Event::Variant { variant: label, .. } => {
                        if let Some(done) = current.take() {
                            let (prev, rows) = finish(done)?;
                            finished(&prev, rows, out)?;
                        }
                        let label = label.unwrap_or_else(|| "base".into());
                        started.push(label.clone());
                        current = Some((label, Vec::new(), Instant::now()));
                    }
                    protocol::Event::State { state, .. } => {
                        crate::measure::energy::say_if_unavailable(out, &state);
                        if let Some((_, states, _)) = current.as_mut() {
                            states.push(*state);
                        }
                    }
                    protocol::Event::Process { timeline: t } => timeline = Some(t),
                    protocol::Event::Provenance { provenance, device } => {
                        // The process has opened its device and (a bench of this version)
                        // says which it is; a probe deferred until then starts only where it
                        // does not say, and no longer opens the driver beside it.
                        match device {
                            Some(d) => self.device.learn(d.identity(), d.arch()),
                            None => self.device.start(),
                        }
                        crate::results::provenance::note_missing_nvml(out, &provenance);
                        *pass_provenance.borrow_mut() = Some(std::sync::Arc::from(provenance));
                    }
                    // Every variant of the pass has streamed all its states: whatever the
                    // process does next (its exit included), they are done.
                    protocol::Event::PassDone => {
                        pass_done = true;
                        if let Some(done) = current.take() {
                            let (prev, rows) = finish(done)?;
                            finished(&prev, rows, out)?;
                        }
                    }
                }
                Ok(())
            };
            let outcome = match session.watch(limit, &mut on_event)? {
                protocol::Pass::Done if keep => {
                    let outcome = session.between_passes();
                    ran.kept = Some(session);
                    outcome
                }
                protocol::Pass::Done => session.finish(limit, &mut on_event)?,
                protocol::Pass::Ended(outcome) => outcome,
            };
            if let Some(t) = timeline {
                ran.timelines.push((session_started, outcome.seconds, t));
            }
            // After a whole pass, how the process ended does not change what it measured.
            let exit = if pass_done {
                Exit::Code(0)
            } else {
                outcome.exit
            };
            match exit {
                Exit::Code(code @ (2 | 3)) => protocol::check_exit(code, &outcome.stderr)?,
                Exit::Code(0 | 1) => {
                    if let Some(done) = current.take() {
                        let (prev, rows) = finish(done)?;
                        finished(&prev, rows, out)?;
                    }
                    for label in remaining.iter().filter(|l| !started.contains(l)) {
                        let mut row = self.row(&ct.key, label, "*", 0.0, Status::Crashed)?;
                        row.message = Some(format!(
                            "the bench ended without running it: {}",
                            outcome.stderr
                        ));
                        finished(label, vec![row], out)?;
                    }
                    remaining.clear();
                }
                exit => {
                    // The variant in progress died with the process (or, if none had
                    // started, the first one is charged, so that the loop ends).
                    let (label, secs) = match current.take() {
                        Some((label, _, t)) => (label, t.elapsed().as_secs_f64()),
                        None => (remaining[0].clone(), outcome.seconds),
                    };
                    let (status, message) = match exit {
                        Exit::TimedOut => (
                            Status::Timeout,
                            format!("killed after {secs:.1} s without finishing a state (the run limit)"),
                        ),
                        Exit::Signal(sig) => (
                            Status::Crashed,
                            format!("ended by {}: {}", process::signal_name(sig), outcome.stderr)
                                .trim_end_matches([' ', ':'])
                                .to_string(),
                        ),
                        Exit::Code(protocol::EXIT_DEVICE_LOST) => {
                            (Status::Crashed, device_lost_message(&outcome.stderr))
                        }
                        Exit::Code(code) => {
                            (Status::Crashed, format!("exited with code {code}: {}", outcome.stderr))
                        }
                    };
                    let mut row = self.row(&ct.key, &label, "*", 0.0, status)?;
                    row.message = Some(message);
                    row.run_seconds = Some(secs);
                    row.build_seconds = build_seconds;
                    // A control that takes its process down would take every later one
                    // down too: the variants left run without it (against the base row).
                    if control && label == "base" {
                        control = false;
                    }
                    finished(&label, vec![row], out)?;
                    started.push(label);
                    remaining.retain(|l| !started.contains(l));
                }
            }
        }
        Ok(ran)
    }
}

/// The note for a state that lost the race (`--race`) or tied its best (`--tie-margin`): it is
/// measured, but not in full.
fn raced(st: &StateRecord) -> Option<String> {
    let samples = st.samples.as_ref().map_or(0, |s| s.gpu.len());
    match st.stop {
        Some(Stop::Raced { best, margin }) => Some(format!(
            "raced: stopped after {samples} samples, more than {:.0} % slower than the best so \
             far ({:.3} us)",
            margin * 100.0,
            best * 1e6
        )),
        Some(Stop::Tied { best, margin }) => Some(format!(
            "tied: stopped after {samples} samples, within {} % of the best so far ({:.3} us)",
            margin * 100.0,
            best * 1e6
        )),
        _ => None,
    }
}

/// The store status of one streamed state.
///
/// A failed verification is `verify_failed` whatever else is said; a failed state's
/// `error_kind` says whether the variant did not build (`compile`: a kernel compiled at run
/// time was rejected), is not a valid point (`invalid`: a launch over the kernel's limits), or
/// lost the device (`device_lost`: the process ends with exit 4 after this state, and the
/// variant is recorded as crashed); other failures are `launch_failed`.
pub fn state_status(st: &StateRecord) -> Status {
    if st.verification.as_ref().is_some_and(|v| !v.passed) {
        return Status::VerifyFailed;
    }
    match st.status {
        StateStatus::Ok => Status::Ok,
        StateStatus::Timeout => Status::Timeout,
        StateStatus::Skipped => Status::Skipped,
        StateStatus::Failed => {
            Status::of_failure(st.failure().unwrap_or(gputune_protocol::ErrorKind::Other))
        }
    }
}

/// The message of a variant whose bench ended with exit 4 (device lost): the bench's
/// `error:` line, which says where and names the CUDA error, else its stderr tail.
fn device_lost_message(stderr: &str) -> String {
    match stderr
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
    {
        Some(line) => line.to_string(),
        None => format!(
            "device lost (exit {}: a sticky CUDA error made the context unusable): {}",
            protocol::EXIT_DEVICE_LOST,
            stderr.trim()
        ),
    }
}

/// Where [`Plan::run`] hands each finished variant's rows.
pub(crate) type VariantSink<'a> = dyn FnMut(&str, Vec<Measurement>, &mut Output) -> Result<()> + 'a;

#[cfg(test)]
mod tests {
    #[test]
    fn a_process_takes_the_users_axes_but_not_their_list_of_its_compile_time_axis() {
        let user: Vec<String> = ["-a", "T=[BF16,F32]", "-a", "Rows[pow2]=[0,9]"]
            .map(String::from)
            .to_vec();
        let ct = ["-a", "T{ct}=BF16"].map(String::from);
        assert_eq!(super::beside_ct(&user, &ct), ["-a", "Rows[pow2]=[0,9]"]);
        assert_eq!(super::beside_ct(&user, &[]), user);
    }

    use super::*;

    fn axis(name: &str, ct: bool, io: bool, values: &[&str]) -> Axis {
        Axis {
            name: name.into(),
            plain_name: name.replace("{ct}", "").replace("{io}", ""),
            compile_time: ct,
            importance_ordered: io,
            kind: gputune_protocol::AxisKind::String,
            flags: String::new(),
            values: values
                .iter()
                .map(|v| gputune_protocol::AxisValueDoc {
                    input_string: v.to_string(),
                    description: String::new(),
                    value: gputune_protocol::Scalar::Text(v.to_string()),
                })
                .collect(),
        }
    }

    #[test]
    fn error_kinds_choose_the_status() {
        use gputune_protocol::{ErrorKind, VerificationRecord, VerifiedAgainst};
        let failed = |kind: Option<ErrorKind>| StateRecord {
            error: Some("x".into()),
            error_kind: kind,
            ..StateRecord::unmeasured("s", StateStatus::Failed)
        };
        for (kind, status) in [
            (ErrorKind::Compile, Status::BuildFailed),
            (ErrorKind::Invalid, Status::Invalid),
            (ErrorKind::DeviceLost, Status::Crashed),
            (ErrorKind::Verification, Status::VerifyFailed),
            (ErrorKind::Launch, Status::LaunchFailed),
            (ErrorKind::Other, Status::LaunchFailed),
        ] {
            assert_eq!(state_status(&failed(Some(kind))), status, "{kind}");
        }
        // A failure that names no kind is `other`.
        assert_eq!(state_status(&failed(None)), Status::LaunchFailed);
        // A failed verification wins over anything else.
        let mut wrong = failed(Some(ErrorKind::Other));
        wrong.verification = Some(VerificationRecord {
            against: VerifiedAgainst::Base,
            passed: false,
            tolerance: None,
            comparison: None,
            message: None,
        });
        assert_eq!(state_status(&wrong), Status::VerifyFailed);
        for (s, status) in [
            (StateStatus::Ok, Status::Ok),
            (StateStatus::Timeout, Status::Timeout),
            (StateStatus::Skipped, Status::Skipped),
        ] {
            assert_eq!(state_status(&StateRecord::unmeasured("s", s)), status);
        }
    }

    #[test]
    fn a_lost_device_is_named_from_the_bench_s_error_line() {
        let stderr = "warning: something\nerror: device lost in faults-cuda [Device=0 \
                      Elements{io}=2^20] variant fault_crash.work_1: sticky CUDA error, the \
                      context is unusable: reading the comparison back: \
                      CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered \
                      (exit 4: the process ends here, the states after this one did not run)";
        let msg = device_lost_message(stderr);
        assert!(msg.starts_with("device lost in faults-cuda"), "{msg}");
        assert!(msg.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{msg}");
        assert!(!msg.contains("warning"), "{msg}");
        let msg = device_lost_message("no error line");
        assert!(msg.starts_with("device lost (exit 4"), "{msg}");
        assert!(msg.ends_with("no error line"), "{msg}");
    }

    #[test]
    fn compile_time_workloads_are_the_product_of_ct_axes() {
        let axes = [
            axis("T{ct}", true, false, &["f32", "f64"]),
            axis("Elements{io}", false, true, &["2^16", "2^20"]),
            axis("U{ct}", true, false, &["i32"]),
        ];
        let keys: Vec<String> = ct_workloads(&axes).into_iter().map(|w| w.key).collect();
        assert_eq!(keys, ["T=f32,U=i32", "T=f64,U=i32"]);
        assert_eq!(ct_workloads(&axes[1..2])[0].key, "*");
        assert_eq!(
            ct_workloads(&axes)[1].args,
            ["-a", "T{ct}=f64", "-a", "U{ct}=i32"]
        );
    }

    #[test]
    fn runtime_workloads_weigh_by_declared_position() {
        let declared = [
            axis("T{ct}", true, false, &["f32"]),
            axis(
                "Elements{io}",
                false,
                true,
                &["2^16", "2^20", "2^24", "2^28"],
            ),
            axis("Mode", false, false, &["a", "b"]),
        ];
        let value = |name: &str, v: &str| gputune_protocol::AxisValueRecord {
            name: name.into(),
            kind: gputune_protocol::AxisKind::String,
            value: gputune_protocol::Scalar::Text(v.into()),
            input_string: v.into(),
        };
        let state = StateRecord {
            axis_values: vec![
                value("T{ct}", "f32"),
                value("Elements{io}", "2^20"),
                value("Mode", "b"),
            ],
            ..StateRecord::unmeasured(
                "Device=0 T{ct}=f32 Elements{io}=2^20 Mode=b",
                StateStatus::Ok,
            )
        };
        let (key, weight) = rt_workload(&state, &declared);
        assert_eq!(key, "Elements{io}=2^20 Mode=b");
        assert!((weight - score::io_weight(1, 4)).abs() < 1e-12);
    }
}

//! The `main` of a bench binary: parse the command line, run the selected states, write
//! the table and the JSON.
//!
//! Exit codes (part of the protocol with `cargo gputune`, see `docs/bench-json.md`):
//! 0 every state ran (or was skipped, or timed out with samples), 1 some state failed,
//! 2 usage error, 3 no usable device, 4 device lost (a sticky CUDA error made the context
//! unusable: the failing state is reported, then the process ends).

use std::collections::HashMap;
use std::io::Write;

use clap::Parser;
use gputune_protocol::{BenchListing, DevicesDoc, Event, ExitCode, ListDoc, StateStatus};

use crate::axis::{AxisValue, AxisValues};
use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::bench::Bench;
use crate::cli::{ApplyOverride, AxisOverride, Cli};
use crate::criterion::{Criteria, CriterionParams};
use crate::device::BackendKind;
use crate::error::{Error, ErrorKind, Result};
use crate::measure::{ColdSettings, HotSettings, Race};
use crate::output::{self, BenchReport, RunReport, StateReport};
use crate::state::{ExecConfig, Outcome, State};

/// Version of the protocol between bench binaries and `cargo gputune`: the protocol crate's.
pub use gputune_protocol::PROTOCOL_VERSION as PROTOCOL;

/// Exit code: every state ran.
pub const EXIT_OK: i32 = ExitCode::Ok as i32;
/// Exit code: at least one state failed (the JSON says which and why).
pub const EXIT_FAILED: i32 = ExitCode::Failed as i32;
/// Exit code: bad command line.
pub const EXIT_USAGE: i32 = ExitCode::Usage as i32;
/// Exit code: the device could not be opened.
pub const EXIT_NO_DEVICE: i32 = ExitCode::NoDevice as i32;
/// Exit code: device lost. A state failed with a sticky CUDA error (an illegal address, a
/// failed launch, a trap, …) after which the context cannot be used again; that state was
/// reported (its `--jsonl` line written, `error_kind` `device_lost`), the states not run yet
/// are not, and one line on stderr names the CUDA error. `cargo gputune` records the variant
/// in progress as crashed and runs the rest in a fresh process.
pub const EXIT_DEVICE_LOST: i32 = ExitCode::DeviceLost as i32;

/// Runs the bench binary with the process's arguments and exits.
///
/// ```no_run
/// use gputune_runtime::{Bench, BenchResult, State};
///
/// fn sum(state: &mut State<'_>) -> BenchResult {
///     let n = state.get_int64("Elements")? as usize;
///     let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
///     state.add_element_count(n as u64);
///     state.add_global_memory_reads::<f32>(n as u64);
///     state.exec(|_| {
///         std::hint::black_box(data.iter().sum::<f32>());
///         Ok(())
///     });
///     Ok(())
/// }
///
/// fn main() {
///     gputune_runtime::main(vec![Bench::new("sum", sum).add_int64_axis("Elements", [1 << 20])]);
/// }
/// ```
pub fn main(benches: Vec<Bench>) -> ! {
    main_with(benches, Criteria::builtin())
}

/// [`main`] with custom stopping criteria registered.
pub fn main_with(benches: Vec<Bench>, criteria: Criteria) -> ! {
    let args: Vec<String> = std::env::args().collect();
    let code = match run(&args, benches, criteria) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            match e {
                Error::Usage(_) => EXIT_USAGE,
                Error::NoDevice(_) => EXIT_NO_DEVICE,
                Error::DeviceLost(_) => EXIT_DEVICE_LOST,
                _ => EXIT_FAILED,
            }
        }
    };
    // Background kernel compilations must not be running while `exit` tears NVRTC down.
    #[cfg(feature = "cuda")]
    crate::backend::cuda::finish_compilations();
    std::process::exit(code)
}

/// Writes `text` to stdout. A reader that stopped reading (`--list | head`) is not the
/// bench's failure: a broken pipe ends the output quietly where `print!` would panic.
fn to_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("warning: writing to stdout failed: {e}");
        }
        _ => {}
    }
}

/// Runs the bench binary with `args` (the first being the program name) and returns the
/// exit code. Errors are usage errors or a device that cannot be opened; a device lost while
/// running ends the run early with [`EXIT_DEVICE_LOST`] (the results so far are written, and
/// its line is printed on stderr).
pub fn run(args: &[String], mut benches: Vec<Bench>, criteria: Criteria) -> Result<i32> {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                to_stdout(&e.to_string());
                return Ok(EXIT_OK);
            }
            // clap's first line names the problem and what is allowed; the rest is usage.
            let text = e.to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or("bad arguments")
                .trim_start_matches("error: ");
            return Err(Error::Usage(first.to_string()));
        }
    };
    cli.validate()?;
    let cli = cli.effective();

    let selected = select_benches(&benches, &cli.benchmarks)?;
    benches = benches
        .into_iter()
        .enumerate()
        .filter(|(i, _)| selected.contains(i))
        .map(|(_, b)| b)
        .collect();
    apply_overrides(&mut benches, &cli.axes)?;

    if cli.list {
        let list = serde_json::to_string_pretty(&list_doc(&benches, &selected));
        to_stdout(&format!("{}\n", list.unwrap_or_default()));
        return Ok(EXIT_OK);
    }

    if cli.devices {
        let backends = Backends::open(&benches, &cli)?;
        let doc = DevicesDoc {
            protocol: PROTOCOL,
            devices: backends
                .devices()
                .iter()
                .map(output::device_record)
                .collect(),
        };
        to_stdout(&format!(
            "{}\n",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        ));
        return Ok(EXIT_OK);
    }

    if !criteria.names().contains(&cli.criterion()) {
        return Err(Error::Usage(format!(
            "unknown stopping criterion `{}`; known: {}",
            cli.criterion(),
            criteria.names().join(", ")
        )));
    }
    let mut params = CriterionParams {
        max_noise: cli.max_noise / 100.0,
        min_time: cli.min_time,
        max_angle: cli.max_angle,
        min_r2: cli.min_r2,
        target_samples: cli.target_samples,
        ..CriterionParams::default()
    };
    params.extra.extend(cli.extra_params()?);
    let mut config = ExecConfig {
        criteria,
        criterion: cli.criterion().to_string(),
        params,
        cold: ColdSettings {
            min_samples: cli.min_samples,
            timeout: cli.timeout,
            throttle_threshold: cli.throttle_threshold / 100.0,
            race: None,
            warm_up: !cli.profile,
        },
        hot: HotSettings {
            batch_target_time: cli.batch_target_time,
            timeout: cli.timeout,
            ..HotSettings::default()
        },
        no_batch: cli.no_batch,
        variant: None,
    };

    if !cli.variant.is_empty() {
        if let Some(b) = benches.iter().find(|b| b.tunes.is_none()) {
            return Err(Error::Usage(format!(
                "--variant needs a bench that tunes a function (Bench::tunes), and `{}` tunes \
                 none",
                b.name
            )));
        }
    }
    // Without --variant, one pass with the production choice.
    let variants: Vec<Option<&str>> = if cli.variant.is_empty() {
        vec![None]
    } else {
        cli.variant.iter().map(|v| Some(v.as_str())).collect()
    };
    // So that a bench can prepare every variant it will run before the first (tuned::planned).
    for function in benches.iter().filter_map(|b| b.tunes.as_deref()) {
        let labels: Vec<&str> = cli
            .variant
            .iter()
            .map(|v| variant_label(v, function))
            .collect();
        crate::tuned::plan(function, &labels);
    }
    let mut stream = cli.jsonl.as_deref().map(EventStream::open).transpose()?;

    let mut backends = Backends::open(&benches, &cli)?;
    let mut report = RunReport {
        argv: args.to_vec(),
        devices: backends.devices(),
        benchmarks: Vec::new(),
    };
    let total: usize = benches.iter().map(Bench::state_count).sum::<usize>() * variants.len();
    let mut done = 0usize;
    // The line for stderr once a state has lost the device: nothing runs after it.
    let mut lost: Option<String> = None;
    // --race: the fastest median so far of each state (by bench and name), over variants.
    let mut fastest: HashMap<(usize, String), f64> = HashMap::new();
    for (b, &index) in benches.iter().zip(&selected) {
        let mut states = Vec::new();
        // Variants outermost: a process that dies part-way has finished whole variants.
        'variants: for variant in &variants {
            let requested = match (variant, &b.tunes) {
                (Some(v), Some(function)) => {
                    let label = variant_label(v, function);
                    crate::tuned::request(function, label);
                    Some(label)
                }
                _ => None,
            };
            config.variant = requested.map(str::to_string);
            if let Some(stream) = stream.as_mut() {
                stream.emit(&Event::Variant {
                    bench: b.name.clone(),
                    variant: requested.map(str::to_string),
                })?;
            }
            for (type_index, inst) in b.live_instances() {
                for point in value_points(b) {
                    done += 1;
                    let mut axis_values: Vec<(String, AxisValue)> = b
                        .type_axis_names
                        .iter()
                        .zip(&inst.types)
                        .map(|(n, t)| (n.clone(), AxisValue::Type(t.clone())))
                        .collect();
                    axis_values.extend(point);
                    let (device_index, backend) = backends.for_bench(b.backend, cli.cpu);
                    let device_id = backend.as_ref().map_or(0, |be| be.device().id);
                    let name = std::iter::once(format!("Device={device_id}"))
                        .chain(
                            axis_values
                                .iter()
                                .map(|(n, v)| format!("{n}={}", v.display())),
                        )
                        .collect::<Vec<_>>()
                        .join(" ");
                    eprintln!("Run:  [{done}/{total}] {} [{name}]", b.name);
                    let outcome = match backend {
                        None => crate::state::Outcome {
                            skipped: Some("this bench needs CUDA and --cpu was given".into()),
                            ..Default::default()
                        },
                        Some(backend) => {
                            config.cold.race = cli.race.and_then(|margin| {
                                let best = *fastest.get(&(index, name.clone()))?;
                                Some(Race { best, margin })
                            });
                            let mut state = State::new(
                                axis_values.clone(),
                                backend,
                                &config,
                                b.tunes.as_deref(),
                            );
                            if let Err(e) = (inst.function)(&mut state) {
                                state.outcome.fail_with(e.as_ref());
                            }
                            if !state.executed
                                && state.outcome.skipped.is_none()
                                && state.outcome.error.is_none()
                            {
                                state
                                    .outcome
                                    .fail("the bench function never called exec", ErrorKind::Other);
                            }
                            if let Some(function) = &b.tunes {
                                check_variant(function, requested, &mut state.outcome);
                            }
                            state.outcome
                        }
                    };
                    let state = StateReport {
                        name,
                        device: device_index,
                        type_config_index: type_index,
                        axis_values,
                        outcome,
                    };
                    if let Some(median) = contender(&state.outcome) {
                        let best = fastest.entry((index, state.name.clone())).or_insert(median);
                        *best = best.min(median);
                    }
                    eprintln!("{}", progress_line(&state));
                    if let Some(stream) = stream.as_mut() {
                        stream.emit(&Event::State {
                            bench: b.name.clone(),
                            variant: requested.map(str::to_string),
                            state: Box::new(output::state_record(&state, &report.devices)),
                        })?;
                    }
                    if state.outcome.device_lost() {
                        // Every later CUDA call would fail with the same error: report this
                        // state and end, so that the next variant gets a fresh context.
                        lost = Some(format!(
                            "in {} [{}]{}: {}",
                            b.name,
                            state.name,
                            requested.map_or(String::new(), |v| format!(" variant {v}")),
                            state
                                .outcome
                                .error
                                .as_deref()
                                .unwrap_or("a sticky CUDA error"),
                        ));
                        states.push(state);
                        break 'variants;
                    }
                    states.push(state);
                }
            }
        }
        report.benchmarks.push(BenchReport {
            name: b.name.clone(),
            index,
            tunes: b.tunes.clone(),
            backend: b.backend,
            axes: b.axes.clone(),
            states,
        });
        if lost.is_some() {
            break;
        }
    }

    let table = output::to_table(&report);
    let doc = output::results_doc(&report);
    let text = serde_json::to_string_pretty(&doc)
        .map_err(|e| Error::Device(format!("cannot serialise the results: {e}")))?;
    match cli.json.as_deref() {
        Some("-") => {
            eprint!("{table}");
            to_stdout(&format!("{text}\n"));
        }
        Some(path) => {
            to_stdout(&table);
            write_atomically(path, &text)?;
        }
        None => to_stdout(&table),
    }
    if let Some(line) = lost {
        eprintln!(
            "error: device lost {line} (exit {EXIT_DEVICE_LOST}: the process ends here, the \
             states after this one did not run)"
        );
        return Ok(EXIT_DEVICE_LOST);
    }
    let failed = report
        .benchmarks
        .iter()
        .flat_map(|b| &b.states)
        .any(|s| s.status() == StateStatus::Failed);
    Ok(if failed { EXIT_FAILED } else { EXIT_OK })
}

/// `--jsonl FILE`: one line per event, each written whole (one `write`) as it happens, so a
/// reader sees every finished state even if the process dies later.
struct EventStream {
    file: std::fs::File,
    path: String,
}

impl EventStream {
    fn open(path: &str) -> Result<EventStream> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| Error::Io {
                path: path.to_string(),
                source,
            })?;
        Ok(EventStream {
            file,
            path: path.to_string(),
        })
    }

    fn emit(&mut self, event: &Event) -> Result<()> {
        let line = serde_json::to_string(event)
            .map_err(|e| Error::Device(format!("cannot serialise an event: {e}")))?;
        self.file
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })
    }
}

/// `ipt_8.tpb_128` from `--variant scale.ipt_8.tpb_128` or `--variant ipt_8.tpb_128`.
fn variant_label<'a>(variant: &'a str, function: &str) -> &'a str {
    variant
        .strip_prefix(function)
        .and_then(|l| l.strip_prefix('.'))
        .unwrap_or(variant)
}

/// Records which variant of `function` ran, and fails the state when the requested one did
/// not: a timing of base reported as a variant would be a wrong result, not a slow one.
fn check_variant(function: &str, requested: Option<&str>, outcome: &mut crate::state::Outcome) {
    let resolved = crate::tuned::resolved(function);
    let missing = match (&resolved, requested) {
        (Some(r), _) => r.missing.clone(),
        // A build with nothing but base compiles no dispatch, so nothing resolves.
        (None, Some("base")) => {
            outcome.variant = Some("base".into());
            None
        }
        (None, Some(label)) if outcome.skipped.is_none() => Some(label.to_string()),
        (None, _) => None,
    };
    if let Some(r) = resolved {
        outcome.variant = Some(r.label);
    }
    if let Some(label) = missing {
        outcome.fail(
            format!(
                "variant `{label}` of `{function}` did not run: it is not compiled into this \
                 binary (build it with GPUTUNE_VARIANTS={function}.{label}), or the bench \
                 never calls `{function}`"
            ),
            ErrorKind::Other,
        );
    }
}

/// The median GPU time a state sets as the best to race against: only a complete, verified,
/// successful measurement counts (one that timed out or lost a race is not a best).
fn contender(outcome: &Outcome) -> Option<f64> {
    let cold = outcome.cold.as_ref()?;
    let failed = outcome.error.is_some() || outcome.skipped.is_some();
    let unverified = outcome
        .verification
        .as_ref()
        .is_some_and(|v| v.failure().is_some());
    if failed || unverified || cold.timed_out || cold.raced.is_some() {
        return None;
    }
    crate::stats::Summary::of(&cold.gpu_times).map(|s| s.median)
}

fn progress_line(s: &StateReport) -> String {
    let o = &s.outcome;
    if let Some(r) = &o.skipped {
        return format!("Skip: {r}");
    }
    if let Some(e) = &o.error {
        return format!("Fail: {e}");
    }
    match &o.cold {
        Some(c) => {
            let g = crate::stats::Summary::of(&c.gpu_times);
            let mut line = format!(
                "Pass: Cold: {} GPU, {} samples, {:.2}% noise{}",
                g.map_or("n/a".into(), |g| output::format_duration(g.mean)),
                c.gpu_times.len(),
                g.map_or(f64::NAN, |g| g.stdev_relative * 100.0),
                match (c.timed_out, c.raced) {
                    (true, _) => ", timed out".to_string(),
                    (false, Some(r)) => format!(
                        ", raced: more than {:.0}% slower than the best so far ({})",
                        r.margin * 100.0,
                        output::format_duration(r.best)
                    ),
                    (false, None) => String::new(),
                }
            );
            if let Some(h) = &o.hot {
                line.push_str(&format!(
                    " | Batch: {} GPU, {} executions",
                    output::format_duration(h.mean()),
                    h.executions
                ));
            }
            line
        }
        None => "Fail: nothing measured".into(),
    }
}

/// Writes via a temporary file and a rename, so a reader never sees half a document.
fn write_atomically(path: &str, text: &str) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_string(),
        source,
    };
    let tmp = format!("{path}.tmp{}", std::process::id());
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

fn select_benches(benches: &[Bench], wanted: &[String]) -> Result<Vec<usize>> {
    if wanted.is_empty() {
        return Ok((0..benches.len()).collect());
    }
    let mut out = Vec::new();
    for w in wanted {
        let found = benches
            .iter()
            .position(|b| &b.name == w)
            .or_else(|| w.parse::<usize>().ok().filter(|i| *i < benches.len()));
        match found {
            Some(i) if !out.contains(&i) => out.push(i),
            Some(_) => {}
            None => {
                let names: Vec<&str> = benches.iter().map(|b| b.name.as_str()).collect();
                return Err(Error::Usage(format!(
                    "unknown bench `{w}`; benches: {}",
                    names.join(", ")
                )));
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

fn apply_overrides(benches: &mut [Bench], specs: &[String]) -> Result<()> {
    for spec in specs {
        let o = AxisOverride::parse(spec)?;
        let mut matched = false;
        for b in benches.iter_mut() {
            for axis in b.axes.iter_mut() {
                if axis.answers_to(&o.name) {
                    axis.values = o.apply(axis)?;
                    matched = true;
                }
            }
        }
        if !matched {
            let mut names: Vec<&str> = Vec::new();
            for a in benches.iter().flat_map(|b| &b.axes) {
                if !names.contains(&a.name.as_str()) {
                    names.push(&a.name);
                }
            }
            return Err(Error::Usage(format!(
                "unknown axis `{}`; axes: {}",
                o.name,
                if names.is_empty() {
                    "(none)".to_string()
                } else {
                    names.join(", ")
                }
            )));
        }
    }
    Ok(())
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

fn list_doc(benches: &[Bench], indices: &[usize]) -> ListDoc {
    ListDoc {
        protocol: PROTOCOL,
        benchmarks: benches
            .iter()
            .zip(indices)
            .map(|(b, i)| BenchListing {
                name: b.name.clone(),
                index: *i,
                tunes: b.tunes.clone(),
                backend: b.backend,
                axes: output::axis_docs(&b.axes),
                states: b.state_count(),
            })
            .collect(),
    }
}

/// The backends a run needs, opened once up front so a missing device fails fast.
struct Backends {
    cpu: Option<CpuBackend>,
    #[cfg(feature = "cuda")]
    cuda: Option<crate::backend::cuda::CudaBackend>,
}

impl Backends {
    fn open(benches: &[Bench], cli: &Cli) -> Result<Backends> {
        let wants = |k: BackendKind| benches.iter().any(|b| b.backend == k);
        let needs_cpu = wants(BackendKind::Cpu) && benches.iter().any(|b| b.state_count() > 0);
        let needs_cuda = !cli.cpu && wants(BackendKind::Cuda);
        let cpu = if needs_cpu {
            Some(CpuBackend::open(0)?)
        } else {
            None
        };
        #[cfg(feature = "cuda")]
        let cuda = if needs_cuda {
            let mut b = crate::backend::cuda::CudaBackend::open(cli.device)?;
            b.set_blocking_kernel(!cli.disable_blocking_kernel);
            Some(b)
        } else {
            None
        };
        #[cfg(not(feature = "cuda"))]
        if needs_cuda {
            return Err(Error::NoDevice(
                "a selected bench needs CUDA, but gputune-runtime was built without its `cuda` feature".into(),
            ));
        }
        Ok(Backends {
            cpu,
            #[cfg(feature = "cuda")]
            cuda,
        })
    }

    fn devices(&self) -> Vec<crate::device::DeviceInfo> {
        let mut d = Vec::new();
        if let Some(c) = &self.cpu {
            d.push(c.device().clone());
        }
        #[cfg(feature = "cuda")]
        if let Some(c) = &self.cuda {
            d.push(c.device().clone());
        }
        d
    }

    /// The backend for a bench and the index of its device in [`Backends::devices`];
    /// `None` when the bench needs CUDA but the run is CPU-only.
    fn for_bench(
        &mut self,
        kind: BackendKind,
        cpu_only: bool,
    ) -> (Option<usize>, Option<&mut dyn Backend>) {
        let cpu_index = self.cpu.as_ref().map(|_| 0);
        match kind {
            BackendKind::Cpu => (cpu_index, self.cpu.as_mut().map(|b| b as &mut dyn Backend)),
            BackendKind::Cuda if cpu_only => (None, None),
            BackendKind::Cuda => {
                #[cfg(feature = "cuda")]
                {
                    let index = cpu_index.map_or(0, |_| 1);
                    (
                        Some(index),
                        self.cuda.as_mut().map(|b| b as &mut dyn Backend),
                    )
                }
                #[cfg(not(feature = "cuda"))]
                (None, None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BenchResult;

    fn lines(path: &std::path::Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    #[test]
    fn a_lost_device_reports_its_state_then_ends_the_run_with_exit_4() {
        let dir = std::env::temp_dir().join(format!("gputune-lost-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let jsonl = dir.join("run.jsonl");
        // The second state loses the device (as a sticky CUDA error would); the third, and
        // the second bench, must not run.
        let lose = |state: &mut State<'_>| -> BenchResult {
            if state.get_int64("N")? == 2 {
                return Err(Box::new(Error::DeviceLost(
                    "synchronising: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was \
                     encountered"
                        .into(),
                )));
            }
            state.exec(|_| Ok(()));
            Ok(())
        };
        let untouched = |_: &mut State<'_>| -> BenchResult { panic!("ran after the loss") };
        let benches = vec![
            Bench::new("lose", lose).add_int64_axis("N", [1, 2, 3]),
            Bench::new("after", untouched).add_int64_axis("N", [1]),
        ];
        let args: Vec<String> = [
            "bench",
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "3",
            "--min-samples",
            "3",
            "--no-batch",
            "--jsonl",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([jsonl.display().to_string()])
        .collect();
        let code = run(&args, benches, Criteria::builtin()).expect("runs");
        assert_eq!(code, EXIT_DEVICE_LOST);

        let events = lines(&jsonl);
        let states: Vec<&serde_json::Value> = events
            .iter()
            .filter(|e| e["event"] == "state")
            .map(|e| &e["state"])
            .collect();
        assert_eq!(states.len(), 2, "{events:?}");
        assert_eq!(states[0]["status"], "ok");
        assert!(states[0]["error_kind"].is_null());
        assert_eq!(states[1]["status"], "failed");
        assert_eq!(states[1]["error_kind"], "device_lost");
        assert!(
            states[1]["error"]
                .as_str()
                .is_some_and(|e| e.contains("CUDA_ERROR_ILLEGAL_ADDRESS")),
            "{}",
            states[1]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_state_is_classified_from_the_error_the_bench_returned() {
        let dir = std::env::temp_dir().join(format!("gputune-kinds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let jsonl = dir.join("run.jsonl");
        let fail = |state: &mut State<'_>| -> BenchResult {
            match state.get_int64("N")? {
                1 => Err(Box::new(Error::Compile("error: expected a `;`".into()))),
                2 => Err(Box::new(Error::InvalidLaunch("2048 threads".into()))),
                _ => Err("the bench's own error".into()),
            }
        };
        let args: Vec<String> = ["bench", "--jsonl"]
            .iter()
            .map(|s| s.to_string())
            .chain([jsonl.display().to_string()])
            .collect();
        let benches = vec![Bench::new("fail", fail).add_int64_axis("N", [1, 2, 3])];
        let code = run(&args, benches, Criteria::builtin()).expect("runs");
        assert_eq!(code, EXIT_FAILED);
        let kinds: Vec<serde_json::Value> = lines(&jsonl)
            .into_iter()
            .filter(|e| e["event"] == "state")
            .map(|e| e["state"]["error_kind"].clone())
            .collect();
        assert_eq!(kinds, ["compile", "invalid", "other"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

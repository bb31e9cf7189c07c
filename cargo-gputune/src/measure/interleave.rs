//! One bench process that measures base and some variants on one workload, interleaved: a
//! pass of a few cold samples of each, one after another (`--more-on-stdin`), then again,
//! until the caller finds each variant decided or its budget spent. Interleaving in one
//! process keeps the drift between processes, and any slower drift within the process, out of
//! the comparison of each variant with base: both see the same clocks, temperature and
//! neighbours, a few samples apart.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use gputune_protocol::{KernelRecord, Provenance, StateRecord, Status};

use crate::host::output::Output;
use crate::measure::protocol::{Axis, Event, Pass, Session};

/// How long a pass may go without an event before its process is taken for hung.
const SILENCE: Duration = Duration::from_secs(120);

/// What one label measured over the passes.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    /// Its cold samples, in order, all passes together (s).
    pub gpu: Vec<f64>,
    /// The SM clock of each, where the bench read them all (Hz).
    pub sm_clock: Vec<f64>,
    /// What its kernels compiled to, as its last state said.
    pub kernels: Vec<KernelRecord>,
    /// Why it could not be measured, if a state failed (it is left out of later passes).
    pub failed: Option<(Status, String)>,
}

/// What a process measured.
#[derive(Debug, Default)]
pub struct Interleaved {
    /// Per label (`base` included).
    pub labels: BTreeMap<String, Samples>,
    /// Passes run.
    pub rounds: usize,
    /// Where and how its last pass measured.
    pub provenance: Option<Arc<Provenance>>,
    /// Its wall time (s).
    pub seconds: f64,
    /// Why it ended before the caller was done, if it did (a crash, a bad argument).
    pub ended: Option<String>,
}

/// How one process runs.
pub struct Plan<'a> {
    /// The bench binary.
    pub bin: &'a Path,
    /// The bench in it (`-b`).
    pub bench: &'a str,
    /// The tuned function, whose labels `--variant` takes as `function.label`.
    pub function: &'a str,
    /// The process's own flags: `-a` of the workload, `--device`.
    pub process_args: Vec<String>,
    /// The runtime workload the samples must come from (`Elements{io}=2^20`), and the bench's
    /// declared axes that name it.
    pub rt_workload: &'a str,
    /// The bench's declared axes.
    pub declared: &'a [Axis],
    /// Where the event stream goes.
    pub jsonl: &'a Path,
    /// Cold samples of each label per pass.
    pub block: usize,
    /// The most samples of each label: the last pass takes only what is left of it.
    pub budget: usize,
}

impl Plan<'_> {
    /// One pass's flags: base, then `labels`, `block` samples each (fewer where `taken`
    /// samples leave less of the budget).
    fn pass(&self, labels: &[String], taken: usize) -> Vec<String> {
        let variants = std::iter::once("base")
            .chain(labels.iter().map(String::as_str).filter(|l| *l != "base"))
            .map(|l| format!("{}.{l}", self.function))
            .collect::<Vec<_>>()
            .join(",");
        let block = self
            .block
            .min(self.budget.saturating_sub(taken))
            .max(1)
            .to_string();
        vec![
            "--variant".into(),
            variants,
            "--stopping-criterion".into(),
            "sample-count".into(),
            "--target-samples".into(),
            block.clone(),
            "--min-samples".into(),
            block,
            "--no-batch".into(),
        ]
    }
}

/// Runs passes of base and `labels` in one process: after each, `undecided` gets what has
/// been measured and returns the labels that still need samples (none: done).
pub fn run(
    plan: &Plan<'_>,
    labels: &[String],
    mut undecided: impl FnMut(&Interleaved) -> Vec<String>,
    out: &mut Output,
) -> Result<Interleaved> {
    let started = Instant::now();
    let mut got = Interleaved::default();
    let mut args = vec!["-b".to_string(), plan.bench.to_string()];
    args.extend(plan.process_args.iter().cloned());
    args.extend(plan.pass(labels, 0));
    out.verbose(&format!(
        "{} {} --more-on-stdin",
        plan.bin.display(),
        args.join(" ")
    ));
    let mut session = Session::start(plan.bin, "", &args, plan.jsonl, true)?;
    loop {
        let mut current: Option<String> = None;
        let pass = session.watch(Some(SILENCE), |event| {
            match event {
                Event::Provenance { provenance, .. } => {
                    crate::results::provenance::note_missing_nvml(out, &provenance);
                    got.provenance = Some(Arc::from(provenance));
                }
                Event::Variant { variant, .. } => {
                    current = Some(variant.unwrap_or_else(|| "base".into()));
                }
                Event::State { state, .. } => {
                    if let Some(label) = &current {
                        take(plan, got.labels.entry(label.clone()).or_default(), &state);
                    }
                }
                Event::PassDone | Event::Process { .. } => {}
            }
            Ok(())
        })?;
        match pass {
            Pass::Done => got.rounds += 1,
            Pass::Ended(outcome) => {
                let why = match outcome.exit {
                    crate::host::process::Exit::Code(code) => format!("exit {code}"),
                    crate::host::process::Exit::Signal(sig) => {
                        crate::host::process::signal_name(sig)
                    }
                    crate::host::process::Exit::TimedOut => {
                        format!("killed after {} s without an event", SILENCE.as_secs())
                    }
                };
                got.ended = Some(format!(
                    "the bench process ended ({why}): {}",
                    outcome.stderr.trim()
                ));
                break;
            }
        }
        let next: Vec<String> = undecided(&got)
            .into_iter()
            .filter(|l| !got.labels.get(l).is_some_and(|s| s.failed.is_some()))
            .collect();
        if next.is_empty() {
            break;
        }
        // The labels of a pass have had the same passes: the most taken is what they took.
        let taken = next
            .iter()
            .filter_map(|l| got.labels.get(l).map(|s| s.gpu.len()))
            .max()
            .unwrap_or(0);
        session.send(&plan.pass(&next, taken))?;
    }
    if got.ended.is_none() {
        // Everything it measured is in; only its timeline is lost if it ends badly.
        let _ = session.close(Some(SILENCE));
    }
    got.seconds = started.elapsed().as_secs_f64();
    Ok(got)
}

/// Adds a state's samples to what its label measured; a state of another workload (the `-a`
/// flags select one, so none should come) is passed over.
fn take(plan: &Plan<'_>, into: &mut Samples, state: &StateRecord) {
    if crate::measure::runs::rt_workload(state, plan.declared).0 != plan.rt_workload {
        return;
    }
    let status = crate::measure::runs::state_status(state);
    if status != Status::Ok {
        let why = state
            .error
            .clone()
            .or_else(|| state.skip_reason.clone())
            .unwrap_or_else(|| status.to_string());
        into.failed = Some((status, why));
        return;
    }
    let Some(samples) = &state.samples else {
        return;
    };
    // Clocks only while every pass gave one per sample: misaligned ones would mislead.
    let aligned =
        into.sm_clock.len() == into.gpu.len() && samples.sm_clock.len() == samples.gpu.len();
    if aligned {
        into.sm_clock.extend(&samples.sm_clock);
    } else {
        into.sm_clock.clear();
    }
    into.gpu.extend(&samples.gpu);
    if !state.kernels.is_empty() {
        into.kernels.clone_from(&state.kernels);
    }
}

/// The `-a` flags that select the runtime workload `key` (`Elements{io}=2^20 Mode=b`, as the
/// store writes it) among `declared` axes: one value of each runtime axis, as the bench's
/// grammar takes it (`Elements{io}[pow2]=20`). `None` when the key names a value the bench
/// does not declare.
pub fn rt_args(key: &str, declared: &[Axis]) -> Option<Vec<String>> {
    if key == "*" {
        return Some(Vec::new());
    }
    let mut rest = key;
    let mut args = Vec::new();
    for a in declared.iter().filter(|a| !a.compile_time) {
        let found = a.values.iter().find_map(|v| {
            let part = format!("{}={}", a.name, v.input_string);
            let after = rest.strip_prefix(&part)?;
            (after.is_empty() || after.starts_with(' ')).then_some((v, after))
        });
        let Some((v, after)) = found else {
            continue;
        };
        rest = after.trim_start();
        args.push("-a".to_string());
        args.push(value_arg(a, &v.input_string));
    }
    rest.is_empty().then_some(args)
}

/// The `-a` flags of the compile-time workload `key` (`T=f32,U=i32`).
pub fn ct_args(key: &str, declared: &[Axis]) -> Option<Vec<String>> {
    if key == "*" {
        return Some(Vec::new());
    }
    let mut rest = key;
    let mut args = Vec::new();
    for a in declared.iter().filter(|a| a.compile_time) {
        let (v, after) = a.values.iter().find_map(|v| {
            let part = format!("{}={}", a.plain_name, v.input_string);
            let after = rest.strip_prefix(&part)?;
            (after.is_empty() || after.starts_with(',')).then_some((v, after))
        })?;
        rest = after.strip_prefix(',').unwrap_or(after);
        args.push("-a".to_string());
        args.push(value_arg(a, &v.input_string));
    }
    rest.is_empty().then_some(args)
}

/// `Name=value`, or `Name[pow2]=exponent` for a power-of-two axis's `2^exponent`.
fn value_arg(a: &Axis, input: &str) -> String {
    match input.strip_prefix("2^").filter(|_| a.flags == "pow2") {
        Some(exponent) => format!("{}[pow2]={exponent}", a.name),
        None => format!("{}={input}", a.name),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use gputune_protocol::{AxisKind, AxisValueDoc, Scalar};

    use super::*;

    fn axis(name: &str, ct: bool, pow2: bool, values: &[&str]) -> Axis {
        Axis {
            name: name.into(),
            plain_name: name.replace("{ct}", "").replace("{io}", ""),
            compile_time: ct,
            importance_ordered: name.contains("{io}"),
            kind: AxisKind::String,
            flags: if pow2 { "pow2".into() } else { String::new() },
            values: values
                .iter()
                .map(|v| AxisValueDoc {
                    input_string: v.to_string(),
                    description: String::new(),
                    value: Scalar::Text(v.to_string()),
                })
                .collect(),
        }
    }

    fn declared() -> Vec<Axis> {
        vec![
            axis("T{ct}", true, false, &["f32", "f64"]),
            axis("Elements{io}", false, true, &["2^16", "2^20"]),
            axis("Mode", false, false, &["a b", "a"]),
        ]
    }

    #[test]
    fn a_stored_workload_key_becomes_the_flags_that_select_it() {
        let d = declared();
        assert_eq!(
            rt_args("Elements{io}=2^20 Mode=a b", &d).expect("declared"),
            ["-a", "Elements{io}[pow2]=20", "-a", "Mode=a b"]
        );
        assert_eq!(
            rt_args("Elements{io}=2^16 Mode=a", &d).expect("declared"),
            ["-a", "Elements{io}[pow2]=16", "-a", "Mode=a"]
        );
        assert_eq!(rt_args("*", &d), Some(Vec::new()));
        assert_eq!(rt_args("Elements{io}=2^24", &d), None, "not declared");
        assert_eq!(ct_args("T=f64", &d).expect("declared"), ["-a", "T{ct}=f64"]);
        assert_eq!(ct_args("T=f16", &d), None);
        assert_eq!(ct_args("*", &d), Some(Vec::new()));
    }

    /// A bench in miniature (a shell script): each pass writes its provenance, then for
    /// each label of its `--variant` list a state of `--target-samples` samples (base 2 s,
    /// the others 1 s), then `pass_done`; further passes come on stdin. With `crash` it dies
    /// in its second pass, after starting a variant.
    fn fake_bench(dir: &Path, crash: bool) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let crash = u8::from(crash);
        let state = r#"{"name":"Device=0","device":null,"type_config_index":0,"axis_values":[],"status":"ok","is_skipped":false,"skip_reason":null,"error":null,"error_kind":null,"stop":{"reason":"criterion"},"verification":null,"variant":null,"criterion":null,"element_count":0,"global_memory_read_bytes":0,"global_memory_write_bytes":0,"summaries":[],"samples":{"gpu":[GPU],"cpu":[GPU],"sm_clock":[]},"batch":null}"#;
        let script = format!(
            r#"#!/bin/sh
dir=$(dirname "$0"); out=""; variants=""; n=""; prev=""; passes=0; crash={crash}
for a in "$@"; do
  [ "$prev" = --jsonl ] && out=$a
  [ "$prev" = --variant ] && variants=$a
  [ "$prev" = --target-samples ] && n=$a
  prev=$a
done
pass() {{
  passes=$((passes + 1))
  echo '{{"event":"provenance","provenance":{{"host":"fake","gputune":"0.1.0","rustc":null,"profile":null,"opt_level":null,"debug_assertions":null,"cuda":null}}}}' >> "$out"
  for v in $(echo "$variants" | tr ',' ' '); do
    label=${{v#f.}}
    value=1.0; [ "$label" = base ] && value=2.0
    echo "{{\"event\":\"variant\",\"bench\":\"b\",\"variant\":\"$label\"}}" >> "$out"
    [ "$crash" = 1 ] && [ $passes = 2 ] && exit 4
    gpu=$(yes "$value" | head -n "$n" | paste -sd, -)
    echo "{{\"event\":\"state\",\"bench\":\"b\",\"variant\":\"$label\",\"state\":$(echo '{state}' | sed "s/GPU/$gpu/g")}}" >> "$out"
  done
  echo '{{"event":"pass_done"}}' >> "$out"
}}
pass
while read -r line; do
  [ -z "$line" ] && break
  echo "$line" | sed 's/^\["//; s/"\]$//; s/","/\n/g' > "$dir/args"
  prev=""
  while read -r a; do
    [ "$prev" = --variant ] && variants=$a
    [ "$prev" = --target-samples ] && n=$a
    prev=$a
  done < "$dir/args"
  pass
done
echo '{{"event":"process","timeline":{{"first_sample":null,"device_open":0,"setup":0,"reference":0,"compile_wait":0,"measure":0,"total":0.1}}}}' >> "$out"
"#
        );
        let bench = dir.join("bench.sh");
        std::fs::write(&bench, script).expect("script");
        std::fs::set_permissions(&bench, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        bench
    }

    fn plan_of<'a>(bench: &'a Path, jsonl: &'a Path, declared: &'a [Axis]) -> Plan<'a> {
        Plan {
            bin: bench,
            bench: "b",
            function: "f",
            process_args: Vec::new(),
            rt_workload: "*",
            declared,
            jsonl,
            block: 10,
            budget: 25,
        }
    }

    #[test]
    fn passes_go_on_while_a_label_is_undecided_and_the_last_takes_what_is_left() {
        let dir = std::env::temp_dir().join(format!("gputune-interleave-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let bench = fake_bench(&dir, false);
        let jsonl = dir.join("run.jsonl");
        let declared = Vec::new();
        let plan = plan_of(&bench, &jsonl, &declared);
        let mut asked = Vec::new();
        let got = run(
            &plan,
            &["x_1".to_string()],
            |got| {
                let n = got.labels.get("x_1").map_or(0, |s| s.gpu.len());
                asked.push(n);
                if n < 25 {
                    vec!["x_1".to_string()]
                } else {
                    Vec::new()
                }
            },
            &mut Output::silent(),
        )
        .expect("runs");
        assert_eq!(asked, [10, 20, 25], "blocks of 10, the last of 5");
        assert_eq!(got.rounds, 3);
        assert_eq!(got.labels["x_1"].gpu.len(), 25);
        assert_eq!(
            got.labels["base"].gpu,
            vec![2.0; 25],
            "base beside it in every pass"
        );
        assert!(got.labels["x_1"].sm_clock.is_empty());
        assert_eq!(
            got.provenance.as_ref().and_then(|p| p.host.as_deref()),
            Some("fake")
        );
        assert!(got.ended.is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_process_that_dies_keeps_the_passes_it_finished_and_says_why() {
        let dir =
            std::env::temp_dir().join(format!("gputune-interleave-crash-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let bench = fake_bench(&dir, true);
        let jsonl = dir.join("run.jsonl");
        let declared = Vec::new();
        let plan = plan_of(&bench, &jsonl, &declared);
        let got = run(
            &plan,
            &["x_1".to_string()],
            |_| vec!["x_1".to_string()],
            &mut Output::silent(),
        );
        let got = got.expect("runs");
        assert_eq!(got.rounds, 1);
        assert_eq!(got.labels["x_1"].gpu.len(), 10, "the first pass's");
        assert!(
            got.ended
                .as_deref()
                .is_some_and(|e| e.starts_with("the bench process ended (exit 4)")),
            "{:?}",
            got.ended
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn each_pass_runs_base_first_then_the_labels() {
        let d = declared();
        let plan = Plan {
            bin: Path::new("bench"),
            bench: "b",
            function: "f",
            process_args: Vec::new(),
            rt_workload: "*",
            declared: &d,
            jsonl: Path::new("run.jsonl"),
            block: 10,
            budget: 25,
        };
        let pass = plan.pass(&["x_1".into(), "base".into(), "x_2".into()], 0);
        assert_eq!(pass[..2], ["--variant", "f.base,f.x_1,f.x_2"]);
        assert!(pass.windows(2).any(|w| w == ["--target-samples", "10"]));
        assert!(pass.contains(&"--no-batch".to_string()));
        // The last pass takes what is left of the budget.
        let last = plan.pass(&["x_1".into()], 20);
        assert!(
            last.windows(2).any(|w| w == ["--target-samples", "5"]),
            "{last:?}"
        );
        assert!(
            last.windows(2).any(|w| w == ["--min-samples", "5"]),
            "{last:?}"
        );
    }
}

//! `check --remeasure`: the UNDECIDED workloads measured again until they settle.
//!
//! Per runtime workload, one bench process runs base and the workload's undecided variants in
//! passes of `--remeasure-block` cold samples each (`super::interleave`), and after every
//! pass each variant is judged again by `check`'s rule
//! ([`verdict`](mod@crate::results::check::verdict)), with its samples so far and base's
//! beside them as its control. A variant leaves the passes once its verdict is
//! SAME, FAST or SLOW, or once it has `--remeasure-budget` samples; the process ends when
//! none is left. Its rows are then replaced in the store: the new samples, base's from the
//! same process as their control, the pass's provenance and clocks, and `stop` `remeasured`,
//! so that the next `report` and `check` see what was measured and how.
//!
//! The bench binaries come from a bundle (`--bundle DIR`, on a GPU host without cargo) or are
//! built from the workspace; either must be of the code revision the store's rows were
//! measured at, and the device the bench opens must be the one the rows were measured on.
//! What cannot be remeasured is said and left as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use gputune_protocol::{Status, StopReason};

use super::interleave::{self, Interleaved};
use crate::host::cargo::{self, BuildOutcome, Workspace};
use crate::host::output::Output;
use crate::measure::bundle::Bundle;
use crate::measure::protocol;
use crate::results::check::verdict::{self, UNDECIDED};
pub use crate::results::check::workload::{Remeasured, Workload};
use crate::results::check::Comparison;
use crate::results::store::{Measurement, Store};
use crate::results::{median, Group};

/// How to remeasure.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Most new samples per workload (and of base beside it).
    pub budget: usize,
    /// Samples of each per pass.
    pub block: usize,
    /// The CUDA ordinal the bench processes measure on.
    pub device: u32,
    /// `--threshold`.
    pub threshold: f64,
}

/// Where the bench binaries come from.
pub enum Source<'a> {
    /// A bundle (`search --build-only --bundle DIR`).
    Bundle(&'a Path),
    /// Built from the workspace, as a search builds them.
    Workspace(&'a Workspace, &'a cargo::Options),
}

/// What `--remeasure` did.
#[derive(Debug, Default)]
pub struct Done {
    /// The workloads measured again.
    pub remeasured: Vec<(Workload, Remeasured)>,
    /// What could not be, and why.
    pub notes: Vec<String>,
}

/// The undecided workloads of one group on one runtime workload: one process.
struct Job<'a> {
    group: &'a Group,
    rt_workload: String,
    /// The undecided rows (base among them if base is).
    targets: Vec<Workload>,
}

/// Measures the UNDECIDED `rows` again (see the module's documentation), storing what it
/// measures in `store`; `groups` are the store's current groups and `work` a directory for
/// the bench processes' streams.
pub fn remeasure(
    rows: &[Comparison],
    groups: &[Group],
    store: &Store,
    work: &Path,
    source: &Source<'_>,
    settings: &Settings,
    out: &mut Output,
) -> Result<Done> {
    let mut done = Done::default();
    let mut jobs: Vec<Job<'_>> = Vec::new();
    for at in rows
        .iter()
        .filter(|c| c.verdict == UNDECIDED)
        .filter_map(|c| c.at.as_ref())
    {
        let Some(group) = groups.iter().find(|g| {
            g.package == at.package
                && g.bench == at.bench
                && g.device == at.device
                && g.revision == at.revision
                && g.ct_workload == at.ct_workload
        }) else {
            continue;
        };
        match jobs
            .iter_mut()
            .find(|j| std::ptr::eq(j.group, group) && j.rt_workload == at.rt_workload)
        {
            Some(j) => j.targets.push(at.clone()),
            None => jobs.push(Job {
                group,
                rt_workload: at.rt_workload.clone(),
                targets: vec![at.clone()],
            }),
        }
    }
    std::fs::create_dir_all(work).with_context(|| format!("cannot create {}", work.display()))?;
    for job in &jobs {
        match binaries(job, source, work, out) {
            Ok(bins) => {
                for (bin, targets) in bins {
                    let place = targets[0].place();
                    match run_job(job, &bin, &targets, store, work, settings, out) {
                        Ok(measured) => done.remeasured.extend(measured),
                        Err(e) => done.notes.push(format!("{place}: not remeasured: {e:#}")),
                    }
                }
            }
            Err(e) => done
                .notes
                .push(format!("{}: not remeasured: {e:#}", job.targets[0].place())),
        }
    }
    Ok(done)
}

/// The code part of a stored revision (`package-HASH` of `package-HASH.mXXXXXXXX`).
fn code_revision(revision: &str) -> &str {
    revision
        .rsplit_once(".m")
        .map_or(revision, |(code, _)| code)
}

/// The binaries that hold `job`'s labels, each with the targets it runs (base rides with the
/// first).
fn binaries(
    job: &Job<'_>,
    source: &Source<'_>,
    work: &Path,
    out: &mut Output,
) -> Result<Vec<(PathBuf, Vec<Workload>)>> {
    let g = job.group;
    let variants: Vec<&Workload> = job.targets.iter().filter(|t| t.variant != "base").collect();
    let base: Vec<Workload> = job
        .targets
        .iter()
        .filter(|t| t.variant == "base")
        .cloned()
        .collect();
    let mut bins: Vec<(PathBuf, Vec<Workload>)> = Vec::new();
    match source {
        Source::Bundle(dir) => {
            let bundle = Bundle::read(dir)?;
            let b = bundle
                .benches
                .iter()
                .find(|b| {
                    b.package == g.package && b.bench == g.bench && b.function.name == g.function
                })
                .with_context(|| {
                    format!(
                        "the bundle {} holds no bench {} of {}",
                        dir.display(),
                        g.bench,
                        g.package
                    )
                })?;
            if code_revision(&b.revision) != code_revision(&g.revision) {
                anyhow::bail!(
                    "the bundle holds revision {} of the code, the store's rows are of {}",
                    code_revision(&b.revision),
                    code_revision(&g.revision)
                );
            }
            for t in variants {
                let unit = b
                    .units
                    .iter()
                    .find(|u| u.labels.contains(&t.variant))
                    .with_context(|| format!("the bundle has no binary of {}", t.variant))?;
                let bin = dir.join(&unit.bin);
                match bins.iter_mut().find(|(b, _)| *b == bin) {
                    Some((_, ts)) => ts.push(t.clone()),
                    None => bins.push((bin, vec![t.clone()])),
                }
            }
            if bins.is_empty() && !base.is_empty() {
                bins.push((dir.join(&b.base), Vec::new()));
            }
        }
        Source::Workspace(ws, args) => {
            let bin = build(ws, args, g, &variants, work, out)?;
            bins.push((bin, variants.into_iter().cloned().collect()));
        }
    }
    if let Some(first) = bins.first_mut() {
        first.1.extend(base);
    }
    Ok(bins)
}

/// A binary of `g`'s bench target with `variants` compiled in, built from the workspace at
/// the code revision the rows were measured at.
fn build(
    ws: &Workspace,
    args: &cargo::Options,
    g: &Group,
    variants: &[&Workload],
    work: &Path,
    out: &mut Output,
) -> Result<PathBuf> {
    let code = code_revision(&g.revision);
    let mut counters = crate::measure::runs::Counters::default();
    for target in ws
        .bench_targets(args)?
        .into_iter()
        .filter(|t| t.package == g.package)
    {
        if cargo::revision(ws, args, &target)? != code {
            anyhow::bail!(
                "the workspace's code is not the revision the store's rows were measured at \
                 ({code}): it changed since; search again"
            );
        }
        // The production build (cached by the search) says which benches the target holds.
        let (base_bin, _, _) =
            crate::measure::search::production(ws, args, &target, code, &mut counters, out)?;
        if !protocol::list(&base_bin, &[])?
            .iter()
            .any(|b| b.name == g.bench)
        {
            continue;
        }
        if variants.is_empty() {
            return Ok(base_bin);
        }
        let selection: Vec<String> = variants
            .iter()
            .map(|t| format!("{}::{}.{}", g.package, g.function, t.variant))
            .collect();
        out.status(&format!(
            "Building {} of {} to measure again",
            crate::results::present::count(variants.len(), "variant"),
            g.function
        ));
        let dest = work.join(format!("{}-remeasure", target.bench));
        return match cargo::build(ws, args, &target, &selection.join(","), &dest, None)? {
            BuildOutcome::Built { executable, .. } => Ok(executable),
            BuildOutcome::Failed { message, .. } => {
                anyhow::bail!("the build failed:\n{message}")
            }
            BuildOutcome::TimedOut { .. } => anyhow::bail!("the build timed out"),
        };
    }
    anyhow::bail!(
        "no bench target of {} in the workspace holds the bench {}",
        g.package,
        g.bench
    )
}

/// A row of `targets`' group as the samples so far make it: `template`'s keys, `samples`,
/// their median and noise, and `control` (base's samples beside them).
fn hypothetical(template: &Measurement, samples: &[f64], control: &[f64]) -> Measurement {
    let mut m = template.clone();
    m.center = median(samples.to_vec());
    m.noise = crate::results::score::relative_stdev(samples);
    m.samples = samples.to_vec();
    m.control = control.to_vec();
    m
}

/// The row of `label` on `rt` in `g`.
fn row_of<'a>(g: &'a Group, label: &str, rt: &str) -> Option<&'a Measurement> {
    g.variants
        .get(label)?
        .iter()
        .find(|m| m.rt_workload == rt && m.status == Status::Ok)
}

/// The verdict of `t` with what `got` has measured so far (`None` without samples yet).
fn judged(job: &Job<'_>, t: &Workload, got: &Interleaved, threshold: f64) -> Option<&'static str> {
    let g = job.group;
    let empty = interleave::Samples::default();
    let base = got.labels.get("base").unwrap_or(&empty);
    let mine = got.labels.get(&t.variant)?;
    let template = row_of(g, &t.variant, &job.rt_workload)?;
    let is_base = t.variant == "base";
    let now = hypothetical(template, &mine.gpu, if is_base { &[] } else { &base.gpu });
    // Base now: measured again here if base itself is undecided, else its stored row.
    let base_remeasured = job.targets.iter().any(|x| x.variant == "base");
    let base_row = row_of(g, "base", &job.rt_workload).map(|b| {
        if base_remeasured {
            hypothetical(b, &base.gpu, &[])
        } else {
            b.clone()
        }
    });
    let base = match (&t.base_then, &base_row) {
        (Some(then), Some(now)) if !is_base => Some((then, now)),
        _ => None,
    };
    let sides = verdict::sides(&t.then, &now, base)?;
    Some(verdict::judge(&sides, threshold).verdict)
}

/// Runs one process of `targets` with `bin` and stores what it measured.
fn run_job(
    job: &Job<'_>,
    bin: &Path,
    targets: &[Workload],
    store: &Store,
    work: &Path,
    settings: &Settings,
    out: &mut Output,
) -> Result<Vec<(Workload, Remeasured)>> {
    let g = job.group;
    let (identity, _) = protocol::device(bin, &g.bench, settings.device)?;
    if identity != g.device {
        anyhow::bail!(
            "its rows were measured on {}, and device {} here is {}",
            crate::results::present::device(&g.device, ""),
            settings.device,
            crate::results::present::device(&identity, "")
        );
    }
    let declared = protocol::list(bin, &[])?
        .into_iter()
        .find(|b| b.name == g.bench)
        .with_context(|| format!("{} has no bench {}", bin.display(), g.bench))?
        .axes;
    let mut process_args = interleave::ct_args(&g.ct_workload, &declared)
        .with_context(|| format!("the bench does not declare the workload {}", g.ct_workload))?;
    process_args.extend(
        interleave::rt_args(&job.rt_workload, &declared).with_context(|| {
            format!(
                "the bench does not declare the workload {}",
                job.rt_workload
            )
        })?,
    );
    process_args.extend(["--device".to_string(), settings.device.to_string()]);
    let labels: Vec<String> = targets.iter().map(|t| t.variant.clone()).collect();
    out.status(&format!(
        "Measuring again {} [{}] {}: {} with base, interleaved in passes of {} samples (at most {} each)",
        g.bench,
        g.ct_workload,
        job.rt_workload,
        labels.join(", "),
        settings.block,
        settings.budget
    ));
    let plan = interleave::Plan {
        bin,
        bench: &g.bench,
        function: &g.function,
        process_args,
        rt_workload: &job.rt_workload,
        declared: &declared,
        jsonl: &work.join("remeasure.jsonl"),
        block: settings.block,
        budget: settings.budget,
    };
    let got = interleave::run(
        &plan,
        &labels,
        |got| {
            targets
                .iter()
                .filter(|t| {
                    let n = got.labels.get(&t.variant).map_or(0, |s| s.gpu.len());
                    // No verdict yet (no samples) counts as undecided.
                    n < settings.budget
                        && !matches!(
                            judged(job, t, got, settings.threshold),
                            Some(v) if v != UNDECIDED
                        )
                })
                .map(|t| t.variant.clone())
                .collect()
        },
        out,
    )?;
    if let Some(why) = &got.ended {
        if got.rounds == 0 {
            anyhow::bail!("{why}");
        }
        out.status(&format!("Note: {why}; keeping the passes it finished"));
    }
    store_rows(job, targets, &got, store, settings)
}

/// Replaces the rows of `targets` with what `got` measured, and says what was done.
fn store_rows(
    job: &Job<'_>,
    targets: &[Workload],
    got: &Interleaved,
    store: &Store,
    settings: &Settings,
) -> Result<Vec<(Workload, Remeasured)>> {
    let g = job.group;
    let empty = interleave::Samples::default();
    let base = got.labels.get("base").unwrap_or(&empty);
    let mut rows = Vec::new();
    let mut measured = Vec::new();
    for t in targets {
        let Some(mine) = got.labels.get(&t.variant).filter(|s| s.gpu.len() >= 2) else {
            continue;
        };
        let Some(template) = row_of(g, &t.variant, &job.rt_workload) else {
            continue;
        };
        let is_base = t.variant == "base";
        let mut row = hypothetical(template, &mine.gpu, if is_base { &[] } else { &base.gpu });
        row.stop = Some(StopReason::Remeasured);
        row.sm_clocks.clone_from(&mine.sm_clock);
        if !mine.kernels.is_empty() {
            row.kernels.clone_from(&mine.kernels);
        }
        row.provenance.clone_from(&got.provenance);
        row.run_seconds = Some(got.seconds);
        row.message = Some(format!(
            "remeasured by check: {} samples interleaved with {} of base in one process, {} \
             passes",
            mine.gpu.len(),
            base.gpu.len(),
            got.rounds
        ));
        rows.push(row);
        measured.push((
            t.clone(),
            Remeasured {
                before: UNDECIDED,
                samples: mine.gpu.len(),
                base_samples: base.gpu.len(),
                rounds: got.rounds,
                budget: settings.budget,
            },
        ));
    }
    store.put(&rows)?;
    Ok(measured)
}

/// The remeasured workloads' notes by row, for attaching to the new comparisons.
pub fn by_row(done: &Done) -> BTreeMap<String, &Remeasured> {
    done.remeasured
        .iter()
        .map(|(w, r)| (row_key(w), r))
        .collect()
}

/// A key of `w`'s row.
pub fn row_key(w: &Workload) -> String {
    format!(
        "{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}",
        w.package, w.bench, w.device, w.revision, w.ct_workload, w.variant, w.rt_workload
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_part_of_a_revision_leaves_the_measurement_settings_out() {
        assert_eq!(
            code_revision("pkg-0123456789abcdef.m89abcdef"),
            "pkg-0123456789abcdef"
        );
        assert_eq!(code_revision("pkg-0123"), "pkg-0123");
    }

    #[test]
    fn a_hypothetical_row_keeps_its_keys_and_takes_the_new_samples() {
        let template = crate::results::tests::m("x_1", "N=1", 5.0, 0.5);
        let row = hypothetical(&template, &[1.0, 2.0, 3.0], &[4.0, 4.0]);
        assert_eq!(
            (row.variant.as_str(), row.rt_workload.as_str()),
            ("x_1", "N=1")
        );
        assert_eq!(row.center, Some(2.0));
        assert_eq!(row.control, [4.0, 4.0]);
        assert!((row.noise.expect("noise") - 0.5).abs() < 1e-12);
    }
}

//! What a search has measured of one bench, and the first pass over its variants: base where
//! a search does not decide, each batch's variants beside base as their control, and the
//! process kept waiting for the finals ([`crate::measure::finals`] is the second pass).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use gputune_protocol::Status;

use crate::host::output::Output;
use crate::measure::protocol::Session;
use crate::measure::runs::{
    Counters, CtWorkload, Pass, Plan, Ran, RunContext, RunRequest, END_LIMIT, MIN_BASE_RUN,
};
use crate::measure::search::pipeline::{BuildFailure, BuiltUnit};
use crate::results::present;
use crate::results::store::{Measurement, Store};

/// What the store holds for one bench on this revision and device, and how long base ran.
pub(crate) struct Measured {
    /// `(compile-time workload, variant)` pairs with rows.
    pub(crate) done: BTreeSet<(String, String)>,
    rows: BTreeMap<(String, String), Vec<Measurement>>,
    /// Base's run time per compile-time workload, for the run limit.
    base_run: BTreeMap<String, f64>,
    /// The binary each variant measured by this process was run from, for the finals.
    pub(crate) bins: BTreeMap<String, PathBuf>,
    /// Per compile-time workload, the last bench process of a deciding search's first pass,
    /// waiting to measure the next batch of a strategy, or the finals, in the same process:
    /// one start-up and one setup per workload for the whole search. A waiting process runs
    /// nothing on the GPU; it holds its context and its workloads' buffers.
    pub(crate) kept: BTreeMap<String, Session>,
}

impl Measured {
    /// What `store` holds for `plan`'s bench.
    pub(crate) fn load(plan: &Plan<'_>, store: &Store) -> Result<Measured> {
        let mut m = Measured {
            done: BTreeSet::new(),
            rows: BTreeMap::new(),
            base_run: BTreeMap::new(),
            bins: BTreeMap::new(),
            kept: BTreeMap::new(),
        };
        let mine: Vec<Measurement> = store
            .measurements()?
            .into_iter()
            .filter(|m| {
                m.revision == plan.revision
                    && m.package == plan.target.package
                    && m.bench == plan.info.name
            })
            .collect();
        // The device only matters where the store holds this bench: a fresh search need not
        // wait for its probe before the first bench process starts.
        let device = if mine.is_empty() {
            ""
        } else {
            plan.device.get()?.0
        };
        for row in mine.into_iter().filter(|m| m.device == device) {
            m.done
                .insert((row.ct_workload.clone(), row.variant.clone()));
            m.rows
                .entry((row.ct_workload.clone(), row.variant.clone()))
                .or_default()
                .push(row);
        }
        Ok(m)
    }

    /// Whether `label` is stored for every compile-time workload.
    pub(crate) fn complete(&self, cts: &[CtWorkload], label: &str) -> bool {
        cts.iter()
            .all(|ct| self.done.contains(&(ct.key.clone(), label.to_string())))
    }

    /// Measures base on every compile-time workload that lacks it (from the production
    /// binary `base_bin`, built in `base_build` seconds, without a run limit: base defines
    /// the limits). A search that decides does not: every batch process measures base as its
    /// control and the finals measure it in full, so a process of its own would only add
    /// its start-up to the GPU's critical path; its run limit then counts from
    /// [`MIN_BASE_RUN`] until a stored base says otherwise.
    pub(crate) fn measure_base(
        &mut self,
        ctx: &RunContext<'_>,
        (base_bin, base_build): (&Path, f64),
        counters: &mut Counters,
        out: &mut Output,
    ) -> Result<()> {
        let RunContext { plan, cts, store } = *ctx;
        let f = plan.function;
        for ct in cts {
            let key = (ct.key.clone(), "base".to_string());
            if self.done.contains(&key) {
                let secs = self
                    .rows
                    .get(&key)
                    .and_then(|r| r.iter().find_map(|m| m.run_seconds))
                    .unwrap_or(MIN_BASE_RUN);
                self.base_run.insert(ct.key.clone(), secs);
                continue;
            }
            if plan.bench_args.decide.is_some() {
                continue;
            }
            let t = Instant::now();
            let mut new = Vec::new();
            let req = RunRequest {
                bin: base_bin,
                ct,
                labels: &["base".to_string()],
                limit: None,
                build_seconds: Some(base_build),
                pass: Pass::First,
                control: false,
                keep: false,
            };
            let ran = plan.run(&req, self.kept.remove(&ct.key), out, &mut |_, rows, _| {
                store.put_with_energy(&rows, &plan.energy.take(&rows))?;
                new = rows;
                Ok(())
            })?;
            counters.ran(ran);
            counters.stored += new.len();
            if new.iter().all(|r| r.status != Status::Ok) {
                out.line(&format!(
                    "  {}.base [{}]  base failed: {}",
                    f.name,
                    ct.key,
                    new.first()
                        .and_then(|r| r.message.clone())
                        .unwrap_or_default()
                ));
            }
            self.done.insert(key.clone());
            self.rows.insert(key, new);
            self.base_run
                .insert(ct.key.clone(), t.elapsed().as_secs_f64());
        }
        Ok(())
    }

    /// Ends the processes kept waiting for a pass, if any (nothing more is coming to them).
    pub(crate) fn end_kept(&mut self, counters: &mut Counters) -> Result<()> {
        // Every one is ended; the first failure is the one reported.
        let mut result = Ok(());
        for session in std::mem::take(&mut self.kept).into_values() {
            let mut ran = Ran::default();
            let ended = ran.ended(session, Some(END_LIMIT));
            counters.ran(ran);
            if result.is_ok() {
                result = ended;
            }
        }
        result
    }

    /// How long one state of a variant may run on compile-time workload `ct`: `run_limit`
    /// times base's run time (at least [`MIN_BASE_RUN`]).
    pub(crate) fn run_limit(&self, ct: &str, run_limit: f64) -> Duration {
        let base_secs = self.base_run.get(ct).copied().unwrap_or(MIN_BASE_RUN);
        Duration::from_secs_f64(run_limit * base_secs.max(MIN_BASE_RUN))
    }

    /// Runs the variants of `unit` that are not stored yet, on every compile-time workload;
    /// prints each one's score as it finishes and returns them (the strategy's view; a
    /// failure scores `None`). `run_limit` is in multiples of base's run time.
    pub(crate) fn measure_unit(
        &mut self,
        ctx: &RunContext<'_>,
        unit: &BuiltUnit,
        run_limit: f64,
        counters: &mut Counters,
        out: &mut Output,
    ) -> Result<Vec<(String, Option<f64>)>> {
        let RunContext { plan, cts, store } = *ctx;
        let (bin, group, build_seconds) = (unit.bin.as_path(), &unit.labels[..], unit.seconds);
        let mut scored = Vec::new();
        let f = plan.function;
        for label in group {
            self.bins.insert(label.clone(), bin.to_path_buf());
        }
        for ct in cts {
            let labels: Vec<String> = group
                .iter()
                .filter(|l| !self.done.contains(&(ct.key.clone(), (*l).clone())))
                .cloned()
                .collect();
            for _ in labels.len()..group.len() {
                out.skip();
            }
            if labels.is_empty() {
                continue;
            }
            let limit = self.run_limit(&ct.key, run_limit);
            out.progress_message(&format!(
                "running {} [{}]",
                present::count(labels.len(), "variant"),
                ct.key
            ));
            let base = self
                .rows
                .get(&(ct.key.clone(), "base".to_string()))
                .cloned()
                .unwrap_or_default();
            let done = &mut self.done;
            let req = RunRequest {
                bin,
                ct,
                labels: &labels,
                limit: Some(limit),
                build_seconds: Some(build_seconds / group.len() as f64),
                pass: Pass::First,
                control: true,
                keep: plan.bench_args.decide.is_some(),
            };
            let kept = self.kept.remove(&ct.key);
            let mut ran = plan.run(&req, kept, out, &mut |label, new, out| {
                if label == "base" {
                    // The control is kept in the variants' rows; only a failure is news.
                    if let Some(bad) = new.iter().find(|r| r.status != Status::Ok) {
                        out.line(&format!(
                            "  {}.base (control) [{}]  {:<8} {}",
                            f.name,
                            ct.key,
                            bad.status,
                            bad.message.clone().unwrap_or_default()
                        ));
                    }
                    return Ok(());
                }
                store.put_with_energy(&new, &plan.energy.take(&new))?;
                counters.stored += new.len();
                done.insert((ct.key.clone(), label.to_string()));
                let (score, line) = present::live_line(&base, &new);
                scored.push((label.to_string(), score));
                out.line(&format!("  {}.{label} [{}]  {line}", f.name, ct.key));
                out.advance();
                Ok(())
            })?;
            if let Some(session) = ran.kept.take() {
                self.kept.insert(ct.key.clone(), session);
            }
            counters.ran(ran);
        }
        Ok(scored)
    }
}

/// Records a variant that never ran, for every compile-time workload.
pub(crate) fn record_failure(
    ctx: &RunContext<'_>,
    failure: &BuildFailure,
    counters: &mut Counters,
    out: &mut Output,
) -> Result<()> {
    let RunContext { plan, cts, store } = *ctx;
    let BuildFailure {
        label,
        status,
        message,
        seconds,
    } = failure;
    let (status, seconds) = (*status, *seconds);
    for ct in cts {
        let mut row = plan.row(&ct.key, label, "*", 0.0, status)?;
        row.message = Some(message.to_string());
        row.build_seconds = Some(seconds);
        store.put(std::slice::from_ref(&row))?;
        counters.stored += 1;
        let first = message.lines().last().unwrap_or_default();
        out.line(&format!(
            "  {}.{label} [{}]  {status:<8} {first}",
            plan.function.name, ct.key
        ));
    }
    Ok(())
}

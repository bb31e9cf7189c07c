//! One GPU's lane of a search on several GPUs: a thread that runs what the search hands it in
//! one waiting bench process on its GPU (`--device D --more-on-stdin`), and reports every
//! finished variant's rows back as they come.
//!
//! Every screening pass measures base first, as the control of the variants after it and the
//! first reference of `--decide`'s early look (which starts afresh with each pass: without base
//! first, the first variants of a pass would all take their full screening samples, 147 more
//! of the 64-point SGEMM's on two H200s). The finals measure base in full in the process that
//! measures the finalists after it, so each speedup stays against base on the same physical
//! GPU; base in full measured earlier in the same process, within [`CONTROL_AGE`], serves.
//! Finals the lanes share ([`super::shared`]) run with this GPU's share of the criterion, base
//! beside them to the same share.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use anyhow::Result;
use gputune_protocol::Status;

use super::shared;
use crate::host::output::Output;
use crate::measure::counters::Ran;
use crate::measure::protocol::Session;
use crate::measure::runs::{CtWorkload, Pass, Plan, RunRequest, END_LIMIT};
use crate::results::store::energy::{Energy, RowKey};
use crate::results::store::Measurement;

/// How long base in full serves the finals of its process as their control: about as long as
/// the control of one GPU's one screening pass of the large space (16,020 variants, 33 s on an
/// H200) serves it. An older one is measured again.
pub(crate) const CONTROL_AGE: Duration = Duration::from_secs(30);

/// What a lane is asked to run.
#[derive(Debug)]
pub(crate) enum Job {
    /// Screen (or, in a search that does not decide, measure) `labels` of `bin` on workload
    /// `ct`, each charged `build_seconds`.
    Screen {
        /// The binary.
        bin: PathBuf,
        /// The compile-time workload, an index into the search's.
        ct: usize,
        /// The variants.
        labels: Vec<String>,
        /// The build time charged to each.
        build_seconds: f64,
        /// The run limit of one state.
        limit: Duration,
    },
    /// Measure base in full on workload `ct` in a process of `bin` (the waiting one, if it
    /// runs them), as the control of the finals to come in the same process: at the start of
    /// a search, or once the lane has no screening left while others do.
    Control {
        /// The binary.
        bin: PathBuf,
        /// The compile-time workload, an index into the search's.
        ct: usize,
        /// The run limit of one state.
        limit: Duration,
        /// How many GPUs share the finals it serves (1: measured in full; more: this GPU's
        /// share of the criterion, [`super::shared`]).
        share: u32,
    },
    /// Measure finalists `labels` of `bin` on workload `ct` in full, after base in full
    /// (reused if this process measured it already).
    Final {
        /// The binary.
        bin: PathBuf,
        /// The compile-time workload, an index into the search's.
        ct: usize,
        /// The finalists, best first.
        labels: Vec<String>,
        /// The run limit of one state.
        limit: Duration,
        /// How many GPUs share these finals (1: measured in full here).
        share: u32,
    },
}

/// What a lane reports.
#[derive(Debug)]
pub(crate) enum Report {
    /// A variant's rows, finished (its control attached).
    Rows {
        /// The lane.
        lane: usize,
        /// The pass that measured it.
        pass: Pass,
        /// The compile-time workload, an index into the search's.
        ct: usize,
        /// The variant.
        label: String,
        /// Its rows.
        rows: Vec<Measurement>,
        /// Their energy (`--energy`), to be stored with them.
        energy: Vec<(RowKey, Energy)>,
    },
    /// Base's rows as a process measured them: the control of the variants after it in a
    /// screening pass (only its failure is news), or base in full before finalists.
    Base {
        /// The lane.
        lane: usize,
        /// The pass that measured it.
        pass: Pass,
        /// The compile-time workload, an index into the search's.
        ct: usize,
        /// Its rows.
        rows: Vec<Measurement>,
        /// Their energy (`--energy`), to be stored with them.
        energy: Vec<(RowKey, Energy)>,
    },
    /// A job is done; what its processes ran.
    Done {
        /// The lane.
        lane: usize,
        /// Its processes and their timelines.
        ran: Ran,
    },
    /// The lane cannot go on (its GPU cannot be opened, or its processes fail to start): it
    /// takes no more work.
    Failed {
        /// The lane.
        lane: usize,
        /// Why.
        error: String,
        /// What its processes ran before.
        ran: Ran,
    },
}

/// Base's samples per runtime workload, as one process measured them.
#[derive(Debug, Clone)]
struct Control {
    bin: PathBuf,
    ct: usize,
    /// The GPUs whose finals it serves: measured to its share of the criterion.
    share: u32,
    samples: BTreeMap<String, Vec<f64>>,
    at: Instant,
}

impl Control {
    fn serves(&self, (bin, ct, share): (&std::path::Path, usize, u32), age: Duration) -> bool {
        self.bin == bin && self.ct == ct && self.share == share && self.at.elapsed() < age
    }

    fn of(bin: &std::path::Path, (ct, share): (usize, u32), rows: &[Measurement]) -> Control {
        Control {
            bin: bin.to_path_buf(),
            ct,
            share,
            samples: rows
                .iter()
                .filter(|r| r.status == Status::Ok && r.samples.len() >= 2)
                .map(|r| (r.rt_workload.clone(), r.samples.clone()))
                .collect(),
            at: Instant::now(),
        }
    }

    fn attach(&self, rows: &mut [Measurement]) {
        for r in rows {
            r.control = self
                .samples
                .get(&r.rt_workload)
                .cloned()
                .unwrap_or_default();
        }
    }
}

/// One GPU's lane: its plan (its device, its work folder), the search's compile-time
/// workloads, and its waiting process.
pub(crate) struct Lane<'p> {
    /// Its index among the search's lanes.
    pub(crate) index: usize,
    /// How it runs the bench, on its GPU.
    pub(crate) plan: Plan<'p>,
    /// The search's compile-time workloads.
    pub(crate) cts: &'p [CtWorkload],
    /// Where its lines go (verbose ones: the commands it runs).
    pub(crate) out: Output,
    /// Where its reports go.
    pub(crate) reports: Sender<Report>,
    kept: Option<(Session, PathBuf, usize)>,
    final_control: Option<Control>,
}

impl<'p> Lane<'p> {
    /// A lane with no process yet.
    pub(crate) fn new(
        index: usize,
        plan: Plan<'p>,
        cts: &'p [CtWorkload],
        out: Output,
        reports: Sender<Report>,
    ) -> Lane<'p> {
        Lane {
            index,
            plan,
            cts,
            out,
            reports,
            kept: None,
            final_control: None,
        }
    }

    /// Runs `jobs` until the search closes the channel or the lane fails, then ends its
    /// waiting process.
    pub(crate) fn serve(mut self, jobs: Receiver<Job>) {
        for job in jobs {
            let mut ran = Ran::default();
            let result = self.job(job, &mut ran);
            let lane = self.index;
            let report = match result {
                Ok(()) => Report::Done { lane, ran },
                Err(e) => {
                    // Its process, if one still waits, is of no more use.
                    if let Some((session, ..)) = self.kept.take() {
                        let _ = ran.ended(session, Some(END_LIMIT));
                    }
                    let error = format!("{e:#}");
                    let _ = self.reports.send(Report::Failed { lane, error, ran });
                    return;
                }
            };
            if self.reports.send(report).is_err() {
                break;
            }
        }
        if let Some((session, ..)) = self.kept.take() {
            let mut ran = Ran::default();
            let ended = ran.ended(session, Some(END_LIMIT));
            let lane = self.index;
            let report = match ended {
                Ok(()) => Report::Done { lane, ran },
                Err(e) => Report::Failed {
                    lane,
                    error: format!("ending its bench process: {e:#}"),
                    ran,
                },
            };
            let _ = self.reports.send(report);
        }
    }

    /// Runs one job; `ran` gets what its processes ran.
    fn job(&mut self, job: Job, ran: &mut Ran) -> Result<()> {
        match job {
            Job::Screen {
                bin,
                ct,
                labels,
                build_seconds,
                limit,
            } => self.pass(
                (&bin, ct, &labels),
                (Pass::First, true, Some(build_seconds)),
                (limit, 1),
                ran,
            ),
            Job::Control {
                bin,
                ct,
                limit,
                share,
            } => self.pass(
                (&bin, ct, &["base".to_string()]),
                (Pass::Final, false, None),
                (limit, share),
                ran,
            ),
            Job::Final {
                bin,
                ct,
                labels,
                limit,
                share,
            } => {
                // Base alone (only base's decision is pending) is its own control.
                let base_alone = labels.len() == 1 && labels[0] == "base";
                let reuse = self.waits_for(&bin, ct)
                    && self
                        .final_control
                        .as_ref()
                        .is_some_and(|c| c.serves((&bin, ct, share), CONTROL_AGE));
                // Energy needs base's energy in the same pass, as its control.
                let reuse = reuse && !self.plan.bench_args.energy;
                let control = !reuse && !base_alone;
                self.pass(
                    (&bin, ct, &labels),
                    (Pass::Final, control, None),
                    (limit, share),
                    ran,
                )
            }
        }
    }

    /// Whether its waiting process runs `bin` on workload `ct`.
    fn waits_for(&self, bin: &std::path::Path, ct: usize) -> bool {
        self.kept
            .as_ref()
            .is_some_and(|(_, b, c)| b == bin && *c == ct)
    }

    /// One pass of `labels` of `bin` on workload `ct`, with base first as the control where
    /// `control` is on, else (finals) against base in full as this process measured it before;
    /// measured to this GPU's part of the criterion when `share` GPUs share the finals.
    fn pass(
        &mut self,
        (bin, ct, labels): (&std::path::Path, usize, &[String]),
        (pass, control, build_seconds): (Pass, bool, Option<f64>),
        (limit, share): (Duration, u32),
        ran: &mut Ran,
    ) -> Result<()> {
        let full = (share > 1).then(|| {
            let part = shared::part_args(&self.plan.bench_args, share);
            std::mem::replace(&mut self.plan.bench_args, part)
        });
        let result = self.pass_as_planned(
            (bin, ct, labels),
            (pass, control, build_seconds),
            (limit, share),
            ran,
        );
        if let Some(full) = full {
            self.plan.bench_args = full;
        }
        result
    }

    /// [`Lane::pass`] with the plan's flags as they are.
    fn pass_as_planned(
        &mut self,
        (bin, ct, labels): (&std::path::Path, usize, &[String]),
        (pass, control, build_seconds): (Pass, bool, Option<f64>),
        (limit, share): (Duration, u32),
        ran: &mut Ran,
    ) -> Result<()> {
        let session = match self.kept.take() {
            Some((s, b, c)) if b == bin && c == ct => Some(s),
            Some((s, ..)) => {
                // Another binary or workload: it ends before this pass's process starts.
                ran.ended(s, Some(END_LIMIT))?;
                self.final_control = None;
                None
            }
            None => None,
        };
        let req = RunRequest {
            bin,
            ct: &self.cts[ct],
            labels,
            limit: Some(limit),
            build_seconds,
            pass,
            control,
            keep: true,
        };
        let (lane, reports, energy) = (self.index, &self.reports, &self.plan.energy);
        // The control this pass reuses (finals), and the one it measures.
        let earlier = match pass {
            Pass::First => None,
            Pass::Final => self.final_control.take(),
        };
        let mut measured: Option<Control> = None;
        // Only base in full, on its own: the control of finals to come.
        let base_alone = labels.len() == 1 && labels[0] == "base";
        let mut this = self
            .plan
            .run(&req, session, &mut self.out, &mut |label, mut rows, _| {
                if label == "base" && (control || base_alone) {
                    // A base that failed is no control: the finals measure it again.
                    let usable = Control::of(bin, (ct, share), &rows);
                    measured = (!usable.samples.is_empty()).then_some(usable);
                    let energy = energy.take(&rows);
                    let base = Report::Base {
                        lane,
                        pass,
                        ct,
                        rows,
                        energy,
                    };
                    return reports
                        .send(base)
                        .map_err(|_| anyhow::anyhow!("the search ended"));
                }
                if !control {
                    if let Some(c) = &earlier {
                        c.attach(&mut rows);
                    }
                }
                let label = label.to_string();
                let energy = energy.take(&rows);
                let report = Report::Rows {
                    lane,
                    pass,
                    ct,
                    label,
                    rows,
                    energy,
                };
                reports
                    .send(report)
                    .map_err(|_| anyhow::anyhow!("the search ended"))
            })?;
        // A process started in this pass (a variant took the last one down) measured its own
        // control, or none: an earlier one no longer serves.
        let kept_control = match measured {
            Some(c) => Some(c),
            None if this.processes == 0 => earlier,
            None => None,
        };
        if pass == Pass::Final {
            self.final_control = kept_control;
        }
        if let Some(session) = this.kept.take() {
            self.kept = Some((session, bin.to_path_buf(), ct));
        }
        ran.processes += this.processes;
        ran.timelines.append(&mut this.timelines);
        Ok(())
    }
}

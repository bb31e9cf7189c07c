//! One search over several GPUs of a host (`run-bundle --devices`, `search --devices`): one lane
//! per GPU ([`lane`]), each a thread with one waiting bench process on its GPU, and this module
//! the search that drives them. Screening goes out in chunks to whichever lane is free
//! ([`queue`]), so a slower GPU takes less of it; a strategy's batches are spread the same way,
//! each batch at least one variant per GPU. The finalists are chosen from every lane's
//! screening together (each variant scored against base measured in its own process, on its
//! own GPU), and measured beside base in full on the GPU that measures them: the last lane
//! measures that base first, while the others screen, and a lane left without screening while
//! others still screen measures it then. The finalists stay on one lane behind their leader, as
//! on one GPU (each races the leader and stops early), unless more lanes make the finals
//! shorter; each lane then measures the leader first. Finals too few to spread (one finalist,
//! or a leader and one it races) are shared by every lane instead ([`shared`]): each measures
//! base and them to its share of the criterion, and the parts are pooled into one row. The
//! controls measured ahead are of that share. A lane whose GPU fails ends, and what it had
//! not finished goes to the others.
//!
//! Every row is stored here, by the search, as its lane reports it: one store, one writer.

mod decide;
mod lane;
pub(crate) mod queue;
mod shared;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use gputune_protocol::Status;

use self::lane::{Job, Lane, Report};
use self::queue::{Item, Queue};
use crate::host::output::Output;
use crate::measure::runs::{record_failure, Counters, Measured, Pass, Plan, RunContext};
use crate::measure::search::pipeline::{BuildFailure, BuildStage, Proposer};
use crate::results::present;
use crate::results::store::energy::{Energy, RowKey};
use crate::results::store::Measurement;

/// A variant's rows as a lane reports them, with their energy (`--energy`).
type Rows = (Vec<Measurement>, Vec<(RowKey, Energy)>);

/// What a search spreads over its lanes.
pub(crate) enum Work<'w> {
    /// These screening items, all known up front, and the build failures to record.
    Items(Vec<Item>, &'w [BuildFailure]),
    /// A strategy's batches, found in binaries by `from`.
    Strategy {
        /// The strategy, within its bounds (a batch at least one variant per lane).
        proposer: &'w mut Proposer,
        /// Finds a batch's binaries.
        from: &'w dyn BuildStage,
    },
}

/// What each GPU did in a search on several.
#[derive(Debug, Default, Clone)]
pub struct LaneSummary {
    /// Its CUDA ordinal.
    pub device: u32,
    /// Variants it screened (or measured, without deciding).
    pub screened: usize,
    /// Finalists it measured.
    pub finals: usize,
    /// Why it stopped taking work, if it did.
    pub failed: Option<String>,
}

/// The state of one lane, as the search sees it.
struct LaneState {
    summary: LaneSummary,
    /// Its jobs' channel; `None` once it failed.
    jobs: Option<Sender<Job>>,
    /// Its jobs not done yet, in order.
    running: VecDeque<Running>,
    /// The binary and workload its waiting process serves, as far as the search knows.
    serving: Option<(PathBuf, usize)>,
    /// The binary, workload and share ([`shared`]) of the control of finals it measured (or
    /// was asked to).
    control: Option<(PathBuf, usize, u32)>,
}

/// A job a lane has not finished, and the variants it reported.
struct Running {
    job: Kind,
    reported: BTreeSet<String>,
}

/// What a job was, for what is handed out again when its lane fails.
#[derive(Debug, Clone)]
enum Kind {
    Screen(Item),
    Control,
    Final {
        bin: PathBuf,
        ct: usize,
        labels: Vec<String>,
        /// How many GPUs share these finals ([`shared`]); 1 when this lane measures them in
        /// full.
        share: u32,
    },
}

/// A finalist whose finals the GPUs share: the parts reported, and the lanes still to report.
#[derive(Default)]
struct Parts {
    /// Per lane that reported, its GPU and rows.
    parts: BTreeMap<usize, (u32, Rows)>,
    /// The lanes measuring a part not reported yet.
    pending: BTreeSet<usize>,
}

/// The search over the lanes of one bench.
struct Spread<'a, 'c> {
    ctx: &'a RunContext<'c>,
    lanes: Vec<LaneState>,
    reports: Receiver<Report>,
    measured: &'a mut Measured,
    counters: &'a mut Counters,
    run_limit: f64,
    /// Screening not handed out yet.
    queue: Queue,
    /// Whether the screening in the queue is the search's last (lanes left without any then
    /// measure base in full for the finals).
    last: bool,
    /// What the current screening scored, for a strategy.
    scored: Vec<(String, Option<f64>)>,
    /// Per compile-time workload, base as each finals process measured it, with its lane and
    /// share, in the order they came.
    base_parts: BTreeMap<usize, Vec<(usize, u32, Rows)>>,
    /// Per compile-time workload whose finals the GPUs shared, how many shared them.
    shared_cts: BTreeMap<usize, u32>,
    /// The finalists (workload, label) whose finals the GPUs share, part by part.
    shared: BTreeMap<(usize, String), Parts>,
    /// Each variant's build time, for the finals' rows.
    build_seconds: BTreeMap<String, Option<f64>>,
    /// Variants (workload, label) whose process died on one lane: measured again on another,
    /// they are recorded as they fare there. A GPU that fails takes its process down with the
    /// variant in progress, which is no more to blame than the next.
    suspects: BTreeSet<(usize, String)>,
}

/// Runs `work` on one lane per plan (`devices[i]` is plan i's CUDA ordinal), screening then
/// deciding, into `ctx.store`; `ctx.plan` is the search's own (rows are stored for its
/// device). Returns what each lane did; an error when every lane failed.
pub(crate) fn run(
    ctx: &RunContext<'_>,
    plans: Vec<Plan<'_>>,
    devices: &[u32],
    work: Work<'_>,
    (measured, run_limit): (&mut Measured, f64),
    counters: &mut Counters,
    out: &mut Output,
) -> Result<Vec<LaneSummary>> {
    let (report_tx, reports) = mpsc::channel();
    std::thread::scope(|scope| -> Result<Vec<LaneSummary>> {
        let mut lanes = Vec::new();
        for (index, (plan, &device)) in plans.into_iter().zip(devices).enumerate() {
            let (tx, rx) = mpsc::channel();
            let lane = Lane::new(index, plan, ctx.cts, out.detached(), report_tx.clone());
            std::thread::Builder::new()
                .name(format!("gputune-lane-{device}"))
                .spawn_scoped(scope, move || lane.serve(rx))
                .context("cannot start a GPU's lane")?;
            lanes.push(LaneState {
                summary: LaneSummary {
                    device,
                    ..LaneSummary::default()
                },
                jobs: Some(tx),
                running: VecDeque::new(),
                serving: None,
                control: None,
            });
        }
        drop(report_tx);
        let mut spread = Spread {
            ctx,
            lanes,
            reports,
            measured,
            counters,
            run_limit,
            queue: Queue::default(),
            last: false,
            scored: Vec::new(),
            base_parts: BTreeMap::new(),
            shared_cts: BTreeMap::new(),
            shared: BTreeMap::new(),
            build_seconds: BTreeMap::new(),
            suspects: BTreeSet::new(),
        };
        let result = spread.work(work, out);
        // Every lane ends its process; what they report meanwhile is still counted.
        for lane in &mut spread.lanes {
            lane.jobs = None;
        }
        while let Ok(report) = spread.reports.recv() {
            if let Report::Done { ran, .. } | Report::Failed { ran, .. } = report {
                spread.counters.ran(ran);
            }
        }
        result?;
        Ok(spread.lanes.into_iter().map(|l| l.summary).collect())
    })
}

impl Spread<'_, '_> {
    fn work(&mut self, work: Work<'_>, out: &mut Output) -> Result<()> {
        match work {
            Work::Items(items, failures) => {
                self.queue = Queue::new(items);
                self.last = true;
                self.control_first(out);
                self.screen(out)?;
                for f in failures {
                    if !self.measured.complete(self.ctx.cts, &f.label) {
                        record_failure(self.ctx, f, self.counters, out)?;
                    }
                }
            }
            Work::Strategy { proposer, from } => {
                while let Some(batch) = proposer.next(out) {
                    let built = from.build(batch)?;
                    for f in &built.failures {
                        record_failure(self.ctx, f, self.counters, out)?;
                        proposer.scored.insert(f.label.clone(), None);
                    }
                    let items = built.units.iter().flat_map(|u| {
                        let per = u.seconds / u.labels.len().max(1) as f64;
                        (0..self.ctx.cts.len()).map(move |ct| Item {
                            bin: u.bin.clone(),
                            ct,
                            labels: u.labels.clone(),
                            build_seconds: per,
                            avoid: None,
                        })
                    });
                    let items: Vec<Item> = items.map(|i| self.not_done(i)).collect();
                    self.queue = Queue::new(items);
                    self.last = proposer.to_go() == 0;
                    self.control_first(out);
                    self.screen(out)?;
                    for (label, score) in std::mem::take(&mut self.scored) {
                        proposer.scored.insert(label, score);
                    }
                }
            }
        }
        out.finish_progress();
        self.finals(out)
    }

    /// `item` without the variants stored already.
    fn not_done(&self, mut item: Item) -> Item {
        let key = &self.ctx.cts[item.ct].key;
        item.labels
            .retain(|l| !self.measured.done.contains(&(key.clone(), l.clone())));
        item
    }

    fn alive(&self) -> usize {
        self.lanes.iter().filter(|l| l.jobs.is_some()).count()
    }

    /// Hands the queue out until it is empty and no lane screens.
    fn screen(&mut self, out: &mut Output) -> Result<()> {
        loop {
            self.hand_out(out)?;
            let screening = self
                .lanes
                .iter()
                .any(|l| l.running.iter().any(|r| matches!(r.job, Kind::Screen(_))));
            if !screening && self.queue.is_empty() {
                return Ok(());
            }
            self.next_report(out)?;
        }
    }

    /// Gives each idle lane a chunk of the queue, or, once nothing is left for it while others
    /// still screen the search's last work, base in full for the finals.
    fn hand_out(&mut self, out: &mut Output) -> Result<()> {
        let alive = self.alive();
        if alive == 0 {
            bail!("{}", self.every_lane_failed());
        }
        for i in 0..self.lanes.len() {
            let lane = &self.lanes[i];
            if lane.jobs.is_none() || !lane.running.is_empty() {
                continue;
            }
            let busy: Vec<(PathBuf, usize)> = self
                .lanes
                .iter()
                .flat_map(|l| &l.running)
                .filter_map(|r| match &r.job {
                    Kind::Screen(item) => Some((item.bin.clone(), item.ct)),
                    _ => None,
                })
                .collect();
            let serving = lane.serving.as_ref().map(|(b, c)| (b.as_path(), *c));
            if let Some(item) = self.queue.take((i, alive), serving, &busy) {
                let limit = self.limit(item.ct);
                let job = Job::Screen {
                    bin: item.bin.clone(),
                    ct: item.ct,
                    labels: item.labels.clone(),
                    build_seconds: item.build_seconds,
                    limit,
                };
                self.send(i, job, Kind::Screen(item), out);
                continue;
            }
            let others_screen = !busy.is_empty();
            let decides = self.ctx.plan.bench_args.decide.is_some();
            if self.last && decides && others_screen && lane.control.is_none() {
                if let Some((bin, ct)) = lane.serving.clone() {
                    let share = self.share();
                    self.control(i, (bin, ct, share), out);
                }
            }
        }
        Ok(())
    }

    /// Has `lane` measure base on workload `ct` in a process of `bin`, in full or to its
    /// share of finals that `share` GPUs share.
    fn control(&mut self, lane: usize, (bin, ct, share): (PathBuf, usize, u32), out: &mut Output) {
        let limit = self.limit(ct);
        self.lanes[lane].control = Some((bin.clone(), ct, share));
        let job = Job::Control {
            bin,
            ct,
            limit,
            share,
        };
        self.send(lane, job, Kind::Control, out);
    }

    /// How many GPUs would share finals measured now ([`shared`]): every live one, where the
    /// criterion can be split; else 1.
    fn share(&self) -> u32 {
        if shared::shareable(&self.ctx.plan.bench_args) {
            u32::try_from(self.alive()).unwrap_or(1).max(1)
        } else {
            1
        }
    }

    /// At the start of a deciding search's screening, the last lane measures base in full
    /// first, where the first of the queue's work runs: the control of the finals to come
    /// (and of its screening after it), measured while the other lanes screen, so that a
    /// search whose finals are one finalist (short kernels, often) waits for that finalist
    /// alone at the end.
    fn control_first(&mut self, out: &mut Output) {
        let decides = self.ctx.plan.bench_args.decide.is_some();
        if !decides || self.alive() < 2 || self.lanes.iter().any(|l| l.control.is_some()) {
            return;
        }
        let Some((bin, ct)) = self.queue.first() else {
            return;
        };
        if let Some(lane) = (0..self.lanes.len())
            .rev()
            .find(|&i| self.lanes[i].jobs.is_some())
        {
            let share = self.share();
            self.control(lane, (bin, ct, share), out);
        }
    }

    /// The run limit of one state on workload `ct`.
    fn limit(&self, ct: usize) -> Duration {
        self.measured
            .run_limit(&self.ctx.cts[ct].key, self.run_limit)
    }

    /// Sends `job` to `lane`; a lane whose thread is gone fails, and the job goes to others.
    fn send(&mut self, lane: usize, job: Job, kind: Kind, out: &mut Output) {
        let state = &mut self.lanes[lane];
        let sent = state.jobs.as_ref().is_some_and(|j| j.send(job).is_ok());
        state.running.push_back(Running {
            job: kind,
            reported: BTreeSet::new(),
        });
        if !sent {
            self.fail(lane, "its thread ended".into(), out);
        }
    }

    /// The line of the error when no lane is left.
    fn every_lane_failed(&self) -> String {
        let why: Vec<String> = self
            .lanes
            .iter()
            .map(|l| {
                format!(
                    "device {}: {}",
                    l.summary.device,
                    l.summary.failed.as_deref().unwrap_or("no reason given")
                )
            })
            .collect();
        format!(
            "every GPU failed; what they measured is stored ({})",
            why.join("; ")
        )
    }

    /// Waits for the next report and acts on it.
    fn next_report(&mut self, out: &mut Output) -> Result<()> {
        let report = self
            .reports
            .recv()
            .context("every lane of the search ended")?;
        match report {
            Report::Rows {
                lane,
                pass,
                ct,
                label,
                rows,
                energy,
            } => self.rows(lane, pass, (ct, label), (rows, energy), out)?,
            Report::Base {
                lane,
                pass,
                ct,
                rows,
                energy,
            } => self.base(lane, pass, ct, (rows, energy), out)?,
            Report::Done { lane, ran } => {
                self.counters.ran(ran);
                let state = &mut self.lanes[lane];
                if let Some(done) = state.running.pop_front() {
                    match done.job {
                        Kind::Screen(item) => state.serving = Some((item.bin, item.ct)),
                        Kind::Final { bin, ct, .. } => state.serving = Some((bin, ct)),
                        Kind::Control => {}
                    }
                }
            }
            Report::Failed { lane, error, ran } => {
                self.counters.ran(ran);
                self.fail(lane, error, out);
            }
        }
        Ok(())
    }

    /// Whether `rows`, from `lane`, are of the search's device; a lane on another kind of GPU
    /// fails (its rows would be another device's in the store, scored against its own base).
    fn of_the_search(
        &mut self,
        lane: usize,
        rows: &[Measurement],
        out: &mut Output,
    ) -> Result<bool> {
        let (device, _) = self.ctx.plan.device.get()?;
        match rows.iter().find(|r| r.device != device) {
            None => Ok(true),
            Some(r) => {
                let why = format!(
                    "it is a {}, the search's GPUs are {device}: a search spans GPUs of one kind",
                    r.device
                );
                self.fail(lane, why, out);
                Ok(false)
            }
        }
    }

    /// A variant's rows from `lane`.
    fn rows(
        &mut self,
        lane: usize,
        pass: Pass,
        (ct, label): (usize, String),
        measured: Rows,
        out: &mut Output,
    ) -> Result<()> {
        let rows = &measured.0;
        if self.lanes[lane].jobs.is_none() || !self.of_the_search(lane, rows, out)? {
            return Ok(());
        }
        let Some(running) = self.lanes[lane].running.front_mut() else {
            return Ok(());
        };
        running.reported.insert(label.clone());
        let job = running.job.clone();
        // A process that died: the GPU may be what failed. Another lane measures the variant
        // again, and what it finds there is stored.
        let died = rows.len() == 1
            && rows[0].rt_workload == "*"
            && matches!(rows[0].status, Status::Crashed | Status::Timeout);
        let key = (ct, label.clone());
        if died && self.alive() > 1 && !self.suspects.contains(&key) {
            self.suspects.insert(key);
            out.line(&format!(
                "  {}.{label} [{}]  its process on GPU {} ended ({}); measured again on \
                 another GPU",
                self.ctx.plan.function.name,
                self.ctx.cts[ct].key,
                self.lanes[lane].summary.device,
                rows[0].message.as_deref().unwrap_or_default()
            ));
            match job {
                Kind::Screen(item) => self.queue.give_back(Item {
                    labels: vec![label],
                    avoid: Some(lane),
                    ..item
                }),
                Kind::Final { share: 1, bin, .. } => {
                    self.spread_finals(bin, ct, vec![label], Some(lane), out);
                }
                Kind::Final { bin, .. } => self.part_lost(lane, (bin, ct, label), out)?,
                Kind::Control => {}
            }
            return Ok(());
        }
        match pass {
            Pass::First => self.screened(lane, (ct, label), measured, out),
            Pass::Final => self.finalist(lane, (ct, label), measured, out),
        }
    }

    /// Stores a screened (or, without deciding, measured) variant's rows and says its score.
    fn screened(
        &mut self,
        lane: usize,
        (ct, label): (usize, String),
        (rows, energy): Rows,
        out: &mut Output,
    ) -> Result<()> {
        let ct_key = &self.ctx.cts[ct].key;
        let f = &self.ctx.plan.function.name;
        self.ctx.store.put_with_energy(&rows, &energy)?;
        self.counters.stored += rows.len();
        self.lanes[lane].summary.screened += 1;
        self.measured.done.insert((ct_key.clone(), label.clone()));
        if let Some(Kind::Screen(item)) = self.lanes[lane].running.front().map(|r| &r.job) {
            self.measured.bins.insert(label.clone(), item.bin.clone());
        }
        let (score, line) = present::live_line(&[], &rows);
        self.scored.push((label.clone(), score));
        let device = self.lanes[lane].summary.device;
        out.line(&format!("  {f}.{label} [{ct_key}]  {line}  (GPU {device})"));
        out.advance();
        Ok(())
    }

    /// Stores a finalist's rows (with the build time its screening stored) and says its score.
    fn finalist(
        &mut self,
        lane: usize,
        (ct, label): (usize, String),
        (mut rows, energy): Rows,
        out: &mut Output,
    ) -> Result<()> {
        self.lanes[lane].summary.finals += 1;
        let device = self.lanes[lane].summary.device;
        let shared = matches!(
            self.lanes[lane].running.front().map(|r| &r.job),
            Some(Kind::Final { share, .. }) if *share > 1
        );
        if shared {
            let key = (ct, label);
            let entry = self.shared.entry(key.clone()).or_default();
            entry.pending.remove(&lane);
            entry.parts.insert(lane, (device, (rows, energy)));
            return self.pool_if_done(key, out);
        }
        self.store_final(
            (ct, &label),
            (&mut rows, &energy),
            &format!("GPU {device}"),
            out,
        )
    }

    /// Stores a finalist's rows with the build time its screening stored, and says its score
    /// and where (`GPU 0`, `GPUs 0, 1`) it was measured.
    fn store_final(
        &mut self,
        (ct, label): (usize, &str),
        (rows, energy): (&mut [Measurement], &[(RowKey, Energy)]),
        on: &str,
        out: &mut Output,
    ) -> Result<()> {
        let build = self.build_seconds.get(label).copied().flatten();
        for r in rows.iter_mut() {
            r.build_seconds = build;
        }
        self.ctx.store.put_with_energy(rows, energy)?;
        self.counters.stored += rows.len();
        let (_, line) = present::live_line(&[], rows);
        out.line(&format!(
            "  {}.{label} [{}]  final: {line}  ({on})",
            self.ctx.plan.function.name, self.ctx.cts[ct].key
        ));
        Ok(())
    }

    /// Stores a shared finalist's pooled rows once no lane still measures a part of it.
    fn pool_if_done(&mut self, key: (usize, String), out: &mut Output) -> Result<()> {
        if self
            .shared
            .get(&key)
            .map_or(true, |p| !p.pending.is_empty())
        {
            return Ok(());
        }
        let Some(done) = self.shared.remove(&key) else {
            return Ok(());
        };
        let (ct, label) = key;
        let parts: Vec<(u32, Vec<Measurement>)> = done
            .parts
            .into_values()
            .map(|(device, (rows, _))| (device, rows))
            .collect();
        let mut rows = shared::pool(&parts);
        if rows.is_empty() {
            return Ok(());
        }
        let gpus: Vec<String> = parts.iter().map(|(d, _)| d.to_string()).collect();
        self.store_final(
            (ct, &label),
            (&mut rows, &[]),
            &format!("GPUs {}", gpus.join(", ")),
            out,
        )
    }

    /// `lane`'s part of a shared finalist is lost (its process died, or the lane failed): the
    /// other parts make its rows; without any, it is measured again on another GPU.
    fn part_lost(
        &mut self,
        lane: usize,
        (bin, ct, label): (PathBuf, usize, String),
        out: &mut Output,
    ) -> Result<()> {
        let key = (ct, label.clone());
        let entry = self.shared.entry(key.clone()).or_default();
        entry.pending.remove(&lane);
        if entry.pending.is_empty() && entry.parts.is_empty() {
            self.shared.remove(&key);
            self.spread_finals(bin, ct, vec![label], Some(lane), out);
            return Ok(());
        }
        self.pool_if_done(key, out)
    }

    /// Base's rows from `lane`: a screening control, only news when it failed; base in full,
    /// the first of which per workload is stored when the finals end.
    fn base(
        &mut self,
        lane: usize,
        pass: Pass,
        ct: usize,
        (rows, energy): Rows,
        out: &mut Output,
    ) -> Result<()> {
        if self.lanes[lane].jobs.is_none() || !self.of_the_search(lane, &rows, out)? {
            return Ok(());
        }
        if let Some(bad) = rows.iter().find(|r| r.status != Status::Ok) {
            out.line(&format!(
                "  {}.base ({}) [{}]  {:<8} {}  (GPU {})",
                self.ctx.plan.function.name,
                if pass == Pass::First {
                    "control"
                } else {
                    "in full"
                },
                self.ctx.cts[ct].key,
                bad.status,
                bad.message.clone().unwrap_or_default(),
                self.lanes[lane].summary.device
            ));
        }
        let usable = rows.iter().all(|r| r.status == Status::Ok);
        if pass == Pass::Final && usable {
            let share = match self.lanes[lane].running.front().map(|r| &r.job) {
                Some(Kind::Final { share, .. }) => *share,
                _ => match &self.lanes[lane].control {
                    Some((.., share)) => *share,
                    None => 1,
                },
            };
            let parts = self.base_parts.entry(ct).or_default();
            parts.push((lane, share, (rows, energy)));
        }
        Ok(())
    }

    /// `lane` takes no more work, and says so: what it had not finished goes to the others
    /// (its parts of shared finals are left to the other parts).
    fn fail(&mut self, lane: usize, why: String, out: &mut Output) {
        let state = &mut self.lanes[lane];
        if state.summary.failed.is_some() {
            return;
        }
        out.status(&format!(
            "warning: GPU {} failed and takes no more work; the other GPUs take what it had \
             not finished ({why})",
            state.summary.device
        ));
        state.jobs = None;
        state.summary.failed = Some(why);
        let mut finals = Vec::new();
        let mut parts = Vec::new();
        for r in std::mem::take(&mut state.running) {
            let unfinished = |labels: &[String]| -> Vec<String> {
                labels
                    .iter()
                    .filter(|l| !r.reported.contains(*l))
                    .cloned()
                    .collect()
            };
            match &r.job {
                Kind::Screen(item) => {
                    let labels = unfinished(&item.labels);
                    self.queue.give_back(Item {
                        labels,
                        ..item.clone()
                    });
                }
                Kind::Final {
                    bin,
                    ct,
                    labels,
                    share,
                } => {
                    let labels = unfinished(labels);
                    if *share > 1 {
                        parts.extend(labels.into_iter().map(|l| (bin.clone(), *ct, l)));
                    } else if !labels.is_empty() {
                        finals.push((bin.clone(), *ct, labels));
                    }
                }
                Kind::Control => {}
            }
        }
        // Finalists it did not measure go to the others at once.
        for (bin, ct, labels) in finals {
            self.spread_finals(bin, ct, labels, None, out);
        }
        for part in parts {
            // Storing what the other parts measured can fail only as the store fails, which
            // the next row stored reports.
            if let Err(e) = self.part_lost(lane, part, out) {
                out.status(&format!("warning: {e:#}"));
            }
        }
    }
}

//! The search loop: propose → build → run → record, over two narrow stages.
//!
//! The [`Proposer`] asks the strategy for batches within `--max-evals` and `--time-limit`;
//! a [`BuildStage`] turns a batch into binaries (or build failures) on its own thread; a
//! [`RunStage`] measures and records what was built. With the pipeline on, the next batch
//! builds while the current one runs (the GPU measures while the CPU compiles); off, they
//! alternate so that the compiler does not disturb CPU timings. The stages are traits so
//! that the loop is tested with fakes, without cargo or a device.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{Context, Result};
use gputune_protocol::Status;

use crate::host::output::Output;
use crate::strategy::Strategy;

/// A binary that holds some variants of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltUnit {
    /// The executable.
    pub bin: PathBuf,
    /// The labels compiled into it.
    pub labels: Vec<String>,
    /// Its build time in seconds.
    pub seconds: f64,
}

/// A variant that would not build.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildFailure {
    /// Its label.
    pub label: String,
    /// `build_failed` or `build_timeout`.
    pub status: Status,
    /// The end of the build log.
    pub message: String,
    /// Build time in seconds.
    pub seconds: f64,
}

/// What the build stage hands the run stage for one batch.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct BuiltBatch {
    /// Binaries, each holding some of the batch's variants.
    pub units: Vec<BuiltUnit>,
    /// Variants that would not build.
    pub failures: Vec<BuildFailure>,
    /// Build invocations it took.
    pub builds: usize,
}

impl BuiltBatch {
    /// The part of what was built that holds the labels of `batch`: each binary cut down to
    /// them, charged its share of its build time, and their failures; no build of its own (a
    /// whole space built once, or a bundle, serving batch after batch).
    pub fn part(&self, batch: &[String]) -> BuiltBatch {
        let wanted: std::collections::HashSet<&str> = batch.iter().map(String::as_str).collect();
        let units = self
            .units
            .iter()
            .filter_map(|u| {
                let labels: Vec<String> = u
                    .labels
                    .iter()
                    .filter(|l| wanted.contains(l.as_str()))
                    .cloned()
                    .collect();
                (!labels.is_empty()).then(|| BuiltUnit {
                    bin: u.bin.clone(),
                    seconds: u.seconds * labels.len() as f64 / u.labels.len() as f64,
                    labels,
                })
            })
            .collect();
        let failures = self
            .failures
            .iter()
            .filter(|f| wanted.contains(f.label.as_str()))
            .cloned()
            .collect();
        BuiltBatch {
            units,
            failures,
            builds: 0,
        }
    }
}

/// Turns a batch of labels into binaries. Runs on its own thread.
pub trait BuildStage: Sync {
    /// Builds `batch`; an `Err` ends the search (a build that cannot even be attempted).
    fn build(&self, batch: Vec<String>) -> Result<BuiltBatch>;
    /// Announces a batch about to be built (a progress line).
    fn announce(&self, _batch: &[String], _out: &mut Output) {}
}

/// Measures and records built variants.
pub trait RunStage {
    /// Measures the variants of `unit` and records them; returns the score of each label
    /// (`None`: it failed or could not be scored), for the strategy.
    fn run(&mut self, unit: &BuiltUnit, out: &mut Output) -> Result<Vec<(String, Option<f64>)>>;
    /// Records a variant that did not build.
    fn record(&mut self, failure: &BuildFailure, out: &mut Output) -> Result<()>;
}

/// The bounds of a search: `--batch-size`, `--max-evals`, `--time-limit`.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Variants per batch.
    pub batch_size: usize,
    /// Variants to evaluate at most, those already stored included.
    pub max_evals: Option<usize>,
    /// Seconds after which no new batch is proposed.
    pub time_limit: Option<f64>,
    /// When the search started.
    pub started: Instant,
}

/// Asks the strategy for the next batch within the [`Bounds`].
pub struct Proposer {
    bounds: Bounds,
    strategy: Box<dyn Strategy>,
    space: Vec<String>,
    /// Label → score (`None`: failed, not scored yet, or stored earlier), what the strategy
    /// sees.
    pub scored: BTreeMap<String, Option<f64>>,
    evaluated: usize,
    stopped: bool,
}

impl Proposer {
    /// A proposer over `space`; `done` are the labels already stored, which count as
    /// evaluated and are never proposed.
    pub fn new(
        bounds: Bounds,
        strategy: Box<dyn Strategy>,
        space: Vec<String>,
        done: impl IntoIterator<Item = String>,
    ) -> Proposer {
        let scored: BTreeMap<String, Option<f64>> = done.into_iter().map(|l| (l, None)).collect();
        Proposer {
            bounds,
            strategy,
            space,
            evaluated: scored.len(),
            scored,
            stopped: false,
        }
    }

    /// The strategy's name.
    pub fn strategy_name(&self) -> &'static str {
        self.strategy.name()
    }

    /// How many more variants the bounds allow.
    pub fn to_go(&self) -> usize {
        self.bounds
            .max_evals
            .unwrap_or(self.space.len())
            .min(self.space.len())
            .saturating_sub(self.evaluated)
    }

    /// The next batch, or `None` when the strategy is done or a bound is reached.
    pub fn next(&mut self, out: &mut Output) -> Option<Vec<String>> {
        if self.stopped {
            return None;
        }
        if self
            .bounds
            .time_limit
            .is_some_and(|t| self.bounds.started.elapsed().as_secs_f64() > t)
        {
            out.status("Time limit reached; stopping");
            self.stopped = true;
            return None;
        }
        let mut want = self.bounds.batch_size;
        if let Some(m) = self.bounds.max_evals {
            want = want.min(m.saturating_sub(self.evaluated));
        }
        if want == 0 {
            return None;
        }
        let batch = self.strategy.next(&self.space, &self.scored, want);
        if batch.is_empty() {
            return None;
        }
        self.evaluated += batch.len();
        for l in &batch {
            self.scored.insert(l.clone(), None);
        }
        Some(batch)
    }
}

/// Runs the loop until the proposer has nothing more; returns the build invocations.
pub fn drive(
    proposer: &mut Proposer,
    builder: &dyn BuildStage,
    runner: &mut dyn RunStage,
    pipelined: bool,
    out: &mut Output,
) -> Result<usize> {
    std::thread::scope(|scope| -> Result<usize> {
        // The build stage runs in its own thread and the runs in this one; with the pipeline
        // off, at most one batch is in flight, so building and running alternate.
        let (jobs, job_rx) = mpsc::channel::<Vec<String>>();
        let (built_tx, built_rx) = mpsc::channel::<Result<BuiltBatch>>();
        let worker = scope.spawn(move || {
            for batch in job_rx {
                let r = builder.build(batch);
                let failed = r.is_err();
                if built_tx.send(r).is_err() || failed {
                    break;
                }
            }
        });
        let mut in_flight = 0usize;
        // Whether a batch went to the builder.
        let send = |out: &mut Output, proposer: &mut Proposer| -> usize {
            let Some(batch) = proposer.next(out) else {
                return 0;
            };
            builder.announce(&batch, out);
            // The builder only stops receiving after an error, which recv reports.
            usize::from(jobs.send(batch).is_ok())
        };
        let mut builds = 0;
        let result = (|| -> Result<()> {
            in_flight += send(out, proposer);
            while in_flight > 0 {
                let built = built_rx
                    .recv()
                    .context("the build stage ended unexpectedly")??;
                in_flight -= 1;
                builds += built.builds;
                if pipelined {
                    in_flight += send(out, proposer);
                }
                for failure in &built.failures {
                    runner.record(failure, out)?;
                    proposer.scored.insert(failure.label.clone(), None);
                }
                for unit in &built.units {
                    for (label, score) in runner.run(unit, out)? {
                        proposer.scored.insert(label, score);
                    }
                }
                if !pipelined {
                    in_flight += send(out, proposer);
                }
            }
            Ok(())
        })();
        drop(jobs);
        worker
            .join()
            .map_err(|_| anyhow::anyhow!("the build stage panicked"))?;
        result.map(|()| builds)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn a_batch_of_a_whole_build_is_its_binaries_cut_to_the_batch_and_builds_nothing() {
        let labels = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // The whole space split once around a variant that broke the build.
        let whole = BuiltBatch {
            units: vec![
                BuiltUnit {
                    bin: "w-1".into(),
                    labels: labels(&["a", "b", "c", "d"]),
                    seconds: 4.0,
                },
                BuiltUnit {
                    bin: "w-2".into(),
                    labels: labels(&["f"]),
                    seconds: 1.0,
                },
            ],
            failures: vec![BuildFailure {
                label: "e".into(),
                status: Status::BuildFailed,
                message: "error".into(),
                seconds: 1.0,
            }],
            builds: 3,
        };
        let part = whole.part(&labels(&["b", "d", "e"]));
        assert_eq!(part.builds, 0);
        assert_eq!(part.units.len(), 1);
        assert_eq!(part.units[0].bin, std::path::PathBuf::from("w-1"));
        assert_eq!(part.units[0].labels, labels(&["b", "d"]));
        assert_eq!(part.units[0].seconds, 2.0);
        assert_eq!(part.failures.len(), 1);
        assert_eq!(part.failures[0].label, "e");
        let nothing = whole.part(&labels(&["z"]));
        assert!(nothing.units.is_empty() && nothing.failures.is_empty());
    }
    use crate::strategy::Exhaustive;

    /// Builds every label as its own unit except those listed as broken; logs what it did.
    struct FakeBuilder {
        broken: Vec<&'static str>,
        fatal_on: Option<&'static str>,
        log: Mutex<Vec<String>>,
    }

    impl BuildStage for FakeBuilder {
        fn build(&self, batch: Vec<String>) -> Result<BuiltBatch> {
            let mut log = self.log.lock().expect("log");
            log.push(format!("build {}", batch.join(",")));
            if let Some(l) = self.fatal_on.filter(|l| batch.iter().any(|b| b == l)) {
                anyhow::bail!("cargo cannot run for {l}");
            }
            let (bad, good): (Vec<String>, Vec<String>) = batch
                .into_iter()
                .partition(|l| self.broken.contains(&l.as_str()));
            Ok(BuiltBatch {
                units: vec![BuiltUnit {
                    bin: PathBuf::from("bin"),
                    labels: good,
                    seconds: 1.0,
                }],
                failures: bad
                    .into_iter()
                    .map(|label| BuildFailure {
                        label,
                        status: Status::BuildFailed,
                        message: "error[E0308]".into(),
                        seconds: 1.0,
                    })
                    .collect(),
                builds: 1,
            })
        }
    }

    /// Scores each label by its number (`x_3` scores 3); logs what it ran and recorded.
    struct FakeRunner<'a> {
        log: &'a Mutex<Vec<String>>,
    }

    impl RunStage for FakeRunner<'_> {
        fn run(&mut self, unit: &BuiltUnit, _: &mut Output) -> Result<Vec<(String, Option<f64>)>> {
            self.log
                .lock()
                .expect("log")
                .push(format!("run {}", unit.labels.join(",")));
            Ok(unit
                .labels
                .iter()
                .map(|l| (l.clone(), l.trim_start_matches("x_").parse().ok()))
                .collect())
        }

        fn record(&mut self, failure: &BuildFailure, _: &mut Output) -> Result<()> {
            self.log
                .lock()
                .expect("log")
                .push(format!("record {} {}", failure.label, failure.status));
            Ok(())
        }
    }

    fn space(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("x_{i}")).collect()
    }

    fn proposer(n: usize, batch_size: usize, max_evals: Option<usize>, done: &[&str]) -> Proposer {
        let bounds = Bounds {
            batch_size,
            max_evals,
            time_limit: None,
            started: Instant::now(),
        };
        Proposer::new(
            bounds,
            Box::new(Exhaustive::new(7)),
            space(n),
            done.iter().map(|s| s.to_string()),
        )
    }

    fn builder(broken: Vec<&'static str>) -> FakeBuilder {
        FakeBuilder {
            broken,
            fatal_on: None,
            log: Mutex::new(Vec::new()),
        }
    }

    fn lines(log: &Mutex<Vec<String>>, prefix: &str) -> Vec<String> {
        log.lock()
            .expect("log")
            .iter()
            .filter(|l| l.starts_with(prefix))
            .cloned()
            .collect()
    }

    #[test]
    fn every_variant_is_built_then_run_or_recorded_once() {
        let mut p = proposer(10, 3, None, &["x_4"]);
        let b = builder(vec!["x_2", "x_7"]);
        let run_log = Mutex::new(Vec::new());
        let mut r = FakeRunner { log: &run_log };
        let builds = drive(&mut p, &b, &mut r, false, &mut Output::silent()).expect("runs");
        // Nine variants to go in batches of three.
        assert_eq!(builds, 3);
        let mut seen: Vec<String> = lines(&run_log, "run ")
            .iter()
            .flat_map(|l| l[4..].split(',').map(str::to_string).collect::<Vec<_>>())
            .chain(
                lines(&run_log, "record ")
                    .iter()
                    .map(|l| l.split(' ').nth(1).unwrap_or_default().to_string()),
            )
            .collect();
        seen.sort();
        let mut want: Vec<String> = space(10).into_iter().filter(|l| l != "x_4").collect();
        want.sort();
        assert_eq!(seen, want, "each once; the stored x_4 never again");
        let mut recorded = lines(&run_log, "record ");
        recorded.sort();
        assert_eq!(
            recorded,
            ["record x_2 build_failed", "record x_7 build_failed"]
        );
        // What the runner scored is what the strategy sees; failures are None.
        assert_eq!(p.scored.get("x_9"), Some(&Some(9.0)));
        assert_eq!(p.scored.get("x_2"), Some(&None));
        assert_eq!(p.scored.len(), 10);
    }

    #[test]
    fn no_batch_is_proposed_past_the_time_limit() {
        let started = Instant::now() - std::time::Duration::from_secs(5);
        let bounded = |limit| {
            let bounds = Bounds {
                batch_size: 4,
                max_evals: None,
                time_limit: Some(limit),
                started,
            };
            Proposer::new(bounds, Box::new(Exhaustive::new(7)), space(20), Vec::new())
        };
        assert_eq!(
            bounded(60.0).next(&mut Output::silent()).map(|b| b.len()),
            Some(4)
        );
        let mut late = bounded(1.0);
        assert_eq!(late.next(&mut Output::silent()), None);
        assert_eq!(late.next(&mut Output::silent()), None, "and stays stopped");
    }

    #[test]
    fn max_evals_counts_what_was_stored_before() {
        let mut p = proposer(10, 4, Some(5), &["x_1", "x_2"]);
        assert_eq!(p.to_go(), 3);
        let b = builder(Vec::new());
        let run_log = Mutex::new(Vec::new());
        let mut r = FakeRunner { log: &run_log };
        drive(&mut p, &b, &mut r, true, &mut Output::silent()).expect("runs");
        let ran: usize = lines(&run_log, "run ")
            .iter()
            .map(|l| l[4..].split(',').filter(|s| !s.is_empty()).count())
            .sum();
        assert_eq!(ran, 3);
        assert_eq!(p.to_go(), 0);
    }

    #[test]
    fn pipelined_the_next_batch_is_asked_for_before_the_current_one_runs() {
        // With the pipeline on, batch 2 is sent to the builder before batch 1 runs, so the
        // builder can have built it by then; off, it is built only after batch 1 ran.
        for pipelined in [true, false] {
            let log = Mutex::new(Vec::new());
            struct Shared<'a>(&'a Mutex<Vec<String>>, FakeBuilder);
            impl BuildStage for Shared<'_> {
                fn build(&self, batch: Vec<String>) -> Result<BuiltBatch> {
                    let built = self.1.build(batch.clone())?;
                    self.0
                        .lock()
                        .expect("log")
                        .push(format!("build {}", batch.join(",")));
                    Ok(built)
                }
                fn announce(&self, batch: &[String], _: &mut Output) {
                    self.0
                        .lock()
                        .expect("log")
                        .push(format!("send {}", batch.join(",")));
                }
            }
            let b = Shared(&log, builder(Vec::new()));
            let mut r = FakeRunner { log: &log };
            let mut p = proposer(4, 2, None, &[]);
            drive(&mut p, &b, &mut r, pipelined, &mut Output::silent()).expect("runs");
            let events: Vec<String> = log
                .lock()
                .expect("log")
                .iter()
                .map(|l| l.split(' ').next().unwrap_or_default().to_string())
                .collect();
            let first_run = events.iter().position(|e| e == "run").expect("a run");
            let second_send = events
                .iter()
                .enumerate()
                .filter(|(_, e)| *e == "send")
                .nth(1)
                .map(|(i, _)| i)
                .expect("two batches");
            assert_eq!(second_send < first_run, pipelined, "{events:?}");
        }
    }

    #[test]
    fn a_build_stage_error_ends_the_search_with_it() {
        let mut p = proposer(6, 2, None, &[]);
        let b = FakeBuilder {
            broken: Vec::new(),
            fatal_on: Some("x_1"),
            log: Mutex::new(Vec::new()),
        };
        // The exhaustive order is seeded; make sure x_1 comes up at some point.
        let run_log = Mutex::new(Vec::new());
        let mut r = FakeRunner { log: &run_log };
        let err = drive(&mut p, &b, &mut r, true, &mut Output::silent()).expect_err("fails");
        assert!(
            err.to_string().contains("cargo cannot run for x_1"),
            "{err}"
        );
        assert!(!lines(&run_log, "run ").iter().any(|l| l.contains("x_1")));
    }
}

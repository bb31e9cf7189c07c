//! The build stage of a search: `cargo build` of a batch of variants into binaries, a
//! failing batch split until the variants that break it are found.
//!
//! A space the search asks to be built whole (a guided strategy's; a blind search's with a
//! time limit, up to [`super::WHOLE_SPACE`] variants) is built once, into one binary, whatever the
//! batches the strategy proposes: every batch then runs in the same waiting bench process
//! (one device opening and one setup of the bench's workloads per search, not one per batch),
//! and a variant costs about a millisecond more of build (sgemm-large's 16,020-point space on
//! 2 cores: 256 variants in 2.4 s, 1,024 in 3.3 s, 4,096 in 8.9 s, all of it in 60 s).

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Result;
use gputune_protocol::Status;

use super::pipeline::{BuildFailure, BuildStage, BuiltBatch, BuiltUnit};
use crate::host::cargo::Options;
use crate::host::cargo::{self, BenchTarget, BuildOutcome, Workspace};
use crate::host::output::Output;

/// What to say when a batch starts building.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Announce {
    /// A progress message, and the cargo command with `-v`.
    Search,
    /// A status line: the batch goes into a bundle.
    Bundle,
}

/// Builds batches of one tuned function's variants with cargo.
pub(crate) struct CargoBuilder<'a> {
    ws: &'a Workspace,
    args: &'a Options,
    target: &'a BenchTarget,
    function: &'a str,
    bench: &'a str,
    dir: &'a Path,
    /// Seconds a build of up to eight variants may take before it is killed.
    limit: f64,
    announce: Announce,
    /// Numbers the binaries: each build writes a new one.
    next_index: std::sync::atomic::AtomicUsize,
    /// The whole space, when it is built at once, and what that build made once it has run.
    whole: Option<(Vec<String>, Mutex<Option<BuiltBatch>>)>,
}

impl<'a> CargoBuilder<'a> {
    /// A builder of `function`'s variants for `bench`, writing binaries into `dir`; `space`,
    /// the function's whole space when the search asks for it to be built at once, is built
    /// so on the first batch, and every batch is cut from that build.
    pub(crate) fn new(
        (ws, args): (&'a Workspace, &'a Options),
        target: &'a BenchTarget,
        (function, bench, space): (&'a str, &'a str, Option<&[String]>),
        dir: &'a Path,
        limit: f64,
        announce: Announce,
    ) -> CargoBuilder<'a> {
        let whole = space.map(|s| (s.to_vec(), Mutex::new(None)));
        CargoBuilder {
            ws,
            args,
            target,
            function,
            bench,
            dir,
            limit,
            announce,
            next_index: std::sync::atomic::AtomicUsize::new(1),
            whole,
        }
    }

    /// Whether every batch comes from one build of the whole space: its binaries are then
    /// shared by the batches, and kept until the search ends.
    pub(crate) fn builds_whole(&self) -> bool {
        self.whole.is_some()
    }

    /// Builds `batch` as it is: one binary, or several where a variant breaks the build.
    fn build_labels(&self, batch: Vec<String>) -> Result<BuiltBatch> {
        let mut built = BuiltBatch::default();
        let mut pending = vec![batch];
        while let Some(group) = pending.pop() {
            let index = self
                .next_index
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let selection: Vec<String> = group
                .iter()
                .map(|l| format!("{}::{}.{l}", self.target.package, self.function))
                .collect();
            let bin = self.dir.join(format!("{}-batch-{index}", self.bench));
            let limit = self.limit * (group.len() as f64 / 8.0).max(1.0);
            let outcome = cargo::build(
                self.ws,
                self.args,
                self.target,
                &selection.join(","),
                &bin,
                Some(Duration::from_secs_f64(limit)),
            )?;
            built.builds += 1;
            match outcome {
                BuildOutcome::Built {
                    executable,
                    seconds,
                    ..
                } => built.units.push(BuiltUnit {
                    bin: executable,
                    labels: group,
                    seconds,
                }),
                BuildOutcome::Failed { .. } | BuildOutcome::TimedOut { .. } if group.len() > 1 => {
                    let (a, b) = group.split_at(group.len() / 2);
                    pending.push(b.to_vec());
                    pending.push(a.to_vec());
                }
                BuildOutcome::Failed { message, seconds } => built.failures.push(BuildFailure {
                    label: group[0].clone(),
                    status: Status::BuildFailed,
                    message,
                    seconds,
                }),
                BuildOutcome::TimedOut { seconds } => built.failures.push(BuildFailure {
                    label: group[0].clone(),
                    status: Status::BuildTimeout,
                    message: format!("build killed after {seconds:.1} s (the build limit)"),
                    seconds,
                }),
            }
        }
        Ok(built)
    }
}

impl BuildStage for CargoBuilder<'_> {
    fn build(&self, batch: Vec<String>) -> Result<BuiltBatch> {
        let Some((space, built)) = &self.whole else {
            return self.build_labels(batch);
        };
        let mut built = built
            .lock()
            .map_err(|_| anyhow::anyhow!("a build of the whole space panicked"))?;
        if let Some(whole) = built.as_ref() {
            return Ok(whole.part(&batch));
        }
        let whole = self.build_labels(space.clone())?;
        let mut part = whole.part(&batch);
        part.builds = whole.builds;
        *built = Some(whole);
        Ok(part)
    }

    fn announce(&self, batch: &[String], out: &mut Output) {
        let batch = match &self.whole {
            // About to be built whole; or being built, or built already: nothing to announce
            // (and nothing to wait for here).
            Some((space, built)) => match built.try_lock() {
                Ok(b) if b.is_none() => space.as_slice(),
                _ => return,
            },
            None => batch,
        };
        match self.announce {
            Announce::Search => {
                out.progress_message(&format!(
                    "building {}",
                    crate::results::present::count(batch.len(), "variant")
                ));
                out.verbose(&format!(
                    "cargo build -p {} --bench {} --profile {} with GPUTUNE_VARIANTS={} \
                     variant(s) of {}",
                    self.target.package,
                    self.target.bench,
                    self.args.profile(),
                    batch.len(),
                    self.function
                ));
            }
            Announce::Bundle => out.status(&format!(
                "Building {} variant(s) of {} into the bundle",
                batch.len(),
                self.function
            )),
        }
    }
}

//! The build stage of a search: `cargo build` of a batch of variants into binaries, a
//! failing batch split until the variants that break it are found.

use std::path::Path;
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
}

impl<'a> CargoBuilder<'a> {
    /// A builder of `function`'s variants for `bench`, writing binaries into `dir`.
    pub(crate) fn new(
        (ws, args): (&'a Workspace, &'a Options),
        target: &'a BenchTarget,
        (function, bench): (&'a str, &'a str),
        dir: &'a Path,
        limit: f64,
        announce: Announce,
    ) -> CargoBuilder<'a> {
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
        }
    }
}

impl BuildStage for CargoBuilder<'_> {
    fn build(&self, batch: Vec<String>) -> Result<BuiltBatch> {
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

    fn announce(&self, batch: &[String], out: &mut Output) {
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

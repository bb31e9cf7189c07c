//! `slurm`: a bundle's shards as a SLURM job array. HPC sites schedule GPUs with SLURM, so
//! gputune hands it the shards (`run-bundle --shard I/N`) rather than scheduling them itself.
//!
//! The job script is written to `DIR/slurm/gputune-array.sh`, readable and submittable by
//! hand (`sbatch DIR/slurm/gputune-array.sh`); task I runs shard I/N into its own store. With
//! `--wait` the command waits for the array to leave the queue, then merges the shards'
//! stores into one. A task that is cancelled or dies loses only the variant it was measuring:
//! submitting the same array again resumes every shard from its store.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::host::output::Output;
use crate::host::usage::Usage;
use crate::measure::shard::Shard;
use crate::results::store::{SearchLock, Store};

/// What `slurm` did.
#[derive(Debug)]
pub struct Submitted {
    /// The job id `sbatch` gave the array.
    pub job: String,
    /// The job script.
    pub script: PathBuf,
    /// With `--wait`: the merged store, and the tasks whose shard did not finish.
    pub merged: Option<(PathBuf, Vec<usize>)>,
}

/// A job array to submit, as `commands` builds it from the command line (`slurm`).
#[derive(Debug, Clone)]
pub struct Submission {
    /// The bundle directory (`search --build-only --bundle DIR`), on a file system the nodes
    /// share.
    pub dir: PathBuf,
    /// Tasks of the array: the bundle's variants in N contiguous parts, each with base.
    pub shards: usize,
    /// `#SBATCH --partition`.
    pub partition: Option<String>,
    /// `#SBATCH --gpus-per-task`.
    pub gpus_per_task: Option<u32>,
    /// `#SBATCH --time`, the time limit of each task (`HH:MM:SS`).
    pub time: Option<String>,
    /// A further `#SBATCH` option, passed as it is (repeatable: `--sbatch-arg=--account=x`).
    pub sbatch_args: Vec<String>,
    /// `#SBATCH --job-name`.
    pub job_name: String,
    /// Wait for the array to finish, then merge the shards into DIR/gputune.db (or --db);
    /// exit 1 if a task did not finish (submit again to resume it).
    pub wait: bool,
}

/// The job script for `args`: one array task per shard, each running the bundle's own
/// `cargo-gputune run-bundle --shard I/N` with its output in `DIR/slurm/task-I.out`.
pub fn script(dir: &Path, args: &Submission) -> String {
    let d = dir.display();
    let mut s = String::from("#!/bin/bash\n");
    s.push_str("# Written by `cargo gputune slurm`: one array task per shard of the bundle.\n");
    s.push_str("# Submit again to resume: each shard's store keeps what it measured.\n");
    s.push_str(&format!("#SBATCH --job-name={}\n", args.job_name));
    s.push_str(&format!("#SBATCH --array=1-{}\n", args.shards));
    s.push_str(&format!("#SBATCH --output={d}/slurm/task-%a.out\n"));
    if let Some(p) = &args.partition {
        s.push_str(&format!("#SBATCH --partition={p}\n"));
    }
    if let Some(g) = args.gpus_per_task {
        s.push_str(&format!("#SBATCH --gpus-per-task={g}\n"));
    }
    if let Some(t) = &args.time {
        s.push_str(&format!("#SBATCH --time={t}\n"));
    }
    for extra in &args.sbatch_args {
        s.push_str(&format!("#SBATCH {extra}\n"));
    }
    s.push_str("set -euo pipefail\n");
    s.push_str(&format!("cd {}\n", shell_quote(&d.to_string())));
    s.push_str(&format!(
        "exec ./cargo-gputune run-bundle . --color never --shard \"$SLURM_ARRAY_TASK_ID/{}\"\n",
        args.shards
    ));
    s
}

/// Quotes `s` for a POSIX shell.
fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:=@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Writes the job script, submits it with `sbatch`, and with `--wait` waits and merges into
/// `db` (default `DIR/gputune.db`).
pub fn submit(args: &Submission, db: Option<&Path>, out: &mut Output) -> Result<Submitted> {
    let usage = |m: String| anyhow::Error::new(Usage(m));
    if args.shards == 0 {
        return Err(usage("--shards must be at least 1".into()));
    }
    let dir = std::fs::canonicalize(&args.dir)
        .map_err(|e| usage(format!("no bundle at {}: {e}", args.dir.display())))?;
    if !dir.join("bundle.json").is_file() || !dir.join("cargo-gputune").is_file() {
        return Err(usage(format!(
            "{} is not a bundle (no bundle.json and cargo-gputune): build one with `cargo \
             gputune search --build-only --bundle DIR`",
            dir.display()
        )));
    }
    let slurm_dir = dir.join("slurm");
    std::fs::create_dir_all(&slurm_dir)
        .with_context(|| format!("cannot create {}", slurm_dir.display()))?;
    let script_path = slurm_dir.join("gputune-array.sh");
    std::fs::write(&script_path, script(&dir, args))
        .with_context(|| format!("cannot write {}", script_path.display()))?;
    // A task's output from an earlier submission would read as this one's.
    for i in 1..=args.shards {
        let _ = std::fs::remove_file(slurm_dir.join(format!("task-{i}.out")));
    }
    let submitted = Command::new("sbatch")
        .arg("--parsable")
        .arg(&script_path)
        .output()
        .map_err(|e| usage(format!("cannot run sbatch (is SLURM installed here?): {e}")))?;
    if !submitted.status.success() {
        bail!(
            "sbatch refused {}: {}",
            script_path.display(),
            String::from_utf8_lossy(&submitted.stderr).trim()
        );
    }
    let job = String::from_utf8_lossy(&submitted.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap_or_default()
        .to_string();
    out.status(&format!(
        "Submitted job array {job} ({} task(s)) from {}",
        args.shards,
        script_path.display()
    ));
    if !args.wait {
        return Ok(Submitted {
            job,
            script: script_path,
            merged: None,
        });
    }
    wait_for(&job, out)?;
    let unfinished: Vec<usize> = (1..=args.shards)
        .filter(|i| !finished(&slurm_dir.join(format!("task-{i}.out"))))
        .collect();
    let target = db.map_or_else(|| dir.join("gputune.db"), Path::to_path_buf);
    let shards: Vec<PathBuf> = (1..=args.shards)
        .map(|index| {
            dir.join(
                Shard {
                    index,
                    count: args.shards,
                }
                .store_name(),
            )
        })
        .filter(|p| p.is_file())
        .collect();
    if !shards.is_empty() {
        let _lock = SearchLock::acquire(&target)?;
        let store = Store::open(&target)?;
        crate::results::merge::merge(&store, &shards, out)?;
    }
    Ok(Submitted {
        job,
        script: script_path,
        merged: Some((target, unfinished)),
    })
}

/// Waits until job `job` has no task in the queue. Ctrl-C ends the wait, not the job.
fn wait_for(job: &str, out: &mut Output) -> Result<()> {
    out.status(&format!("Waiting for job {job} to leave the queue"));
    loop {
        let q = Command::new("squeue")
            .args(["-h", "-r", "-j", job, "-o", "%i %T"])
            .output()
            .context("cannot run squeue")?;
        let text = String::from_utf8_lossy(&q.stdout);
        // squeue fails once the job is gone from the controller's memory: gone either way.
        if !q.status.success() || text.trim().is_empty() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Whether a task's output shows its `run-bundle` finished (its `Done:` line).
fn finished(output: &Path) -> bool {
    std::fs::read_to_string(output).is_ok_and(|t| t.lines().any(|l| l.contains("Done: ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> Submission {
        Submission {
            dir: PathBuf::from("/b"),
            shards: 4,
            partition: Some("gpu".into()),
            gpus_per_task: Some(1),
            time: Some("02:00:00".into()),
            sbatch_args: vec!["--account=perf".into()],
            job_name: "gputune".into(),
            wait: false,
        }
    }

    #[test]
    fn the_script_is_one_task_per_shard_with_the_options_passed_through() {
        let s = script(Path::new("/scratch/my bundle"), &args());
        for line in [
            "#SBATCH --array=1-4",
            "#SBATCH --partition=gpu",
            "#SBATCH --gpus-per-task=1",
            "#SBATCH --time=02:00:00",
            "#SBATCH --account=perf",
            "#SBATCH --output=/scratch/my bundle/slurm/task-%a.out",
            "cd '/scratch/my bundle'",
            "exec ./cargo-gputune run-bundle . --color never --shard \"$SLURM_ARRAY_TASK_ID/4\"",
        ] {
            assert!(s.lines().any(|l| l == line), "{line} in\n{s}");
        }
        assert!(s.starts_with("#!/bin/bash\n"));
    }

    #[test]
    fn a_task_is_finished_when_its_output_says_done() {
        let dir = std::env::temp_dir().join(format!("gputune-slurm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (done, cut) = (dir.join("1.out"), dir.join("2.out"));
        std::fs::write(
            &done,
            "   gputune Done: 3 run(s), 9 result(s) stored in x\n",
        )
        .expect("w");
        std::fs::write(&cut, "slurmstepd: *** JOB 7 CANCELLED ***\n").expect("w");
        assert!(finished(&done));
        assert!(!finished(&cut) && !finished(&dir.join("none.out")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! `cargo gputune slurm` through a real SLURM (`scripts/local/slurm-start.sh` starts a single-node
//! one; `.ci/run` does): the spin fixture's bundle as a job array of two tasks, one of them
//! cancelled mid-run, then the same array submitted again, which completes the search, losing
//! nothing the cancelled task stored and measuring nothing twice. Without a SLURM that
//! answers, the test says it was skipped.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use gputune_tests::{cargo_gputune, skipped, temp_dir, text};

/// Whether a SLURM controller answers and has a node that can run jobs.
fn slurm_answers() -> Result<(), String> {
    let out = Command::new("sinfo")
        .args(["-h", "-o", "%T"])
        .output()
        .map_err(|e| {
            format!("no SLURM here (sinfo: {e}); `scripts/local/slurm-start.sh` starts one")
        })?;
    let states = String::from_utf8_lossy(&out.stdout).to_string();
    if out.status.success()
        && ["idle", "mixed", "alloc"]
            .iter()
            .any(|s| states.contains(s))
    {
        Ok(())
    } else {
        Err(format!(
            "SLURM has no node that runs jobs (sinfo: {}{})",
            states.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"))
}

/// Waits until job `job` has left the queue.
fn wait_gone(job: &str) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(180) {
        let q = run("squeue", &["-h", "-r", "-j", job]);
        if !q.status.success() || String::from_utf8_lossy(&q.stdout).trim().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("job {job} still queued after 3 minutes");
}

/// `(variant, rt_workload, created)` of every row of a store.
fn rows(db: &Path) -> Vec<(String, String, String)> {
    let c = rusqlite::Connection::open(db).expect("the store opens");
    let mut q = c
        .prepare("SELECT variant, rt_workload, created FROM results ORDER BY variant, rt_workload")
        .expect("query");
    let rows = q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows")
        .collect::<Result<Vec<_>, _>>()
        .expect("rows");
    rows
}

/// Whether the store at `db` holds a variant's row yet (a store being created has no table).
fn measured_a_variant(db: &Path) -> bool {
    let read_only = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
    let Ok(c) = rusqlite::Connection::open_with_flags(db, read_only) else {
        return false;
    };
    c.query_row(
        "SELECT count(*) FROM results WHERE variant != 'base'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .is_ok_and(|n| n > 0)
}

#[test]
fn a_job_array_runs_the_shards_and_a_cancelled_task_is_resumed() {
    if let Err(why) = slurm_answers() {
        return skipped(&why);
    }
    let _spin = gputune_tests::spin_lock();
    let bin = cargo_gputune();
    let dir = temp_dir("slurm");
    // 1 500 samples a state: a shard takes seconds, long enough to be cancelled mid-run.
    let bundle = gputune_tests::spin_bundle(&bin, &dir, 2, 1500);
    let b = bundle.to_str().expect("utf-8");

    // Submitted held; task 1 is released and runs to the end, task 2 is released and
    // cancelled as soon as its store holds a measured variant.
    let submit = |extra: &[&str]| {
        let mut args = vec!["gputune", "slurm", b, "--shards", "2"];
        args.extend_from_slice(extra);
        run(bin.to_str().expect("utf-8"), &args)
    };
    let first = submit(&["--sbatch-arg=--hold"]);
    assert!(first.status.success(), "{}", text(&first));
    let job = String::from_utf8_lossy(&first.stdout).trim().to_string();
    assert!(job.chars().all(|c| c.is_ascii_digit()), "job id {job:?}");
    let script = std::fs::read_to_string(bundle.join("slurm/gputune-array.sh")).expect("script");
    assert!(script.contains("#SBATCH --array=1-2") && script.contains("#SBATCH --hold"));
    let (s1, s2) = (
        bundle.join("gputune-shard-1-of-2.db"),
        bundle.join("gputune-shard-2-of-2.db"),
    );
    let release = run("scontrol", &["release", &job]);
    assert!(release.status.success(), "{}", text(&release));
    let start = Instant::now();
    while !measured_a_variant(&s2) {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "shard 2 measured nothing"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let cancel = run("scancel", &[&format!("{job}_2")]);
    assert!(cancel.status.success(), "{}", text(&cancel));
    wait_gone(&job);
    let task1 = std::fs::read_to_string(bundle.join("slurm/task-1.out")).unwrap_or_default();
    assert!(task1.contains("Done: "), "task 1 finished: {task1}");
    let task2 = std::fs::read_to_string(bundle.join("slurm/task-2.out")).unwrap_or_default();
    assert!(
        !task2.contains("Done: "),
        "task 2 was cancelled mid-run: {task2}"
    );
    let (before1, before2) = (rows(&s1), rows(&s2));
    assert!(
        before2.iter().any(|r| r.0 != "base"),
        "what task 2 finished before it was cancelled is kept: {before2:?}"
    );

    // The same array again, waited for: shard 1 measures nothing, shard 2 goes on from its
    // store, and the shards merge into the bundle's store.
    let second = submit(&["--wait"]);
    assert!(second.status.success(), "{}", text(&second));
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("every shard finished and merged"),
        "{}",
        text(&second)
    );
    let task1 = std::fs::read_to_string(bundle.join("slurm/task-1.out")).expect("task 1");
    assert!(task1.contains("Done: 0 run(s), 0 result(s)"), "{task1}");
    assert_eq!(rows(&s1), before1, "nothing of shard 1 measured again");
    // Every row task 2 stored survives; those it had finished in full are not measured
    // again (screened ones may become finalists, measured in full in the finals).
    let after2 = rows(&s2);
    for r in &before2 {
        assert!(
            after2.iter().any(|a| a.0 == r.0 && a.1 == r.1),
            "{r:?} lost: {after2:?}"
        );
    }
    let merged = rows(&bundle.join("gputune.db"));
    let mut variants: Vec<&str> = merged.iter().map(|r| r.0.as_str()).collect();
    variants.dedup();
    assert_eq!(
        variants,
        ["base", "work_1", "work_2", "work_4", "work_8"],
        "{merged:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

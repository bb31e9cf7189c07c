//! `run-bundle --devices`: the GPUs of one host measuring one bundle at once. Each GPU gets a
//! shard (`run-bundle --shard I/N --device D`, a child process of its own) whose store sits
//! beside the store it feeds ([`shard_store`]), and the shards' stores are merged into it when
//! every child is done. Every bench process measures base as the
//! control of its variants, so each speedup is against base on the same physical GPU; a GPU
//! that fails or is lost ends its own shard only.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::host::output::Output;
use crate::host::usage::Usage;
use crate::measure::bundle::Bundle;
use crate::measure::bundle::RunBundle;
use crate::measure::protocol;
use crate::measure::shard::Shard;
use crate::results::store::{SearchLock, Store};

/// The most ordinals `all` probes.
const MAX_DEVICES: u32 = 64;

/// The ordinals `spec` names: a comma-separated list, or `all`, the ordinals the bundle's
/// base binary can open (probed from 0 until one cannot be opened; a CPU bench has one).
pub fn ordinals(spec: &str, dir: &Path) -> Result<Vec<u32>> {
    let usage = |m: String| anyhow::Error::new(Usage(m));
    if spec.trim() != "all" {
        let mut list = Vec::new();
        for part in spec.split(',').map(str::trim) {
            let d: u32 = part.parse().map_err(|_| {
                usage(format!(
                    "--devices takes CUDA ordinals separated by commas (`0,1`) or `all`, not \
                     `{spec}`"
                ))
            })?;
            if list.contains(&d) {
                return Err(usage(format!("--devices names device {d} twice")));
            }
            list.push(d);
        }
        return Ok(list);
    }
    let bundle = Bundle::read(dir)?;
    let b = bundle
        .benches
        .first()
        .with_context(|| format!("the bundle in {} holds no bench", dir.display()))?;
    let base = dir.join(&b.base);
    let (_, arch) = protocol::device(&base, &b.bench, 0)?;
    if arch == "cpu" {
        return Ok(vec![0]);
    }
    let mut found = vec![0];
    for d in 1..MAX_DEVICES {
        if protocol::device(&base, &b.bench, d).is_err() {
            break;
        }
        found.push(d);
    }
    Ok(found)
}

/// The store shard `shard` of a search into `target` writes: beside `target`, named for it
/// (`runs/a.db` → `runs/a.shard-1-of-2.db`), so that a search into another store starts afresh
/// and one into the same store resumes its shards.
pub fn shard_store(target: &Path, shard: Shard) -> PathBuf {
    let stem = target.file_stem().map_or_else(
        || "gputune".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    target.with_file_name(format!(
        "{stem}.shard-{}-of-{}.db",
        shard.index, shard.count
    ))
}

/// What a shard's store holds, for the line that says a search resumes from it.
fn resumed(store: &Path) -> String {
    match Store::open(store).and_then(|s| s.measurements()) {
        Ok(rows) => format!("{} result(s) kept", rows.len()),
        Err(e) => format!("unreadable: {e}"),
    }
}

/// Runs the bundle in `args.dir` on `devices` at once, one shard each, and merges the shards
/// into `target`; returns the exit code: 0 when every shard finished, 1 when one did not
/// (what the others measured is merged all the same).
pub fn run(args: &RunBundle, devices: &[u32], target: &Path, out: &mut Output) -> Result<i32> {
    let me = std::env::current_exe().context("cannot find this cargo-gputune")?;
    let logs = args.dir.join("work");
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let count = devices.len();
    out.status(&format!(
        "Running {} on {count} GPU(s) at once: {}",
        args.dir.display(),
        devices
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let mut children = Vec::new();
    for (i, &d) in devices.iter().enumerate() {
        let shard = Shard {
            index: i + 1,
            count,
        };
        let store = shard_store(target, shard);
        if store.is_file() {
            out.status(&format!(
                "device {d}, shard {shard}: resuming the search into {} from {} ({})",
                target.display(),
                store.display(),
                resumed(&store)
            ));
        }
        let log = logs.join(format!("device-{d}.log"));
        let mut cmd = Command::new(&me);
        cmd.arg("run-bundle")
            .arg(&args.dir)
            .arg("--db")
            .arg(&store)
            .args([
                "--color",
                "never",
                "--shard",
                &shard.to_string(),
                "--device",
            ])
            .arg(d.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?);
        if args.no_race {
            cmd.arg("--no-race");
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", me.display()))?;
        children.push((d, shard, log, child));
    }
    let mut failed = Vec::new();
    let mut stores: Vec<PathBuf> = Vec::new();
    for (d, shard, log, mut child) in children {
        let status = child.wait()?;
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let last = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or_default()
            .trim()
            .to_string();
        out.status(&format!(
            "device {d}, shard {shard}: {} ({last}; {})",
            if status.success() { "done" } else { "failed" },
            log.display()
        ));
        if !status.success() {
            failed.push(d);
        }
        let store = shard_store(target, shard);
        if store.is_file() {
            stores.push(store);
        }
    }
    if !stores.is_empty() {
        let _lock = SearchLock::acquire(target)?;
        let store = Store::open(target)?;
        crate::results::merge::merge(&store, &stores, out)?;
    }
    if failed.is_empty() {
        out.status(&format!(
            "Done: {count} GPU(s), every shard merged into {}",
            target.display()
        ));
        Ok(0)
    } else {
        out.status(&format!(
            "GPU(s) {} did not finish their shards (see their logs); what every GPU measured \
             is merged into {}. Run the same command again to resume: nothing measured is \
             measured twice",
            failed
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            target.display()
        ));
        Ok(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_s_store_is_beside_the_store_it_feeds_and_named_for_it() {
        let shard = Shard { index: 2, count: 4 };
        assert_eq!(
            shard_store(Path::new("/runs/first.db"), shard),
            Path::new("/runs/first.shard-2-of-4.db")
        );
        // Two searches of one bundle into two stores never share a shard's store.
        assert_ne!(
            shard_store(Path::new("/runs/first.db"), shard),
            shard_store(Path::new("/runs/second.db"), shard)
        );
    }
}

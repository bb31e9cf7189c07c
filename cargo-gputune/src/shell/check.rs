//! What `check` finds before it writes anything: the store and the baseline read, the
//! workloads compared, the UNDECIDED ones measured again under `--remeasure`, the applied
//! variants scored. `commands` writes the [`Outcome`] in the formats asked for.
//!
//! With `--db FILE`, `check` runs without a workspace (on a GPU host with a bundle and no
//! cargo): the applied variants, which need the packages' `gputune.toml`, are then not
//! judged, and `--min-score` is refused.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::host::cargo::{Options, Workspace};
use crate::host::output::Output;
use crate::host::usage::Usage;
use crate::measure::remeasure::{self, Settings, Source};
use crate::results::check::{self, verdict, BaselineComparison, Outcome};
use crate::results::store::{SearchLock, Store};
use crate::results::{self, Group};
use crate::shell::cli::CheckArgs;

fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(message.into()))
}

/// The store `check` reads: `--db`, else the workspace's.
fn store_path(ws: &Result<Workspace>, args: &Options) -> Result<PathBuf> {
    match (&args.db, ws) {
        (Some(db), _) => Ok(db.clone()),
        (None, Ok(ws)) => Ok(ws.gputune_dir().join("gputune.db")),
        (None, Err(e)) => Err(usage(format!(
            "check reads the store given by --db FILE, else the workspace's, and no workspace \
             was found here ({}): pass --db FILE",
            format!("{e:#}").lines().next().unwrap_or_default().trim()
        ))),
    }
}

/// The store's latest groups of the selected packages.
fn groups_at(
    path: &std::path::Path,
    ws: &Result<Workspace>,
    args: &Options,
) -> Result<(Store, Vec<Group>)> {
    let selected = match ws {
        Ok(ws) => ws.selected_packages(args)?,
        Err(_) => (!args.package.is_empty()).then(|| args.package.clone()),
    };
    let store = Store::open_read_only(path)?;
    let groups = crate::results::select_packages(
        results::groups(store.measurements()?, true),
        selected.as_deref(),
        path,
    )?;
    Ok((store, groups))
}

/// The baseline document of `--baseline`.
fn baseline(path: &std::path::Path) -> Result<Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the baseline {}", path.display()))
        .map_err(|e| e.context(Usage("bad --baseline".into())))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON", path.display()))
        .map_err(|e| e.context(Usage("bad --baseline".into())))
}

/// Everything `check` found, measuring the UNDECIDED workloads again under `--remeasure`.
pub fn outcome(
    ws: Result<Workspace>,
    args: &Options,
    c: &CheckArgs,
    out: &mut Output,
) -> Result<Outcome> {
    if c.baseline.is_none() && c.min_score.is_none() {
        return Err(usage(
            "check needs --baseline FILE, --min-score SCORE, or both",
        ));
    }
    if c.remeasure && c.baseline.is_none() {
        return Err(usage(
            "--remeasure measures again the UNDECIDED workloads of a comparison: give \
             --baseline FILE",
        ));
    }
    if c.remeasure && (c.remeasure_budget < 6 || c.remeasure_block == 0) {
        return Err(usage(
            "--remeasure-budget must be at least 6 (fewer samples bound no interval of their \
             median) and --remeasure-block at least 1",
        ));
    }
    if c.min_score.is_some() && ws.is_err() {
        return Err(usage(
            "--min-score judges the applied variants of the packages' gputune.toml: run check \
             in the workspace",
        ));
    }
    let path = store_path(&ws, args)?;
    let doc = c.baseline.as_deref().map(baseline).transpose()?;
    let (mut store, mut groups) = groups_at(&path, &ws, args)?;
    let compare = |groups: &[Group]| -> Result<Option<BaselineComparison>> {
        doc.as_ref()
            .map(|doc| {
                check::compare(groups, doc, c.threshold)
                    .map_err(|e| e.context(Usage("bad --baseline".into())))
            })
            .transpose()
    };
    let mut comparison = compare(&groups)?;
    let mut remeasure_notes = Vec::new();
    let undecided = comparison.as_ref().map_or(0, |b| {
        b.rows
            .iter()
            .filter(|r| r.verdict == verdict::UNDECIDED)
            .count()
    });
    if c.remeasure && undecided == 0 {
        out.status("Nothing is UNDECIDED: nothing to measure again");
    }
    if let (true, true, Some(rows)) = (c.remeasure, undecided > 0, comparison.as_ref()) {
        let (source, work) = match (&c.bundle, &ws) {
            (Some(dir), _) => (Source::Bundle(dir), dir.join("work").join("remeasure")),
            (None, Ok(ws)) => (
                Source::Workspace(ws, args),
                ws.work_dir(&path).join("remeasure"),
            ),
            (None, Err(_)) => {
                return Err(usage(
                    "--remeasure needs the bench binaries: run check in the workspace (it \
                     builds them), or give --bundle DIR",
                ))
            }
        };
        let settings = Settings {
            budget: c.remeasure_budget,
            block: c.remeasure_block,
            device: c.device,
            threshold: c.threshold,
        };
        let done = {
            // Written as a search writes it: under its lock, migrated to this schema.
            let _lock = SearchLock::acquire(&path)?;
            let writable = Store::open(&path)?;
            remeasure::remeasure(
                &rows.rows, &groups, &writable, &work, &source, &settings, out,
            )?
        };
        for note in &done.notes {
            out.status(note);
        }
        (store, groups) = groups_at(&path, &ws, args)?;
        comparison = compare(&groups)?;
        let by_row = remeasure::by_row(&done);
        for row in comparison.iter_mut().flat_map(|b| b.rows.iter_mut()) {
            if let Some(at) = &row.at {
                row.remeasured = by_row.get(&remeasure::row_key(at)).map(|r| (*r).clone());
            }
        }
        remeasure_notes = done.notes;
    }
    let applied = match &ws {
        Ok(ws) => check::applied_scores(ws, &groups, &store)?,
        Err(_) => Vec::new(),
    };
    Ok(Outcome {
        baseline: comparison,
        applied,
        min_score: c.min_score,
        threshold: c.threshold,
        allow_undecided: c.allow_undecided,
        strict_provenance: c.strict_provenance,
        remeasure_notes,
    })
}

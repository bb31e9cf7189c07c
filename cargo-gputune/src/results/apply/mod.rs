//! `apply`: the significant, verified winners into each package's `gputune.toml`, keeping the
//! entries it does not replace.
//!
//! Each winner is keyed by the device model it was measured on (`NVIDIA H200`, as the store records
//! it), so that an H100's and an H200's winners live side by side; `--arch-only` keys it by the
//! architecture instead (`sm_90`, the fallback of every model without its own entry), noting the
//! model in `measured-on`. With `--per-size`, a group whose best variant differs between sizes
//! beyond noise gets one winner per size range ([`crate::results::per_size`]). A model's entry is
//! only ever replaced from that model's measurements.

mod plan;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use anyhow::{Context, Result};
use gputune_protocol::gputune_toml::{GputuneToml, FILE_NAME};

use crate::host::cargo::Workspace;
use crate::host::output::Output;
use crate::results::store::Store;
use crate::results::Group;

pub use plan::{plan, Planned};

/// How `apply` keys and splits the winners.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Show the change without writing it.
    pub dry_run: bool,
    /// Key winners by architecture (`sm_90`), not by device model.
    pub arch_only: bool,
    /// One winner per size range where the best variant differs by size.
    pub per_size: bool,
    /// The runtime axis the sizes are read from; default: the function's `size(Axis = …)`.
    pub size_axis: Option<String>,
    /// What the winners are picked by (`--objective`).
    pub objective: crate::results::objective::Objective,
}

/// Applies the winners of `groups`; with `options.dry_run`, prints the new files instead.
pub fn apply(
    ws: &Workspace,
    groups: &[Group],
    store: &Store,
    options: &Options,
    out: &mut Output,
) -> Result<usize> {
    let mut files: Vec<(PathBuf, GputuneToml, bool)> = Vec::new();
    let mut applied = 0;
    for g in groups {
        let Some((_, attribute)) = store.space(&g.package, &g.function)? else {
            continue;
        };
        let spec = gputune_grammar::parse_str(&attribute).map_err(|e| {
            anyhow::anyhow!(
                "the stored attribute of `{}` no longer parses: {e}",
                g.function
            )
        })?;
        let Some(pkg) = ws
            .metadata
            .workspace_packages()
            .into_iter()
            .find(|p| p.name.as_str() == g.package)
        else {
            continue;
        };
        let dir = pkg
            .manifest_path
            .parent()
            .map(|d| d.as_std_path().to_path_buf())
            .unwrap_or_default();
        let path = dir.join(FILE_NAME);
        // Planned before the file is read: a group without a winner creates no file.
        let planned = plan(g, &spec, options)?;
        for note in &planned.notes {
            out.status(note);
        }
        let Some(entries) = planned.entries else {
            continue;
        };
        if !files.iter().any(|(p, _, _)| p == &path) {
            let (file, existed) = match std::fs::read_to_string(&path) {
                Ok(text) => (
                    GputuneToml::parse(&text).with_context(|| path.display().to_string())?,
                    true,
                ),
                Err(_) => (GputuneToml::default(), false),
            };
            files.push((path.clone(), file, existed));
        }
        let Some((_, file, _)) = files.iter_mut().find(|(p, _, _)| p == &path) else {
            continue;
        };
        for note in plan::write(file, g, &planned.key, entries, options.arch_only) {
            out.status(&note);
        }
        // What the build would refuse, apply does not write.
        file.entries(&g.function, &spec)
            .with_context(|| format!("the new {} would not build", path.display()))?;
        applied += 1;
        out.line(&planned.line);
    }
    for (path, file, existed) in files {
        let text = file.to_text();
        if options.dry_run {
            out.line(&format!(
                "--- {} (dry run, not written)\n{text}",
                path.display()
            ));
            continue;
        }
        let tmp = path.with_extension("toml.tmp");
        std::fs::write(&tmp, &text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
        if !existed {
            // The build helper does not watch a missing gputune.toml (cargo would rerun it on
            // every build); touching build.rs makes cargo rerun it now that the file exists.
            let build_rs = path.with_file_name("build.rs");
            if let Ok(f) = std::fs::File::options().append(true).open(&build_rs) {
                let _ = f.set_modified(std::time::SystemTime::now());
            }
        }
        out.status(&format!("Wrote {}", path.display()));
    }
    Ok(applied)
}

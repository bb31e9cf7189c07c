//! `apply`: the significant, verified winners into each package's `gputune.toml`, keeping the
//! entries it does not replace.

use std::path::PathBuf;

use anyhow::{Context, Result};
use gputune_protocol::gputune_toml::{GputuneToml, FILE_NAME};

use crate::cargo::Workspace;
use crate::output::Output;
use crate::results::Group;
use crate::store::Store;

/// Applies the winners of `groups`; with `dry_run`, prints the new files instead.
pub fn apply(
    ws: &Workspace,
    groups: &[Group],
    store: &Store,
    dry_run: bool,
    out: &mut Output,
) -> Result<usize> {
    let mut files: Vec<(PathBuf, GputuneToml, bool)> = Vec::new();
    let mut applied = 0;
    for g in groups {
        let Some(winner) = g.winner() else {
            out.status(&format!(
                "No significant, verified winner for {}.{} [{}] on {}; nothing applied",
                g.bench, g.function, g.ct_workload, g.arch
            ));
            continue;
        };
        let Some((_, attribute)) = store.space(&g.package, &g.function)? else {
            continue;
        };
        let spec = gputune_grammar::parse_str(&attribute).map_err(|e| {
            anyhow::anyhow!(
                "the stored attribute of `{}` no longer parses: {e}",
                g.function
            )
        })?;
        let Some(point) = spec
            .space()
            .into_iter()
            .find(|p| p.label() == winner.variant)
        else {
            continue;
        };
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
        if !files.iter().any(|(p, _, _)| p == &path) {
            let (file, existed) = match std::fs::read_to_string(&path) {
                Ok(text) => (GputuneToml::parse(&text)?, true),
                Err(_) => (GputuneToml::default(), false),
            };
            files.push((path.clone(), file, existed));
        }
        let Some((_, file, _)) = files.iter_mut().find(|(p, _, _)| p == &path) else {
            continue;
        };
        file.set(&g.function, &g.ct_workload, &g.arch, &point, None);
        applied += 1;
        let score = winner.score.as_ref().map_or(0.0, |s| s.score);
        out.line(&format!(
            "{}.{} [{}] on {}: {} (score {score:.4})",
            g.bench, g.function, g.ct_workload, g.arch, winner.variant
        ));
    }
    for (path, file, existed) in files {
        let text = file.to_text();
        if dry_run {
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

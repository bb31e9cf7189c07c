//! `search --captured DIR`: one search per tuned function an application was captured
//! calling (`GPUTUNE_CAPTURE=DIR`), on exactly its captured workloads; into the store, or all
//! of them into one bundle.

use anyhow::{Context, Result};

use super::commands::search_command;
use crate::host::cargo::Workspace;
use crate::host::output::Output;
use crate::host::usage::Usage;
use crate::measure::{bundle, search};

/// `search --captured DIR`: one search per captured function, on its captured workloads.
pub(super) fn captured_command(
    ws: &Workspace,
    args: &crate::host::cargo::Options,
    dir: &std::path::Path,
    s: &search::Settings,
    out: &mut Output,
) -> Result<i32> {
    // The captured workloads are the list: another one would be searched beside them.
    if s.bench_args
        .iter()
        .any(|a| a == "--workloads" || a.starts_with("--workloads="))
    {
        return Err(anyhow::Error::new(Usage(
            "--captured lists the captured workloads itself: leave --workloads out".into(),
        )));
    }
    let captures = gputune_protocol::capture::read_dir(dir)
        .map_err(|e| anyhow::Error::new(Usage(e.to_string())))?;
    let searches = search::captured_searches(&captures, s, &args.package);
    if searches.is_empty() {
        return Err(anyhow::Error::new(Usage(format!(
            "no captured workloads in {}{}: run the application with GPUTUNE_CAPTURE={} first",
            dir.display(),
            if args.package.is_empty() {
                String::new()
            } else {
                format!(" for {}", args.package.join(", "))
            },
            dir.display()
        ))));
    }
    // Into one bundle: every function's benches, written once at the end.
    let mut bundled = s.bundle.as_ref().map(|dir| {
        (
            dir.clone(),
            bundle::Bundle {
                version: bundle::BUNDLE_VERSION,
                benches: Vec::new(),
            },
            0usize,
        )
    });
    let (mut code, mut searched) = (0, 0);
    for c in &searches {
        out.status(&format!(
            "Captured {}::{}: {} workload(s) in {} call(s); searching with {}{}",
            c.package,
            c.function,
            c.workloads,
            c.calls,
            c.axes
                .iter()
                .map(|a| format!("-a '{a}'"))
                .collect::<Vec<_>>()
                .join(" "),
            if c.combinations > c.workloads {
                format!(
                    ", only the {} captured of their {} combinations (--workloads)",
                    c.workloads, c.combinations
                )
            } else {
                String::new()
            }
        ));
        let done = match &mut bundled {
            Some((dir, b, builds)) => {
                std::fs::create_dir_all(&*dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                search::search(ws, args, &c.settings, search::Sink::Bundle(dir, b), out).map(
                    |(counters, _)| {
                        *builds += counters.builds;
                        0
                    },
                )
            }
            None => search_command(ws, args, &c.settings, out),
        };
        match done {
            Ok(c) => {
                code = code.max(c);
                searched += 1;
            }
            // An application calls tuned functions that no bench measures: said, not fatal.
            Err(e) if e.to_string().starts_with(search::NOTHING_TO_SEARCH) => out.status(&format!(
                "no bench tunes `{}`: its captured workloads are not searched",
                c.function
            )),
            Err(e) => return Err(e),
        }
    }
    if let Some((dir, b, builds)) = &bundled {
        if searched > 0 {
            b.write(dir)?;
            out.status(&format!(
                "Bundle {}: {builds} build(s) of the captured workloads; run it with `{}/cargo-gputune \
                 run-bundle {}`",
                dir.display(),
                dir.display(),
                dir.display()
            ));
        }
    }
    if searched == 0 {
        return Err(anyhow::Error::new(Usage(format!(
            "{}: no bench tunes any captured function ({})",
            search::NOTHING_TO_SEARCH,
            searches
                .iter()
                .map(|c| c.function.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))));
    }
    Ok(code)
}

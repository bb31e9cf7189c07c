//! `--workloads` in a search's runs: the bench runs only the listed points of its axes'
//! product (`search --captured`'s captured workloads), and leaves the others out of its events,
//! so the store holds exactly the listed workloads. Here: which compile-time workloads have
//! any listed workload (one without runs no process: its variants are recorded skipped), and
//! the pass's flags with a long list put in a file.

use std::path::Path;

use anyhow::{Context, Result};
use gputune_protocol::BenchArgs;

use crate::measure::runs::CtWorkload;

/// The longest `--workloads` list passed as an argument; a longer one goes through a file.
const IN_ARGUMENT: usize = 32 * 1024;

/// Why a compile-time workload is not run, if it is not: a list of workloads none of which
/// agrees with it (`T=bf16` where every listed workload says `T=f32`).
pub(crate) fn unlisted(bench_args: &BenchArgs, ct: &CtWorkload) -> Option<String> {
    // The list was checked when the search parsed its flags: one that does not parse here
    // runs everything, as the bench would refuse it.
    let list = bench_args.listed_workloads().ok().flatten()?;
    let listed = list
        .iter()
        .any(|w| ct.values.iter().all(|(axis, value)| w.agrees(axis, value)));
    (!listed).then(|| {
        format!(
            "not a listed workload: none of the {} of --workloads is on {}",
            list.len(),
            ct.key
        )
    })
}

/// `bench_args` as a pass's flags: a `--workloads` list longer than one argument may be
/// goes through `work_dir/workloads.txt` (`--workloads @FILE`).
pub(crate) fn pass_args(bench_args: &BenchArgs, work_dir: &Path) -> Result<Vec<String>> {
    let total: usize = bench_args.workloads.iter().map(|w| w.len() + 1).sum();
    if total <= IN_ARGUMENT {
        return Ok(bench_args.to_args());
    }
    let file = work_dir.join("workloads.txt");
    std::fs::write(&file, bench_args.workloads.join("\n"))
        .with_context(|| format!("writing {}", file.display()))?;
    let mut a = bench_args.clone();
    a.workloads = vec![format!("@{}", file.display())];
    Ok(a.to_args())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ct(values: &[(&str, &str)]) -> CtWorkload {
        CtWorkload {
            key: values
                .iter()
                .map(|(a, v)| format!("{a}={v}"))
                .collect::<Vec<_>>()
                .join(","),
            args: Vec::new(),
            values: values
                .iter()
                .map(|(a, v)| (a.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn listing(workloads: &[&str]) -> BenchArgs {
        BenchArgs {
            workloads: workloads.iter().map(|w| w.to_string()).collect(),
            ..BenchArgs::default()
        }
    }

    #[test]
    fn a_compile_time_workload_runs_where_a_listed_workload_agrees_with_it() {
        let a = listing(&["T=f32 U=i8 Rows=1", "T=f64 U=i16 Rows=2"]);
        assert_eq!(unlisted(&a, &ct(&[("T", "f32"), ("U", "i8")])), None);
        assert_eq!(unlisted(&a, &ct(&[("T", "f64"), ("U", "i16")])), None);
        // The product of the captured types has two pairs nothing was called with.
        let why = unlisted(&a, &ct(&[("T", "f32"), ("U", "i16")])).expect("unlisted");
        assert!(
            why.contains("none of the 2 of --workloads is on T=f32,U=i16"),
            "{why}"
        );
        // Without compile-time axes, or without a list, everything runs.
        assert_eq!(unlisted(&a, &ct(&[])), None);
        assert_eq!(unlisted(&listing(&[]), &ct(&[("T", "f32")])), None);
        // A list that does not name the axis takes any value of it.
        assert_eq!(unlisted(&listing(&["Rows=1"]), &ct(&[("T", "f32")])), None);
    }

    #[test]
    fn a_long_list_goes_through_a_file() {
        let dir = std::env::temp_dir().join(format!("gputune-listed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let short = listing(&["Rows=1 Cols=4096", "Rows=4096 Cols=1"]);
        let args = pass_args(&short, &dir).expect("args");
        assert!(
            args.windows(2)
                .any(|w| w == ["--workloads", "Rows=1 Cols=4096;Rows=4096 Cols=1"]),
            "{args:?}"
        );
        let many: Vec<String> = (0..5000).map(|r| format!("Rows={r} Cols=4096")).collect();
        let long = BenchArgs {
            workloads: many.clone(),
            ..BenchArgs::default()
        };
        let args = pass_args(&long, &dir).expect("args");
        let file = dir.join("workloads.txt");
        assert!(
            args.windows(2)
                .any(|w| w == ["--workloads".to_string(), format!("@{}", file.display())]),
            "{args:?}"
        );
        let mut back = BenchArgs::from_flags(&args).expect("parses");
        back.read_workload_files().expect("reads");
        assert_eq!(back.workloads, many);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! `report --plot DIR`: SVG pictures of the results.
//!
//! Per compile-time workload and runtime workload, the sample distributions of base and the
//! top variants (a strip plot of every kept sample over a box of the quartiles); per
//! compile-time workload, the score over one or two parameters of the tuned function (a heat
//! map, or a line for one parameter); where the store has energy, time against energy per
//! launch with the Pareto front. Parameter names come from the `#[tune]` attribute kept
//! in the store, so labels such as `items_per_thread_4.tpb_128` split where the grammar says.

mod cell;
mod energy;
mod frame;
mod heat_map;
mod line;
mod naming;
mod samples;
mod score;
#[cfg(test)]
mod test_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use gputune_grammar::TuneSpec;

use crate::host::usage::Usage;
use crate::results::store::Store;
use crate::results::{Group, Ranked};

pub(crate) use score::split_label;

/// Parsed `#[tune]` attributes by (package, function).
pub type Specs = BTreeMap<(String, String), TuneSpec>;

/// What `--plot` wrote, and what it could not draw (for status lines).
#[derive(Debug, Default)]
pub struct Plots {
    /// The SVG files written.
    pub files: Vec<PathBuf>,
    /// Why a picture was left out or drawn differently than asked.
    pub notes: Vec<String>,
}

/// The stored `#[tune]` attributes of the functions in `groups`, parsed.
pub fn specs(groups: &[Group], store: &Store) -> Result<Specs> {
    let mut specs = Specs::new();
    for g in groups {
        let key = (g.package.clone(), g.function.clone());
        if specs.contains_key(&key) {
            continue;
        }
        let Some((_, attribute)) = store.space(&g.package, &g.function)? else {
            continue;
        };
        let spec = gputune_grammar::parse_str(&attribute).map_err(|e| {
            anyhow::anyhow!(
                "the stored attribute of `{}` ({}) no longer parses: {e}",
                g.function,
                g.package
            )
        })?;
        specs.insert(key, spec);
    }
    Ok(specs)
}

/// Writes the pictures of `groups` into `dir` (created if missing): the sample distributions
/// of base and the `top` best variants per runtime workload, and the score over `params`
/// (one or two names; empty: each function's first two parameters).
pub fn write(
    dir: &Path,
    groups: &[Group],
    specs: &Specs,
    top: usize,
    params: &[String],
) -> Result<Plots> {
    check_params(groups, specs, params)?;
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the plot directory {}", dir.display()))?;
    let mut plots = Plots::default();
    for g in groups {
        let ranked = g.ranked();
        for rt in rt_workloads(g, &ranked) {
            let Some(svg) = samples::svg(g, &ranked, &rt, top)? else {
                continue;
            };
            let path = dir.join(naming::file_name(g, Some(&rt), "samples"));
            std::fs::write(&path, svg)
                .with_context(|| format!("cannot write {}", path.display()))?;
            plots.files.push(path);
        }
        if let Some(svg) = energy::svg(g)? {
            let path = dir.join(naming::file_name(g, None, "energy"));
            std::fs::write(&path, svg)
                .with_context(|| format!("cannot write {}", path.display()))?;
            plots.files.push(path);
        }
        let Some(spec) = specs.get(&(g.package.clone(), g.function.clone())) else {
            plots.notes.push(format!(
                "no score plot for {}.{} [{}]: the store keeps no #[tune] attribute of `{}`",
                g.bench, g.function, g.ct_workload, g.function
            ));
            continue;
        };
        let chosen = choose(spec, params, g, &mut plots.notes);
        let Some(svg) = score::svg(g, &ranked, spec, &chosen)? else {
            continue;
        };
        let path = dir.join(naming::file_name(g, None, "score"));
        std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
        plots.files.push(path);
    }
    Ok(plots)
}

/// `--plot-params` must name one or two parameters, at least one function must have them all
/// (a store can hold several tuned functions, and each is plotted over what it has).
fn check_params(groups: &[Group], specs: &Specs, params: &[String]) -> Result<()> {
    let usage = |m: String| Err(anyhow::Error::new(Usage(m)));
    if params.is_empty() {
        return Ok(());
    }
    if params.len() > 2 {
        return usage(format!(
            "--plot-params takes one or two parameter names, not {}",
            params.len()
        ));
    }
    if params.len() == 2 && params[0] == params[1] {
        return usage(format!(
            "--plot-params names `{}` twice; give two different parameters",
            params[0]
        ));
    }
    let plotted: Vec<&TuneSpec> = specs
        .iter()
        .filter(|((p, f), _)| groups.iter().any(|g| &g.package == p && &g.function == f))
        .map(|(_, s)| s)
        .collect();
    let has_all = |s: &TuneSpec| params.iter().all(|n| s.params.iter().any(|p| &p.name == n));
    if plotted.iter().any(|s| has_all(s)) {
        return Ok(());
    }
    let known: Vec<String> = specs
        .iter()
        .filter(|((p, f), _)| groups.iter().any(|g| &g.package == p && &g.function == f))
        .map(|((_, f), s)| {
            let names: Vec<&str> = s.params.iter().map(|p| p.name.as_str()).collect();
            format!("{f}: {}", names.join(", "))
        })
        .collect();
    usage(format!(
        "--plot-params {}: no tuned function has {}; parameters are {}",
        params.join(","),
        if params.len() == 1 {
            "that parameter"
        } else {
            "both parameters"
        },
        if known.is_empty() {
            "unknown (no #[tune] attribute in the store)".to_string()
        } else {
            known.join("; ")
        }
    ))
}

/// The indices of the parameters to plot `g` over.
fn choose(spec: &TuneSpec, params: &[String], g: &Group, notes: &mut Vec<String>) -> Vec<usize> {
    let index = |n: &String| spec.params.iter().position(|p| &p.name == n);
    let asked: Option<Vec<usize>> = params.iter().map(index).collect();
    match asked {
        Some(v) if !v.is_empty() => v,
        _ => {
            if !params.is_empty() {
                notes.push(format!(
                    "{}.{} has no parameter {}; its score is plotted over its first parameters",
                    g.bench,
                    g.function,
                    params.join(" or ")
                ));
            }
            (0..spec.params.len().min(2)).collect()
        }
    }
}

/// The runtime workloads of `g`: base's in its order, then any only variants have. `*` marks
/// a variant that failed before measuring and is no workload.
fn rt_workloads(g: &Group, ranked: &[Ranked]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let order = std::iter::once("base").chain(ranked.iter().map(|r| r.variant.as_str()));
    for label in order {
        for m in g.variants.get(label).into_iter().flatten() {
            if m.rt_workload != "*" && !out.contains(&m.rt_workload) {
                out.push(m.rt_workload.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;

    #[test]
    fn plot_params_choose_the_axes_and_the_rest_is_maximised() {
        let (groups, specs) = three_param_group();
        let dir = temp_dir("params");
        let plots = write(&dir, &groups, &specs, 5, &["c".into(), "a".into()]).expect("written");
        let score = plots
            .files
            .iter()
            .find(|p| p.to_string_lossy().ends_with(".score.svg"))
            .expect("a score plot");
        let texts = svg_texts(&read(score));
        assert!(
            texts.iter().any(|t| t.ends_with("score over c × a")),
            "{texts:?}"
        );
        assert!(
            texts.iter().any(|t| t.ends_with(
                ", fastest found a_2.b_2.c_4 (8.00× base); each cell is the best over b"
            )),
            "{texts:?}"
        );
        // (c = 4, a = 2) holds b = 1 (speed-up 6) and b = 2 (speed-up 8): the cell shows 8.
        assert!(texts.iter().any(|t| t == "8.00"), "{texts:?}");
        assert!(!texts.iter().any(|t| t == "6.00"), "{texts:?}");
        // By default, the first two.
        let plots = write(&dir, &groups, &specs, 5, &[]).expect("written");
        let score = plots
            .files
            .iter()
            .find(|p| p.to_string_lossy().ends_with(".score.svg"));
        let defaults = svg_texts(&read(score.expect("a score plot")));
        assert!(
            defaults.iter().any(|t| t.ends_with("score over a × b")),
            "{defaults:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_plot_params_are_usage_errors_and_write_nothing() {
        let (groups, specs) = three_param_group();
        let dir = temp_dir("usage");
        for params in [
            vec!["tpb"],
            vec!["a", "a"],
            vec!["a", "b", "c"],
            vec!["a", "nope"],
        ] {
            let params: Vec<String> = params.into_iter().map(String::from).collect();
            let err = write(&dir, &groups, &specs, 5, &params).expect_err("refused");
            assert!(err.chain().any(|c| c.is::<Usage>()), "{params:?}: {err:#}");
            assert!(!dir.exists(), "{params:?} created the directory");
        }
        let err = write(&dir, &groups, &specs, 5, &["tpb".into()]).expect_err("refused");
        assert!(format!("{err:#}").contains("f: a, b, c"), "{err:#}");
    }

    #[test]
    fn params_of_another_function_leave_this_one_on_its_defaults() {
        let (mut groups, mut specs) = three_param_group();
        let (two, two_specs) = two_param_group();
        groups.extend(two);
        specs.extend(two_specs);
        let dir = temp_dir("mixed");
        let plots = write(&dir, &groups, &specs, 5, &["tpb".into()]).expect("written");
        assert_eq!(plots.notes.len(), 1, "{:?}", plots.notes);
        assert!(
            plots.notes[0].contains("scale.f has no parameter tpb"),
            "{:?}",
            plots.notes
        );
        let titles: Vec<String> = plots
            .files
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".score.svg"))
            .flat_map(|p| svg_texts(&read(p)))
            .filter(|t| t.contains("score over"))
            .collect();
        assert_eq!(
            titles,
            [
                "scale.f [T=f32] · score over a × b",
                "scale.scale [T=f32] · score over tpb"
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

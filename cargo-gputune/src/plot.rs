//! `report --plot DIR`: SVG pictures of the results.
//!
//! Per compile-time workload and runtime workload, the sample distributions of base and the
//! top variants (a strip plot of every kept sample over a box of the quartiles); per
//! compile-time workload, the score over one or two parameters of the tuned function (a heat
//! map, or a line for one parameter). Parameter names come from the `#[tune]` attribute kept
//! in the store, so labels such as `items_per_thread_4.tpb_128` split where the grammar says.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use gputune_grammar::TuneSpec;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::cli::Usage;
use crate::results::{Group, Ranked};
use crate::store::{Measurement, Store};

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
            let Some(svg) = samples_svg(g, &ranked, &rt, top)? else {
                continue;
            };
            let path = dir.join(file_name(g, Some(&rt), "samples"));
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
        let Some(svg) = score_svg(g, &ranked, spec, &chosen)? else {
            continue;
        };
        let path = dir.join(file_name(g, None, "score"));
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

/// `package.bench.function.ct[.rt].arch.HASH.kind.svg`: readable parts made safe for any file
/// system, and a hash of the exact key (device included) so that parts which sanitise alike, or
/// two devices of one architecture, never overwrite each other. Stable across runs because
/// the hash is FNV-1a, not std's randomly seeded hasher.
fn file_name(g: &Group, rt: Option<&str>, kind: &str) -> String {
    let mut key = vec![
        g.package.as_str(),
        g.bench.as_str(),
        g.function.as_str(),
        g.device.as_str(),
        g.ct_workload.as_str(),
    ];
    key.extend(rt);
    let ct = if g.ct_workload == "*" {
        "any"
    } else {
        &g.ct_workload
    };
    let mut parts = vec![
        safe(&g.package),
        safe(&g.bench),
        safe(&g.function),
        safe(ct),
    ];
    parts.extend(rt.map(safe));
    parts.push(safe(&g.arch));
    parts.push(format!("{:08x}", fnv1a(&key.join("\u{1f}"))));
    parts.push(kind.to_string());
    format!("{}.svg", parts.join("."))
}

/// ASCII letters, digits, `-` and `_`, at most 48 characters; the rest becomes `_`.
fn safe(part: &str) -> String {
    let mut s = String::new();
    for c in part.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        };
        if !(c == '_' && s.ends_with('_')) {
            s.push(c);
        }
    }
    let s: String = s.trim_matches('_').chars().take(48).collect();
    if s.is_empty() {
        "_".into()
    } else {
        s
    }
}

fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Categories at 0, 1, … n−1, each labelled by the caller's formatter; plotters' own numeric
/// axes would put ticks at "nice" numbers between them.
#[derive(Debug, Clone, Copy)]
struct Categories(usize);

impl Ranged for Categories {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let Range { start, end } = self.range();
        let t = (value - start) / (end - start);
        limit.0 + (t * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let step = self.0.div_ceil(hint.max_num_points().max(1)).max(1);
        (0..self.0).step_by(step).map(|i| i as f64).collect()
    }

    fn range(&self) -> Range<f64> {
        -0.5..self.0.max(1) as f64 - 0.5
    }
}

/// The label of category `v` of `labels`, empty between categories.
fn category(labels: &[String], v: f64) -> String {
    let i = v.round();
    if (v - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    labels.get(i as usize).cloned().unwrap_or_default()
}

/// Series colours (Tableau 10 without its grey, which base uses).
const PALETTE: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const BASE_COLOR: RGBColor = RGBColor(90, 90, 90);
const FAILED_COLOR: RGBColor = RGBColor(190, 190, 190);
const FONT: &str = "sans-serif";

/// Dots drawn per variant: more only make the file heavy; the box uses every sample.
const MAX_DOTS: usize = 800;

/// A time unit that puts `max` (seconds) under a thousand.
fn unit(max: f64) -> (&'static str, f64) {
    if max < 1e-6 {
        ("ns", 1e9)
    } else if max < 1e-3 {
        ("µs", 1e6)
    } else if max < 1.0 {
        ("ms", 1e3)
    } else {
        ("s", 1.0)
    }
}

/// The `q` quantile of sorted `v` (linear interpolation).
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// Width in pixels that plotters' SVG text of `chars` characters at `size` takes, roughly:
/// SVG has no text metrics, so label areas are sized from the longest label.
fn text_width(chars: usize, size: f64) -> u32 {
    (chars as f64 * size * 0.5).ceil() as u32
}

struct Row<'a> {
    label: String,
    color: RGBColor,
    samples: Vec<f64>,
    measurement: &'a Measurement,
}

/// The strip plot of base and the `top` best scored variants on runtime workload `rt`; `None`
/// when none of them has samples there.
fn samples_svg(g: &Group, ranked: &[Ranked], rt: &str, top: usize) -> Result<Option<String>> {
    let ok_on = |label: &str| {
        g.variants
            .get(label)?
            .iter()
            .find(|m| m.rt_workload == rt && m.status == "ok" && !m.samples.is_empty())
    };
    let base = ok_on("base");
    let mut rows: Vec<Row<'_>> = Vec::new();
    if let Some(m) = base {
        rows.push(Row {
            label: "base".into(),
            color: BASE_COLOR,
            samples: sorted(&m.samples),
            measurement: m,
        });
    }
    let best = ranked
        .iter()
        .filter(|r| r.variant != "base" && r.score.is_some())
        .take(top);
    for (i, r) in best.enumerate() {
        let Some(m) = ok_on(&r.variant) else {
            continue;
        };
        let speedup = match (base.and_then(|b| b.center), m.center) {
            (Some(b), Some(v)) if v > 0.0 => format!(" ({:.2}×)", b / v),
            _ => String::new(),
        };
        rows.push(Row {
            label: format!("{}{speedup}", r.variant),
            color: PALETTE[i % PALETTE.len()],
            samples: sorted(&m.samples),
            measurement: m,
        });
    }
    // Only non-finite samples (a broken timer) leave nothing to draw.
    rows.retain(|r| !r.samples.is_empty());
    if rows.is_empty() {
        return Ok(None);
    }
    let lo = rows
        .iter()
        .filter_map(|r| r.samples.first())
        .fold(f64::INFINITY, |a, &b| a.min(b));
    let hi = rows
        .iter()
        .filter_map(|r| r.samples.last())
        .fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let (unit_name, scale) = unit(hi);
    let pad = ((hi - lo) * 0.05)
        .max(hi.abs() * 0.01)
        .max(f64::MIN_POSITIVE);
    let x_range = ((lo - pad).max(0.0) * scale)..((hi + pad) * scale);
    let x_mid = (x_range.start + x_range.end) / 2.0;

    let n = rows.len();
    let label_chars = rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(4);
    let y_area = text_width(label_chars, 13.0).clamp(60, 420) + 16;
    let (width, height) = (960 + y_area, 150 + 70 * n as u32);
    let labels: Vec<String> = rows.iter().rev().map(|r| r.label.clone()).collect();
    let y_of = |i: usize| (n - 1 - i) as f64;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let title = format!("{}.{} [{}] · {}", g.bench, g.function, g.ct_workload, rt);
        let root = root.titled(&title, (FONT, 20))?;
        root.draw_text(
            &format!(
                "{} on {} ({}): base and the top {} variant(s) by score; dashed: base median",
                g.package,
                g.device,
                g.arch,
                rows.iter().filter(|r| r.label != "base").count()
            ),
            &(FONT, 13).into_font().color(&BASE_COLOR),
            (12, 0),
        )?;
        let formatter = |v: &f64| category(&labels, *v);
        let mut chart = ChartBuilder::on(&root)
            .margin_top(24)
            .margin_left(8)
            .margin_right(24)
            .margin_bottom(8)
            .x_label_area_size(44)
            .y_label_area_size(y_area)
            .build_cartesian_2d(x_range, Categories(n))?;
        chart
            .configure_mesh()
            .y_labels(n)
            .y_label_formatter(&formatter)
            .x_desc(format!("time per sample ({unit_name})"))
            .label_style((FONT, 13))
            .light_line_style(TRANSPARENT)
            .draw()?;
        if let Some(b) = base.and_then(|b| b.center) {
            let x = b * scale;
            chart.draw_series(DashedLineSeries::new(
                [(x, -0.5), (x, n as f64 - 0.5)],
                6,
                4,
                BASE_COLOR.stroke_width(1),
            ))?;
        }
        for (i, row) in rows.iter().enumerate() {
            let y = y_of(i);
            let dots = thin(&row.samples, MAX_DOTS);
            chart.draw_series(dots.iter().enumerate().map(|(k, &s)| {
                Circle::new(
                    (s * scale, y + jitter(k) * 0.5),
                    2,
                    row.color.mix(0.35).filled(),
                )
            }))?;
            let q = |p: f64| quantile(&row.samples, p) * scale;
            let (q1, med, q3) = (q(0.25), q(0.5), q(0.75));
            let (min, max) = (q(0.0), q(1.0));
            let stroke = row.color.stroke_width(2);
            chart.draw_series([
                PathElement::new([(min, y), (q1, y)], row.color.stroke_width(1)),
                PathElement::new([(q3, y), (max, y)], row.color.stroke_width(1)),
                PathElement::new(
                    [(med, y - 0.32), (med, y + 0.32)],
                    row.color.stroke_width(3),
                ),
            ])?;
            chart.draw_series([Rectangle::new([(q1, y - 0.3), (q3, y + 0.3)], stroke)])?;
            let note = format!(
                "n={} median {} {unit_name}",
                row.measurement.samples.len(),
                four_digits(med)
            );
            // Boxes near the right edge get their note on their left, so it is not cut off.
            let (at, anchor) = if min > x_mid {
                (max, HPos::Right)
            } else {
                (min, HPos::Left)
            };
            chart.draw_series([Text::new(
                note,
                (at, y + 0.34),
                (FONT, 11)
                    .into_font()
                    .color(&BASE_COLOR)
                    .pos(Pos::new(anchor, VPos::Bottom)),
            )])?;
        }
        root.present()?;
    }
    Ok(Some(svg))
}

/// `v` with four significant digits for values from 1 to 9999, the range a unit puts times in.
fn four_digits(v: f64) -> String {
    let decimals = match v.abs() {
        a if a >= 1000.0 => 0,
        a if a >= 100.0 => 1,
        a if a >= 10.0 => 2,
        _ => 3,
    };
    format!("{v:.decimals$}")
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// At most `max` of sorted `v`, evenly spaced in rank, so the thinned dots keep the shape.
fn thin(v: &[f64], max: usize) -> Vec<f64> {
    if v.len() <= max || max < 2 {
        return v.to_vec();
    }
    (0..max).map(|i| v[i * (v.len() - 1) / (max - 1)]).collect()
}

/// A reproducible vertical offset in [−0.5, 0.5): the golden-ratio sequence spreads dots
/// evenly without a random generator, so a rerun draws the same picture.
fn jitter(k: usize) -> f64 {
    ((k as f64 + 1.0) * 0.618_033_988_749_895).fract() - 0.5
}

/// The values of `label`'s parameters, split at `.name_` of the next parameter in declaration
/// order (a value may itself hold `_` or `.`).
fn split_label(label: &str, names: &[&str]) -> Option<Vec<String>> {
    let mut rest = label;
    let mut values = Vec::new();
    for (i, name) in names.iter().enumerate() {
        rest = rest.strip_prefix(name)?.strip_prefix('_')?;
        let end = match names.get(i + 1) {
            Some(next) => rest.find(&format!(".{next}_"))?,
            None => rest.len(),
        };
        values.push(rest[..end].to_string());
        rest = &rest[end..];
        if i + 1 < names.len() {
            rest = rest.strip_prefix('.')?;
        }
    }
    Some(values)
}

/// One cell of the score plot: the best scored variant there, and how many failed.
#[derive(Default)]
struct Cell {
    best: Option<(f64, bool, String)>,
    failed: usize,
}

/// The score of `g` over the parameters `chosen` (indices into `spec.params`); `None` when no
/// variant's label fits the attribute.
fn score_svg(
    g: &Group,
    ranked: &[Ranked],
    spec: &TuneSpec,
    chosen: &[usize],
) -> Result<Option<String>> {
    if chosen.is_empty() {
        return Ok(None);
    }
    let names: Vec<&str> = spec.params.iter().map(|p| p.name.as_str()).collect();
    // Axis values in declared order; a stored value the attribute no longer declares goes last.
    let mut axes: Vec<Vec<String>> = chosen
        .iter()
        .map(|&i| {
            spec.params[i]
                .values
                .iter()
                .map(|v| v.to_string())
                .collect()
        })
        .collect();
    let mut cells: BTreeMap<Vec<usize>, Cell> = BTreeMap::new();
    for r in ranked.iter().filter(|r| r.variant != "base") {
        let Some(values) = split_label(&r.variant, &names) else {
            continue;
        };
        let key: Vec<usize> = chosen
            .iter()
            .zip(axes.iter_mut())
            .map(|(&i, axis)| {
                let v = &values[i];
                axis.iter().position(|a| a == v).unwrap_or_else(|| {
                    axis.push(v.clone());
                    axis.len() - 1
                })
            })
            .collect();
        let cell = cells.entry(key).or_default();
        match &r.score {
            Some(s) => {
                if !matches!(&cell.best, Some((b, _, _)) if *b >= s.score) {
                    cell.best = Some((s.score, s.significant, r.variant.clone()));
                }
            }
            None => cell.failed += 1,
        }
    }
    if cells.is_empty() {
        return Ok(None);
    }
    let others: Vec<&str> = (0..names.len())
        .filter(|i| !chosen.contains(i))
        .map(|i| names[i])
        .collect();
    let over: Vec<&str> = chosen.iter().map(|&i| names[i]).collect();
    let title = format!(
        "{}.{} [{}] · score over {}",
        g.bench,
        g.function,
        g.ct_workload,
        over.join(" × ")
    );
    let best = cells
        .values()
        .filter_map(|c| c.best.as_ref())
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|b| format!(", best {} {}", b.2, score_text(b)))
        .unwrap_or_default();
    let subtitle = format!(
        "{} on {} ({}): score against base (1 = base){best}{}",
        g.package,
        g.device,
        g.arch,
        if others.is_empty() {
            String::new()
        } else {
            format!(
                "; each {} is the best over {}",
                if chosen.len() == 2 { "cell" } else { "point" },
                others.join(", ")
            )
        }
    );
    let svg = if chosen.len() == 2 {
        heat_map(&title, &subtitle, &over, &axes, &cells)?
    } else {
        line(&title, &subtitle, over[0], &axes[0], &cells)?
    };
    Ok(Some(svg))
}

/// Red (slower) through near-white (base) to blue (faster), symmetric in log2(score) up to
/// ±`span`.
fn score_color(score: f64, span: f64) -> RGBColor {
    let t = (score.log2() / span).clamp(-1.0, 1.0);
    let mid = (247.0, 247.0, 247.0);
    let end = if t < 0.0 {
        (178.0, 24.0, 43.0)
    } else {
        (33.0, 102.0, 172.0)
    };
    let a = t.abs();
    let mix = |m: f64, e: f64| (m + (e - m) * a).round() as u8;
    RGBColor(mix(mid.0, end.0), mix(mid.1, end.1), mix(mid.2, end.2))
}

fn score_text(best: &(f64, bool, String)) -> String {
    format!("{:.2}{}", best.0, if best.1 { "" } else { "~" })
}

fn heat_map(
    title: &str,
    subtitle: &str,
    names: &[&str],
    axes: &[Vec<String>],
    cells: &BTreeMap<Vec<usize>, Cell>,
) -> Result<String> {
    let (nx, ny) = (axes[0].len(), axes[1].len());
    let y_chars = axes[1].iter().map(|v| v.chars().count()).max().unwrap_or(1);
    let y_area = text_width(y_chars, 13.0).clamp(30, 300) + 40;
    let cell_w = (720 / nx.max(1) as u32).clamp(18, 90);
    let cell_h = (520 / ny.max(1) as u32).clamp(14, 60);
    let (plot_w, plot_h) = (cell_w * nx as u32, cell_h * ny as u32);
    let bar_w = 110;
    let (width, height) = ((y_area + plot_w + bar_w + 40).max(640), plot_h + 190);
    let annotate = cell_w >= 40 && cell_h >= 18;
    let scores: Vec<f64> = cells
        .values()
        .filter_map(|c| c.best.as_ref().map(|b| b.0))
        .collect();
    let span = scores.iter().map(|s| s.log2().abs()).fold(0.1f64, f64::max);
    let winner = cells
        .iter()
        .filter_map(|(k, c)| c.best.as_ref().map(|b| (k, b.0)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k.clone());

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, (FONT, 20))?;
        root.draw_text(
            subtitle,
            &(FONT, 13).into_font().color(&BASE_COLOR),
            (12, 0),
        )?;
        let (_, bottom) = root.dim_in_pixel();
        root.draw_text(
            "blue: faster than base, red: slower; ~ within noise; grey: failed, not scored; blank: not measured; black frame: best",
            &(FONT, 12).into_font().color(&BASE_COLOR),
            (12, bottom as i32 - 18),
        )?;
        let (left, right) = root.split_horizontally(width - bar_w);
        let fx = |v: &f64| category(&axes[0], *v);
        let fy = |v: &f64| category(&axes[1], *v);
        let mut chart = ChartBuilder::on(&left)
            .margin_top(24)
            .margin_left(8)
            .margin_right(16)
            .margin_bottom(28)
            .x_label_area_size(44)
            .y_label_area_size(y_area)
            .build_cartesian_2d(Categories(nx), Categories(ny))?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(nx.min(40))
            .y_labels(ny.min(40))
            .x_label_formatter(&fx)
            .y_label_formatter(&fy)
            .x_desc(names[0])
            .y_desc(names[1])
            .label_style((FONT, 13))
            .draw()?;
        for (key, cell) in cells {
            let (x, y) = (key[0] as f64, key[1] as f64);
            let corners = [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)];
            let (color, text) = match &cell.best {
                Some(best) => (score_color(best.0, span), score_text(best)),
                None => (FAILED_COLOR, "failed".to_string()),
            };
            chart.draw_series([Rectangle::new(corners, color.filled())])?;
            if annotate {
                let ink = if cell
                    .best
                    .as_ref()
                    .is_some_and(|b| (b.0.log2() / span).abs() > 0.6)
                {
                    WHITE
                } else {
                    BLACK
                };
                chart.draw_series([Text::new(
                    text,
                    (x, y),
                    (FONT, 12)
                        .into_font()
                        .color(&ink)
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                )])?;
            } else if cell.best.is_none() {
                chart.draw_series([Cross::new((x, y), 4, BASE_COLOR.stroke_width(1))])?;
            }
        }
        if let Some(k) = &winner {
            let (x, y) = (k[0] as f64, k[1] as f64);
            chart.draw_series([Rectangle::new(
                [(x - 0.47, y - 0.47), (x + 0.47, y + 0.47)],
                BLACK.stroke_width(3),
            )])?;
        }
        color_bar(&right, span, plot_h)?;
        root.present()?;
    }
    Ok(svg)
}

/// The heat map's key: score on a log scale from 2^−span to 2^span.
fn color_bar(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    span: f64,
    plot_h: u32,
) -> Result<()> {
    let format = |v: &f64| {
        let s = format!("{:.2}", v.exp2());
        format!("{}×", s.trim_end_matches('0').trim_end_matches('.'))
    };
    let (_, h) = area.dim_in_pixel();
    let mut bar = ChartBuilder::on(area)
        .margin_top(24)
        .margin_bottom((h.saturating_sub(plot_h + 24 + 44)).max(28))
        .margin_right(8)
        .y_label_area_size(0)
        .right_y_label_area_size(56)
        .build_cartesian_2d(0.0..1.0, -span..span)?;
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(7)
        .y_label_formatter(&format)
        .label_style((FONT, 12))
        .draw()?;
    let steps = 64;
    bar.draw_series((0..steps).map(|i| {
        let a = -span + 2.0 * span * i as f64 / steps as f64;
        let b = -span + 2.0 * span * (i + 1) as f64 / steps as f64;
        Rectangle::new(
            [(0.0, a), (1.0, b)],
            score_color(((a + b) / 2.0).exp2(), span).filled(),
        )
    }))?;
    Ok(())
}

fn line(
    title: &str,
    subtitle: &str,
    name: &str,
    axis: &[String],
    cells: &BTreeMap<Vec<usize>, Cell>,
) -> Result<String> {
    let nx = axis.len();
    let points: Vec<(f64, &(f64, bool, String))> = cells
        .iter()
        .filter_map(|(k, c)| c.best.as_ref().map(|b| (k[0] as f64, b)))
        .collect();
    let failed: Vec<f64> = cells
        .iter()
        .filter(|(_, c)| c.best.is_none())
        .map(|(k, _)| k[0] as f64)
        .collect();
    let lo = points.iter().map(|p| p.1 .0).fold(1.0f64, f64::min);
    let hi = points.iter().map(|p| p.1 .0).fold(1.0f64, f64::max);
    let pad = ((hi - lo) * 0.1).max(0.05);
    let y_range = (lo - pad).max(0.0)..hi + pad;
    let y_floor = y_range.start;
    let width = (nx as u32 * 48).clamp(720, 1400) + 120;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 560)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, (FONT, 20))?;
        root.draw_text(
            subtitle,
            &(FONT, 13).into_font().color(&BASE_COLOR),
            (12, 0),
        )?;
        let (_, bottom) = root.dim_in_pixel();
        root.draw_text(
            "● significant  ○ within noise  × failed, not scored; dashed: base = 1",
            &(FONT, 12).into_font().color(&BASE_COLOR),
            (12, bottom as i32 - 18),
        )?;
        let fx = |v: &f64| category(axis, *v);
        let mut chart = ChartBuilder::on(&root)
            .margin_top(24)
            .margin_left(8)
            .margin_right(24)
            .margin_bottom(28)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(Categories(nx), y_range)?;
        chart
            .configure_mesh()
            .x_labels(nx.min(40))
            .x_label_formatter(&fx)
            .x_desc(name)
            .y_desc("score (× base)")
            .label_style((FONT, 13))
            .light_line_style(TRANSPARENT)
            .draw()?;
        chart.draw_series(DashedLineSeries::new(
            [(-0.5, 1.0), (nx as f64 - 0.5, 1.0)],
            6,
            4,
            BASE_COLOR.stroke_width(1),
        ))?;
        chart.draw_series(LineSeries::new(
            points.iter().map(|(x, b)| (*x, b.0)),
            PALETTE[0].stroke_width(2),
        ))?;
        let above = |text: String, dy: i32, color: &RGBColor| {
            Text::new(
                text,
                (0, dy),
                (FONT, 11)
                    .into_font()
                    .color(color)
                    .pos(Pos::new(HPos::Center, VPos::Bottom)),
            )
        };
        for (x, best) in &points {
            let fill = if best.1 {
                PALETTE[0].filled()
            } else {
                WHITE.filled()
            };
            let at = EmptyElement::at((*x, best.0))
                + Circle::new((0, 0), 5, fill)
                + Circle::new((0, 0), 5, PALETTE[0].stroke_width(2));
            if nx <= 32 {
                chart.draw_series([at + above(score_text(best), -9, &BLACK)])?;
            } else {
                chart.draw_series([at])?;
            }
        }
        for x in &failed {
            chart.draw_series([EmptyElement::at((*x, y_floor))
                + Cross::new((0, -6), 5, PALETTE[3].stroke_width(2))
                + above("failed".into(), -14, &PALETTE[3])])?;
        }
        root.present()?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use resvg::{tiny_skia, usvg};

    const RT_A: &str = "Elements{io}=2^20";
    const RT_B: &str = "Elements{io}=2^24";

    /// Thirty samples within ±1.5 % of `center`, in a scrambled order.
    fn measurement(function: &str, variant: &str, rt: &str, center: Option<f64>) -> Measurement {
        let samples: Vec<f64> = match center {
            Some(c) => (0..30)
                .map(|k| c * (1.0 + 0.03 * (f64::from(k * 7 % 11) / 10.0 - 0.5)))
                .collect(),
            None => Vec::new(),
        };
        Measurement {
            revision: "r1".into(),
            device: "NVIDIA H100 80GB HBM3".into(),
            arch: "sm_90".into(),
            package: "kernels".into(),
            bench: "scale".into(),
            function: function.into(),
            ct_workload: "T=f32".into(),
            variant: variant.into(),
            rt_workload: rt.into(),
            rt_weight: if rt == RT_A { 0.6 } else { 0.98 },
            status: if center.is_some() {
                "ok"
            } else {
                "verify_failed"
            }
            .into(),
            message: None,
            center: samples.get(samples.len() / 2).map(|_| {
                let mut s = samples.clone();
                s.sort_by(f64::total_cmp);
                s[s.len() / 2]
            }),
            noise: Some(0.01),
            bandwidth: None,
            samples,
            build_seconds: Some(1.0),
            run_seconds: Some(0.5),
        }
    }

    /// `scale` tuned over `items_per_thread` × `tpb`: four variants measured on two workloads
    /// (two faster than base, one slower, one about as fast), one that failed verification
    /// and one whose build failed.
    fn two_param_group() -> (Vec<Group>, Specs) {
        let f = "scale";
        let mut ms = Vec::new();
        for (rt, unit) in [(RT_A, 1e-4), (RT_B, 1.6e-3)] {
            for (variant, factor) in [
                ("base", 1.0),
                ("items_per_thread_1.tpb_64", 0.5),
                ("items_per_thread_1.tpb_128", 0.8),
                ("items_per_thread_2.tpb_64", 1.25),
                ("items_per_thread_2.tpb_128", 0.9),
            ] {
                ms.push(measurement(f, variant, rt, Some(unit * factor)));
            }
            ms.push(measurement(f, "items_per_thread_4.tpb_64", rt, None));
        }
        let mut failed = measurement(f, "items_per_thread_4.tpb_128", "*", None);
        failed.status = "build_failed".into();
        ms.push(failed);
        let spec = gputune_grammar::parse_str(
            "items_per_thread = [1, 2, 4], tpb = pow2(6..=7), base(items_per_thread = 2, tpb = 128)",
        )
        .expect("valid attribute");
        let specs = Specs::from([(("kernels".to_string(), f.to_string()), spec)]);
        (crate::results::groups(ms, false), specs)
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("gputune-plot-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// The contents of every `<text>` element.
    fn svg_texts(svg: &str) -> Vec<String> {
        let doc = usvg::roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
        doc.descendants()
            .filter(|n| n.tag_name().name() == "text")
            .map(|n| n.text().unwrap_or_default().trim().to_string())
            .collect()
    }

    /// Renders `svg` (without text: no fonts are loaded, so only shapes count) and returns its
    /// size and the pixels that are not the white background, and those that are coloured.
    struct Rendered {
        width: u32,
        height: u32,
        inked: usize,
        colored: usize,
        bluish: usize,
        reddish: usize,
    }

    fn render(svg: &str) -> Rendered {
        let tree = usvg::Tree::from_str(svg, &usvg::Options::default()).expect("usvg parses it");
        let size = tree.size().to_int_size();
        let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).expect("a pixmap");
        resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
        let mut r = Rendered {
            width: size.width(),
            height: size.height(),
            inked: 0,
            colored: 0,
            bluish: 0,
            reddish: 0,
        };
        for p in pixmap.pixels() {
            let (red, green, blue) = (
                i32::from(p.red()),
                i32::from(p.green()),
                i32::from(p.blue()),
            );
            if p.alpha() > 0 && red.min(green).min(blue) < 235 {
                r.inked += 1;
            }
            if red.max(green).max(blue) - red.min(green).min(blue) > 40 {
                r.colored += 1;
            }
            if blue > red + 60 {
                r.bluish += 1;
            }
            if red > blue + 60 {
                r.reddish += 1;
            }
        }
        r
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).expect("the plot is readable")
    }

    #[test]
    fn sample_plots_render_and_name_their_variants_and_workloads() {
        let (groups, specs) = two_param_group();
        let dir = temp_dir("samples").join("nested/plots");
        let plots = write(&dir, &groups, &specs, 3, &[]).expect("plots are written");
        assert!(plots.notes.is_empty(), "{:?}", plots.notes);
        let samples: Vec<&PathBuf> = plots
            .files
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".samples.svg"))
            .collect();
        assert_eq!(
            samples.len(),
            2,
            "one per runtime workload: {:?}",
            plots.files
        );
        assert_eq!(
            plots.files.len(),
            3,
            "and one score plot: {:?}",
            plots.files
        );
        let ranked = groups[0].ranked();
        let top: Vec<&str> = ranked
            .iter()
            .filter(|r| r.variant != "base")
            .take(3)
            .map(|r| r.variant.as_str())
            .collect();
        assert_eq!(
            top,
            [
                "items_per_thread_1.tpb_64",
                "items_per_thread_1.tpb_128",
                "items_per_thread_2.tpb_128"
            ]
        );
        for (path, (rt, unit)) in samples.iter().zip([(RT_A, "µs"), (RT_B, "ms")]) {
            assert!(path.starts_with(&dir));
            let svg = read(path);
            let texts = svg_texts(&svg);
            let title = format!("scale.scale [T=f32] · {rt}");
            assert!(texts.contains(&title), "{title} not in {texts:?}");
            assert!(texts.iter().any(|t| t == "base"), "{texts:?}");
            for label in &top {
                assert!(
                    texts.iter().any(|t| t.starts_with(&format!("{label} ("))),
                    "{label} not in {texts:?}"
                );
            }
            // The speed-up on this workload sits next to the label.
            assert!(
                texts.contains(&"items_per_thread_1.tpb_64 (2.00×)".to_string()),
                "{texts:?}"
            );
            // Beyond --top, and failed variants, are not drawn.
            for absent in ["items_per_thread_2.tpb_64", "items_per_thread_4"] {
                assert!(
                    !texts.iter().any(|t| t.contains(absent)),
                    "{absent} drawn: {texts:?}"
                );
            }
            let axis = format!("time per sample ({unit})");
            assert!(texts.contains(&axis), "{axis} not in {texts:?}");
            let r = render(&svg);
            assert!(
                r.width >= 800 && r.height >= 300,
                "{}×{}",
                r.width,
                r.height
            );
            let share = r.inked as f64 / f64::from(r.width * r.height);
            assert!(share > 0.02, "only {share:.4} of the pixels are drawn");
            assert!(
                r.colored > 1000,
                "the variants' dots and boxes are missing: {}",
                r.colored
            );
        }
        let _ = std::fs::remove_dir_all(temp_dir("samples"));
    }

    #[test]
    fn the_score_heat_map_renders_each_scored_cell_and_marks_failures() {
        let (groups, specs) = two_param_group();
        let dir = temp_dir("heat");
        let plots = write(&dir, &groups, &specs, 5, &[]).expect("plots are written");
        let score: Vec<&PathBuf> = plots
            .files
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".score.svg"))
            .collect();
        assert_eq!(score.len(), 1, "{:?}", plots.files);
        let svg = read(score[0]);
        let texts = svg_texts(&svg);
        assert!(
            texts.contains(&"scale.scale [T=f32] · score over items_per_thread × tpb".to_string()),
            "{texts:?}"
        );
        for axis in ["items_per_thread", "tpb", "1", "2", "4", "64", "128"] {
            assert!(texts.iter().any(|t| t == axis), "{axis} not in {texts:?}");
        }
        // Every scored variant has its cell, annotated with its score; the two failed ones
        // are drawn as failed, not scored.
        let ranked = groups[0].ranked();
        let scored: Vec<_> = ranked.iter().filter_map(|r| r.score.as_ref()).collect();
        assert_eq!(scored.len(), 5, "base and four variants");
        for s in scored.iter().filter(|s| s.score != 1.0) {
            let want = format!("{:.2}{}", s.score, if s.significant { "" } else { "~" });
            assert!(texts.contains(&want), "{want} not in {texts:?}");
        }
        assert!(
            !texts.iter().any(|t| t == "1.00"),
            "base is no cell: {texts:?}"
        );
        assert!(
            texts.iter().any(|t| t == "1×"),
            "the colour bar is labelled: {texts:?}"
        );
        assert_eq!(
            texts.iter().filter(|t| *t == "failed").count(),
            2,
            "{texts:?}"
        );
        let r = render(&svg);
        assert!(
            r.width >= 600 && r.height >= 300,
            "{}×{}",
            r.width,
            r.height
        );
        let share = r.inked as f64 / f64::from(r.width * r.height);
        assert!(share > 0.1, "only {share:.4} of the pixels are drawn");
        // Faster cells are blue, the slower one red.
        assert!(
            r.bluish > 5000 && r.reddish > 2000,
            "{} blue, {} red",
            r.bluish,
            r.reddish
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn one_parameter_gets_a_line_with_failures_labelled() {
        let mut ms = Vec::new();
        for (variant, factor) in [
            ("base", 1.0),
            ("work_1", 0.25),
            ("work_2", 0.5),
            ("work_8", 1.1),
        ] {
            ms.push(measurement("spin", variant, RT_A, Some(1e-3 * factor)));
        }
        ms.push(measurement("spin", "work_4", RT_A, None));
        let groups = crate::results::groups(ms, false);
        let spec =
            gputune_grammar::parse_str("work = [1, 2, 4, 8], base(work = 8)").expect("valid");
        let specs = Specs::from([(("kernels".to_string(), "spin".to_string()), spec)]);
        let dir = temp_dir("line");
        let plots = write(&dir, &groups, &specs, 5, &[]).expect("plots are written");
        let score = plots
            .files
            .iter()
            .find(|p| p.to_string_lossy().ends_with(".score.svg"))
            .expect("a score plot");
        let svg = read(score);
        let texts = svg_texts(&svg);
        assert!(
            texts.contains(&"scale.spin [T=f32] · score over work".to_string()),
            "{texts:?}"
        );
        for want in ["work", "1", "2", "4", "8", "4.00", "2.00", "failed"] {
            assert!(texts.iter().any(|t| t == want), "{want} not in {texts:?}");
        }
        let r = render(&svg);
        assert!(
            r.colored > 500,
            "the line and its points are missing: {}",
            r.colored
        );
        let samples = plots
            .files
            .iter()
            .find(|p| p.to_string_lossy().ends_with(".samples.svg"))
            .expect("a samples plot");
        let rows = svg_texts(&read(samples));
        assert!(
            rows.iter().any(|t| t.contains("time per sample (ms)")),
            "{rows:?}"
        );
        for label in ["base", "work_1 (4.00×)", "work_2 (2.00×)", "work_8 (0.91×)"] {
            assert!(rows.iter().any(|t| t == label), "{label} not in {rows:?}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn three_param_group() -> (Vec<Group>, Specs) {
        let mut ms = vec![measurement("f", "base", RT_A, Some(1e-3))];
        for (a, b, c) in [(1, 1, 3), (1, 2, 3), (2, 1, 4), (2, 2, 4), (2, 2, 3)] {
            let center = 1e-3 / f64::from(a * b + c);
            ms.push(measurement(
                "f",
                &format!("a_{a}.b_{b}.c_{c}"),
                RT_A,
                Some(center),
            ));
        }
        let spec = gputune_grammar::parse_str(
            "a = [1, 2], b = [1, 2], c = [3, 4], base(a = 1, b = 1, c = 3)",
        )
        .expect("valid");
        let specs = Specs::from([(("kernels".to_string(), "f".to_string()), spec)]);
        (crate::results::groups(ms, false), specs)
    }

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
            texts
                .iter()
                .any(|t| t.ends_with(", best a_2.b_2.c_4 8.00; each cell is the best over b")),
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

    #[test]
    fn file_names_are_safe_distinct_and_stable() {
        let (groups, specs) = two_param_group();
        let dir = temp_dir("names");
        let first = write(&dir, &groups, &specs, 5, &[]).expect("written");
        let again = write(&dir, &groups, &specs, 5, &[]).expect("written");
        assert_eq!(first.files, again.files);
        let names: Vec<String> = first
            .files
            .iter()
            .map(|p| {
                p.file_name()
                    .expect("a name")
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(
            names[0],
            "kernels.scale.scale.T_f32.Elements_io_2_20.sm_90.99c57cf5.samples.svg"
        );
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(unique.len(), 3, "{names:?}");
        for n in &names {
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
                "{n}"
            );
        }
        // Another device of the same architecture gets its own files.
        let mut other = groups[0].clone();
        other.device = "NVIDIA H100 PCIe".into();
        assert_ne!(
            file_name(&groups[0], Some(RT_A), "samples"),
            file_name(&other, Some(RT_A), "samples")
        );
        assert_eq!(safe("*"), "_");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn labels_split_at_the_declared_parameter_names() {
        let split = |label: &str, names: &[&str]| split_label(label, names);
        assert_eq!(
            split("items_per_thread_4.tpb_128", &["items_per_thread", "tpb"]),
            Some(vec!["4".to_string(), "128".to_string()])
        );
        assert_eq!(
            split("load_ld_ca.v_1.x_-2", &["load", "v", "x"]),
            Some(vec!["ld_ca".into(), "1".into(), "-2".into()])
        );
        assert_eq!(
            split("s_a.b.t_true", &["s", "t"]),
            Some(vec!["a.b".into(), "true".into()])
        );
        assert_eq!(split("tpb_1", &["ipt"]), None);
        assert_eq!(split("ipt_1", &["ipt", "tpb"]), None);
    }

    #[test]
    fn non_finite_samples_are_left_out_not_a_panic() {
        let mut base = measurement("spin", "base", RT_A, Some(1e-3));
        base.samples = vec![f64::NAN; 5];
        let ms = vec![base, measurement("spin", "work_1", RT_A, Some(5e-4))];
        let groups = crate::results::groups(ms, false);
        let dir = temp_dir("nan");
        let plots = write(&dir, &groups, &Specs::new(), 5, &[]).expect("written");
        assert_eq!(plots.files.len(), 1, "{:?}", plots.files);
        assert!(
            plots.notes[0].contains("no #[tune] attribute"),
            "{:?}",
            plots.notes
        );
        let texts = svg_texts(&read(&plots.files[0]));
        assert!(texts.iter().any(|t| t.starts_with("work_1 (")), "{texts:?}");
        assert!(!texts.iter().any(|t| t == "base"), "{texts:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn units_and_quantiles() {
        assert_eq!(unit(5e-7).0, "ns");
        assert_eq!(unit(2e-4).0, "µs");
        assert_eq!(unit(0.5).0, "ms");
        assert_eq!(unit(3.0).0, "s");
        assert_eq!(four_digits(125.0), "125.0");
        assert_eq!(four_digits(1.5), "1.500");
        assert_eq!(four_digits(999.94), "999.9");
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.0), 1.0);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 1.0), 4.0);
        let many: Vec<f64> = (0..10_000).map(f64::from).collect();
        let few = thin(&many, MAX_DOTS);
        assert_eq!(few.len(), MAX_DOTS);
        assert_eq!((few[0], few[MAX_DOTS - 1]), (0.0, 9999.0));
    }
}

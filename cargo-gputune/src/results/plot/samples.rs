//! The sample distributions of base and the best variants on one runtime workload: a strip
//! plot of every kept sample over a box of the quartiles.

use anyhow::Result;
use gputune_protocol::Status;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{category, text_width, Categories, Frame, BASE_COLOR, FONT, PALETTE};
use crate::results::present::four_digits;
use crate::results::store::Measurement;
use crate::results::{Group, Ranked};

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

struct Row<'a> {
    label: String,
    color: RGBColor,
    samples: Vec<f64>,
    measurement: &'a Measurement,
}

/// The strip plot of base and the `top` best scored variants on runtime workload `rt`; `None`
/// when none of them has samples there.
pub(super) fn svg(g: &Group, ranked: &[Ranked], rt: &str, top: usize) -> Result<Option<String>> {
    let ok_on = |label: &str| {
        g.variants
            .get(label)?
            .iter()
            .find(|m| m.rt_workload == rt && m.status == Status::Ok && !m.samples.is_empty())
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
    let (lo, hi) = axis_span(&rows);
    let outside = |r: &Row<'_>| r.samples.iter().filter(|&&v| v < lo || v > hi).count();
    let clipped: usize = rows.iter().map(outside).sum();
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

    let title = format!("{}.{} [{}] · {}", g.bench, g.function, g.ct_workload, rt);
    let subtitle = format!(
        "{} on {}: base and the top {} variant(s) by score; dashed: base median{}",
        g.package,
        crate::results::present::device_name(g),
        rows.iter().filter(|r| r.label != "base").count(),
        if clipped > 0 {
            format!(
                "; axis cut at the largest q3 + 3·IQR, {} beyond it",
                if clipped == 1 {
                    "1 outlier".to_string()
                } else {
                    format!("{clipped} outliers")
                }
            )
        } else {
            String::new()
        }
    );
    let frame = Frame {
        size: (width, height),
        title: &title,
        subtitle: &subtitle,
        key: None,
    };
    let svg = frame.svg(|root| {
        let formatter = |v: &f64| category(&labels, *v);
        let mut chart = frame
            .axes(root, y_area, 24)
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
            let inside: Vec<f64> = row
                .samples
                .iter()
                .copied()
                .filter(|v| (lo..=hi).contains(v))
                .collect();
            let dots = thin(&inside, MAX_DOTS);
            chart.draw_series(dots.iter().enumerate().map(|(k, &s)| {
                Circle::new(
                    (s * scale, y + jitter(k) * 0.5),
                    2,
                    row.color.mix(0.35).filled(),
                )
            }))?;
            let q = |p: f64| quantile(&row.samples, p) * scale;
            let (q1, med, q3) = (q(0.25), q(0.5), q(0.75));
            // Whiskers end at the axis; what lies beyond it is counted in the note.
            let (min, max) = (q(0.0).max(lo * scale), q(1.0).min(hi * scale));
            let beyond = outside(row);
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
                "n={} median {} {unit_name}{}",
                row.measurement.samples.len(),
                four_digits(med),
                if beyond > 0 {
                    format!(
                        "; {beyond} beyond the axis (up to {} {unit_name})",
                        four_digits(q(1.0))
                    )
                } else {
                    String::new()
                }
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
        Ok(())
    })?;
    Ok(Some(svg))
}

/// The time axis: from the smallest q1 − 3·IQR to the largest q3 + 3·IQR of the rows (each
/// row's samples sorted), within the samples' range. Every box fits; a few extreme outliers
/// do not stretch the axis until the boxes are slivers.
fn axis_span(rows: &[Row<'_>]) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
    for r in rows {
        let (q1, q3) = (quantile(&r.samples, 0.25), quantile(&r.samples, 0.75));
        let iqr = q3 - q1;
        lo = lo.min(q1 - 3.0 * iqr);
        hi = hi.max(q3 + 3.0 * iqr);
        min = min.min(r.samples[0]);
        max = max.max(r.samples[r.samples.len() - 1]);
    }
    (lo.max(min), hi.min(max))
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::test_support::*;
    use super::super::{write, Specs};
    use super::*;

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
    fn a_few_extreme_outliers_do_not_stretch_the_time_axis() {
        // Boxes near 100 us and 50 us; three of base's samples took 5 ms.
        let mut base = measurement("spin", "base", RT_A, Some(1e-4));
        base.samples.extend([5e-3, 4e-3, 3e-3]);
        let ms = vec![base, measurement("spin", "work_1", RT_A, Some(5e-5))];
        let groups = crate::results::groups(ms, false);
        let dir = temp_dir("outliers");
        let plots = write(&dir, &groups, &Specs::new(), 5, &[]).expect("written");
        let texts = svg_texts(&read(&plots.files[0]));
        assert!(
            texts.contains(&"time per sample (µs)".to_string()),
            "the axis is scaled to the boxes, not to 5 ms: {texts:?}"
        );
        assert!(
            texts.iter().any(|t| t.ends_with("3 outliers beyond it")),
            "{texts:?}"
        );
        assert!(
            texts.iter().any(|t| t.starts_with("n=33 median")
                && t.ends_with("3 beyond the axis (up to 5000 µs)")),
            "{texts:?}"
        );
        // The variant's row has none beyond.
        assert!(
            texts
                .iter()
                .any(|t| t.starts_with("n=30 median") && !t.contains("beyond")),
            "{texts:?}"
        );
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

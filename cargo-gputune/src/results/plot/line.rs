//! The score over one parameter: a line through the best score at each value.

use std::collections::BTreeMap;

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::cell::{score_text, Cell};
use super::frame::{category, Categories, Frame, BASE_COLOR, FONT, PALETTE};

/// The line of `cells` over `axis`, the values of parameter `name`.
pub(super) fn svg(
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

    let frame = Frame {
        size: (width, 560),
        title,
        subtitle,
        key: Some("● significant  ○ within noise  × failed, not scored; dashed: base = 1"),
    };
    frame.svg(|root| {
        let fx = |v: &f64| category(axis, *v);
        let mut chart = frame
            .axes(root, 64, 24)
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
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::{write, Specs};

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
}

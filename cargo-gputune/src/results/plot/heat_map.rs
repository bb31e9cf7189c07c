//! The score over two parameters: a heat map of cells coloured by score, with its colour bar.

use std::collections::BTreeMap;

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::cell::{score_text, Cell};
use super::frame::{category, text_width, Area, Categories, Frame, BASE_COLOR, FAILED_COLOR, FONT};

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

/// The heat map of `cells` over `axes` (x, then y), named `names`.
pub(super) fn svg(
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

    let frame = Frame {
        size: (width, height),
        title,
        subtitle,
        key: Some(
            "blue: faster than base, red: slower; ~ within noise; grey: failed, not scored; blank: not measured; black frame: fastest found",
        ),
    };
    frame.svg(|root| {
        let (left, right) = root.split_horizontally(width - bar_w);
        let fx = |v: &f64| category(&axes[0], *v);
        let fy = |v: &f64| category(&axes[1], *v);
        let mut chart = frame
            .axes(&left, y_area, 16)
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
        Ok(())
    })
}

/// The heat map's key: score on a log scale from 2^−span to 2^span.
fn color_bar(area: &Area<'_>, span: f64, plot_h: u32) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::super::test_support::*;
    use super::super::write;

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
}

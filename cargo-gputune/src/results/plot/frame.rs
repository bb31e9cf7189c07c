//! What every chart shares: the frame (size, title, subtitle, key line, margins around the
//! axes), categorical axes, colours and fonts.

use std::ops::Range;

use anyhow::Result;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;

/// A region of an SVG picture being drawn.
pub(super) type Area<'s> = DrawingArea<SVGBackend<'s>, Shift>;

/// One chart's frame: a white picture of `size` with `title`, a grey `subtitle` under it and,
/// when given, a grey `key` line at the bottom.
pub(super) struct Frame<'t> {
    /// Width and height in pixels.
    pub size: (u32, u32),
    /// The first line.
    pub title: &'t str,
    /// The line under the title.
    pub subtitle: &'t str,
    /// What the marks mean, for charts with more than one kind of mark.
    pub key: Option<&'t str>,
}

impl Frame<'_> {
    /// The SVG document: the frame, then `draw` on the area under the subtitle.
    pub fn svg(&self, draw: impl FnOnce(&Area<'_>) -> Result<()>) -> Result<String> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size).into_drawing_area();
            root.fill(&WHITE)?;
            let root = root.titled(self.title, (FONT, 20))?;
            root.draw_text(
                self.subtitle,
                &(FONT, 13).into_font().color(&BASE_COLOR),
                (12, 0),
            )?;
            if let Some(key) = self.key {
                let (_, bottom) = root.dim_in_pixel();
                root.draw_text(
                    key,
                    &(FONT, 12).into_font().color(&BASE_COLOR),
                    (12, bottom as i32 - 18),
                )?;
            }
            draw(&root)?;
            root.present()?;
        }
        Ok(svg)
    }

    /// A chart on `area` with `y_area` pixels for its y labels and `margin_right` before
    /// whatever is right of it; the bottom margin keeps the key line clear of the x labels.
    pub fn axes<'a, 'b, 's>(
        &self,
        area: &'a Area<'s>,
        y_area: u32,
        margin_right: u32,
    ) -> ChartBuilder<'a, 'b, SVGBackend<'s>> {
        let mut chart = ChartBuilder::on(area);
        chart
            .margin_top(24)
            .margin_left(8)
            .margin_right(margin_right)
            .margin_bottom(if self.key.is_some() { 28 } else { 8 })
            .x_label_area_size(44)
            .y_label_area_size(y_area);
        chart
    }
}

/// Categories at 0, 1, … n−1, each labelled by the caller's formatter; plotters' own numeric
/// axes would put ticks at "nice" numbers between them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Categories(pub(super) usize);

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
pub(super) fn category(labels: &[String], v: f64) -> String {
    let i = v.round();
    if (v - i).abs() > 1e-6 || i < 0.0 {
        return String::new();
    }
    labels.get(i as usize).cloned().unwrap_or_default()
}

/// Series colours (Tableau 10 without its grey, which base uses).
pub(super) const PALETTE: [RGBColor; 9] = [
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
/// Base, and text that explains rather than labels.
pub(super) const BASE_COLOR: RGBColor = RGBColor(90, 90, 90);
/// Variants that failed and have no score.
pub(super) const FAILED_COLOR: RGBColor = RGBColor(190, 190, 190);
pub(super) const FONT: &str = "sans-serif";

/// Width in pixels that plotters' SVG text of `chars` characters at `size` takes, roughly:
/// SVG has no text metrics, so label areas are sized from the longest label.
pub(super) fn text_width(chars: usize, size: f64) -> u32 {
    (chars as f64 * size * 0.5).ceil() as u32
}

//! Time against energy per launch, one dot per variant, for groups that measured energy
//! (`search --objective energy|edp`): the Pareto front (no variant both faster and more
//! frugal) joined by a line, base marked, the time and energy winners named.

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::frame::{Frame, BASE_COLOR, FONT, PALETTE};
use crate::results::objective::{pareto_front, Objective, Point};
use crate::results::{present, Group};

/// A unit that puts `max` under a thousand: `(name, multiplier)`, for seconds or joules.
fn unit(max: f64, names: [&'static str; 4]) -> (&'static str, f64) {
    if max < 1e-6 {
        (names[0], 1e9)
    } else if max < 1e-3 {
        (names[1], 1e6)
    } else if max < 1.0 {
        (names[2], 1e3)
    } else {
        (names[3], 1.0)
    }
}

/// The picture of `g`'s time × energy, or `None` when it measured no energy.
pub(super) fn svg(g: &Group) -> Result<Option<String>> {
    let points = g.points();
    if points.is_empty() {
        return Ok(None);
    }
    let front = pareto_front(&points);
    let max_t = points.iter().map(|p| p.1.time).fold(0.0, f64::max);
    let max_e = points.iter().map(|p| p.1.energy).fold(0.0, f64::max);
    let (tu, ts) = unit(max_t, ["ns", "µs", "ms", "s"]);
    let (eu, es) = unit(max_e, ["nJ", "µJ", "mJ", "J"]);
    let xy = |p: &Point| (p.time * ts, p.energy * es);
    let span = |v: &mut dyn Iterator<Item = f64>| {
        let (lo, hi) = v.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
        let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.01).max(1e-12);
        (lo - pad).max(0.0)..hi + pad
    };
    let x_range = span(&mut points.iter().map(|p| xy(&p.1).0));
    let y_range = span(&mut points.iter().map(|p| xy(&p.1).1));
    let mut front_line: Vec<(f64, f64)> = points
        .iter()
        .filter(|(l, _)| front.contains(l))
        .map(|(_, p)| xy(p))
        .collect();
    front_line.sort_by(|a, b| a.0.total_cmp(&b.0));
    let winner = |o: Objective| g.winner_by(o).map(|w| w.variant);
    let (by_time, by_energy) = (winner(Objective::Time), winner(Objective::Energy));
    let title = format!("time × energy: {}", present::title(g));
    let subtitle = format!(
        "{} variants with energy; winner by time: {}; by energy: {}",
        points.len(),
        by_time.as_deref().unwrap_or("none"),
        by_energy.as_deref().unwrap_or("none")
    );
    let frame = Frame {
        size: (900, 600),
        title: &title,
        subtitle: &subtitle,
        key: Some("● on the Pareto front (joined)  ○ dominated  ■ base; energy of the whole board per launch"),
    };
    let svg = frame.svg(|root| {
        let mut chart = frame
            .axes(root, 72, 24)
            .build_cartesian_2d(x_range, y_range)?;
        chart
            .configure_mesh()
            .x_desc(format!("time per launch ({tu})"))
            .y_desc(format!("energy per launch ({eu})"))
            .label_style((FONT, 13))
            .light_line_style(TRANSPARENT)
            .draw()?;
        chart.draw_series(LineSeries::new(
            front_line.iter().copied(),
            PALETTE[0].stroke_width(1),
        ))?;
        for (label, p) in &points {
            let at = xy(p);
            if label == "base" {
                chart.draw_series(std::iter::once(
                    EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], BASE_COLOR.filled()),
                ))?;
            } else if front.contains(label) {
                chart.draw_series(std::iter::once(Circle::new(at, 4, PALETTE[0].filled())))?;
            } else {
                chart.draw_series(std::iter::once(Circle::new(
                    at,
                    3,
                    PALETTE[0].stroke_width(1),
                )))?;
            }
            let named = label == "base"
                || by_time.as_deref() == Some(label)
                || by_energy.as_deref() == Some(label);
            if named {
                chart.draw_series(std::iter::once(Text::new(
                    label.clone(),
                    at,
                    (FONT, 11)
                        .into_font()
                        .color(&BASE_COLOR)
                        .pos(Pos::new(HPos::Left, VPos::Bottom)),
                )))?;
            }
        }
        Ok(())
    })?;
    Ok(Some(svg))
}

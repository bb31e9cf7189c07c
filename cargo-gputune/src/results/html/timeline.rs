//! Where a search's time went, as far as the store can say: when each variant was stored,
//! and the sums of its build, run and kernel times. (The live search's finer split, device
//! open, setup and compile waits, is printed by `search` and not stored.)

use serde::Serialize;

use crate::results::store::Measurement;

/// A group's time, summed over its variants.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timeline {
    /// Seconds from the group's first stored row to its last.
    pub span: f64,
    /// The builds' seconds, per variant (a batch's build shared among its variants).
    pub build: f64,
    /// The bench processes' seconds, per variant (the longest of its rows).
    pub run: f64,
    /// The kernels' own seconds: every kept cold sample, the controls' included.
    pub kernels: f64,
    /// Cold samples taken, the controls' included.
    pub samples: usize,
}

impl Timeline {
    /// Adds one variant's rows.
    pub fn add(&mut self, rows: &[Measurement]) {
        self.build += rows
            .iter()
            .filter_map(|m| m.build_seconds)
            .fold(0.0, f64::max);
        self.run += rows
            .iter()
            .filter_map(|m| m.run_seconds)
            .fold(0.0, f64::max);
        for m in rows {
            self.kernels += m.samples.iter().chain(&m.control).sum::<f64>();
            self.samples += m.samples.len() + m.control.len();
        }
    }
}

/// Seconds since the Unix epoch of a store's `created` stamp (`2026-11-23T16:03:29.323Z`);
/// `None` when it is not one.
pub fn seconds(created: &str) -> Option<f64> {
    let created = created.strip_suffix('Z').unwrap_or(created);
    let (date, time) = created.split_once('T')?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.splitn(3, ':');
    let hour: f64 = t.next()?.parse().ok()?;
    let minute: f64 = t.next()?.parse().ok()?;
    let second: f64 = t.next()?.parse().ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    // Howard Hinnant's days-from-civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days as f64 * 86_400.0 + hour * 3600.0 + minute * 60.0 + second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_read_as_seconds() {
        assert_eq!(seconds("1970-01-01T00:00:00.000Z"), Some(0.0));
        assert_eq!(seconds("2000-02-29T01:01:01Z"), Some(951_786_061.0));
        let a = seconds("2026-11-23T16:03:29.323Z").expect("a stamp");
        let b = seconds("2026-11-23T16:07:14.417Z").expect("a stamp");
        assert!((b - a - 225.094).abs() < 1e-6, "{}", b - a);
        assert_eq!(seconds("yesterday"), None);
        assert_eq!(seconds("2026-13-01T00:00:00Z"), None);
    }

    #[test]
    fn a_variant_counts_its_build_and_longest_run_once() {
        let mut row = crate::results::tests::m("x_1", "N=1", 1e-3, 0.01);
        row.build_seconds = Some(2.0);
        row.run_seconds = Some(0.5);
        row.samples = vec![1e-3, 2e-3];
        row.control = vec![1e-3];
        let mut other = row.clone();
        other.rt_workload = "N=2".into();
        other.run_seconds = Some(0.75);
        let mut t = Timeline::default();
        t.add(&[row, other]);
        assert_eq!((t.build, t.run, t.samples), (2.0, 0.75, 6));
        assert!((t.kernels - 8e-3).abs() < 1e-12, "{}", t.kernels);
    }
}

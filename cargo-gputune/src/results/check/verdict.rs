//! The four verdicts of `check` and the rule that gives them.
//!
//! Per compared workload, the **change** is the current time against the baseline's, a
//! variant's after taking out base's drift between the two runs (its speedup over base in
//! each run; base itself as measured). Two numbers judge it:
//!
//! - the **band**, what is small enough to call the same: the smaller of the two runs' noises
//!   (the relative standard deviation of their samples), and at least `--threshold`;
//! - the **resolution**, what the samples can tell from no change at all: the half-width of
//!   the change's 95 % interval, 1.96 times the standard error of the change, which adds in
//!   quadrature the relative standard errors of the medians it is made of (the variant's in
//!   both runs and, for a variant, base's in both runs; [`crate::results::resolution::median_se`]).
//!
//! Then:
//!
//! | verdict | when |
//! |---|---|
//! | `SAME` | \|change\| ≤ band: too small to matter, however well it is known |
//! | `FAST`, `SLOW` | \|change\| > band and \|change\| > resolution: beyond the band, and beyond what the samples could show without a change (faster, or slower) |
//! | `UNDECIDED` | band < \|change\| ≤ resolution: too large to call the same, but inside what the samples can resolve: as likely noise as a change |
//!
//! More samples shrink the resolution and nothing else, so an `UNDECIDED` settles as one of
//! the other three once measured again (`check --remeasure`), unless the baseline's own
//! samples are what cannot resolve it. Fewer than 6 samples on a side bound no interval of
//! their median (the resolution is unbounded): such a change is `UNDECIDED` wherever it is
//! outside the band.
//!
//! Base's drift: where both the baseline's workload and the current row carry a control
//! (base measured in the same bench process just before the variant, as a search measures
//! it), the speedups are against the controls, which leaves out the drift between processes;
//! otherwise against each run's base row.

use serde_json::{json, Value};

use crate::results::resolution::{self, Z};
use crate::results::store::Measurement;
use crate::results::{median, Group};

/// Too small a change to matter.
pub const SAME: &str = "SAME";
/// Faster than the baseline, beyond the band and the resolution.
pub const FAST: &str = "FAST";
/// Slower than the baseline, beyond the band and the resolution.
pub const SLOW: &str = "SLOW";
/// Outside the band, inside the resolution: the samples cannot tell.
pub const UNDECIDED: &str = "UNDECIDED";
/// Every verdict, in the order the summaries count them.
pub const VERDICTS: [&str; 4] = [SAME, FAST, SLOW, UNDECIDED];

/// One run's estimate of a median: its value, and its standard error relative to it
/// (infinite where the samples bound no interval).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The median (s).
    pub center: f64,
    /// Its relative standard error.
    pub se: f64,
}

/// What a comparison is judged from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sides {
    /// The workload's median in the baseline.
    pub then: Estimate,
    /// Its median now.
    pub now: Estimate,
    /// Base's medians then and now, which a variant's drift is taken out with; `None` for
    /// base itself.
    pub base: Option<(Estimate, Estimate)>,
    /// The relative standard deviation of the baseline's samples.
    pub noise_then: f64,
    /// Of the current samples.
    pub noise_now: f64,
}

/// A judged comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    /// Base's current over its baseline median; `None` without base on both sides.
    pub base_drift: Option<f64>,
    /// The drift-free relative change (0.02: 2 % slower).
    pub change: f64,
    /// The half-width of its 95 % interval; infinite where a side bounds none.
    pub resolution: f64,
    /// The largest change called the same.
    pub band: f64,
    /// [`SAME`], [`FAST`], [`SLOW`] or [`UNDECIDED`].
    pub verdict: &'static str,
}

/// Judges `s` by the rule of the module's documentation, with `threshold` the band's floor.
pub fn judge(s: &Sides, threshold: f64) -> Judged {
    let base_drift = s
        .base
        .filter(|(then, now)| then.center > 0.0 && now.center > 0.0)
        .map(|(then, now)| now.center / then.center);
    let change = s.now.center / base_drift.unwrap_or(1.0) / s.then.center - 1.0;
    let mut variance = s.then.se.powi(2) + s.now.se.powi(2);
    if let (Some((then, now)), Some(_)) = (s.base, base_drift) {
        variance += then.se.powi(2) + now.se.powi(2);
    }
    // The standard errors are relative to the medians, so the change's is relative to the
    // ratio 1 + change.
    let resolution = Z * variance.sqrt() * (1.0 + change).abs();
    let band = s.noise_then.min(s.noise_now).max(threshold);
    let verdict = if change.abs() <= band {
        SAME
    } else if change.abs() <= resolution || resolution.is_nan() {
        // Also where the resolution is unbounded (infinite) or unknown (NaN).
        UNDECIDED
    } else if change < 0.0 {
        FAST
    } else {
        SLOW
    };
    Judged {
        base_drift,
        change,
        resolution,
        band,
        verdict,
    }
}

/// A current row's estimate of its median from its samples (its centre as stored).
pub fn estimate(m: &Measurement) -> Option<Estimate> {
    Some(Estimate {
        center: m.center.filter(|c| *c > 0.0)?,
        se: resolution::of_samples(&m.samples),
    })
}

/// The estimate of base's median in the process that measured `m` (its control), where it
/// has one of at least 2 samples.
pub fn control(m: &Measurement) -> Option<Estimate> {
    if m.control.len() < 2 {
        return None;
    }
    Some(Estimate {
        center: median(m.control.clone()).filter(|c| *c > 0.0)?,
        se: resolution::median_se(&m.control),
    })
}

/// A baseline workload's estimate of its median (`center` and [`resolution::of_workload`]).
fn exported(w: &Value) -> Option<Estimate> {
    Some(Estimate {
        center: w["center"].as_f64().filter(|c| *c > 0.0)?,
        se: resolution::of_workload(w),
    })
}

/// The sides of one comparison: the baseline's workload `then` and the current row `now`
/// of the same variant, and, for a variant, base's workload in the baseline and base's row
/// now (`base`; `None` for base itself). Controls take the place of the base rows where both
/// sides have them. `None` where a side has no median.
pub fn sides(
    then: &Value,
    now: &Measurement,
    base: Option<(&Value, &Measurement)>,
) -> Option<Sides> {
    let controls = (then["control"].is_object())
        .then(|| exported(&then["control"]))
        .flatten()
        .zip(control(now));
    let base = match (controls, base) {
        (Some(pair), _) => Some(pair),
        (None, Some((b_then, b_now))) => exported(b_then).zip(estimate(b_now)),
        (None, None) => None,
    };
    Some(Sides {
        then: exported(then)?,
        now: estimate(now)?,
        base,
        noise_then: then["noise"].as_f64().unwrap_or(0.0),
        noise_now: now.noise.unwrap_or(0.0),
    })
}

/// Adds to a report JSON workload (`w`, of row `m` of group `g`) what a later `check` judges
/// it by: `median_se` (`null`: unbounded), `control` (`{"center", "median_se", "samples"}`
/// of base measured in the same process, or `null`), and where and how it was measured
/// (`provenance`, `sm_clock`: [`crate::results::report::provenance::workload_json`]).
pub fn export_workload(g: &Group, m: &Measurement, w: &mut Value) {
    w["median_se"] = resolution::to_json(resolution::of_samples(&m.samples));
    w["control"] = control(m).map_or(Value::Null, |c| {
        json!({
            "center": c.center,
            "median_se": resolution::to_json(c.se),
            "samples": m.control.len(),
        })
    });
    let (provenance, clocks) = crate::results::report::provenance::workload_json(g, m);
    w["provenance"] = provenance;
    w["sm_clock"] = clocks;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(center: f64, se: f64) -> Estimate {
        Estimate { center, se }
    }

    /// A variant `change` from its baseline, each median's error `se`, noises 1 %.
    fn variant(change: f64, se: f64) -> Sides {
        Sides {
            then: side(1.0, se),
            now: side(1.0 + change, se),
            base: Some((side(2.0, se), side(2.0, se))),
            noise_then: 0.01,
            noise_now: 0.01,
        }
    }

    #[test]
    fn inside_the_band_is_same_however_uncertain() {
        let j = judge(&variant(0.004, f64::INFINITY), 0.005);
        assert_eq!(j.verdict, SAME);
        assert!((j.band - 0.01).abs() < 1e-12, "the smaller noise: {j:?}");
        assert_eq!(judge(&variant(-0.009, 0.0), 0.005).verdict, SAME);
    }

    #[test]
    fn beyond_band_and_resolution_is_fast_or_slow() {
        // Four medians of 0.1 % each: the resolution is 1.96 · 0.2 % ≈ 0.39 %.
        let j = judge(&variant(0.03, 0.001), 0.005);
        assert_eq!(j.verdict, SLOW);
        assert!((j.resolution - Z * 0.002 * 1.03).abs() < 1e-12, "{j:?}");
        assert_eq!(judge(&variant(-0.03, 0.001), 0.005).verdict, FAST);
    }

    #[test]
    fn beyond_the_band_but_inside_the_resolution_is_undecided() {
        // A 3 % change from medians each known to 1 %: the interval is ±4 %.
        let j = judge(&variant(0.03, 0.01), 0.005);
        assert_eq!(j.verdict, UNDECIDED, "{j:?}");
        // Unbounded (fewer than 6 samples on a side): anything outside the band.
        assert_eq!(
            judge(&variant(0.5, f64::INFINITY), 0.005).verdict,
            UNDECIDED
        );
        // More samples settle it, one way or the other.
        assert_eq!(judge(&variant(0.03, 0.002), 0.005).verdict, SLOW);
    }

    #[test]
    fn base_drift_is_taken_out_of_a_variant_and_its_error_counted() {
        // Everything 2 % slower now: no change for the variant, base's drift shown.
        let s = Sides {
            then: side(1.0, 0.001),
            now: side(1.02, 0.001),
            base: Some((side(2.0, 0.001), side(2.04, 0.001))),
            noise_then: 0.001,
            noise_now: 0.001,
        };
        let j = judge(&s, 0.0);
        assert!(j.change.abs() < 1e-12 && (j.base_drift.expect("drift") - 1.02).abs() < 1e-12);
        assert_eq!(j.verdict, SAME);
        // Base itself: no drift to take out, its own 2 %, two medians in the error.
        let base = Sides { base: None, ..s };
        let j = judge(&base, 0.005);
        assert!((j.change - 0.02).abs() < 1e-12);
        assert!((j.resolution - Z * 2f64.sqrt() * 0.001 * 1.02).abs() < 1e-12);
        assert_eq!(j.verdict, SLOW);
    }

    #[test]
    fn the_point_verdict_of_the_old_rule_holds_where_the_samples_resolve_it() {
        // With no error the rule is the band alone, as `check` judged before.
        for (change, want) in [(0.01, SAME), (0.03, SLOW), (-0.03, FAST)] {
            let s = Sides {
                base: None,
                noise_then: 0.02,
                noise_now: 0.05,
                ..variant(change, 0.0)
            };
            let old = super::super::verdict(1.0, 1.0 + change, 0.02, 0.05, 0.0);
            assert_eq!((judge(&s, 0.0).verdict, old), (want, want));
        }
    }

    fn row(center: f64, samples: &[f64], control: &[f64]) -> Measurement {
        let mut m = crate::results::tests::m("x_1", "N=1", center, 0.01);
        m.samples = samples.to_vec();
        m.control = control.to_vec();
        m
    }

    #[test]
    fn controls_stand_in_for_base_where_both_runs_have_them() {
        let samples: Vec<f64> = (0..50).map(|i| 1.0 + f64::from(i % 5) * 0.001).collect();
        let control: Vec<f64> = samples.iter().map(|v| v * 2.0).collect();
        let now = row(1.002, &samples, &control);
        let base_now = row(2.2, &samples, &[]);
        let then = json!({ "center": 1.002, "noise": 0.01, "median_se": 0.0005,
            "control": { "center": 2.004, "median_se": 0.0005, "samples": 50 } });
        let base_then = json!({ "center": 2.0, "noise": 0.01, "median_se": 0.0005 });
        let s = sides(&then, &now, Some((&base_then, &base_now))).expect("sides");
        let (b_then, b_now) = s.base.expect("a base");
        assert_eq!(
            (b_then.center, b_now.center),
            (2.004, 2.004),
            "the controls"
        );
        // An older baseline without controls: the base rows, on both sides.
        let old = json!({ "center": 1.002, "noise": 0.01, "samples": 50 });
        let s = sides(&old, &now, Some((&base_then, &base_now))).expect("sides");
        assert_eq!(s.base.map(|(a, b)| (a.center, b.center)), Some((2.0, 2.2)));
        assert!(
            s.then.se.is_finite() && s.then.se > 0.0,
            "from noise and samples"
        );
    }
}

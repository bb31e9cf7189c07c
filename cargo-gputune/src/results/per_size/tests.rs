use super::*;
use crate::results::groups;

/// A measurement of `variant` at `Elements{io}=2^exp`, ten samples around `center` (±0.1 %),
/// with base measured in the same process at `control`.
fn row(variant: &str, exp: u32, center: f64, control: f64) -> Measurement {
    let mut m =
        crate::results::tests::m(variant, &format!("Elements{{io}}=2^{exp}"), center, 0.001);
    let spread = |c: f64| {
        (0..10)
            .map(|i| c * (1.0 + (i as f64 - 4.5) * 0.0002))
            .collect()
    };
    m.samples = spread(center);
    if variant != "base" {
        m.control = spread(control);
    }
    m
}

/// Base 1.0 at every size; `a_1` wins small sizes, `a_2` large ones, `a_3` is base's twin.
fn group() -> Group {
    let mut rows = Vec::new();
    for exp in [16, 20, 24, 28] {
        let large = exp >= 24;
        rows.push(row("base", exp, 1.0, 1.0));
        rows.push(row("a_1", exp, if large { 0.9 } else { 0.5 }, 1.0));
        rows.push(row("a_2", exp, if large { 0.6 } else { 0.8 }, 1.0));
        rows.push(row("a_3", exp, 1.0, 1.0));
    }
    groups(rows, false).remove(0)
}

#[test]
fn sizes_are_read_from_workload_keys() {
    assert_eq!(
        size_of("Elements{io}=2^20 Mode=b", "Elements"),
        Some(1 << 20)
    );
    assert_eq!(size_of("Mode=b Elements=1000", "Elements"), Some(1000));
    assert_eq!(size_of("Rows=5", "Elements"), None);
    assert_eq!(size_of("Elements=2^64", "Elements"), None);
    assert_eq!(size_of("Elements=x", "Elements"), None);
}

#[test]
fn boundaries_are_geometric_midpoints_between_measured_sizes() {
    assert_eq!(boundary(1 << 20, 1 << 24), 1 << 22);
    assert_eq!(boundary(1000, 4000), 2000);
    assert_eq!(boundary(2, 3), 3, "within a + 1 ..= b");
    assert_eq!(boundary(0, 9), 5, "from 0: the arithmetic midpoint");
    assert_eq!(boundary(7, 8), 8);
}

#[test]
fn each_size_gets_its_winner_when_it_beats_the_single_one_beyond_noise() {
    let g = group();
    let buckets = size_buckets(&g, "Elements").expect("every workload has a size");
    assert_eq!(buckets.len(), 4);
    let a = analyse(&g, buckets);
    // Overall a_1 scores (2+2+1.11+1.11)/4 = 1.56 against a_2's (1.25+1.25+1.67+1.67)/4 = 1.46.
    assert_eq!(a.single, "a_1");
    let chosen: Vec<&str> = a.choices.iter().map(|c| c.chosen.as_str()).collect();
    assert_eq!(chosen, ["a_1", "a_1", "a_2", "a_2"]);
    assert!(a.differs());
    assert_eq!(a.distinct(), ["a_1", "a_2"]);
    let large = &a.choices[3];
    assert!(large.significant);
    assert!(
        (large.speedup.expect("both measured") - 1.5).abs() < 1e-3,
        "{large:?}"
    );
    assert_eq!((large.single_time, large.best_time), (Some(0.9), Some(0.6)));
    assert_eq!(
        a.ranges(),
        [
            (None, Some(1 << 22), "a_1".to_string()),
            (Some(1 << 22), None, "a_2".to_string())
        ]
    );
}

#[test]
fn a_difference_within_noise_keeps_the_single_winner() {
    let mut rows = Vec::new();
    for exp in [16, 28] {
        rows.push(row("base", exp, 1.0, 1.0));
        rows.push(row("a_1", exp, 0.5, 1.0));
        // 0.2 % faster than a_1 at the large size: under the 0.5 % floor.
        rows.push(row("a_2", exp, if exp == 28 { 0.499 } else { 0.8 }, 1.0));
    }
    let g = groups(rows, false).remove(0);
    let a = analyse(&g, size_buckets(&g, "Elements").expect("sizes"));
    assert_eq!(a.single, "a_1");
    assert_eq!(a.choices[1].best, "a_2");
    assert!(!a.choices[1].significant);
    assert!(!a.differs());
    assert_eq!(a.ranges(), [(None, None, "a_1".to_string())]);
    // Per workload (report's view): the same choices.
    let per_workload = analyse(&g, workload_buckets(&g));
    assert_eq!(per_workload.choices.len(), 2);
    assert!(!per_workload.differs());
}

#[test]
fn where_nothing_beats_base_base_is_the_size_s_winner() {
    let mut rows = Vec::new();
    for exp in [16, 28] {
        rows.push(row("base", exp, 1.0, 1.0));
        // Twice as fast at the large size, 30 % slower at the small one.
        rows.push(row("a_1", exp, if exp == 28 { 0.5 } else { 1.3 }, 1.0));
    }
    let g = groups(rows, false).remove(0);
    let a = analyse(&g, size_buckets(&g, "Elements").expect("sizes"));
    assert_eq!(a.single, "a_1");
    let chosen: Vec<&str> = a.choices.iter().map(|c| c.chosen.as_str()).collect();
    assert_eq!(chosen, ["base", "a_1"]);
    assert_eq!(
        a.ranges(),
        [
            (None, Some(1 << 22), "base".to_string()),
            (Some(1 << 22), None, "a_1".to_string())
        ]
    );
}

#[test]
fn the_report_shows_what_one_winner_costs_per_workload() {
    use crate::results::report::Format;
    let g = group();
    let text = report::render(std::slice::from_ref(&g), Format::Table);
    assert!(
        text.contains(
            "single winner a_1; per workload 2 distinct winners (a_1, a_2), up to 1.500x"
        ),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("Elements{io}=2^28"))
        .expect("a row per workload");
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cells[3], "a_2", "{line}");
    assert_eq!(&cells[cells.len() - 3..], ["1.500x", "+", "a_2"], "{line}");
    let json: serde_json::Value =
        serde_json::from_str(&report::render(std::slice::from_ref(&g), Format::Json))
            .expect("JSON");
    let w = &json["groups"][0]["workloads"];
    assert_eq!(w.as_array().map(Vec::len), Some(4));
    assert_eq!(w[0]["runs"], "a_1");
    assert_eq!(w[3]["best"], "a_2");
    assert_eq!(w[3]["significant"], true);
    assert!(report::render(std::slice::from_ref(&g), Format::Markdown)
        .contains("| Elements{io}=2^16 |"));
    // One workload: nothing to choose.
    let one = groups(
        vec![row("base", 20, 1.0, 1.0), row("a_1", 20, 0.5, 1.0)],
        false,
    );
    assert!(report::render(&one, Format::Table).contains("1 group measured one runtime workload"));
}

#[test]
fn a_variant_wrong_at_one_size_wins_at_none() {
    // a_1 wins the small sizes, but computed a wrong answer at 2^28: it runs nowhere.
    let mut rows: Vec<Measurement> = Vec::new();
    for exp in [16, 20, 24, 28] {
        rows.push(row("base", exp, 1.0, 1.0));
        let mut a1 = row("a_1", exp, 0.5, 1.0);
        if exp == 28 {
            a1.status = Status::VerifyFailed;
        }
        rows.push(a1);
    }
    let g = groups(rows, false).remove(0);
    let a = analyse(&g, size_buckets(&g, "Elements").expect("sizes"));
    assert!(
        a.choices
            .iter()
            .all(|c| c.chosen == "base" && c.best == "base"),
        "{a:?}"
    );
}

#[test]
fn a_workload_every_variant_skipped_is_no_size_to_choose_for() {
    let mut rows = group().variants.into_values().flatten().collect::<Vec<_>>();
    for variant in ["base", "a_1"] {
        let mut m = row(variant, 30, 1.0, 1.0);
        m.status = Status::Skipped;
        rows.push(m);
    }
    let g = groups(rows, false).remove(0);
    let sizes: Vec<Option<u64>> = size_buckets(&g, "Elements")
        .expect("sizes")
        .iter()
        .map(|b| b.size)
        .collect();
    assert_eq!(
        sizes,
        [Some(1 << 16), Some(1 << 20), Some(1 << 24), Some(1 << 28)]
    );
    assert_eq!(workload_buckets(&g).len(), 4);
}

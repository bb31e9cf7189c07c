//! Objectives on a simulated device: each variant has a known time per launch and a known
//! power, so a known energy per launch (power × time) and EDP; samples carry seeded noise;
//! each variant's rows carry base measured beside it as their control, as a search stores
//! them. The winners by time, energy and EDP are known and differ.

use super::*;
use crate::results::groups;
use crate::results::tests::m;

/// SplitMix64, uniform in [-1, 1).
struct Noise(u64);

impl Noise {
    fn draw(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    fn around(&mut self, center: f64, spread: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| center * (1.0 + spread * self.draw()))
            .collect()
    }
}

/// The simulated device: label → (seconds per launch, watts while it runs).
const MODEL: [(&str, f64, f64); 5] = [
    ("base", 1.0e-3, 400.0),
    // Fastest, but at a high power: more energy than base.
    ("fast_1", 0.8e-3, 560.0),
    // Faster and at base's power: less energy, and the best EDP.
    ("mid_1", 0.9e-3, 400.0),
    // Slower, at a low power: the least energy.
    ("frugal_1", 1.1e-3, 300.0),
    // Slower and more energy: dominated.
    ("bad_1", 1.2e-3, 450.0),
];

/// A group measured on the simulated device: 20 cold samples (0.5 % noise) and 5 energy
/// batches (1 % noise) per row, each variant's control base measured again beside it.
fn simulated(seed: u64) -> Group {
    let mut noise = Noise(seed);
    let (base_t, base_p) = (MODEL[0].1, MODEL[0].2);
    let mut rows = Vec::new();
    let mut energies = Vec::new();
    for (label, t, p) in MODEL {
        let mut row = m(label, "N=1", t, 0.005);
        row.samples = noise.around(t, 0.005, 20);
        row.center = median(row.samples.clone());
        let mut energy = Energy {
            joules: noise.around(t * p, 0.01, 5),
            watts: noise.around(p, 0.01, 5),
            control: Vec::new(),
            counter_interval: Some(0.02),
        };
        if label != "base" {
            row.control = noise.around(base_t, 0.005, 20);
            energy.control = noise.around(base_t * base_p, 0.01, 5);
        }
        energies.push((RowKey::of(&row), energy));
        rows.push(row);
    }
    let mut g = groups(rows, false);
    attach_energy(&mut g, energies);
    assert_eq!(g.len(), 1);
    g.remove(0)
}

#[test]
fn each_objective_picks_its_own_winner() {
    for seed in [1, 2, 3] {
        let g = simulated(seed);
        assert!(g.has_energy());
        let winner = |o| g.winner_by(o).map(|r| r.variant);
        assert_eq!(winner(Objective::Time).as_deref(), Some("fast_1"), "{seed}");
        assert_eq!(
            winner(Objective::Energy).as_deref(),
            Some("frugal_1"),
            "{seed}"
        );
        assert_eq!(winner(Objective::Edp).as_deref(), Some("mid_1"), "{seed}");
        // Time by objective is exactly the time ranking.
        let labels = |rs: Vec<Ranked>| rs.into_iter().map(|r| r.variant).collect::<Vec<_>>();
        assert_eq!(labels(g.ranked_by(Objective::Time)), labels(g.ranked()));
    }
}

#[test]
fn energy_scores_are_base_over_variant_with_significance_both_ways() {
    let g = simulated(4);
    let score =
        |o, label: &str| score_by(o, &g.energy, g.base(), &g.variants[label]).expect("scored");
    // frugal: 0.4 J against 0.33 J per launch.
    let s = score(Objective::Energy, "frugal_1");
    assert!((s.score - 0.4 / 0.33).abs() < 0.03, "{s:?}");
    assert_eq!(s.verdict(), score::Verdict::Faster, "better: less energy");
    // fast: 0.448 J, more than base's 0.4 J, although it is faster.
    let s = score(Objective::Energy, "fast_1");
    assert!((s.score - 0.4 / 0.448).abs() < 0.03, "{s:?}");
    assert_eq!(s.verdict(), score::Verdict::Slower);
    assert_eq!(
        score(Objective::Time, "fast_1").verdict(),
        score::Verdict::Faster
    );
    // EDP of mid: 0.36 J × 0.9 ms against 0.4 J × 1 ms.
    let s = score(Objective::Edp, "mid_1");
    assert!((s.score - 0.4e-3 / (0.36 * 0.9e-3)).abs() < 0.04, "{s:?}");
    // Base against itself is 1 by any objective.
    for o in [Objective::Time, Objective::Energy, Objective::Edp] {
        let s = score(o, "base");
        assert!((s.score - 1.0).abs() < 1e-12 && !s.significant, "{o:?}");
    }
}

#[test]
fn the_pareto_front_is_what_nothing_beats_on_both() {
    let g = simulated(5);
    let points = g.points();
    assert_eq!(points.len(), 5);
    let p = |label: &str| points.iter().find(|(l, _)| l == label).expect("point").1;
    assert!((p("frugal_1").energy / 0.33 - 1.0).abs() < 0.02);
    assert!((p("frugal_1").power / 300.0 - 1.0).abs() < 0.02);
    assert!((p("mid_1").edp() / (0.36 * 0.9e-3) - 1.0).abs() < 0.03);
    let front: Vec<String> = pareto_front(&points).into_iter().collect();
    assert_eq!(front, ["fast_1", "frugal_1", "mid_1"]);
    // Ties: a point equal to another in both is on the front with it; one equal in time and
    // worse in energy is not.
    let at = |time, energy| Point {
        time,
        energy,
        power: 1.0,
        energy_noise: None,
    };
    let pts = vec![
        ("a".to_string(), at(1.0, 1.0)),
        ("b".to_string(), at(1.0, 1.0)),
        ("c".to_string(), at(1.0, 2.0)),
    ];
    let front: Vec<String> = pareto_front(&pts).into_iter().collect();
    assert_eq!(front, ["a", "b"]);
}

#[test]
fn without_energy_nothing_is_scored_or_on_the_front() {
    let mut g = simulated(6);
    g.energy.clear();
    assert!(!g.has_energy());
    assert!(g.winner_by(Objective::Energy).is_none());
    assert!(g.points().is_empty());
    assert_eq!(
        g.winner_by(Objective::Time).map(|r| r.variant).as_deref(),
        Some("fast_1"),
        "time does not need energy"
    );
    let lines = crate::results::report::energy::summary(&g, Objective::Energy);
    assert_eq!(
        lines[1..],
        [
            "energy winner: none significantly better than base".to_string(),
            "the time winner is no energy winner: no variant beats base in energy beyond noise"
                .to_string(),
            "Pareto front of time × energy: none (no energy measured)".to_string(),
        ]
    );
}

#[test]
fn the_report_s_energy_table_marks_the_front_and_says_the_winners_differ() {
    let g = simulated(7);
    let text =
        crate::results::report::energy::render(std::slice::from_ref(&g), Objective::Energy, 1);
    // Top 1 by energy (frugal), base, and the rest of the front (fast, mid); not bad_1.
    for label in ["frugal_1", "fast_1", "mid_1", "base"] {
        assert!(text.contains(label), "{label}: {text}");
    }
    assert!(!text.contains("bad_1"), "{text}");
    assert!(text.contains("energy winner: frugal_1"), "{text}");
    assert!(text.contains("time winner: fast_1"), "{text}");
    assert!(
        text.contains("the time and energy winners differ"),
        "{text}"
    );
    assert!(
        text.contains("Pareto front of time × energy: fast_1, frugal_1, mid_1"),
        "{text}"
    );
    let frugal = text
        .lines()
        .find(|l| l.trim_start().starts_with("frugal_1"))
        .expect("row");
    assert!(frugal.trim_end().ends_with('*'), "{frugal}");
    // No energy, no table.
    let mut none = g.clone();
    none.energy.clear();
    assert!(crate::results::report::energy::render(&[none], Objective::Energy, 5).is_empty());
}

#[test]
fn the_report_s_json_and_csv_carry_each_variant_s_energy_and_the_front() {
    use crate::results::report::{render, to_json, Format};
    let g = simulated(8);
    let groups = std::slice::from_ref(&g);
    let points = g.points();
    let point_of = |label: &str| points.iter().find(|(l, _)| l == label).expect("point").1;
    let on_front = |label: &str| ["fast_1", "frugal_1", "mid_1"].contains(&label);
    let doc = to_json(groups, 10);
    let variants = doc["groups"][0]["variants"]
        .as_array()
        .expect("variants")
        .clone();
    assert_eq!(variants.len(), 5);
    for v in &variants {
        let label = v["variant"].as_str().expect("label");
        let e = &v["energy"];
        let point = point_of(label);
        assert_eq!(e["joules"].as_f64(), Some(point.energy), "{label}");
        assert_eq!(e["watts"].as_f64(), Some(point.power), "{label}");
        assert_eq!(e["edp"].as_f64(), Some(point.edp()), "{label}");
        assert_eq!(e["pareto"].as_bool(), Some(on_front(label)), "{label}");
    }
    let csv = render(groups, 10, Format::Csv);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (energy, pareto) = (col("energy_j"), col("pareto"));
    for line in lines {
        // The ct_workload cell is quoted and holds no comma here.
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{line}");
        let label = cells[col("variant")];
        let joules: f64 = cells[energy].parse().expect("joules");
        let point = point_of(label);
        assert!((joules / point.energy - 1.0).abs() < 1e-3, "{line}");
        assert_eq!(cells[pareto], on_front(label).to_string(), "{line}");
    }
    // Without energy the JSON says null and the CSV's energy cells are empty.
    let mut plain = simulated(9);
    plain.energy.clear();
    let doc = to_json(std::slice::from_ref(&plain), 10);
    assert!(doc["groups"][0]["variants"][0]["energy"].is_null());
    let csv = render(std::slice::from_ref(&plain), 10, Format::Csv);
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",,,,")), "{csv}");
}

#[test]
fn the_html_page_carries_the_energy_of_each_variant_only_where_measured() {
    let data = |g: &Group| -> serde_json::Value {
        let page =
            crate::results::html::page("s.db", std::slice::from_ref(g), &Default::default(), &[])
                .expect("a page");
        let start = page
            .find(r#"<script type="application/json" id="data">"#)
            .expect("the data element");
        let rest = &page[start..];
        let (open, close) = (
            rest.find('>').expect("tag") + 1,
            rest.find("</script>").expect("end"),
        );
        serde_json::from_str(&rest[open..close]).expect("JSON")
    };
    let g = simulated(10);
    let doc = data(&g);
    let v = &doc["groups"][0]["variants"];
    let energy = v["energy"].as_array().expect("energy per variant");
    assert_eq!(energy.len(), v["cells"].as_array().expect("cells").len());
    let front = pareto_front(&g.points());
    // The page lists the variants as the report ranks them.
    let labels: Vec<String> = g.ranked().into_iter().map(|r| r.variant).collect();
    for (label, e) in labels.iter().zip(energy) {
        let words = e.as_array().expect("every variant has energy");
        assert!(words[0].as_str().expect("joules").contains('J'), "{e}");
        assert!(words[1].as_str().expect("watts").ends_with(" W"), "{e}");
        let on = words[3]
            .as_str()
            .expect("front")
            .starts_with("on the front");
        assert_eq!(on, front.contains(label), "{label}: {e}");
    }
    let mut plain = simulated(11);
    plain.energy.clear();
    let doc = data(&plain);
    assert!(doc["groups"][0]["variants"].get("energy").is_none());
}

#[test]
fn report_plots_time_against_energy_only_where_measured() {
    let dir = std::env::temp_dir().join(format!("gputune-energy-plot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let g = simulated(12);
    let mut plain = simulated(13);
    plain.energy.clear();
    let energy_plots = |g: &Group| -> Vec<String> {
        let plots =
            crate::results::plot::write(&dir, std::slice::from_ref(g), &Default::default(), 3, &[])
                .expect("plots");
        plots
            .files
            .iter()
            .filter(|p| p.to_string_lossy().ends_with(".energy.svg"))
            .map(|p| std::fs::read_to_string(p).expect("the picture"))
            .collect()
    };
    let svgs = energy_plots(&g);
    assert_eq!(svgs.len(), 1);
    let svg = &svgs[0];
    // Both winners are named on the picture, and the subtitle says which is which.
    let (time, energy) = (
        g.winner_by(Objective::Time).expect("a time winner").variant,
        g.winner_by(Objective::Energy)
            .expect("an energy winner")
            .variant,
    );
    assert_ne!(time, energy);
    assert!(
        svg.contains(&format!("winner by time: {time}; by energy: {energy}")),
        "{svg}"
    );
    assert!(
        [&"base".to_string(), &time, &energy]
            .iter()
            .all(|l| svg.contains(&format!("\n{l}\n</text>"))),
        "{svg}"
    );
    assert!(energy_plots(&plain).is_empty(), "no energy, no picture");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_front_s_sweep_agrees_with_the_pairwise_rule_ties_included() {
    let pairwise = |points: &[(String, Point)]| -> BTreeSet<String> {
        points
            .iter()
            .filter(|(_, p)| {
                !points.iter().any(|(_, q)| {
                    q.time <= p.time
                        && q.energy <= p.energy
                        && (q.time < p.time || q.energy < p.energy)
                })
            })
            .map(|(l, _)| l.clone())
            .collect()
    };
    let mut noise = Noise(21);
    for round in 0..200 {
        // Coarse values, so that equal times, equal energies and exact duplicates occur.
        let n = 1 + round % 40;
        let points: Vec<(String, Point)> = (0..n)
            .map(|i| {
                let coarse = |x: f64| ((x + 1.0) * 4.0).round();
                let p = Point {
                    time: coarse(noise.draw()),
                    energy: coarse(noise.draw()),
                    power: 1.0,
                    energy_noise: None,
                };
                (format!("v{i}"), p)
            })
            .collect();
        assert_eq!(pareto_front(&points), pairwise(&points), "{points:?}");
    }
}

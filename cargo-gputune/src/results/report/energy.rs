//! `report`'s energy table, for groups whose store has energy (`search --objective
//! energy|edp`): per variant its time, energy per launch, power and EDP, its score by the
//! objective against base (with significance), and whether it is on the Pareto front of
//! time × energy; then which variant wins by time and which by the objective, and whether
//! they differ. A group without energy prints nothing, so a time-only report is unchanged.

use std::collections::{BTreeMap, BTreeSet};

use gputune_protocol::units::format_energy;
use serde_json::{json, Value};

use crate::results::objective::{pareto_front, Objective, Point};
use crate::results::{present, Group};

/// One group's energy per variant and its Pareto front, computed once for the JSON and CSV
/// rows of every variant it lists (by label: a space of 16,000 variants asks 16,000 times).
pub struct Energies {
    points: BTreeMap<String, Point>,
    front: BTreeSet<String>,
}

impl Energies {
    /// The energies of `g` (none where it measured none).
    pub fn of(g: &Group) -> Energies {
        let points = g.points();
        let front = pareto_front(&points);
        Energies {
            points: points.into_iter().collect(),
            front,
        }
    }

    fn point(&self, variant: &str) -> Option<Point> {
        self.points.get(variant).copied()
    }

    /// A variant's `energy` in the report JSON: joules and watts per launch, their noise, EDP
    /// and whether it is on the Pareto front; `null` where it has no energy.
    pub fn json(&self, variant: &str) -> Value {
        match self.point(variant) {
            Some(p) => json!({
                "joules": p.energy,
                "noise": p.energy_noise,
                "watts": p.power,
                "edp": p.edp(),
                "pareto": self.front.contains(variant),
            }),
            None => Value::Null,
        }
    }

    /// Whether the group measured energy at all.
    pub fn any(&self) -> bool {
        !self.points.is_empty()
    }

    /// A variant's energy as the energy table writes it: joules per launch (with its noise),
    /// watts, EDP, and whether it is on the Pareto front; `None` where it has none.
    pub fn words(&self, variant: &str) -> Option<[String; 4]> {
        let p = self.point(variant)?;
        let noise = p
            .energy_noise
            .map(|n| format!(" ±{}", present::noise(n)))
            .unwrap_or_default();
        Some([
            format!("{}{noise}", format_energy(p.energy)),
            format!("{:.1} W", p.power),
            format!("{:.4e} J*s", p.edp()),
            if self.front.contains(variant) {
                "on the front (nothing both faster and more frugal)".into()
            } else {
                "off the front".into()
            },
        ])
    }

    /// A variant's CSV cells `energy_j,power_w,edp_js,pareto` (empty where it has no energy).
    pub fn csv(&self, variant: &str) -> String {
        match self.point(variant) {
            Some(p) => format!(
                "{:.4e},{:.2},{:.4e},{}",
                p.energy,
                p.power,
                p.edp(),
                self.front.contains(variant)
            ),
            None => ",,,".to_string(),
        }
    }
}

/// The energy tables of the groups that have energy, ranked by `objective`, `top` variants
/// each (base and the Pareto front always listed); empty when none has energy.
pub fn render(groups: &[Group], objective: Objective, top: usize) -> String {
    let mut out = String::new();
    for g in groups.iter().filter(|g| g.has_energy()) {
        out.push('\n');
        out.push_str(&format!(
            "Energy: {} — ranked by {}\n",
            present::title(g),
            objective.as_str()
        ));
        let points = g.points();
        let front = pareto_front(&points);
        let ranked = g.ranked_by(objective);
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut shown = 0;
        for r in &ranked {
            let listed = r.variant == "base" || front.contains(&r.variant) || shown < top;
            if !listed {
                continue;
            }
            if r.variant != "base" {
                shown += 1;
            }
            let point = points.iter().find(|(l, _)| *l == r.variant).map(|p| p.1);
            rows.push(row(&r.variant, point, r, front.contains(&r.variant)));
        }
        for line in present::aligned(
            &[
                "variant", "time", "energy", "noise", "power", "EDP", "score", "sig", "pareto",
            ],
            &rows,
            |c| c == 0,
        ) {
            out.push_str(&format!("  {line}\n"));
        }
        for line in summary(g, objective) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    if !out.is_empty() {
        out.push_str(
            "\nenergy: joules per launch (median of the energy batches: NVML's counter from one \
             update to a later one, the whole board), noise: their spread, power: watts, EDP: \
             energy × time; score: base over the variant by the objective, against base in the \
             same process; pareto: * where no variant is both faster and more frugal.\n",
        );
    }
    out
}

fn row(label: &str, point: Option<Point>, r: &crate::results::Ranked, front: bool) -> Vec<String> {
    let (time, energy, noise, power, edp) = match point {
        Some(p) => (
            present::time(p.time),
            format_energy(p.energy),
            p.energy_noise.map(present::noise).unwrap_or_default(),
            format!("{:.1} W", p.power),
            format!("{:.4e} J*s", p.edp()),
        ),
        None => Default::default(),
    };
    let (score, sig) = match &r.score {
        Some(s) => (format!("{:.4}", s.score), s.verdict().mark().to_string()),
        None => (r.status.to_string(), String::new()),
    };
    vec![
        label.to_string(),
        time,
        energy,
        noise,
        power,
        edp,
        score,
        sig,
        if front { "*".into() } else { String::new() },
    ]
}

/// The time winner and the `objective` winner of `g`, each with its time and energy, whether
/// they differ, and the Pareto front: the lines `search --objective` ends with and the energy
/// table's footer.
pub fn summary(g: &Group, objective: Objective) -> Vec<String> {
    let points = g.points();
    let at = |label: &str| points.iter().find(|(l, _)| l == label).map(|p| p.1);
    let describe = |o: Objective| match g.winner_by(o) {
        Some(w) => {
            let score = w.score.as_ref().map_or(0.0, |s| s.score);
            match at(&w.variant) {
                Some(p) => format!(
                    "{} (score {score:.4}; {} and {} per launch, {:.1} W)",
                    w.variant,
                    present::time(p.time),
                    format_energy(p.energy),
                    p.power
                ),
                None => format!("{} (score {score:.4}; no energy)", w.variant),
            }
        }
        None => "none significantly better than base".to_string(),
    };
    let mut lines = vec![format!("time winner: {}", describe(Objective::Time))];
    if objective != Objective::Time {
        lines.push(format!(
            "{} winner: {}",
            objective.as_str(),
            describe(objective)
        ));
        let (t, o) = (
            g.winner_by(Objective::Time).map(|w| w.variant),
            g.winner_by(objective).map(|w| w.variant),
        );
        let name = objective.as_str();
        lines.push(match (t, o) {
            (None, None) => format!("neither time nor {name} has a winner beyond noise"),
            (Some(_), None) => format!(
                "the time winner is no {name} winner: no variant beats base in {name} beyond \
                 noise"
            ),
            (None, Some(_)) => format!("the {name} winner is no time winner"),
            (Some(t), Some(o)) if t == o => format!("the time and {name} winners are the same"),
            (Some(_), Some(_)) => format!("the time and {name} winners differ"),
        });
    }
    let front: Vec<String> = pareto_front(&points).into_iter().collect();
    lines.push(format!(
        "Pareto front of time × energy: {}",
        if front.is_empty() {
            "none (no energy measured)".to_string()
        } else {
            front.join(", ")
        }
    ));
    lines
}

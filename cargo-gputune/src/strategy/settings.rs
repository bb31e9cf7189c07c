//! The settings of the guided strategies: every number that shapes a strategy's proposals,
//! with the defaults chosen by the fold procedure of `docs/strategies.md` (settings chosen on
//! some of the community's spaces and judged on the others), and a `key=value,…` text form
//! that `replay --settings` reads, so that the procedure can try candidates without a rebuild.

use thiserror::Error;

/// A setting that `replay --settings` could not read.
#[derive(Debug, Error, PartialEq)]
pub enum SettingsError {
    /// Not of the form `key=value`.
    #[error("`{0}` is not key=value")]
    Malformed(String),
    /// No such setting.
    #[error("no setting `{0}` (the settings are: {1})")]
    Unknown(String, String),
    /// A value that does not parse or is out of range.
    #[error("`{key}={value}`: {why}")]
    Value {
        /// The setting.
        key: String,
        /// What was given.
        value: String,
        /// What is allowed.
        why: &'static str,
    },
}

/// The settings of the guided strategies (`surrogate`, `genetic`, `annealing`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// `surrogate`: scored points before the model is trusted; until then the batch is random.
    pub initial: usize,
    /// `surrogate`: the share of model rounds whose picks are among the best point's
    /// neighbours (the walk).
    pub local_share: f64,
    /// `surrogate`: the share of the other model rounds within `region` parameters of the best.
    pub region_share: f64,
    /// `surrogate`: how many parameters a trust-region point may differ from the best in.
    pub region: usize,
    /// `surrogate`: the share of rounds whose model is k nearest neighbours, not the trees.
    pub knn_share: f64,
    /// `surrogate`: neighbours a k-nearest-neighbour prediction averages.
    pub k: usize,
    /// `surrogate`: trees in the ensemble.
    pub trees: usize,
    /// `surrogate`: how much worse than the worst score a failure is taken to be (log units).
    pub failure_penalty: f64,
    /// `surrogate`, the hedge: the share of rounds that pick a point uniformly at random
    /// whatever the model has shown (global exploration).
    pub explore: f64,
    /// `surrogate`, the hedge: the share of rounds that pick at random while the model has
    /// not proved predictive (see `proof`); 0 turns the hedge off.
    pub fallback: f64,
    /// `surrogate`, the hedge: the model has proved predictive once its picks beat the random
    /// picks' scores in at least this share of pairs (a Mann–Whitney proportion; 0.5 is chance).
    pub proof: f64,
    /// `surrogate`, the hedge: evaluations without an improvement of the best after which a
    /// run counts as stalled and its rounds fall back as if the model had not proved itself
    /// (0: never).
    pub stall: usize,
    /// `surrogate`, the hedge: the share by which the best must rise to end a stall (0: any
    /// rise), so that a run creeping up its basin by a tenth of a percent counts as stalled.
    pub gain: f64,
    /// `surrogate`, the hedge: once stalled, the walk goes on from the best points at least
    /// this many parameters from the best (another basin; 0: never).
    pub basin: usize,
    /// `surrogate`, the hedge: once stalled, the share of model rounds confined to a niche,
    /// the points whose value of one parameter (drawn per round) differs from the best's, with
    /// expected improvement over the niche's own best (0: never): a second cluster that every
    /// model round overlooks next to the first one's scores is searched on its own terms.
    pub niche: f64,
    /// `surrogate`, the hedge: the model rounds a niche is kept without its best rising
    /// before another is drawn (patience: a niche that climbs is followed).
    pub niche_rounds: usize,
    /// `surrogate`: how strongly the random picks (the start and the hedge's) favour each
    /// parameter's first and last value: that share of a parameter's draws falls on its two
    /// ends, the rest uniformly (0: uniform). Optima sit at a range's end more often than
    /// chance says (convolution's one-row blocks of four-row tiles, GEMM's widest vectors).
    pub edges: f64,
    /// `genetic`: individuals that breed.
    pub population: usize,
    /// `annealing`: the starting temperature, relative to the current score.
    pub t0: f64,
    /// `annealing`: the cooling per evaluation.
    pub alpha: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            initial: 6,
            local_share: 0.7,
            region_share: 0.25,
            region: 4,
            knn_share: 0.5,
            k: 4,
            trees: 16,
            failure_penalty: 1.0,
            explore: 0.0,
            fallback: 0.3,
            proof: 0.55,
            stall: 30,
            gain: 0.0,
            basin: 3,
            niche: 0.0,
            niche_rounds: 5,
            edges: 0.8,
            population: 16,
            t0: 0.2,
            alpha: 0.95,
        }
    }
}

/// The settings' names, in the order [`Settings::text`] writes them.
const KEYS: [&str; 20] = [
    "initial",
    "local_share",
    "region_share",
    "region",
    "knn_share",
    "k",
    "trees",
    "failure_penalty",
    "explore",
    "fallback",
    "proof",
    "stall",
    "gain",
    "basin",
    "niche",
    "niche_rounds",
    "edges",
    "population",
    "t0",
    "alpha",
];

impl Settings {
    /// The defaults with `text`'s settings (`key=value,key=value`; empty: the defaults).
    pub fn parse(text: &str) -> Result<Settings, SettingsError> {
        let mut s = Settings::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| SettingsError::Malformed(item.to_string()))?;
            s.set(key.trim(), value.trim())?;
        }
        Ok(s)
    }

    fn set(&mut self, key: &str, value: &str) -> Result<(), SettingsError> {
        let bad = |why| SettingsError::Value {
            key: key.to_string(),
            value: value.to_string(),
            why,
        };
        let share = || -> Result<f64, SettingsError> {
            value
                .parse::<f64>()
                .ok()
                .filter(|v| (0.0..=1.0).contains(v))
                .ok_or_else(|| bad("a share from 0 to 1"))
        };
        let count = |least: usize| -> Result<usize, SettingsError> {
            value
                .parse::<usize>()
                .ok()
                .filter(|v| *v >= least)
                .ok_or_else(|| bad("a whole number, at least 1 where 0 means nothing"))
        };
        let positive = || -> Result<f64, SettingsError> {
            value
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| bad("a positive number"))
        };
        match key {
            "initial" => self.initial = count(1)?,
            "local_share" => self.local_share = share()?,
            "region_share" => self.region_share = share()?,
            "region" => self.region = count(1)?,
            "knn_share" => self.knn_share = share()?,
            "k" => self.k = count(1)?,
            "trees" => self.trees = count(1)?,
            "failure_penalty" => self.failure_penalty = positive()?,
            "explore" => self.explore = share()?,
            "fallback" => self.fallback = share()?,
            "proof" => self.proof = share()?,
            "stall" => self.stall = count(0)?,
            "gain" => self.gain = share()?,
            "basin" => self.basin = count(0)?,
            "niche" => self.niche = share()?,
            "niche_rounds" => self.niche_rounds = count(1)?,
            "edges" => self.edges = share()?,
            "population" => self.population = count(2)?,
            "t0" => self.t0 = positive()?,
            "alpha" => self.alpha = share()?,
            _ => return Err(SettingsError::Unknown(key.to_string(), KEYS.join(", "))),
        }
        Ok(())
    }

    /// Every setting as `key=value,…`, which [`Settings::parse`] reads back.
    pub fn text(&self) -> String {
        let values = [
            self.initial.to_string(),
            self.local_share.to_string(),
            self.region_share.to_string(),
            self.region.to_string(),
            self.knn_share.to_string(),
            self.k.to_string(),
            self.trees.to_string(),
            self.failure_penalty.to_string(),
            self.explore.to_string(),
            self.fallback.to_string(),
            self.proof.to_string(),
            self.stall.to_string(),
            self.gain.to_string(),
            self.basin.to_string(),
            self.niche.to_string(),
            self.niche_rounds.to_string(),
            self.edges.to_string(),
            self.population.to_string(),
            self.t0.to_string(),
            self.alpha.to_string(),
        ];
        KEYS.iter()
            .zip(values)
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_back_what_they_write_and_refuse_what_they_do_not_know() {
        let s = Settings::parse("local_share=0.5, stall=40,k=8").expect("valid");
        assert_eq!(s.local_share, 0.5);
        assert_eq!(s.stall, 40);
        assert_eq!(s.k, 8);
        assert_eq!(s.initial, Settings::default().initial);
        assert_eq!(Settings::parse(&s.text()), Ok(s));
        assert_eq!(Settings::parse(""), Ok(Settings::default()));
        assert!(matches!(
            Settings::parse("speed=2"),
            Err(SettingsError::Unknown(..))
        ));
        assert!(matches!(
            Settings::parse("local_share"),
            Err(SettingsError::Malformed(_))
        ));
        assert!(matches!(
            Settings::parse("local_share=1.5"),
            Err(SettingsError::Value { .. })
        ));
        assert!(matches!(
            Settings::parse("initial=0"),
            Err(SettingsError::Value { .. })
        ));
    }
}

use super::StoppingCriterion;

/// Stops after a fixed number of samples (`--target-samples`, default 100).
#[derive(Debug, Clone)]
pub struct SampleCount {
    target: u64,
    seen: u64,
}

impl SampleCount {
    /// A criterion that stops at `target` samples.
    pub fn new(target: u64) -> SampleCount {
        SampleCount { target, seen: 0 }
    }
}

impl StoppingCriterion for SampleCount {
    fn name(&self) -> &str {
        "sample-count"
    }

    fn params(&self) -> Vec<(String, f64)> {
        vec![("target-samples".into(), self.target as f64)]
    }

    fn initialize(&mut self) {
        self.seen = 0;
    }

    fn add_measurement(&mut self, _seconds: f64) {
        self.seen += 1;
    }

    fn is_finished(&self) -> bool {
        self.seen >= self.target
    }
}

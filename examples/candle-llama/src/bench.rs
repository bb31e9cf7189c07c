//! The measurement: per run a prefill (one forward pass over the whole prompt from position
//! 0) and a decode (one token a forward pass, with the key-value cache), each timed on the
//! host between device synchronisations; medians and ranges over the runs.

use std::time::Instant;

use anyhow::{Context, Result};
use candle_core::{Device, Tensor};

use crate::model::{token, Model};

/// One run's times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run {
    /// Seconds of the prefill.
    pub prefill_s: f64,
    /// Seconds of the decode (all its tokens).
    pub decode_s: f64,
}

/// What a run does: prompt tokens in one pass, then generated tokens one a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    /// Tokens of the prompt.
    pub prompt: usize,
    /// Tokens generated after it.
    pub decode: usize,
    /// The vocabulary the token ids come from.
    pub vocab: usize,
}

impl Run {
    /// Prompt tokens a second.
    pub fn prefill_tps(&self, work: &Work) -> f64 {
        work.prompt as f64 / self.prefill_s
    }

    /// Generated tokens a second.
    pub fn decode_tps(&self, work: &Work) -> f64 {
        work.decode as f64 / self.decode_s
    }
}

/// One run of `work` on `model`: a new generation, the prompt's forward pass, then one pass a
/// generated token (the ids are fixed: which token comes next does not change the work).
/// Returns the times and the last token's logits.
pub fn run(model: &mut Model, dev: &Device, work: &Work) -> Result<(Run, Tensor)> {
    model.reset(dev)?;
    let ids: Vec<u32> = (0..work.prompt).map(|i| token(i, work.vocab)).collect();
    let prompt = Tensor::new(ids.as_slice(), dev)?.unsqueeze(0)?;
    dev.synchronize()
        .context("synchronizing before the prefill")?;
    let t = Instant::now();
    let mut logits = model.forward(&prompt, 0).context("prefill")?;
    dev.synchronize()
        .context("synchronizing after the prefill")?;
    let prefill_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for i in 0..work.decode {
        let pos = work.prompt + i;
        // As a generating program does: the next token's id goes to the device each step.
        let next = Tensor::new(&[[token(pos, work.vocab)]], dev)?;
        logits = model
            .forward(&next, pos)
            .with_context(|| format!("decoding token {i}"))?;
    }
    dev.synchronize()
        .context("synchronizing after the decode")?;
    let run = Run {
        prefill_s,
        decode_s: t.elapsed().as_secs_f64(),
    };
    Ok((run, logits))
}

/// The sum and the sum of magnitudes of `logits`: the same weights (candle seeds its CUDA
/// generator with a constant; the Q4_K blocks come from `--seed`) give the same numbers in
/// both builds, up to the order of float sums where a launch shape changes it.
pub fn checksum(logits: &Tensor) -> Result<(f64, f64)> {
    let v = logits
        .to_dtype(candle_core::DType::F32)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    let sum = v.iter().map(|&x| f64::from(x)).sum();
    let abs = v.iter().map(|&x| f64::from(x).abs()).sum();
    Ok((sum, abs))
}

/// The median and range of some numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The median (the mean of the middle two of an even count).
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Summary {
    /// The summary of `values`; `None` if there are none.
    pub fn of(values: &[f64]) -> Option<Summary> {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => v[n / 2],
            _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        };
        Some(Summary {
            median,
            min: v[0],
            max: v[n - 1],
        })
    }

    /// `median (min–max)`, to one decimal.
    pub fn show(&self) -> String {
        format!("{:.1} ({:.1}–{:.1})", self.median, self.min, self.max)
    }

    /// As JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({"median": self.median, "min": self.min, "max": self.max})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_take_the_middle_and_the_ends() {
        let s = Summary::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 4.0));
        assert!(Summary::of(&[]).is_none());
        assert_eq!(Summary::of(&[2.0, 1.0]).unwrap().show(), "1.5 (1.0–2.0)");
    }

    #[test]
    fn checksums_sum_values_and_magnitudes() {
        let t = Tensor::new(&[[1f32, -2.0, 0.5]], &Device::Cpu).unwrap();
        assert_eq!(checksum(&t).unwrap(), (-0.5, 3.5));
    }

    #[test]
    fn tokens_a_second_are_tokens_over_seconds() {
        let work = Work {
            prompt: 512,
            decode: 64,
            vocab: 10,
        };
        let r = Run {
            prefill_s: 0.5,
            decode_s: 2.0,
        };
        assert_eq!(r.prefill_tps(&work), 1024.0);
        assert_eq!(r.decode_tps(&work), 32.0);
    }
}

//! The bench binary's command line, following nvbench's.

use clap::Parser;

use crate::axis::{Axis, AxisValues};
use crate::error::{Error, Result};

/// Command line of a bench binary.
#[derive(Debug, Parser)]
#[command(
    allow_negative_numbers = true,
    about = "A gputune bench binary (nvbench-style command line)",
    after_help = "Examples:\n  \
        BENCH --list\n  \
        BENCH -b scale -a 'Elements{io}[pow2]=[20,24]' --stopping-criterion entropy\n  \
        BENCH -a 'T{ct}=f32' -a 'Elements[pow2]=[16:28:4]' --json out.json"
)]
pub struct Cli {
    /// Print the benches and their axes as JSON and exit.
    #[arg(short = 'l', long)]
    pub list: bool,
    /// Open the devices the selected benches need, print them as JSON and exit.
    #[arg(long)]
    pub devices: bool,
    /// Run only these benches (name or index; repeatable).
    #[arg(short = 'b', long = "benchmark", value_name = "NAME")]
    pub benchmarks: Vec<String>,
    /// Override an axis: `Name=v`, `Name=[a,b,c]`, `Name=[start:stop:step]`, `Name[pow2]=…`
    /// (exponents). Repeatable.
    #[arg(short = 'a', long = "axis", value_name = "SPEC")]
    pub axes: Vec<String>,
    /// Variant labels to run, one after another (for binaries that hold several variants).
    #[arg(long, value_name = "LABEL[,LABEL…]", value_delimiter = ',')]
    pub variant: Vec<String>,
    /// Stopping criterion: stdrel, entropy, sample-count, or a registered custom one.
    #[arg(long, default_value = "stdrel", value_name = "NAME")]
    pub stopping_criterion: String,
    /// stdrel: target relative standard deviation in percent.
    #[arg(long, default_value_t = 0.5, value_name = "PERCENT")]
    pub max_noise: f64,
    /// stdrel: minimum total GPU time in seconds.
    #[arg(long, default_value_t = 0.5, value_name = "SECONDS")]
    pub min_time: f64,
    /// Minimum number of cold samples, for every criterion.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub min_samples: u64,
    /// Wall-clock limit of a state's cold loop in seconds; a state that reaches it is marked
    /// timed out.
    #[arg(long, default_value_t = 15.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// entropy: largest trend angle in degrees.
    #[arg(long, default_value_t = 0.048, value_name = "DEGREES")]
    pub max_angle: f64,
    /// entropy: smallest R² of the trend line.
    #[arg(long, default_value_t = 0.36, value_name = "R2")]
    pub min_r2: f64,
    /// sample-count: number of samples.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub target_samples: u64,
    /// A parameter for a custom criterion (repeatable).
    #[arg(long = "criterion-param", value_name = "NAME=VALUE")]
    pub criterion_params: Vec<String>,
    /// Samples with an SM clock below this percentage of the default clock are discarded.
    #[arg(long, default_value_t = 75.0, value_name = "PERCENT")]
    pub throttle_threshold: f64,
    /// Skip the hot (batched) measurement.
    #[arg(long)]
    pub no_batch: bool,
    /// Race the variants of `--variant`: stop a state's cold loop early once its samples are
    /// more than FRACTION slower than the fastest earlier variant's median for that state
    /// (0.05 is 5 %). Off by default.
    #[arg(long, value_name = "FRACTION")]
    pub race: Option<f64>,
    /// Hot measurement: total device time to reach, in seconds.
    #[arg(long, default_value_t = 0.5, value_name = "SECONDS")]
    pub batch_target_time: f64,
    /// Write the results as JSON to FILE (`-` for stdout; the table then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Append each finished state to FILE as one JSON line, as it finishes.
    #[arg(long, value_name = "FILE")]
    pub jsonl: Option<String>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub device: u32,
    /// Run every bench on the CPU backend; benches that need CUDA are skipped.
    #[arg(long)]
    pub cpu: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    pub bench: bool,
}

impl Cli {
    /// Rejects values no criterion or loop can work with.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("--max-noise", self.max_noise),
            ("--timeout", self.timeout),
            ("--max-angle", self.max_angle),
            ("--batch-target-time", self.batch_target_time),
        ];
        for (flag, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::Usage(format!(
                    "{flag} must be a positive number, not {v}"
                )));
            }
        }
        if let Some(r) = self.race {
            if !(r.is_finite() && r >= 0.0) {
                return Err(Error::Usage(format!(
                    "--race must be a fraction of zero or more (0.05 is 5 %), not {r}"
                )));
            }
        }
        if !(self.min_time.is_finite() && self.min_time >= 0.0) {
            return Err(Error::Usage(format!(
                "--min-time must be zero or positive, not {}",
                self.min_time
            )));
        }
        if !(0.0..=1.0).contains(&self.min_r2) {
            return Err(Error::Usage(format!(
                "--min-r2 must be within 0..=1, not {}",
                self.min_r2
            )));
        }
        if !(0.0..=100.0).contains(&self.throttle_threshold) {
            return Err(Error::Usage(format!(
                "--throttle-threshold is a percentage within 0..=100, not {}",
                self.throttle_threshold
            )));
        }
        if self.target_samples == 0 {
            return Err(Error::Usage("--target-samples must be at least 1".into()));
        }
        Ok(())
    }

    /// The `--criterion-param` pairs.
    pub fn extra_params(&self) -> Result<Vec<(String, f64)>> {
        self.criterion_params
            .iter()
            .map(|p| {
                let (k, v) = p.split_once('=').ok_or_else(|| {
                    Error::Usage(format!("--criterion-param takes NAME=VALUE, not `{p}`"))
                })?;
                let v: f64 = v.trim().parse().map_err(|_| {
                    Error::Usage(format!("--criterion-param `{k}`: `{v}` is not a number"))
                })?;
                Ok((k.trim().to_string(), v))
            })
            .collect()
    }
}

/// The values part of an `-a` override, not yet typed.
#[derive(Debug, Clone, PartialEq)]
pub enum RawValues {
    /// `v` or `[a,b,c]`.
    List(Vec<String>),
    /// `[start:stop:step]`, inclusive of `stop`; step defaults to 1.
    Range {
        /// First value.
        start: String,
        /// Last value (inclusive).
        stop: String,
        /// Step.
        step: String,
    },
}

/// One `-a` override.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisOverride {
    /// The axis name as written (marks allowed or omitted).
    pub name: String,
    /// Whether `[pow2]` was written: the values are exponents.
    pub pow2: bool,
    /// The values.
    pub values: RawValues,
}

impl AxisOverride {
    /// Parses `Name=v`, `Name=[a,b]`, `Name=[start:stop:step]`, `Name[pow2]=…`.
    pub fn parse(spec: &str) -> Result<AxisOverride> {
        let usage = |why: &str| {
            Error::Usage(format!(
                "bad axis override `{spec}`: {why}; write Name=v, Name=[a,b,c], Name=[start:stop:step] or Name[pow2]=…"
            ))
        };
        let (lhs, rhs) = spec.split_once('=').ok_or_else(|| usage("no `=`"))?;
        let lhs = lhs.trim();
        let (name, pow2) = match lhs.strip_suffix("[pow2]") {
            Some(n) => (n.trim(), true),
            None => (lhs, false),
        };
        if name.is_empty() {
            return Err(usage("no axis name"));
        }
        if name.contains('[') {
            return Err(usage("the only flag is [pow2]"));
        }
        let rhs = rhs.trim();
        let values = if let Some(inner) = rhs.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| usage("`[` without `]`"))?;
            if inner.contains(':') {
                let parts: Vec<&str> = inner.split(':').map(str::trim).collect();
                match parts.as_slice() {
                    [start, stop] => RawValues::Range {
                        start: start.to_string(),
                        stop: stop.to_string(),
                        step: "1".into(),
                    },
                    [start, stop, step] => RawValues::Range {
                        start: start.to_string(),
                        stop: stop.to_string(),
                        step: step.to_string(),
                    },
                    _ => return Err(usage("a range is [start:stop] or [start:stop:step]")),
                }
            } else {
                let items: Vec<String> = inner.split(',').map(|s| s.trim().to_string()).collect();
                if items.iter().any(String::is_empty) {
                    return Err(usage("empty value in list"));
                }
                RawValues::List(items)
            }
        } else {
            if rhs.is_empty() {
                return Err(usage("no value"));
            }
            RawValues::List(vec![rhs.to_string()])
        };
        Ok(AxisOverride {
            name: name.to_string(),
            pow2,
            values,
        })
    }

    /// The new values of `axis` under this override.
    pub fn apply(&self, axis: &Axis) -> Result<AxisValues> {
        let bad = |why: String| Error::Usage(format!("axis `{}`: {why}", axis.name));
        let ints = |what: &str| -> Result<Vec<i64>> {
            match &self.values {
                RawValues::List(items) => items
                    .iter()
                    .map(|s| {
                        s.parse::<i64>()
                            .map_err(|_| bad(format!("`{s}` is not {what}")))
                    })
                    .collect(),
                RawValues::Range { start, stop, step } => {
                    let p = |s: &String| {
                        s.parse::<i64>()
                            .map_err(|_| bad(format!("`{s}` is not {what}")))
                    };
                    let (a, b, s) = (p(start)?, p(stop)?, p(step)?);
                    if s <= 0 {
                        return Err(bad(format!("range step must be positive, not {s}")));
                    }
                    if b < a {
                        return Err(bad(format!("range [{a}:{b}] is empty")));
                    }
                    Ok((a..=b).step_by(s as usize).collect())
                }
            }
        };
        match &axis.values {
            AxisValues::Int64(_) | AxisValues::Int64Pow2(_) => {
                let is_pow2_axis = matches!(axis.values, AxisValues::Int64Pow2(_));
                if is_pow2_axis && !self.pow2 {
                    return Err(bad(format!(
                        "it is a power-of-two axis: write `{}[pow2]=…` with exponents",
                        axis.name
                    )));
                }
                if self.pow2 {
                    let exps = ints("an exponent")?;
                    let exps = exps
                        .into_iter()
                        .map(|e| {
                            u32::try_from(e)
                                .ok()
                                .filter(|e| *e <= 62)
                                .ok_or_else(|| bad(format!("exponent {e} is outside 0..=62")))
                        })
                        .collect::<Result<Vec<u32>>>()?;
                    Ok(AxisValues::Int64Pow2(exps))
                } else {
                    Ok(AxisValues::Int64(ints("an integer")?))
                }
            }
            _ if self.pow2 => Err(bad("[pow2] applies only to integer axes".into())),
            AxisValues::Float64(_) => {
                let p = |s: &String| {
                    s.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| bad(format!("`{s}` is not a number")))
                };
                match &self.values {
                    RawValues::List(items) => Ok(AxisValues::Float64(
                        items.iter().map(p).collect::<Result<_>>()?,
                    )),
                    RawValues::Range { start, stop, step } => {
                        let (a, b, s) = (p(start)?, p(stop)?, p(step)?);
                        if s <= 0.0 || b < a {
                            return Err(bad(format!(
                                "range [{a}:{b}:{s}] is empty or its step is not positive"
                            )));
                        }
                        // Count steps rather than accumulate, so 0:1:0.1 ends at 1.0 exactly once.
                        let n = ((b - a) / s + 1e-9).floor() as usize;
                        Ok(AxisValues::Float64(
                            (0..=n).map(|i| a + i as f64 * s).collect(),
                        ))
                    }
                }
            }
            AxisValues::String(_) => match &self.values {
                RawValues::List(items) => Ok(AxisValues::String(items.clone())),
                RawValues::Range { .. } => {
                    Err(bad("a string axis takes a list, not a range".into()))
                }
            },
            AxisValues::Type(declared) => match &self.values {
                RawValues::List(items) => {
                    for t in items {
                        if !declared.contains(t) {
                            return Err(bad(format!(
                                "type `{t}` is not declared; declared: {}",
                                declared.join(", ")
                            )));
                        }
                    }
                    Ok(AxisValues::Type(items.clone()))
                }
                RawValues::Range { .. } => Err(bad("a type axis takes a list, not a range".into())),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(name: &str, values: AxisValues) -> Axis {
        Axis {
            name: name.into(),
            values,
        }
    }

    #[test]
    fn overrides_parse() {
        let o = AxisOverride::parse("Elements{io}[pow2]=[16:28:4]").expect("valid");
        assert_eq!(o.name, "Elements{io}");
        assert!(o.pow2);
        let a = axis("Elements{io}", AxisValues::Int64Pow2(vec![10]));
        assert_eq!(
            o.apply(&a).expect("valid"),
            AxisValues::Int64Pow2(vec![16, 20, 24, 28])
        );

        let o = AxisOverride::parse("N=[1, 2,3]").expect("valid");
        let a = axis("N", AxisValues::Int64(vec![0]));
        assert_eq!(
            o.apply(&a).expect("valid"),
            AxisValues::Int64(vec![1, 2, 3])
        );
        let o = AxisOverride::parse("N=7").expect("valid");
        assert_eq!(o.apply(&a).expect("valid"), AxisValues::Int64(vec![7]));
        let o = AxisOverride::parse("N[pow2]=3").expect("valid");
        assert_eq!(o.apply(&a).expect("valid"), AxisValues::Int64Pow2(vec![3]));

        let f = axis("Alpha", AxisValues::Float64(vec![0.5]));
        let o = AxisOverride::parse("Alpha=[0:1:0.25]").expect("valid");
        assert_eq!(
            o.apply(&f).expect("valid"),
            AxisValues::Float64(vec![0.0, 0.25, 0.5, 0.75, 1.0])
        );
    }

    #[test]
    fn bad_overrides_say_what_is_allowed() {
        for spec in [
            "Elements",
            "=3",
            "N=[1,2",
            "N=[1::2:3]",
            "N[log]=3",
            "N=[1,,2]",
        ] {
            let err = AxisOverride::parse(spec).expect_err(spec).to_string();
            assert!(err.contains("write Name=v"), "{spec}: {err}");
        }
        let pow2 = axis("Elements{io}", AxisValues::Int64Pow2(vec![10]));
        let err = AxisOverride::parse("Elements{io}=1024").and_then(|o| o.apply(&pow2));
        assert!(err
            .expect_err("needs [pow2]")
            .to_string()
            .contains("[pow2]"));
        let ints = axis("N", AxisValues::Int64(vec![0]));
        let err = AxisOverride::parse("N=abc").and_then(|o| o.apply(&ints));
        assert!(err
            .expect_err("not an int")
            .to_string()
            .contains("`abc` is not an integer"));
        let err = AxisOverride::parse("N=[5:1]").and_then(|o| o.apply(&ints));
        assert!(err.expect_err("empty").to_string().contains("empty"));
        let types = axis("T{ct}", AxisValues::Type(vec!["f32".into(), "f64".into()]));
        let err = AxisOverride::parse("T{ct}=i8").and_then(|o| o.apply(&types));
        assert!(err
            .expect_err("undeclared")
            .to_string()
            .contains("declared: f32, f64"));
    }
}

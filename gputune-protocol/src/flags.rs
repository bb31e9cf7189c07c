//! A bench binary's command line, following nvbench's: parsed by the bench (with clap) and
//! built by `cargo gputune` ([`BenchArgs::to_args`]), one definition for both sides.

use clap::Parser;

/// A flag value no criterion or loop can work with: the bench's usage error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagError(pub String);

impl std::fmt::Display for FlagError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FlagError {}

/// The stopping criterion when none is named.
pub const DEFAULT_CRITERION: &str = "stdrel";

/// Command line of a bench binary.
#[derive(Debug, Clone, PartialEq, Parser)]
#[command(
    allow_negative_numbers = true,
    about = "A gputune bench binary (nvbench-style command line)",
    after_help = "Examples:\n  \
        BENCH --list\n  \
        BENCH -b scale -a 'Elements{io}[pow2]=[20,24]' --stopping-criterion entropy\n  \
        BENCH -a 'T{ct}=f32' -a 'Elements[pow2]=[16:28:4]' --json out.json"
)]
pub struct BenchArgs {
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
    /// `@FILE` stands for the labels in FILE, separated by commas or line breaks: a list
    /// longer than one argument may be (128 KiB on Linux) goes that way.
    #[arg(long, value_name = "LABEL[,LABEL…]|@FILE", value_delimiter = ',')]
    pub variant: Vec<String>,
    /// Run only these points of the axes' product: workloads of `Axis=value` pairs
    /// (`Rows=1 Cols=4096`), separated by `;`; a state runs when a listed workload agrees with
    /// it on every axis the workload names. States outside the list are not run and not
    /// reported. `@FILE` stands for the workloads in FILE, one a line.
    #[arg(long, value_name = "WORKLOAD[;WORKLOAD…]|@FILE", value_delimiter = ';')]
    pub workloads: Vec<String>,
    /// Stopping criterion: stdrel (the default), entropy, sample-count, or a registered
    /// custom one.
    #[arg(long, value_name = "NAME")]
    pub stopping_criterion: Option<String>,
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
    /// Decide instead of converge: like `--race`, but a state stops only once its median is
    /// slower than the fastest earlier variant's beyond the noise of both (confidence bounds
    /// of the two medians, Z standard errors wide), checked from 10 samples on. No fixed
    /// margin. Off by default; not with `--race`.
    #[arg(long, value_name = "Z", conflicts_with = "race")]
    pub decide: Option<f64>,
    /// With `--decide`: the equivalence margin. A state also stops, as tied, once the
    /// confidence interval of its median against the fastest earlier variant's lies within
    /// FRACTION of it on both sides (0.01 is 1 %): more samples could not rank the two further
    /// apart than that. Off by default (`cargo gputune search` passes its `--tie-margin`).
    #[arg(long, value_name = "FRACTION", requires = "decide")]
    pub tie_margin: Option<f64>,
    /// Hot measurement: total device time to reach, in seconds.
    #[arg(long, default_value_t = 0.5, value_name = "SECONDS")]
    pub batch_target_time: f64,
    /// Measure energy too: after a state's times, read the device's energy counter (NVML on
    /// an NVIDIA GPU) around batches of back-to-back launches. Off by default: it costs at
    /// least `--energy-batches` × `--energy-window` seconds per state. Where the device has
    /// no counter, the state's energy says why and nothing is measured.
    #[arg(long)]
    pub energy: bool,
    /// Energy: each batch runs until the counter has advanced for at least this many seconds
    /// (and at least four of its updates).
    #[arg(long, default_value_t = 0.1, value_name = "SECONDS")]
    pub energy_window: f64,
    /// Energy: batches per state (their spread is the noise of the energy per launch).
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub energy_batches: u64,
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
    /// Profile: one cold sample per state, without warm-up, blocking kernel or hot loop, so
    /// that a profiler (Nsight Compute, Nsight Systems) sees each kernel once per state
    /// (nvbench's `--profile`). Implies `--disable-blocking-kernel`.
    #[arg(long)]
    pub profile: bool,
    /// Do not hold the stream with the blocking (spin) kernel during cold samples: profilers
    /// that serialise launches would wait for it forever. Launch latency is then part of
    /// short kernels' times.
    #[arg(long)]
    pub disable_blocking_kernel: bool,
    /// After the listed variants, wait for more passes in the same process: each line on
    /// stdin is a JSON array of bench flags (`--variant` and the measurement settings; the
    /// process keeps its `-b`, `-a`, device and output flags), run like the first; an empty
    /// line or the end of stdin ends the process. A `pass_done` event follows each pass.
    /// The workloads' setups, compiled kernels and the CUDA context carry over.
    #[arg(long)]
    pub more_on_stdin: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    pub bench: bool,
}

impl Default for BenchArgs {
    fn default() -> BenchArgs {
        BenchArgs::parse_from(["bench"])
    }
}

impl BenchArgs {
    /// Parses the flags after the program name, as a bench binary would.
    pub fn from_flags<I, S>(flags: I) -> Result<BenchArgs, clap::Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString> + Clone,
    {
        let argv = std::iter::once(std::ffi::OsString::from("bench"))
            .chain(flags.into_iter().map(Into::into));
        BenchArgs::try_parse_from(argv)
    }

    /// The stopping criterion's name.
    pub fn criterion(&self) -> &str {
        self.stopping_criterion
            .as_deref()
            .unwrap_or(DEFAULT_CRITERION)
    }

    /// The flags as the bench applies them: `--profile` means one sample (sample-count 1, at
    /// least 1), no hot loop and no blocking kernel.
    pub fn effective(&self) -> BenchArgs {
        let mut a = self.clone();
        if a.profile {
            a.stopping_criterion = Some("sample-count".into());
            a.target_samples = 1;
            a.min_samples = 1;
            a.no_batch = true;
            a.disable_blocking_kernel = true;
            a.energy = false;
        }
        a
    }

    /// Replaces each `@FILE` of `--variant` with the labels FILE holds (commas or line breaks
    /// between them), in place; the error names the file that cannot be read.
    pub fn read_variant_files(&mut self) -> Result<(), FlagError> {
        if !self.variant.iter().any(|v| v.starts_with('@')) {
            return Ok(());
        }
        let mut labels = Vec::with_capacity(self.variant.len());
        for v in std::mem::take(&mut self.variant) {
            match v.strip_prefix('@') {
                Some(path) => {
                    let text = std::fs::read_to_string(path).map_err(|e| {
                        FlagError(format!("--variant @{path}: cannot read the file: {e}"))
                    })?;
                    labels.extend(
                        text.split([',', '\n'])
                            .map(str::trim)
                            .filter(|l| !l.is_empty())
                            .map(str::to_string),
                    );
                }
                None => labels.push(v),
            }
        }
        self.variant = labels;
        Ok(())
    }

    /// Replaces each `@FILE` of `--workloads` with the workloads FILE holds (one a line,
    /// [`crate::workloads::file_entries`]), in place; the error names the file that cannot be
    /// read.
    pub fn read_workload_files(&mut self) -> Result<(), FlagError> {
        if !self.workloads.iter().any(|w| w.starts_with('@')) {
            return Ok(());
        }
        let mut entries = Vec::with_capacity(self.workloads.len());
        for w in std::mem::take(&mut self.workloads) {
            match w.strip_prefix('@') {
                Some(path) => {
                    let text = std::fs::read_to_string(path).map_err(|e| {
                        FlagError(format!("--workloads @{path}: cannot read the file: {e}"))
                    })?;
                    entries.extend(crate::workloads::file_entries(&text));
                }
                None => entries.push(w),
            }
        }
        self.workloads = entries;
        Ok(())
    }

    /// The workloads of `--workloads` (its files read), `None` without the flag: every
    /// state runs. A list that names no workload is an error, not every state.
    pub fn listed_workloads(&self) -> Result<Option<Vec<crate::workloads::Workload>>, FlagError> {
        if self.workloads.is_empty() {
            return Ok(None);
        }
        let list = crate::workloads::parse_list(&self.workloads)?;
        if list.is_empty() {
            return Err(FlagError("--workloads lists no workload".into()));
        }
        Ok(Some(list))
    }

    /// The flags of a further pass (`--more-on-stdin`) from its line, a JSON array of
    /// strings. Refuses the flags a process keeps from its first pass; the device and
    /// `--cpu` stay the process's whatever the line says.
    pub fn next_pass(line: &str) -> Result<BenchArgs, FlagError> {
        let flags: Vec<String> = serde_json::from_str(line)
            .map_err(|e| FlagError(format!("a pass is a JSON array of flags: {e}")))?;
        let a = BenchArgs::from_flags(&flags).map_err(|e| {
            let text = e.to_string();
            FlagError(text.lines().next().unwrap_or_default().to_string())
        })?;
        let kept = [
            (!a.benchmarks.is_empty(), "-b"),
            (!a.axes.is_empty(), "-a"),
            (a.json.is_some(), "--json"),
            (a.jsonl.is_some(), "--jsonl"),
            (a.list, "--list"),
            (a.devices, "--devices"),
            (a.more_on_stdin, "--more-on-stdin"),
        ];
        if let Some((_, flag)) = kept.iter().find(|(given, _)| *given) {
            return Err(FlagError(format!(
                "{flag} belongs to the process, not to a further pass"
            )));
        }
        a.validate()?;
        Ok(a)
    }

    /// Rejects values no criterion or loop can work with.
    pub fn validate(&self) -> Result<(), FlagError> {
        let positive = [
            ("--max-noise", self.max_noise),
            ("--timeout", self.timeout),
            ("--max-angle", self.max_angle),
            ("--batch-target-time", self.batch_target_time),
            ("--energy-window", self.energy_window),
        ];
        for (flag, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(FlagError(format!(
                    "{flag} must be a positive number, not {v}"
                )));
            }
        }
        if let Some(z) = self.decide {
            if !(z.is_finite() && z > 0.0) {
                return Err(FlagError(format!(
                    "--decide takes the confidence in standard errors (3 is 99.9 %), not {z}"
                )));
            }
        }
        if let Some(t) = self.tie_margin {
            if !(t.is_finite() && (0.0..1.0).contains(&t)) {
                return Err(FlagError(format!(
                    "--tie-margin must be a fraction from 0 up to 1 (0.01 is 1 %), not {t}"
                )));
            }
        }
        if let Some(r) = self.race {
            if !(r.is_finite() && r >= 0.0) {
                return Err(FlagError(format!(
                    "--race must be a fraction of zero or more (0.05 is 5 %), not {r}"
                )));
            }
        }
        if !(self.min_time.is_finite() && self.min_time >= 0.0) {
            return Err(FlagError(format!(
                "--min-time must be zero or positive, not {}",
                self.min_time
            )));
        }
        if !(0.0..=1.0).contains(&self.min_r2) {
            return Err(FlagError(format!(
                "--min-r2 must be within 0..=1, not {}",
                self.min_r2
            )));
        }
        if !(0.0..=100.0).contains(&self.throttle_threshold) {
            return Err(FlagError(format!(
                "--throttle-threshold is a percentage within 0..=100, not {}",
                self.throttle_threshold
            )));
        }
        if self.target_samples == 0 {
            return Err(FlagError("--target-samples must be at least 1".into()));
        }
        // The workloads written out; those of a file are checked once it is read.
        let inline: Vec<String> = self
            .workloads
            .iter()
            .filter(|w| !w.starts_with('@'))
            .cloned()
            .collect();
        crate::workloads::parse_list(&inline)?;
        if self.energy_batches < 2 {
            return Err(FlagError(
                "--energy-batches must be at least 2 (their spread is the noise)".into(),
            ));
        }
        self.extra_params().map(|_| ())
    }

    /// The `--criterion-param` pairs.
    pub fn extra_params(&self) -> Result<Vec<(String, f64)>, FlagError> {
        self.criterion_params
            .iter()
            .map(|p| {
                let (k, v) = p.split_once('=').ok_or_else(|| {
                    FlagError(format!("--criterion-param takes NAME=VALUE, not `{p}`"))
                })?;
                let v: f64 = v.trim().parse().map_err(|_| {
                    FlagError(format!("--criterion-param `{k}`: `{v}` is not a number"))
                })?;
                Ok((k.trim().to_string(), v))
            })
            .collect()
    }

    /// The command line that parses back into these flags (the program name not included).
    /// Values at their defaults are left out, so the line reads as a person would write it.
    pub fn to_args(&self) -> Vec<String> {
        let d = BenchArgs::default();
        let mut out = Vec::new();
        let mut flag = |on: bool, name: &str| {
            if on {
                out.push(name.to_string());
            }
        };
        flag(self.list, "--list");
        flag(self.devices, "--devices");
        flag(self.no_batch, "--no-batch");
        flag(self.energy, "--energy");
        flag(self.cpu, "--cpu");
        flag(self.bench, "--bench");
        flag(self.profile, "--profile");
        flag(self.disable_blocking_kernel, "--disable-blocking-kernel");
        flag(self.more_on_stdin, "--more-on-stdin");
        // A value that starts with `-` (or is empty) is written `--flag=value`: written apart,
        // it would read as a flag (found by the generated inputs: `--variant -`).
        let pair = |name: &str, v: String| -> Vec<String> {
            if v.is_empty() || v.starts_with('-') {
                vec![format!("{name}={v}")]
            } else {
                vec![name.to_string(), v]
            }
        };
        let short = |short: &str, long: &str, v: &String| -> Vec<String> {
            if v.is_empty() || v.starts_with('-') {
                pair(long, v.clone())
            } else {
                vec![short.to_string(), v.clone()]
            }
        };
        for b in &self.benchmarks {
            out.extend(short("-b", "--benchmark", b));
        }
        for a in &self.axes {
            out.extend(short("-a", "--axis", a));
        }
        if !self.variant.is_empty() {
            out.extend(pair("--variant", self.variant.join(",")));
        }
        if !self.workloads.is_empty() {
            out.extend(pair("--workloads", self.workloads.join(";")));
        }
        let mut value = |differs: bool, name: &str, v: String| {
            if differs {
                out.extend(pair(name, v));
            }
        };
        if let Some(c) = &self.stopping_criterion {
            value(true, "--stopping-criterion", c.clone());
        }
        value(
            self.max_noise != d.max_noise,
            "--max-noise",
            self.max_noise.to_string(),
        );
        value(
            self.min_time != d.min_time,
            "--min-time",
            self.min_time.to_string(),
        );
        value(
            self.min_samples != d.min_samples,
            "--min-samples",
            self.min_samples.to_string(),
        );
        value(
            self.timeout != d.timeout,
            "--timeout",
            self.timeout.to_string(),
        );
        value(
            self.max_angle != d.max_angle,
            "--max-angle",
            self.max_angle.to_string(),
        );
        value(self.min_r2 != d.min_r2, "--min-r2", self.min_r2.to_string());
        value(
            self.target_samples != d.target_samples,
            "--target-samples",
            self.target_samples.to_string(),
        );
        for p in &self.criterion_params {
            value(true, "--criterion-param", p.clone());
        }
        value(
            self.throttle_threshold != d.throttle_threshold,
            "--throttle-threshold",
            self.throttle_threshold.to_string(),
        );
        if let Some(r) = self.race {
            value(true, "--race", r.to_string());
        }
        if let Some(z) = self.decide {
            value(true, "--decide", z.to_string());
        }
        if let Some(t) = self.tie_margin {
            value(true, "--tie-margin", t.to_string());
        }
        value(
            self.batch_target_time != d.batch_target_time,
            "--batch-target-time",
            self.batch_target_time.to_string(),
        );
        value(
            self.energy_window != d.energy_window,
            "--energy-window",
            self.energy_window.to_string(),
        );
        value(
            self.energy_batches != d.energy_batches,
            "--energy-batches",
            self.energy_batches.to_string(),
        );
        if let Some(j) = &self.json {
            value(true, "--json", j.clone());
        }
        if let Some(j) = &self.jsonl {
            value(true, "--jsonl", j.clone());
        }
        value(self.device != d.device, "--device", self.device.to_string());
        out
    }

    /// What a measurement means besides the variant and the workload: the criterion and its
    /// parameters, the sample floor, the timeout, the throttle threshold, the hot loop and
    /// racing, and energy (when measured), in one canonical line. Results measured under other settings are other
    /// results, so `cargo gputune` keys its store by this.
    pub fn measurement_settings(&self) -> String {
        // What the bench applies, so that `--profile` and what it implies read the same.
        let a = self.effective();
        let mut params = a.criterion_params.clone();
        params.sort();
        let criterion = match a.criterion() {
            "stdrel" => format!("stdrel(max-noise={},min-time={})", a.max_noise, a.min_time),
            "entropy" => format!("entropy(max-angle={},min-r2={})", a.max_angle, a.min_r2),
            "entropy-or-stdrel" => format!(
                "entropy-or-stdrel(max-noise={},min-time={},max-angle={},min-r2={})",
                a.max_noise, a.min_time, a.max_angle, a.min_r2
            ),
            "sample-count" => format!("sample-count(target-samples={})", a.target_samples),
            other => format!("{other}({})", params.join(",")),
        };
        format!(
            "{criterion} min-samples={} timeout={} throttle={} hot={} race={}{}{}{}{}",
            a.min_samples,
            a.timeout,
            a.throttle_threshold,
            if a.no_batch {
                "off".to_string()
            } else {
                format!("{}s", a.batch_target_time)
            },
            a.race.map_or("off".to_string(), |r| r.to_string()),
            a.decide.map_or(String::new(), |z| match a.tie_margin {
                Some(t) if t > 0.0 => format!(" decide={z} tie={t}"),
                _ => format!(" decide={z}"),
            }),
            if a.disable_blocking_kernel {
                " blocking-kernel=off"
            } else {
                ""
            },
            if a.profile { " warm-up=off" } else { "" },
            // Only when on: a time-only measurement keeps the line (and the store's revision)
            // it always had.
            if a.energy {
                format!(" energy={}x{}s", a.energy_batches, a.energy_window)
            } else {
                String::new()
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip_through_the_command_line() {
        let args = BenchArgs::from_flags([
            "-b",
            "scale",
            "-a",
            "T{ct}=f32",
            "-a",
            "N=[1,2]",
            "--variant",
            "base,ipt_8.tpb_128",
            "--stopping-criterion",
            "entropy",
            "--max-angle",
            "0.1",
            "--min-samples",
            "20",
            "--criterion-param",
            "k=2",
            "--no-batch",
            "--race",
            "0.05",
            "--jsonl",
            "run.jsonl",
            "--device",
            "1",
            "--cpu",
        ])
        .expect("parses");
        assert_eq!(args.variant, ["base", "ipt_8.tpb_128"]);
        assert_eq!(
            BenchArgs::from_flags(args.to_args()).expect("parses back"),
            args
        );
        let default = BenchArgs::default();
        assert!(default.to_args().is_empty());
        assert_eq!(default.criterion(), "stdrel");
        assert_eq!(
            BenchArgs::from_flags(default.to_args()).expect("parses"),
            default
        );
    }

    #[test]
    fn values_that_start_with_a_dash_are_written_so_that_they_read_back() {
        // Found by the generated inputs (tests/fuzz/regressions/bench-flags): `--variant -`
        // was written `--variant -,x=1`, which reads as an unknown flag.
        for argv in [
            &["--variant", "-", "--variant", "x=1"][..],
            &["--benchmark=-x", "--axis=-N=1", "--stopping-criterion=-"][..],
            &["--max-noise=-1", "--criterion-param=-k=2", "--json="][..],
        ] {
            let args = BenchArgs::from_flags(argv).expect("parses");
            assert_eq!(
                BenchArgs::from_flags(args.to_args()).expect("parses back"),
                args,
                "{argv:?} → {:?}",
                args.to_args()
            );
        }
    }

    #[test]
    fn variant_files_stand_for_their_labels() {
        let path = std::env::temp_dir().join(format!("gputune-variants-{}", std::process::id()));
        std::fs::write(&path, "f.a_1,f.a_2\nf.a_3\n").expect("writes");
        let mut args = BenchArgs::from_flags(["--variant", &format!("f.base,@{}", path.display())])
            .expect("parses");
        args.read_variant_files().expect("reads");
        assert_eq!(args.variant, ["f.base", "f.a_1", "f.a_2", "f.a_3"]);
        std::fs::remove_file(&path).expect("removes");
        let mut gone =
            BenchArgs::from_flags(["--variant", &format!("@{}", path.display())]).expect("parses");
        let e = gone.read_variant_files().expect_err("no file");
        assert!(e.0.contains("cannot read the file"), "{e}");
    }

    #[test]
    fn workloads_are_listed_inline_or_in_a_file_and_round_trip() {
        let args = BenchArgs::from_flags([
            "--workloads",
            "Rows=1 Cols=4096;Rows=4096 Cols=1",
            "--workloads",
            "T=f32 Rows=2",
        ])
        .expect("parses");
        assert_eq!(
            args.workloads,
            ["Rows=1 Cols=4096", "Rows=4096 Cols=1", "T=f32 Rows=2"]
        );
        assert_eq!(
            BenchArgs::from_flags(args.to_args()).expect("parses back"),
            args
        );
        let listed = args.listed_workloads().expect("valid").expect("a list");
        assert_eq!(listed.len(), 3);
        assert_eq!(listed[2].value_of("T"), Some("f32"));
        assert_eq!(
            BenchArgs::default().listed_workloads().expect("valid"),
            None
        );
        // Not how a state is measured: the same settings, the same store revision.
        assert_eq!(
            args.measurement_settings(),
            BenchArgs::default().measurement_settings()
        );
        // A pass of `--more-on-stdin` may list its own.
        let pass = BenchArgs::next_pass(r#"["--workloads", "Rows=1"]"#).expect("a pass");
        assert_eq!(pass.workloads, ["Rows=1"]);

        let path = std::env::temp_dir().join(format!("gputune-workloads-{}", std::process::id()));
        std::fs::write(&path, "# captured\nRows=1 Cols=4096\n\nRows=4096 Cols=1\n")
            .expect("writes");
        let mut args = BenchArgs::from_flags(["--workloads", &format!("@{}", path.display())])
            .expect("parses");
        args.validate().expect("a file is checked once read");
        args.read_workload_files().expect("reads");
        assert_eq!(args.workloads, ["Rows=1 Cols=4096", "Rows=4096 Cols=1"]);
        std::fs::remove_file(&path).expect("removes");
        let e = args_with(&[&format!("@{}", path.display())])
            .read_workload_files()
            .expect_err("no file");
        assert!(e.0.contains("cannot read the file"), "{e}");

        let e = args_with(&["Rows"]).validate().expect_err("not a pair");
        assert!(e.0.contains("is not Axis=value"), "{e}");
        let e = args_with(&[" "]).listed_workloads().expect_err("none");
        assert!(e.0.contains("lists no workload"), "{e}");
    }

    fn args_with(workloads: &[&str]) -> BenchArgs {
        BenchArgs {
            workloads: workloads.iter().map(|w| w.to_string()).collect(),
            ..BenchArgs::default()
        }
    }

    #[test]
    fn settings_name_what_changes_a_measurement_and_nothing_else() {
        let a = BenchArgs::from_flags([
            "--stopping-criterion",
            "sample-count",
            "--target-samples",
            "25",
        ])
        .expect("parses");
        let mut b = a.clone();
        b.variant = vec!["x_1".into()];
        b.jsonl = Some("elsewhere".into());
        b.max_angle = 1.0; // not sample-count's
        assert_eq!(a.measurement_settings(), b.measurement_settings());
        b.target_samples = 26;
        assert_ne!(a.measurement_settings(), b.measurement_settings());
        let mut c = a.clone();
        c.race = Some(0.05);
        assert_ne!(a.measurement_settings(), c.measurement_settings());
    }

    #[test]
    fn bad_values_are_refused_with_the_flag_named() {
        for (flags, needle) in [
            (&["--max-noise", "0"][..], "--max-noise"),
            (&["--race", "-1"][..], "--race"),
            (&["--min-r2", "2"][..], "--min-r2"),
            (&["--target-samples", "0"][..], "--target-samples"),
            (&["--criterion-param", "k"][..], "NAME=VALUE"),
        ] {
            let err = BenchArgs::from_flags(flags).expect("parses").validate();
            assert!(err.expect_err("refused").0.contains(needle), "{flags:?}");
        }
    }
}

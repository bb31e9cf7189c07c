//! `State`: one point of a bench's axes, what the bench function sees.

use serde::Serialize;

use crate::axis::AxisValue;
use crate::backend::Backend;
use crate::criterion::{Criteria, CriterionParams};
use crate::device::DeviceInfo;
use crate::error::{BenchResult, Error, ErrorKind, KindOf, Result};
use crate::launch::Launch;
use crate::measure::{self, ColdMeasurement, ColdSettings, HotMeasurement, HotSettings};
use crate::verify::{BaseFailed, Comparison, Tolerance, Verification, VerificationFailed, Verify};

/// How states are measured: chosen once per run from the command line.
#[derive(Debug, Default)]
pub struct ExecConfig {
    /// The criteria known by name.
    pub criteria: Criteria,
    /// The criterion to use (`--stopping-criterion`, default `stdrel`).
    pub criterion: String,
    /// Parameters of the criteria.
    pub params: CriterionParams,
    /// Cold-loop settings.
    pub cold: ColdSettings,
    /// Hot-loop settings.
    pub hot: HotSettings,
    /// Skip the hot loop (`--no-batch`).
    pub no_batch: bool,
    /// Measure energy after the times (`--energy`), with these settings.
    pub energy: Option<measure::energy::EnergySettings>,
    /// The variant label `--variant` selected, if any.
    pub variant: Option<String>,
}

/// What happened to a state, as plain data for the output stage.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    /// Items processed per execution (`add_element_count`).
    pub element_count: u64,
    /// Global-memory bytes read per execution.
    pub read_bytes: u64,
    /// Global-memory bytes written per execution.
    pub write_bytes: u64,
    /// Why the state was skipped, if it was.
    pub skipped: Option<String>,
    /// Why the state failed, if it did.
    pub error: Option<String>,
    /// What kind of failure `error` is (`None` without an error; an error recorded without a
    /// kind is [`ErrorKind::Other`]).
    pub error_kind: Option<ErrorKind>,
    /// The stopping criterion used and its parameters.
    pub criterion: Option<(String, Vec<(String, f64)>)>,
    /// Cold measurement, when `exec` ran.
    pub cold: Option<ColdMeasurement>,
    /// Hot measurement, when `exec` ran with batching.
    pub hot: Option<HotMeasurement>,
    /// Energy, under `--energy` (measured, or why not).
    pub energy: Option<measure::energy::Energy>,
    /// The label of the variant of the tuned function that ran (benches that `tunes` one).
    pub variant: Option<String>,
    /// Summaries the bench added: `(tag, name, value)`.
    pub notes: Vec<(String, String, String)>,
    /// How the outputs were verified, if the bench verified them.
    pub verification: Option<Verification>,
    /// What the kernels the state launched through kernel handles compiled to.
    pub kernels: Vec<gputune_protocol::KernelRecord>,
}

impl Outcome {
    /// Records a failure. The first one stays, unless a later one lost the device: that one
    /// decides what happens to the process, so it replaces the first.
    pub fn fail(&mut self, message: impl Into<String>, kind: ErrorKind) {
        let lost = kind == ErrorKind::DeviceLost && self.error_kind != Some(ErrorKind::DeviceLost);
        if self.error.is_none() || lost {
            self.error = Some(message.into());
            self.error_kind = Some(kind);
        }
    }

    /// [`Outcome::fail`] with an error, classified by [`ErrorKind::of`].
    pub fn fail_with(&mut self, error: &(dyn std::error::Error + 'static)) {
        self.fail(error.to_string(), ErrorKind::of(error));
    }

    /// Whether the state failed with a sticky device error (the process must end).
    pub fn device_lost(&self) -> bool {
        self.error_kind == Some(ErrorKind::DeviceLost)
    }
}

/// One state of a bench: its axis values, and the measurement of its launches.
pub struct State<'r> {
    pub(crate) axis_values: Vec<(String, AxisValue)>,
    pub(crate) backend: &'r mut dyn Backend,
    pub(crate) config: &'r ExecConfig,
    pub(crate) outcome: Outcome,
    pub(crate) executed: bool,
    /// The tuned function of the bench (`Bench::tunes`), whose base verification runs.
    pub(crate) tunes: Option<&'r str>,
    /// The bench's name: part of what [`State::with_setup`] keeps values under.
    pub(crate) bench: &'r str,
}

impl<'r> State<'r> {
    pub(crate) fn new(
        axis_values: Vec<(String, AxisValue)>,
        backend: &'r mut dyn Backend,
        config: &'r ExecConfig,
        tunes: Option<&'r str>,
        bench: &'r str,
    ) -> State<'r> {
        State {
            axis_values,
            backend,
            config,
            outcome: Outcome::default(),
            executed: false,
            tunes,
            bench,
        }
    }

    /// Runs `f` with what this workload needs that no variant changes — inputs, output
    /// buffers, reference answers — made by `make` once per process and kept for the states
    /// of every later variant of the same bench and workload (its axis values, the type
    /// instance and device included).
    ///
    /// A search runs many variants over the same workloads in one process; setting up inside
    /// `make` instead of in the bench function is what keeps a 1 GiB input from being filled
    /// again for every variant. The value is one per type `V`: a bench may keep several.
    ///
    /// ```no_run
    /// use gputune_runtime::{BenchResult, State};
    ///
    /// fn bench(state: &mut State<'_>) -> BenchResult {
    ///     let n = usize::try_from(state.get_int64("Elements")?)?;
    ///     state.with_setup(
    ///         // Once per workload and process, however many variants run it.
    ///         |_| Ok::<_, gputune_runtime::BoxError>(vec![1.0f32; n]),
    ///         |state, input| {
    ///             state.exec(|_| {
    ///                 std::hint::black_box(input.iter().sum::<f32>());
    ///                 Ok(())
    ///             });
    ///         },
    ///     )?;
    ///     Ok(())
    /// }
    /// ```
    pub fn with_setup<V, E, R>(
        &mut self,
        make: impl FnOnce(&Self) -> std::result::Result<V, E>,
        f: impl FnOnce(&mut Self, &mut V) -> R,
    ) -> std::result::Result<R, E>
    where
        V: Send + 'static,
    {
        let key = self.workload_key();
        let mut value = match crate::kept::take::<(String, String), V>(&key) {
            Some(v) => v,
            // What the setup launches (an input generator) belongs to no variant.
            None => crate::timeline::timed(crate::timeline::Part::Setup, || {
                crate::launched::excluding(|| make(self))
            })?,
        };
        let result = f(self, &mut value);
        crate::kept::put(key, value);
        Ok(result)
    }

    /// `(bench, "Device=0 T{ct}=f32 Elements{io}=2^20")`: what a kept setup belongs to.
    fn workload_key(&self) -> (String, String) {
        let mut name = format!("Device={}", self.backend.device().id);
        for (axis, value) in &self.axis_values {
            name.push_str(&format!(" {axis}={}", value.display()));
        }
        (self.bench.to_string(), name)
    }

    fn value(&self, name: &str) -> Result<&AxisValue> {
        self.axis_values
            .iter()
            .find(|(n, _)| crate::axis::name_refers_to(name, n))
            .map(|(_, v)| v)
            .ok_or_else(|| {
                let names: Vec<&str> = self.axis_values.iter().map(|(n, _)| n.as_str()).collect();
                Error::Usage(format!(
                    "no axis `{name}` in this bench; its axes are: {}",
                    names.join(", ")
                ))
            })
    }

    /// The value of an integer or power-of-two axis (`"Elements{io}"` or `"Elements"`).
    pub fn get_int64(&self, name: &str) -> Result<i64> {
        match self.value(name)? {
            AxisValue::Int64(v) | AxisValue::Int64Pow2 { value: v, .. } => Ok(*v),
            other => Err(Error::Usage(format!(
                "axis `{name}` is not an integer axis: {other:?}"
            ))),
        }
    }

    /// The value of a floating-point axis.
    pub fn get_float64(&self, name: &str) -> Result<f64> {
        match self.value(name)? {
            AxisValue::Float64(v) => Ok(*v),
            other => Err(Error::Usage(format!(
                "axis `{name}` is not a float axis: {other:?}"
            ))),
        }
    }

    /// The value of a string axis.
    pub fn get_string(&self, name: &str) -> Result<&str> {
        match self.value(name)? {
            AxisValue::String(v) => Ok(v),
            other => Err(Error::Usage(format!(
                "axis `{name}` is not a string axis: {other:?}"
            ))),
        }
    }

    /// The type name this instance was monomorphised for on a type axis.
    pub fn get_type(&self, name: &str) -> Result<&str> {
        match self.value(name)? {
            AxisValue::Type(v) => Ok(v),
            other => Err(Error::Usage(format!(
                "axis `{name}` is not a type axis: {other:?}"
            ))),
        }
    }

    /// All axis values of the state, full names first.
    pub fn axis_values(&self) -> &[(String, AxisValue)] {
        &self.axis_values
    }

    /// The device the state runs on.
    pub fn device(&self) -> &DeviceInfo {
        self.backend.device()
    }

    /// The variant label `--variant` selected, if any.
    pub fn variant(&self) -> Option<&str> {
        self.config.variant.as_deref()
    }

    /// The CUDA context and stream, for allocating buffers and loading modules.
    #[cfg(feature = "cuda")]
    pub fn cuda(&self) -> Result<&crate::backend::cuda::CudaHandles> {
        self.backend.cuda().ok_or_else(|| {
            Error::NoDevice("this bench needs CUDA but runs on the CPU backend".into())
        })
    }

    /// Declares how many items one execution processes (for items/s).
    pub fn add_element_count(&mut self, count: u64) {
        self.outcome.element_count += count;
    }

    /// Declares `count` elements of `T` read from global memory per execution.
    pub fn add_global_memory_reads<T>(&mut self, count: u64) {
        self.outcome.read_bytes += count * std::mem::size_of::<T>() as u64;
    }

    /// Declares `count` elements of `T` written to global memory per execution.
    pub fn add_global_memory_writes<T>(&mut self, count: u64) {
        self.outcome.write_bytes += count * std::mem::size_of::<T>() as u64;
    }

    /// Adds a text summary to this state's output (nvbench's `add_summary` with a string
    /// value), under `tag` (`myproject/config`) and a column `name`.
    pub fn add_summary(&mut self, tag: &str, name: &str, value: impl std::fmt::Display) {
        self.outcome
            .notes
            .push((tag.to_string(), name.to_string(), value.to_string()));
    }

    /// Skips this state; `exec` then does nothing. The reason is reported.
    pub fn skip(&mut self, reason: impl Into<String>) {
        self.outcome.skipped = Some(reason.into());
    }

    /// Whether the state has been skipped.
    pub fn is_skipped(&self) -> bool {
        self.outcome.skipped.is_some()
    }

    /// Verifies the variant that runs against base before it is timed: `run` (which writes
    /// `outputs` by calling the tuned function) runs once as base on poisoned outputs, which
    /// are kept as the reference, then once as the variant on poisoned outputs, which are
    /// compared with it. A failure is recorded on the state (`verification` in the JSON) and
    /// returned, so that `?` ends the bench function before `exec`:
    ///
    /// ```no_run
    /// # use gputune_runtime::{BenchResult, State, verify::Tolerance};
    /// # fn scale(x: &[f32], y: &mut [f32]) {}
    /// fn bench(state: &mut State<'_>) -> BenchResult {
    ///     let x = vec![1.5f32; 1 << 20];
    ///     let mut y = vec![0.0f32; x.len()];
    ///     state.verify(&mut y, Tolerance::default(), |y| {
    ///         scale(&x, y);
    ///         Ok(())
    ///     })?;
    ///     state.exec(|_| {
    ///         scale(&x, &mut y);
    ///         Ok(())
    ///     });
    ///     Ok(())
    /// }
    /// ```
    ///
    /// When base itself runs, or the bench tunes no function, there is nothing to compare
    /// with: `run` runs once on poisoned outputs and the state records that it is the
    /// reference.
    pub fn verify<T: Verify>(
        &mut self,
        outputs: &mut T,
        tolerance: Tolerance,
        run: impl FnMut(&mut T) -> BenchResult,
    ) -> BenchResult {
        self.verify_by(outputs, Some(tolerance), run)
    }

    /// [`State::verify`] with `tolerance`, or with each part's default where `None`.
    fn verify_by<T: Verify>(
        &mut self,
        outputs: &mut T,
        tolerance: Option<Tolerance>,
        mut run: impl FnMut(&mut T) -> BenchResult,
    ) -> BenchResult {
        let function = self.tunes;
        let current = function.and_then(crate::tuned::requested);
        let reference = match function {
            Some(f) if current.as_deref() != Some("base") => {
                crate::tuned::request(f, "base");
                let reference = crate::timeline::timed(crate::timeline::Part::Reference, || {
                    crate::launched::excluding(|| {
                        outputs
                            .poison()
                            .and_then(|()| Ok(self.backend.poison_shared_memory()?))
                            .and_then(|()| run(outputs))
                            .and_then(|()| outputs.snapshot())
                    })
                });
                match &current {
                    Some(label) => crate::tuned::request(f, label),
                    None => crate::tuned::withdraw(f),
                }
                Some(reference.map_err(BaseFailed)?)
            }
            _ => None,
        };
        outputs.poison()?;
        self.backend.poison_shared_memory()?;
        run(outputs)?;
        let comparison = match (&reference, tolerance) {
            (Some(r), Some(t)) => Some(outputs.compare(r, t)?),
            (Some(r), None) => Some(outputs.compare_defaults(r)?),
            (None, _) => None,
        };
        self.record(Verification {
            against: "base",
            passed: comparison.as_ref().map_or(true, Comparison::passed),
            tolerance: Some(tolerance.unwrap_or_else(T::default_tolerance)),
            comparison,
            message: None,
        })
    }

    /// Verifies `outputs` against base's (with the element type's default tolerance,
    /// [`Element::TOLERANCE`](crate::verify::Element::TOLERANCE): exact for integers; a tuple
    /// of outputs, each part with its own, and [`Within`](crate::verify::Within) with one of
    /// its choosing), then
    /// measures `launches` with them: what most benches of a tuned function need, in one call.
    /// A variant whose outputs differ is recorded `verify_failed` and not measured.
    ///
    /// `launches` gets the outputs each time, so the same closure serves both: the runs that
    /// verify (on the state's stream, outside the measurement) and the measured ones.
    pub fn exec_verified<T: Verify>(
        &mut self,
        outputs: &mut T,
        mut launches: impl FnMut(&mut Launch<'_>, &mut T) -> BenchResult,
    ) -> BenchResult {
        #[cfg(feature = "cuda")]
        let stream = self.backend.cuda().map(|c| c.stream.clone());
        self.verify_by(outputs, None, |outputs| {
            let mut launch = Launch::cpu();
            #[cfg(feature = "cuda")]
            {
                launch.stream = stream.as_ref();
            }
            launches(&mut launch, outputs)
        })?;
        self.exec(|launch| launches(launch, outputs));
        Ok(())
    }

    /// Verifies against an expected answer (a CPU reference, say) instead of base: `run`
    /// runs once on poisoned outputs, which are compared with `expected`.
    pub fn verify_against<T: Verify>(
        &mut self,
        outputs: &mut T,
        expected: &T,
        tolerance: Tolerance,
        mut run: impl FnMut(&mut T) -> BenchResult,
    ) -> BenchResult {
        outputs.poison()?;
        self.backend.poison_shared_memory()?;
        run(outputs)?;
        let comparison = outputs.compare(expected, tolerance)?;
        self.record(Verification {
            against: "expected",
            passed: comparison.passed(),
            tolerance: Some(tolerance),
            comparison: Some(comparison),
            message: None,
        })
    }

    /// Verifies with the bench's own check: `run` runs once on poisoned outputs, then
    /// `check` says whether they are right (`Err` carries what is wrong).
    pub fn verify_with<T: Verify>(
        &mut self,
        outputs: &mut T,
        mut run: impl FnMut(&mut T) -> BenchResult,
        check: impl FnOnce(&T) -> std::result::Result<(), String>,
    ) -> BenchResult {
        outputs.poison()?;
        self.backend.poison_shared_memory()?;
        run(outputs)?;
        let message = check(outputs).err();
        self.record(Verification {
            against: "check",
            passed: message.is_none(),
            tolerance: None,
            comparison: None,
            message,
        })
    }

    fn record(&mut self, v: Verification) -> BenchResult {
        let failure = v.failure();
        self.outcome.verification = Some(v);
        match failure {
            Some(line) => {
                self.outcome.fail(line.clone(), ErrorKind::Verification);
                Err(Box::new(VerificationFailed(line)))
            }
            None => Ok(()),
        }
    }

    /// Measures `launches` (a closure returning [`BenchResult`], so `?` works inside it): a warm-up, the cold loop under the run's stopping criterion,
    /// then (unless `--no-batch`) the hot loop. Errors are recorded on the state, which the
    /// output reports as failed; the bench function goes on.
    pub fn exec<F>(&mut self, launches: F)
    where
        F: FnMut(&mut Launch<'_>) -> BenchResult,
    {
        self.exec_inner(launches, self.config.no_batch);
    }

    /// Like [`State::exec`] but never runs the hot loop (nvbench's `exec_tag::no_batch`),
    /// for launches that cannot run back to back.
    pub fn exec_no_batch<F>(&mut self, launches: F)
    where
        F: FnMut(&mut Launch<'_>) -> BenchResult,
    {
        self.exec_inner(launches, true);
    }

    fn exec_inner<F>(&mut self, mut launches: F, no_batch: bool)
    where
        F: FnMut(&mut Launch<'_>) -> BenchResult,
    {
        if self.is_skipped() || self.outcome.error.is_some() {
            return;
        }
        if self.executed {
            self.outcome
                .fail("exec was called twice for one state", ErrorKind::Other);
            return;
        }
        self.executed = true;
        let Some(mut criterion) = self
            .config
            .criteria
            .create(&self.config.criterion, &self.config.params)
        else {
            self.outcome.fail(
                format!("unknown stopping criterion `{}`", self.config.criterion),
                ErrorKind::Other,
            );
            return;
        };
        self.outcome.criterion = Some((criterion.name().to_string(), criterion.params()));
        let mut f = |l: &mut Launch<'_>| launches(l);
        let mut settings = self.config.cold.clone();
        // A verified state has launched its kernels already, on these buffers: that run was
        // the warm-up (module loading, first touches, instruction caches), and another would
        // cost a sample's time in every state, a quarter of a screening's.
        if self.outcome.verification.is_some() {
            settings.warm_up = false;
        }
        let cold = match measure::measure_cold(self.backend, &mut f, criterion.as_mut(), &settings)
        {
            Ok(c) => c,
            Err(e) => {
                self.outcome.fail(e.to_string(), e.kind());
                return;
            }
        };
        let estimate = crate::stats::mean(&cold.gpu_times);
        let raced = cold.raced.is_some();
        self.outcome.cold = Some(cold);
        // A variant that lost the race is out of contention: its hot time and its energy
        // would not be used.
        if raced {
            return;
        }
        if !no_batch {
            let hot = crate::timeline::timed(crate::timeline::Part::Measure, || {
                measure::measure_hot(self.backend, &mut f, estimate, &self.config.hot)
            });
            match hot {
                Ok(h) => self.outcome.hot = Some(h),
                Err(e) => {
                    self.outcome.fail(e.to_string(), e.kind());
                    return;
                }
            }
        }
        if let Some(settings) = &self.config.energy {
            let energy = crate::timeline::timed(crate::timeline::Part::Measure, || {
                measure::energy::measure_energy(self.backend, &mut f, estimate, settings)
            });
            match energy {
                Ok(e) => {
                    if let measure::energy::Energy::Unavailable(why) = &e {
                        say_once_energy_is_unavailable(why);
                    }
                    self.outcome.energy = Some(e);
                }
                Err(e) => self.outcome.fail(e.to_string(), e.kind()),
            }
        }
    }
}

/// Says on stderr, once per process, why energy is not measured: every state's record says it
/// too, but a person reading the bench's output needs it once, not per state.
fn say_once_energy_is_unavailable(why: &str) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!("note: energy is not measured: {why}");
    }
}

#[cfg(test)]
mod shared_poison_tests {
    use super::*;
    use crate::backend::{ColdSample, Launches};
    use crate::device::{BackendKind, DeviceInfo};
    use crate::error::Result;

    /// A device whose "shared memory" is one flag: a kernel that reads shared memory it
    /// never wrote sees NaN after a poison, and zeros otherwise.
    struct Leftover {
        info: DeviceInfo,
        poisoned: std::rc::Rc<std::cell::Cell<bool>>,
    }

    impl Backend for Leftover {
        fn device(&self) -> &DeviceInfo {
            &self.info
        }
        fn cold_sample(&mut self, _: &mut Launches<'_>) -> Result<ColdSample> {
            unreachable!("verification only")
        }
        fn hot_batch(&mut self, _: &mut Launches<'_>, _: u64) -> Result<f64> {
            unreachable!("verification only")
        }
        fn poison_shared_memory(&mut self) -> Result<()> {
            self.poisoned.set(true);
            Ok(())
        }
    }

    #[test]
    fn a_kernel_that_reads_unwritten_shared_memory_fails_verification() {
        let poisoned = std::rc::Rc::new(std::cell::Cell::new(false));
        let mut backend = Leftover {
            info: DeviceInfo::bare(BackendKind::Cpu, "leftover"),
            poisoned: poisoned.clone(),
        };
        let config = ExecConfig::default();
        let mut state = State::new(Vec::new(), &mut backend, &config, None, "b");
        let expected = vec![1.0f32; 4];
        let mut out = vec![0.0f32; 4];
        // The sum it writes adds a partial sum from shared memory that no warp wrote: right
        // only where that memory held zeros.
        let leftover = poisoned.clone();
        let verdict =
            state.verify_against(&mut out, &expected, crate::verify::Tolerance::EXACT, |o| {
                let garbage = if leftover.get() { f32::NAN } else { 0.0 };
                o.fill(1.0 + garbage);
                Ok(())
            });
        assert!(poisoned.get(), "shared memory is poisoned before the run");
        assert!(verdict.is_err(), "the variant fails verification");
        let v = state.outcome.verification.as_ref().expect("recorded");
        assert!(!v.passed);
    }
}

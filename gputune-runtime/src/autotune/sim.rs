//! A simulated device: **a test tool**, for the autotuner's tests, doc examples and demos.
//!
//! Nothing here measures anything. [`SimDevice::launch`] advances a virtual clock by a known
//! cost of the parameter (plus seeded, reproducible noise), and [`SimTimer`] reads that clock.
//! Because the best parameter is known and the noise is seeded, tests can assert which
//! parameter the autotuner must choose, and count every timer call to prove that idle
//! launches do no timing work. Product code paths never use it.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::timer::Timer;
use crate::error::BoxError;

/// The cost model of a simulated kernel: seconds for one launch with a parameter at a
/// problem size.
pub type CostFn<P> = Box<dyn Fn(&P, u64) -> f64 + Send>;

/// A simulated device with a virtual clock (a test tool; see the [module](self) docs).
pub struct SimDevice<P> {
    clock: Arc<Mutex<Clock>>,
    model: Arc<Mutex<Model<P>>>,
}

impl<P> Clone for SimDevice<P> {
    fn clone(&self) -> Self {
        SimDevice {
            clock: self.clock.clone(),
            model: self.model.clone(),
        }
    }
}

impl<P> std::fmt::Debug for SimDevice<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let clock = lock(&self.clock);
        f.debug_struct("SimDevice")
            .field("now", &clock.now)
            .field("timer_calls", &(clock.starts + clock.stops))
            .finish_non_exhaustive()
    }
}

struct Clock {
    now: f64,
    started: Option<f64>,
    starts: u64,
    stops: u64,
    fail_next_stop: bool,
}

struct Model<P> {
    cost: CostFn<P>,
    noise: f64,
    rng: SplitMix64,
    launches: Vec<(P, u64)>,
}

impl<P: Clone + PartialEq> SimDevice<P> {
    /// A device whose launches cost `cost(param, size)` seconds, times a uniform factor in
    /// `[1 − noise, 1 + noise)` drawn from a generator seeded with `seed`.
    pub fn new(
        seed: u64,
        noise: f64,
        cost: impl Fn(&P, u64) -> f64 + Send + 'static,
    ) -> SimDevice<P> {
        SimDevice {
            clock: Arc::new(Mutex::new(Clock {
                now: 0.0,
                started: None,
                starts: 0,
                stops: 0,
                fail_next_stop: false,
            })),
            model: Arc::new(Mutex::new(Model {
                cost: Box::new(cost),
                noise: noise.clamp(0.0, 0.99),
                rng: SplitMix64(seed),
                launches: Vec::new(),
            })),
        }
    }

    /// "Runs" one launch with `param` at problem size `size`: the clock advances by its cost.
    pub fn launch(&self, param: &P, size: u64) {
        let seconds = {
            let mut model = lock(&self.model);
            let u = model.rng.next_unit() * 2.0 - 1.0;
            let seconds = (model.cost)(param, size) * (1.0 + model.noise * u);
            match model.launches.iter_mut().find(|(p, _)| p == param) {
                Some((_, n)) => *n += 1,
                None => model.launches.push((param.clone(), 1)),
            }
            seconds
        };
        lock(&self.clock).now += seconds.max(0.0);
    }

    /// Replaces the cost model, as a change of workload or clocks would.
    pub fn set_cost(&self, cost: impl Fn(&P, u64) -> f64 + Send + 'static) {
        lock(&self.model).cost = Box::new(cost);
    }

    /// A timer reading this device's clock.
    pub fn timer(&self) -> SimTimer {
        SimTimer {
            clock: self.clock.clone(),
        }
    }

    /// Launches so far with `param`.
    pub fn launches_of(&self, param: &P) -> u64 {
        lock(&self.model)
            .launches
            .iter()
            .find(|(p, _)| p == param)
            .map_or(0, |(_, n)| *n)
    }

    /// Launches so far, all parameters together.
    pub fn launches(&self) -> u64 {
        lock(&self.model).launches.iter().map(|(_, n)| n).sum()
    }

    /// Calls to [`Timer::start`] and [`Timer::stop`] of this device's timers so far.
    pub fn timer_calls(&self) -> u64 {
        let clock = lock(&self.clock);
        clock.starts + clock.stops
    }

    /// Makes the next [`Timer::stop`] fail, as a device error would.
    pub fn fail_next_stop(&self) {
        lock(&self.clock).fail_next_stop = true;
    }
}

/// Reads a [`SimDevice`]'s virtual clock (a test tool).
#[derive(Clone)]
pub struct SimTimer {
    clock: Arc<Mutex<Clock>>,
}

impl std::fmt::Debug for SimTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimTimer").finish_non_exhaustive()
    }
}

impl Timer for SimTimer {
    fn start(&mut self) -> Result<(), BoxError> {
        let mut clock = lock(&self.clock);
        clock.starts += 1;
        clock.started = Some(clock.now);
        Ok(())
    }

    fn stop(&mut self) -> Result<f64, BoxError> {
        let mut clock = lock(&self.clock);
        clock.stops += 1;
        let started = clock
            .started
            .take()
            .ok_or("SimTimer::stop without a start")?;
        if std::mem::take(&mut clock.fail_next_stop) {
            return Err("simulated device error".into());
        }
        Ok(clock.now - started)
    }

    fn device(&self) -> String {
        "sim".into()
    }
}

/// A panic elsewhere in a test must not hide this device's state behind a poisoned lock.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sebastiano Vigna's SplitMix64: tiny, seedable, and good enough for noise.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_advances_by_the_cost_within_the_noise() {
        let dev = SimDevice::new(7, 0.1, |p: &u32, size| f64::from(*p) * size as f64);
        let mut t = dev.timer();
        assert!(t.start().is_ok());
        dev.launch(&2, 3);
        let s = t.stop().unwrap_or(f64::NAN);
        assert!((5.4..6.6).contains(&s), "{s}");
        assert_eq!(dev.launches_of(&2), 1);
        assert_eq!(dev.launches_of(&3), 0);
        assert_eq!(dev.timer_calls(), 2);
    }

    #[test]
    fn the_same_seed_gives_the_same_readings() {
        let read = |seed| {
            let dev = SimDevice::new(seed, 0.5, |_: &u32, _| 1.0);
            let mut t = dev.timer();
            (0..5)
                .map(|_| {
                    let _ = t.start();
                    dev.launch(&1, 1);
                    t.stop().unwrap_or(f64::NAN)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(read(1), read(1));
        assert_ne!(read(1), read(2));
    }

    #[test]
    fn a_failed_stop_is_an_error_once() {
        let dev = SimDevice::new(0, 0.0, |_: &u32, _| 1.0);
        let mut t = dev.timer();
        dev.fail_next_stop();
        let _ = t.start();
        assert!(t.stop().is_err());
        let _ = t.start();
        assert!(t.stop().is_ok());
    }

    #[test]
    fn unit_draws_stay_in_range() {
        let mut r = SplitMix64(3);
        for _ in 0..10_000 {
            let u = r.next_unit();
            assert!((0.0..1.0).contains(&u));
        }
    }
}

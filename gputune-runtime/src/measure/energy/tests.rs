//! The energy loop against a simulated device: a virtual clock, a board that draws a known
//! power while it runs the launches and another in the host's gaps between sub-batches
//! (with seeded noise), and an energy counter that, like NVML's, advances only at updates a
//! fixed interval apart.

use std::cell::RefCell;
use std::rc::Rc;

use super::*;
use crate::backend::ColdSample;
use crate::device::{BackendKind, DeviceInfo};
use crate::launch::Launch;

/// The simulated board's state, shared with the wall clock the loop reads.
struct Board {
    /// Virtual time, seconds.
    now: f64,
    /// Energy used so far, joules.
    energy: f64,
    /// What the counter shows: the energy at its last update.
    counter: f64,
    next_update: f64,
    rng: u64,
}

struct SimulatedBoard {
    info: DeviceInfo,
    /// Seconds per execution.
    cost: f64,
    /// Watts while the launches run.
    busy_power: f64,
    /// Watts in the host's gap after each sub-batch.
    idle_power: f64,
    /// The host's gap after each sub-batch, seconds.
    gap: f64,
    /// The counter's update interval, seconds (`None`: a counter that never moves).
    update: Option<f64>,
    /// Relative noise of the busy power, per sub-batch (uniform, seeded).
    noise: f64,
    board: Rc<RefCell<Board>>,
}

impl SimulatedBoard {
    fn new(cost: f64, busy_power: f64, update: Option<f64>, noise: f64, seed: u64) -> Self {
        SimulatedBoard {
            info: DeviceInfo::bare(BackendKind::Cuda, "simulated board"),
            cost,
            busy_power,
            idle_power: 80.0,
            gap: 20e-6,
            update,
            noise,
            board: Rc::new(RefCell::new(Board {
                now: 0.0,
                energy: 1000.0,
                counter: 1000.0,
                next_update: update.unwrap_or(f64::INFINITY) * 0.37,
                rng: seed,
            })),
        }
    }

    /// Runs the board for `dt` seconds at `power` watts, updating the counter at each
    /// update time crossed.
    fn run(&self, mut dt: f64, power: f64) {
        let mut b = self.board.borrow_mut();
        while b.now + dt >= b.next_update {
            let step = b.next_update - b.now;
            b.energy += power * step;
            b.now = b.next_update;
            dt -= step;
            b.counter = b.energy;
            b.next_update += self.update.unwrap_or(f64::INFINITY);
        }
        b.energy += power * dt;
        b.now += dt;
    }

    /// A uniform draw in [-1, 1) (SplitMix64).
    fn draw(&self) -> f64 {
        let mut b = self.board.borrow_mut();
        b.rng = b.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = b.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

impl Backend for SimulatedBoard {
    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn cold_sample(&mut self, _launches: &mut Launches<'_>) -> Result<ColdSample> {
        self.run(self.cost, self.busy_power);
        Ok(ColdSample {
            gpu_time: self.cost,
            cpu_time: self.cost,
            sm_clock_rate: None,
        })
    }

    fn hot_batch(&mut self, launches: &mut Launches<'_>, count: u64) -> Result<f64> {
        for _ in 0..count {
            launches(&mut Launch::cpu()).map_err(crate::Error::Launch)?;
        }
        let power = self.busy_power * (1.0 + self.noise * self.draw());
        self.run(self.cost * count as f64, power);
        self.run(self.gap, self.idle_power);
        Ok(self.cost * count as f64)
    }

    fn energy_counter(&mut self) -> std::result::Result<f64, String> {
        Ok(self.board.borrow().counter)
    }
}

fn measure(sim: &mut SimulatedBoard, settings: &EnergySettings) -> Energy {
    let board = sim.board.clone();
    let clock = move || board.borrow().now;
    let mut launches = |_: &mut Launch<'_>| -> std::result::Result<(), crate::BoxError> { Ok(()) };
    let cost = sim.cost;
    measure_energy_with_clock(sim, &mut launches, cost, settings, &clock)
        .expect("the simulated board does not fail")
}

fn measured(e: Energy) -> EnergyMeasurement {
    match e {
        Energy::Measured(m) => m,
        Energy::Unavailable(why) => panic!("unavailable: {why}"),
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn per_launch(m: &EnergyMeasurement) -> Vec<f64> {
    m.batches
        .iter()
        .map(EnergyBatch::joules_per_launch)
        .collect()
}

#[test]
fn joules_per_launch_is_the_board_s_energy_over_the_launches_that_ran() {
    // 50 µs launches at 400 W, a counter updating every 20 ms.
    let mut sim = SimulatedBoard::new(50e-6, 400.0, Some(0.02), 0.01, 7);
    let m = measured(measure(&mut sim, &EnergySettings::default()));
    assert_eq!(m.batches.len(), 5);
    assert_eq!(m.sub_batch, 100, "5 ms of 50 µs launches");
    assert!((m.counter_interval - 0.02).abs() < 0.0051, "{m:?}");
    // What one launch costs: its own 50 µs at 400 W, and its share of the 20 µs gap after
    // every 100 launches at 80 W.
    let want = 400.0 * 50e-6 + 80.0 * 20e-6 / 100.0;
    let got = mean(&per_launch(&m));
    assert!((got / want - 1.0).abs() < 0.02, "{got} against {want}");
    for b in &m.batches {
        // A batch spans at least max(4, 0.1 s / 20 ms) = 5 updates: 100 ms.
        assert!(b.seconds >= 0.1 - 0.006, "{b:?}");
        assert!((b.watts() / 400.0 - 1.0).abs() < 0.03, "{b:?}");
        assert!((b.gpu_seconds - b.launches as f64 * 50e-6).abs() < 1e-9);
    }
}

#[test]
fn energy_per_launch_does_not_depend_on_the_batch_length_and_total_energy_scales() {
    let settings = |window| EnergySettings {
        window,
        ..EnergySettings::default()
    };
    let short = measured(measure(
        &mut SimulatedBoard::new(30e-6, 300.0, Some(0.01), 0.02, 1),
        &settings(0.1),
    ));
    let long = measured(measure(
        &mut SimulatedBoard::new(30e-6, 300.0, Some(0.01), 0.02, 2),
        &settings(0.2),
    ));
    let launches = |m: &EnergyMeasurement| {
        mean(
            &m.batches
                .iter()
                .map(|b| b.launches as f64)
                .collect::<Vec<_>>(),
        )
    };
    let joules =
        |m: &EnergyMeasurement| mean(&m.batches.iter().map(|b| b.joules).collect::<Vec<_>>());
    let ratio = launches(&long) / launches(&short);
    assert!((ratio - 2.0).abs() < 0.1, "launches ×{ratio}");
    let ratio = joules(&long) / joules(&short);
    assert!((ratio - 2.0).abs() < 0.1, "energy ×{ratio}");
    let (a, b) = (mean(&per_launch(&short)), mean(&per_launch(&long)));
    assert!((a / b - 1.0).abs() < 0.02, "{a} against {b}");
}

#[test]
fn a_slow_counter_makes_longer_batches() {
    // Updates every 100 ms: a batch spans 4 of them (0.4 s), not the 0.1 s window.
    let mut sim = SimulatedBoard::new(1e-3, 500.0, Some(0.1), 0.0, 3);
    let m = measured(measure(&mut sim, &EnergySettings::default()));
    for b in &m.batches {
        assert!((b.seconds - 0.4).abs() < 0.01, "{b:?}");
    }
}

#[test]
fn a_device_without_a_counter_says_why_and_measures_nothing() {
    struct NoCounter(SimulatedBoard);
    impl Backend for NoCounter {
        fn device(&self) -> &DeviceInfo {
            self.0.device()
        }
        fn cold_sample(&mut self, l: &mut Launches<'_>) -> Result<ColdSample> {
            self.0.cold_sample(l)
        }
        fn hot_batch(&mut self, l: &mut Launches<'_>, count: u64) -> Result<f64> {
            self.0.hot_batch(l, count)
        }
    }
    let mut cpu = NoCounter(SimulatedBoard::new(1e-3, 100.0, Some(0.02), 0.0, 4));
    let mut launches = |_: &mut Launch<'_>| -> std::result::Result<(), crate::BoxError> { Ok(()) };
    let e = measure_energy(&mut cpu, &mut launches, 1e-3, &EnergySettings::default())
        .expect("no failure");
    assert_eq!(
        e,
        Energy::Unavailable(
            "the cuda backend has no energy counter (gputune reads NVIDIA GPUs' through NVML)"
                .into()
        )
    );
    assert_eq!(cpu.0.board.borrow().now, 0.0, "nothing ran");
}

#[test]
fn a_counter_that_never_moves_is_unavailable_not_zero() {
    let mut sim = SimulatedBoard::new(1e-3, 300.0, None, 0.0, 5);
    let e = measure(&mut sim, &EnergySettings::default());
    assert_eq!(
        e,
        Energy::Unavailable("the energy counter did not advance in 2 s of launches".into())
    );
}

//! Benches of the device-side data generators (`gputune_runtime::generate`):
//! `cargo bench -p gputune-runtime --features cuda --bench generate`.
//!
//! Each state first fills its buffer once outside the timed region (which compiles the kernel)
//! and checks the first 2^24 values against the host mirror (`generate::host`): exactly for
//! uniform and entropy, to within a few ulp for normal. 2^24 elements are more groups than a
//! grid holds threads, so the check covers the grid-stride loop's later steps too.

use gputune_runtime::cudarc::driver::{CudaSlice, ValidAsZeroBits};
use gputune_runtime::device::BackendKind;
use gputune_runtime::error::VerificationFailed;
use gputune_runtime::generate::{self, host, Element, Entropy, Float};
use gputune_runtime::{type_instances, Bench, BenchResult, BoxError, State};

/// The seed of every state.
const SEED: u64 = 0x5EED;

/// How many leading values each state checks on the host.
const CHECKED: usize = 1 << 24;

/// The element sizes of every bench: CUB's largest inputs, 2^28 the target.
const SIZES: [u32; 3] = [24, 26, 28];

/// What the benches need of an element type: the uniform range it is benched with (for
/// floats also the normal's mean and deviation), its value, and its bit pattern (entropy values are compared as bits: -0.0 must not pass for 0.0).
trait Benched: Element + ValidAsZeroBits {
    const LO: Self;
    const HI: Self;
    fn bits(self) -> u64;
    fn value(self) -> f64;
}

impl Benched for f32 {
    const LO: f32 = -1.0;
    const HI: f32 = 1.0;
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn value(self) -> f64 {
        f64::from(self)
    }
}

impl Benched for u32 {
    const LO: u32 = 0;
    const HI: u32 = 999_999;
    fn bits(self) -> u64 {
        u64::from(self)
    }
    fn value(self) -> f64 {
        f64::from(self)
    }
}

/// The buffer of a state, its element count declared.
fn setup<T: Element + ValidAsZeroBits>(state: &mut State<'_>) -> Result<CudaSlice<T>, BoxError> {
    let n = usize::try_from(state.get_int64("Elements{io}")?)?;
    state.add_element_count(n as u64);
    state.add_global_memory_writes::<T>(n as u64);
    Ok(state.cuda()?.stream.alloc_zeros::<T>(n)?)
}

/// The first values of `out` (at most [`CHECKED`]) against `expected`, compared by `same`.
fn check<T: Element>(
    out: &CudaSlice<T>,
    what: &str,
    expected: impl FnOnce(&mut [T]) -> Result<(), BoxError>,
    same: impl Fn(T, T) -> bool,
) -> BenchResult {
    let k = out.len().min(CHECKED);
    let view = out
        .try_slice(..k)
        .ok_or_else(|| format!("cannot view the first {k} elements"))?;
    let got = out.stream().clone_dtoh(&view)?;
    let mut want = got.clone();
    expected(&mut want)?;
    match (0..k).find(|&i| !same(got[i], want[i])) {
        Some(i) => Err(Box::new(VerificationFailed(format!(
            "{what}: element {i} is {:?} on the device, {:?} on the host",
            got[i], want[i]
        )))),
        None => Ok(()),
    }
}

fn bench_uniform<T: Benched>(state: &mut State<'_>) -> BenchResult {
    let mut out = setup::<T>(state)?;
    let stream = state.cuda()?.stream.clone();
    generate::uniform(&stream, &mut out, T::LO, T::HI, SEED)?;
    check(
        &out,
        "uniform",
        |x| Ok(host::uniform(x, T::LO, T::HI, SEED)?),
        |a, b| a == b,
    )?;
    state.exec(|launch| {
        Ok(generate::uniform(
            launch.stream()?,
            &mut out,
            T::LO,
            T::HI,
            SEED,
        )?)
    });
    Ok(())
}

fn bench_normal<F: Float + Benched>(state: &mut State<'_>) -> BenchResult {
    let mut out = setup::<F>(state)?;
    let stream = state.cuda()?.stream.clone();
    let (mean, stdev) = (F::LO, F::HI);
    generate::normal(&stream, &mut out, mean, stdev, SEED)?;
    // The device's logf and sincospif are within a couple of ulp of the host's.
    check(
        &out,
        "normal",
        |x| Ok(host::normal(x, mean, stdev, SEED)?),
        |a, b| (a.value() - b.value()).abs() <= 1e-5 * b.value().abs().max(1.0),
    )?;
    state.exec(|launch| {
        Ok(generate::normal(
            launch.stream()?,
            &mut out,
            mean,
            stdev,
            SEED,
        )?)
    });
    Ok(())
}

fn bench_entropy<T: Benched>(state: &mut State<'_>) -> BenchResult {
    let bits: Entropy = state.get_string("Entropy")?.parse()?;
    let mut out = setup::<T>(state)?;
    let stream = state.cuda()?.stream.clone();
    generate::entropy(&stream, &mut out, bits, SEED)?;
    check(
        &out,
        "entropy",
        |x| {
            host::entropy(x, bits, SEED);
            Ok(())
        },
        |a, b| a.bits() == b.bits(),
    )?;
    state.exec(|launch| Ok(generate::entropy(launch.stream()?, &mut out, bits, SEED)?));
    Ok(())
}

fn main() {
    let levels: Vec<&str> = Entropy::ALL.iter().map(|e| e.as_str()).collect();
    gputune_runtime::main(vec![
        Bench::with_types(
            "uniform",
            &["T{ct}"],
            type_instances!(bench_uniform; [f32, u32]),
        )
        .add_int64_power_of_two_axis("Elements{io}", SIZES)
        .backend(BackendKind::Cuda),
        Bench::with_types("normal", &["T{ct}"], type_instances!(bench_normal; [f32]))
            .add_int64_power_of_two_axis("Elements{io}", SIZES)
            .backend(BackendKind::Cuda),
        Bench::with_types(
            "entropy",
            &["T{ct}"],
            type_instances!(bench_entropy; [f32, u32]),
        )
        .add_int64_power_of_two_axis("Elements{io}", SIZES)
        .add_string_axis("Entropy", levels)
        .backend(BackendKind::Cuda),
    ]);
}

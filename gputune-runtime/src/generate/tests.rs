//! The generators' specification (the host mirror) against Philox's published answers and
//! the distributions it promises; the CUDA source against NVRTC where it is installed. No GPU.

use super::host::{self, philox4x32_10};
use super::*;

/// Enough values for the statistics below to be a few standard errors from their bounds.
const N: usize = 100_000;

fn mean_var(x: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = x.clone().count() as f64;
    let mean = x.clone().sum::<f64>() / n;
    let var = x.map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    (mean, var)
}

fn close(what: &str, got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= tolerance,
        "{what}: {got} is not within {tolerance} of {want}"
    );
}

#[test]
fn philox_gives_random123_s_known_answers() {
    // Random123's examples/kat_vectors, "philox4x32 10" lines: counter, key, output.
    let cases = [
        (
            [0, 0, 0, 0],
            [0, 0],
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
        ),
        (
            [u32::MAX; 4],
            [u32::MAX; 2],
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
        ),
        (
            [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
            [0xa4093822, 0x299f31d0],
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
        ),
    ];
    for (counter, key, output) in cases {
        assert_eq!(philox4x32_10(counter, key), output, "{counter:x?} {key:x?}");
    }
}

#[test]
fn values_depend_only_on_the_seed_and_the_index() {
    // A shorter buffer (ending inside a group) holds the longer one's first values.
    let mut long = vec![0f32; 1000];
    let mut short = vec![0f32; 37];
    host::uniform(&mut long, 0.0, 1.0, 5).expect("a valid range");
    host::uniform(&mut short, 0.0, 1.0, 5).expect("a valid range");
    assert_eq!(long[..37], short[..]);
    let mut other = vec![0f32; 1000];
    host::uniform(&mut other, 0.0, 1.0, 6).expect("a valid range");
    assert!(long.iter().zip(&other).filter(|(a, b)| a == b).count() < 10);
    let mut a = vec![0u64; 101];
    let mut b = vec![0u64; 7];
    host::entropy(&mut a, Entropy::B0_544, 9);
    host::entropy(&mut b, Entropy::B0_544, 9);
    assert_eq!(a[..7], b[..]);
}

#[test]
fn uniform_floats_fill_their_range_evenly() {
    let mut x = vec![0f32; N];
    host::uniform(&mut x, -1.0, 3.0, 1).expect("a valid range");
    assert!(x.iter().all(|&v| (-1.0..3.0).contains(&v)));
    let (mean, var) = mean_var(x.iter().map(|&v| f64::from(v)));
    close("f32 mean", mean, 1.0, 0.02);
    close("f32 variance", var, 16.0 / 12.0, 0.03);

    let mut y = vec![0f64; N];
    host::uniform(&mut y, 0.0, 1.0, 2).expect("a valid range");
    assert!(y.iter().all(|&v| (0.0..1.0).contains(&v)));
    let (mean, var) = mean_var(y.iter().copied());
    close("f64 mean", mean, 0.5, 0.005);
    close("f64 variance", var, 1.0 / 12.0, 0.003);
    // 53 bits each: the values are distinct.
    let mut sorted = y.clone();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup();
    assert!(sorted.len() > N - 5);
}

#[test]
fn uniform_floats_stay_finite_and_below_hi_at_the_edges() {
    let mut x = vec![0f32; 10_000];
    host::uniform(&mut x, f32::MIN, f32::MAX, 3).expect("the whole finite range");
    assert!(x.iter().all(|v| v.is_finite() && *v < f32::MAX));
    assert!(x.iter().any(|&v| v < -1e37) && x.iter().any(|&v| v > 1e37));
    // One float wide: only lo.
    let next = f32::from_bits(1f32.to_bits() + 1);
    host::uniform(&mut x, 1.0, next, 4).expect("a valid range");
    assert!(x.iter().all(|&v| v == 1.0));
    // lo == hi fills with lo.
    let mut y = vec![0f64; 100];
    host::uniform(&mut y, 2.5, 2.5, 5).expect("an empty range is lo");
    assert!(y.iter().all(|&v| v == 2.5));
    host::uniform(&mut y, -0.0, 0.0, 5).expect("an empty range is lo");
    assert!(y.iter().all(|&v| v == 0.0));
    // The float below hi, for both signs and zero.
    assert_eq!(below(1.0f32), f32::from_bits(1f32.to_bits() - 1));
    assert_eq!(below(-1.0f64), f64::from_bits((-1f64).to_bits() + 1));
    assert_eq!(below(0.0f32), -f32::from_bits(1));
    assert_eq!(below(-0.0f64), -f64::from_bits(1));
}

/// How often each value of `[lo, hi]` comes out, for small integer ranges.
fn counts<T: Element>(lo: T, hi: T, seed: u64, index: impl Fn(T) -> usize) -> Vec<usize> {
    let mut x = vec![lo; N];
    host::uniform(&mut x, lo, hi, seed).expect("a valid range");
    let mut counts = vec![0; index(hi) + 1];
    for v in x {
        assert!(v >= lo && v <= hi, "{v:?} outside [{lo:?}, {hi:?}]");
        counts[index(v)] += 1;
    }
    counts
}

fn even(counts: &[usize]) {
    let expected = N as f64 / counts.len() as f64;
    // Six standard deviations of a binomial count.
    let tolerance = 6.0 * (expected * (1.0 - 1.0 / counts.len() as f64)).sqrt();
    for (value, &c) in counts.iter().enumerate() {
        close(
            &format!("count of value {value}"),
            c as f64,
            expected,
            tolerance,
        );
    }
}

#[test]
fn uniform_integers_include_both_ends_evenly() {
    even(&counts(0u32, 9, 1, |v| v as usize));
    even(&counts(-5i32, 5, 2, |v| (v + 5) as usize));
    even(&counts(-3i64, 3, 3, |v| (v + 3) as usize));
    even(&counts(100u64, 104, 4, |v| (v - 100) as usize));
    even(&counts(7i32, 7, 5, |v| (v - 7) as usize));
}

fn bit_density<T: Element>(x: &[T]) -> f64 {
    let ones: u64 = x.iter().map(|v| u64::from(v.to_bits().count_ones())).sum();
    ones as f64 / (x.len() as f64 * f64::from(T::BITS))
}

#[test]
fn uniform_integers_cover_full_and_uneven_ranges() {
    // The whole range of each width (a span of 2^32, and of 2^64, which wraps to 0).
    let mut a = vec![0u32; N];
    host::uniform(&mut a, 0, u32::MAX, 1).expect("a valid range");
    close("u32 bit density", bit_density(&a), 0.5, 0.003);
    let mut b = vec![0i64; N];
    host::uniform(&mut b, i64::MIN, i64::MAX, 2).expect("a valid range");
    close("i64 bit density", bit_density(&b), 0.5, 0.003);
    let negative = b.iter().filter(|&&v| v < 0).count() as f64 / N as f64;
    close("i64 negative share", negative, 0.5, 0.01);
    // A range of 3·2^30 (3·2^62): a fraction of the type's width alone would make the lower
    // values twice as likely as the upper ones; the top third must get a third.
    let top = 2u32 << 30;
    let mut c = vec![0u32; N];
    host::uniform(&mut c, 0, 3 * (1 << 30) - 1, 3).expect("a valid range");
    let share = c.iter().filter(|&&v| v >= top).count() as f64 / N as f64;
    close("u32 top third", share, 1.0 / 3.0, 0.01);
    let mut d = vec![0u64; N];
    host::uniform(&mut d, 0, 3 * (1 << 62) - 1, 4).expect("a valid range");
    let share = d.iter().filter(|&&v| v >= 2 << 62).count() as f64 / N as f64;
    close("u64 top third", share, 1.0 / 3.0, 0.01);
}

#[test]
fn normal_values_have_their_mean_and_deviation() {
    let mut x = vec![0f32; N];
    host::normal(&mut x, 0.0, 1.0, 1).expect("valid parameters");
    let (mean, var) = mean_var(x.iter().map(|&v| f64::from(v)));
    close("f32 mean", mean, 0.0, 0.02);
    close("f32 stdev", var.sqrt(), 1.0, 0.02);
    let within = x.iter().filter(|v| v.abs() < 1.0).count() as f64 / N as f64;
    close("f32 share within one stdev", within, 0.6827, 0.01);
    // 24-bit uniforms: r = sqrt(−2·ln 2^-24) at most.
    assert!(x.iter().all(|v| v.abs() <= 5.8), "a value beyond 5.8 stdev");

    let mut y = vec![0f64; N];
    host::normal(&mut y, 10.0, 2.0, 2).expect("valid parameters");
    let (mean, var) = mean_var(y.iter().copied());
    close("f64 mean", mean, 10.0, 0.04);
    close("f64 stdev", var.sqrt(), 2.0, 0.04);
    let within = y.iter().filter(|v| (*v - 10.0).abs() < 4.0).count() as f64 / N as f64;
    close("f64 share within two stdev", within, 0.9545, 0.005);
    // A zero deviation is the mean.
    host::normal(&mut y, 3.0, 0.0, 3).expect("valid parameters");
    assert!(y.iter().all(|&v| v == 3.0));
}

/// Shannon entropy of a bit that is 1 with probability `p`, in bits.
fn h(p: f64) -> f64 {
    if p <= 0.0 || p >= 1.0 {
        return 0.0;
    }
    -p * p.log2() - (1.0 - p) * (1.0 - p).log2()
}

fn entropy_levels<T: Element>() {
    for level in Entropy::ALL {
        let mut x = vec![T::from_bits(0); N];
        host::entropy(&mut x, level, 11);
        if level == Entropy::B0_000 {
            assert!(x.iter().all(|&v| v.to_bits() == x[0].to_bits()));
            let mut other = vec![T::from_bits(0); 4];
            host::entropy(&mut other, level, 12);
            assert_ne!(x[0].to_bits(), other[0].to_bits(), "the constant is seeded");
            continue;
        }
        let p = 0.5f64.powi(level.words() as i32);
        let density = bit_density(&x);
        close(
            &format!("{} {level} density", T::CUDA_TYPE),
            density,
            p,
            0.003,
        );
        close(
            &format!("{} {level} bits", T::CUDA_TYPE),
            h(density),
            level.bits(),
            0.01,
        );
        if T::FLOAT {
            assert!(x.iter().all(|&v| super::float_value(v).is_finite()));
        }
    }
}

#[test]
fn entropy_levels_set_bits_with_cub_s_probabilities() {
    entropy_levels::<u32>();
    entropy_levels::<i32>();
    entropy_levels::<u64>();
    entropy_levels::<i64>();
    entropy_levels::<f32>();
    entropy_levels::<f64>();
    // The level names are H(2^-k) to three decimals.
    for level in Entropy::ALL.into_iter().filter(|l| l.words() > 0) {
        close(
            level.as_str(),
            h(0.5f64.powi(level.words() as i32)),
            level.bits(),
            0.0005,
        );
    }
}

#[test]
fn float_patterns_with_an_all_ones_exponent_lose_its_lowest_bit() {
    // A quiet NaN and -inf become finite; the mantissa and sign stay.
    assert_eq!(host::finite::<f32>(0x7FC0_0001), 0x7F40_0001);
    assert_eq!(
        host::finite::<f64>(f64::NEG_INFINITY.to_bits()),
        0xFFE0_0000_0000_0000
    );
    assert_eq!(host::finite::<u32>(0x7F80_0000), 0x7F80_0000);
    assert_eq!(host::finite::<f32>(0x3F80_0000), 0x3F80_0000);
}

#[test]
fn impossible_arguments_are_usage_errors() {
    fn usage<T: std::fmt::Debug>(r: Result<T>, what: &str) {
        match r {
            Err(Error::Usage(message)) => assert!(message.contains(what), "{message}"),
            other => panic!("expected a usage error about {what}, got {other:?}"),
        }
    }
    let mut i = vec![0i32; 4];
    usage(host::uniform(&mut i, 3, 2, 0), "greater than hi");
    let mut u = vec![0u64; 4];
    usage(host::uniform(&mut u, 1, 0, 0), "greater than hi");
    let mut f = vec![0f32; 4];
    usage(host::uniform(&mut f, 1.0, -1.0, 0), "greater than hi");
    usage(host::uniform(&mut f, f32::NAN, 1.0, 0), "finite");
    usage(host::uniform(&mut f, 0.0, f32::INFINITY, 0), "finite");
    usage(host::normal(&mut f, 0.0, -1.0, 0), "not negative");
    usage(host::normal(&mut f, f32::NAN, 1.0, 0), "finite");
    let mut d = vec![0f64; 4];
    usage(host::normal(&mut d, 0.0, f64::INFINITY, 0), "finite");
    // The device functions check the same way before touching the device.
    usage(UniformRange::new(2u32, 1u32), "greater than hi");
    usage(check_normal(1.0f64, -0.5), "not negative");
    usage("0.5".parse::<Entropy>(), "0.811");
}

#[test]
fn entropy_levels_read_and_print_as_cub_spells_them() {
    for level in Entropy::ALL {
        assert_eq!(level.to_string().parse::<Entropy>().ok(), Some(level));
    }
    assert_eq!(Entropy::B0_337.to_string(), "0.337");
    assert_eq!(Entropy::B0_000.words(), 0);
    assert_eq!(Entropy::B0_201.words(), 5);
}

#[test]
fn each_kernel_groups_what_one_philox_call_covers() {
    // 128 random bits per group: 4 f32, 2 f64, and twice the width for an integer uniform.
    assert_eq!(Kernel::Uniform.per_group::<f32>(), 4);
    assert_eq!(Kernel::Uniform.per_group::<f64>(), 2);
    assert_eq!(Kernel::Uniform.per_group::<u32>(), 2);
    assert_eq!(Kernel::Uniform.per_group::<i64>(), 1);
    assert_eq!(Kernel::Normal.per_group::<f32>(), 4);
    assert_eq!(Kernel::Normal.per_group::<f64>(), 2);
    assert_eq!(Kernel::Entropy.per_group::<i32>(), 4);
    assert_eq!(Kernel::Entropy.per_group::<f64>(), 2);
    assert_eq!(
        defines::<i64>(),
        [
            ("GEN_T", "long long".to_string()),
            ("GEN_BITS", "64".to_string()),
            ("GEN_FLOAT", "0".to_string())
        ]
    );
}

/// Whether NVRTC is here; says the test was skipped when not.
fn nvrtc_or_skip() -> bool {
    // SAFETY: only tries to dlopen the candidate library names; nothing is called.
    let present = unsafe { cudarc::nvrtc::sys::is_culib_present() };
    if !present {
        crate::skipped("needs NVRTC (the CUDA toolkit), which could not be loaded");
    }
    present
}

#[test]
fn every_generator_compiles_for_sm_90() {
    if !nvrtc_or_skip() {
        return;
    }
    fn check<T: Element>() {
        match crate::backend::cuda::compiles_for(SOURCE, &defines::<T>(), 90) {
            Ok(true) => {}
            Ok(false) => panic!("NVRTC is present but compiles_for found none"),
            Err(e) => panic!("{} does not compile: {e}", T::CUDA_TYPE),
        }
    }
    check::<f32>();
    check::<f64>();
    check::<i32>();
    check::<u32>();
    check::<i64>();
    check::<u64>();
}

#[test]
fn the_kernels_store_whole_groups_with_vector_stores() {
    use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
    if !nvrtc_or_skip() {
        return;
    }
    let ptx = |defines: Vec<(&str, String)>| {
        let options = defines
            .iter()
            .map(|(name, value)| format!("-D{name}={value}"))
            .collect();
        compile_ptx_with_opts(
            SOURCE,
            CompileOptions {
                arch: Some("compute_90"),
                options,
                ..Default::default()
            },
        )
        .map(|p| p.to_src())
        .unwrap_or_else(|e| panic!("{defines:?} does not compile: {e:?}"))
    };
    // One 16-byte store per group (4 × 32 bits or 2 × 64 bits) in every kernel.
    let f32_ptx = ptx(defines::<f32>());
    let f64_ptx = ptx(defines::<f64>());
    for (kernel, text) in split_kernels(&f32_ptx) {
        assert!(text.contains("st.global.v4"), "f32 {kernel}:\n{text}");
    }
    for (kernel, text) in split_kernels(&f64_ptx) {
        assert!(text.contains("st.global.v2"), "f64 {kernel}:\n{text}");
    }
}

/// The PTX of each `.entry` in `ptx`, by name.
fn split_kernels(ptx: &str) -> Vec<(String, String)> {
    let mut kernels = Vec::new();
    for part in ptx.split(".entry ").skip(1) {
        let name = part
            .split(|c: char| c == '(' || c.is_whitespace())
            .next()
            .unwrap_or("")
            .to_string();
        kernels.push((name, part.to_string()));
    }
    assert_eq!(kernels.len(), 3, "three kernels in:\n{ptx}");
    kernels
}

//! A large tuning space (issue 17): an SGEMM, `C = A·B`, in the style of CLBlast's xgemm
//! kernel, `#[tune]`d over ten parameters whose space holds 16,020 points after its
//! `require`s.
//!
//! A space this size is recorded by compiling every variant into one batch binary, and
//! `#[tune]` expands the function's body once per variant. So the body is one call: it packs
//! the variant's constants into a [`Params`] and hands them to [`launch`], an ordinary
//! function compiled once whatever the number of variants.
//!
//! The body passes `TUNED` along as every example does: a variant's `TUNED` is its values in
//! one string over the function's one table of parameters, so the batch binary of the whole
//! space does not grow with a table per variant.
//!
//! [`fill_eighths`] makes the bench's matrices on the device; [`eighth`] is their
//! specification on the host, from which [`check_product`] checks a product without making the
//! matrices.

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::{Kernel, Tuned};
use gputune_runtime::BoxError;

/// The CUDA C++ source of the kernel.
pub const SOURCE: &str = include_str!("sgemm.cu");

static SGEMM: Kernel = Kernel::new(SOURCE, "sgemm");

/// The input maker of `input.cu`: not tuned, compiled once per process.
pub static FILL_EIGHTHS: Kernel = Kernel::new(include_str!("input.cu"), "fill_eighths");

/// Threads per block of the input maker.
const FILL_TPB: u32 = 256;

/// The largest block tile: `n` must be a multiple of it (the kernel has no edge handling).
pub const MAX_TILE: usize = 128;

/// The dynamic shared memory a block may use without opting in.
pub const SHARED_LIMIT: usize = 48 * 1024;

/// One point of the space as run-time values (the `#[tune]` parameters, same names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Params {
    /// Rows of the block's tile of C.
    pub bm: usize,
    /// Columns of the block's tile of C.
    pub bn: usize,
    /// Depth of the slabs of A and B a block works through at a time.
    pub bk: usize,
    /// Rows of each thread's register tile.
    pub tm: usize,
    /// Columns of each thread's register tile.
    pub tn: usize,
    /// Vector width of the global loads that stage a slab (1, 2 or 4 floats).
    pub vec: usize,
    /// 1: stage A through shared memory; 0: read it from global memory in the inner loop.
    pub sa: usize,
    /// 1: stage B through shared memory; 0: read it from global memory in the inner loop.
    pub sb: usize,
    /// Unroll factor of the inner loop over k.
    pub unroll: usize,
    /// 1: pad each shared-memory row by one float.
    pub pad: usize,
}

impl Params {
    /// The value of the parameter `name` (as `#[tune]` declares it: `bm`, …, `pad`).
    pub fn get(&self, name: &str) -> Option<usize> {
        Some(match name {
            "bm" => self.bm,
            "bn" => self.bn,
            "bk" => self.bk,
            "tm" => self.tm,
            "tn" => self.tn,
            "vec" => self.vec,
            "sa" => self.sa,
            "sb" => self.sb,
            "unroll" => self.unroll,
            "pad" => self.pad,
            _ => return None,
        })
    }

    /// Threads per block: one per register tile.
    pub fn threads(&self) -> usize {
        (self.bm / self.tm) * (self.bn / self.tn)
    }

    /// The dynamic shared memory the kernel uses: the staged slabs, with their padding.
    pub fn shared_bytes(&self) -> usize {
        let a = self.sa * self.bk * (self.bm + self.pad);
        let b = self.sb * self.bk * (self.bn + self.pad);
        (a + b) * std::mem::size_of::<f32>()
    }

    /// The launch for `n`×`n` matrices: one block per `bm`×`bn` tile of C.
    pub fn launch_config(&self, n: usize) -> LaunchConfig {
        LaunchConfig {
            grid_dim: ((n / self.bn) as u32, (n / self.bm) as u32, 1),
            block_dim: (self.threads() as u32, 1, 1),
            shared_mem_bytes: self.shared_bytes() as u32,
        }
    }
}

/// `c = a·b` for row-major `n`×`n` matrices (`n` a multiple of [`MAX_TILE`]), enqueued on
/// `stream`.
///
/// The `require`s keep the points the kernel computes correctly: 32 to 1024 threads per
/// block, staged slabs within 48 KiB, the vector loads of each staged slab shared evenly by
/// the threads and never straddling a row, and `unroll` dividing `bk`. The last one drops
/// duplicates: with neither A nor B staged, `vec` and `pad` change nothing. The kernel
/// declares its block size (`__launch_bounds__`), so that ptxas keeps its registers within
/// what the block can have; a point the device still refuses would be `invalid` (`check`).
#[tune(
    bm = [32, 64, 128], bn = [32, 64, 128], bk = [16, 32, 64],
    tm = [1, 2, 4, 8], tn = [1, 2, 4, 8], vec = [1, 2, 4],
    sa = [0, 1], sb = [0, 1], unroll = [1, 2, 4], pad = [0, 1],
    require((bm / tm) * (bn / tn) >= 32 && (bm / tm) * (bn / tn) <= 1024),
    require((sa * bk * (bm + pad) + sb * bk * (bn + pad)) * 4 <= 49152),
    require(bk % vec == 0 && bn % vec == 0),
    require(sa == 0 || (bm * bk) % ((bm / tm) * (bn / tn) * vec) == 0),
    require(sb == 0 || (bk * bn) % ((bm / tm) * (bn / tn) * vec) == 0),
    require(bk % unroll == 0),
    require(sa + sb > 0 || (vec == 1 && pad == 0)),
    base(bm = 64, bn = 64, bk = 16, tm = 4, tn = 4, vec = 1, sa = 1, sb = 1, unroll = 1, pad = 0)
)]
pub fn sgemm(
    stream: &Arc<CudaStream>,
    ab: (&CudaSlice<f32>, &CudaSlice<f32>),
    c: &mut CudaSlice<f32>,
    n: usize,
) -> Result<(), BoxError> {
    // The whole per-variant body: everything else is compiled once, in `launch`.
    launch(
        TUNED,
        &Params {
            bm: BM,
            bn: BN,
            bk: BK,
            tm: TM,
            tn: TN,
            vec: VEC,
            sa: SA,
            sb: SB,
            unroll: UNROLL,
            pad: PAD,
        },
        stream,
        ab,
        c,
        n,
    )
}

/// Launches the kernel of [`sgemm`]'s variant `params` (whose `TUNED` is `tuned`): what its
/// every variant calls. Not
/// inlined, so that a batch binary holds one copy of it.
#[inline(never)]
pub fn launch(
    tuned: Tuned,
    params: &Params,
    stream: &Arc<CudaStream>,
    (a, b): (&CudaSlice<f32>, &CudaSlice<f32>),
    c: &mut CudaSlice<f32>,
    n: usize,
) -> Result<(), BoxError> {
    if n == 0 || n % MAX_TILE != 0 || a.len() < n * n || b.len() < n * n || c.len() < n * n {
        return Err(format!(
            "sgemm needs n×n matrices with n a positive multiple of {MAX_TILE}, not n = {n}"
        )
        .into());
    }
    let kernel = SGEMM.get(tuned, stream, &[])?;
    let config = kernel.check(params.launch_config(n))?;
    let n = i32::try_from(n)?;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(a).arg(b).arg(c).arg(&n);
    // SAFETY: the arguments match sgemm(const float*, const float*, float*, int); every index
    // the kernel touches is below n·n, which all three slices hold (checked above), and its
    // vector loads are aligned (n is a multiple of 4; the allocations are 256-byte aligned).
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// Element `i` of a matrix of eighths 1/8…1, scrambled by a multiplicative hash of the index
/// and `seed` (a pattern of period 8 along rows would make every row of C alike, hiding a
/// mixed-up row): the bench's and the tests' inputs. Every product of two is a multiple of
/// 1/64 up to 1, so every partial sum of a row-by-column product is a multiple of 1/64 up to
/// n: for n = 1024, 17 significant bits at most (up to n = 2^18, 24), exact in f32 whatever
/// the order of the additions, so every correct variant agrees with base, and with the host,
/// bit for bit. `input.cu` computes the same values on the device.
pub fn eighth(i: usize, seed: u32) -> f32 {
    let h = (i as u32 ^ seed).wrapping_mul(2_654_435_761) >> 29;
    (h + 1) as f32 / 8.0
}

/// An `n`×`n` matrix of [`eighth`]s, made on the host: the tests' inputs, and the
/// specification of [`fill_eighths`].
pub fn eighths(n: usize, seed: u32) -> Vec<f32> {
    (0..n * n).map(|i| eighth(i, seed)).collect()
}

/// Fills `x` with [`eighth`]`(i, seed)` for every index `i` on the device, enqueued on
/// `stream`: what [`eighths`] makes on the host, bit for bit, without a host loop or a copy.
pub fn fill_eighths(
    stream: &Arc<CudaStream>,
    x: &mut CudaSlice<f32>,
    seed: u32,
) -> Result<(), BoxError> {
    if x.is_empty() {
        return Ok(());
    }
    let kernel = FILL_EIGHTHS.fixed(stream, &[])?;
    let config = kernel.grid_stride(x.len(), FILL_TPB)?;
    let n = x.len() as u64;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(x).arg(&n).arg(&seed);
    // SAFETY: the arguments match fill_eighths(float*, unsigned long long, unsigned); it
    // writes x[0..n), which the slice holds.
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// The rows (and the columns) of C that [`check_product`] checks: every `n / 61`-th (every
/// one below n = 122), the last one included: 65 of each for n = 1024.
pub fn checked_lines(n: usize) -> Vec<usize> {
    let step = (n / 61).max(1);
    let mut lines: Vec<usize> = (0..n).step_by(step).chain(n.checked_sub(1)).collect();
    lines.dedup();
    lines
}

/// Whether `c` (row-major `n`×`n`) is `A·B` for `A` and `B` the [`eighth`]s of `a_seed` and
/// `b_seed`, exactly, at every crossing of [`checked_lines`] (corners and edges included):
/// each element from the specification in exact arithmetic (a sum of multiples of 1/64 in
/// `f64`), so that neither the matrices nor a copy of them is needed. `Err` names the first
/// wrong element.
pub fn check_product(c: &[f32], n: usize, (a_seed, b_seed): (u32, u32)) -> Result<(), String> {
    if c.len() < n * n {
        return Err(format!("{} elements for a {n}×{n} product", c.len()));
    }
    let lines = checked_lines(n);
    for &col in &lines {
        let b_col: Vec<f64> = (0..n)
            .map(|k| f64::from(eighth(k * n + col, b_seed)))
            .collect();
        for &row in &lines {
            let want: f64 = (0..n)
                .map(|k| f64::from(eighth(row * n + k, a_seed)) * b_col[k])
                .sum();
            let got = c[row * n + col];
            if f64::from(got) != want {
                return Err(format!("C[{row}][{col}] = {got}, not {want}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};

    use super::*;

    use gputune_runtime::skipped;

    #[test]
    fn the_checked_product_is_the_host_s_and_catches_a_wrong_element() {
        let n = 128;
        let (a, b) = (eighths(n, 0xa), eighths(n, 0xb));
        // The formula, element by element: ((i ^ seed) · 2654435761 mod 2^32) >> 29, plus 1,
        // over 8 (as the device's unsigned arithmetic wraps).
        for (i, &v) in a.iter().enumerate() {
            let h = ((i as u64 ^ 0xa) * 2_654_435_761 % (1 << 32)) >> 29;
            assert_eq!(v, (h + 1) as f32 / 8.0, "{i}");
        }
        assert!(a != b, "different seeds, different matrices");
        let mut c = host_product(&a, &b, n);
        assert_eq!(check_product(&c, n, (0xa, 0xb)), Ok(()));
        // Swapped operands, a wrong element at a checked crossing and a short C are caught.
        assert!(check_product(&c, n, (0xb, 0xa)).is_err());
        let (row, col) = (checked_lines(n)[3], n - 1);
        c[row * n + col] += 0.125;
        let e = check_product(&c, n, (0xa, 0xb)).expect_err("a wrong element");
        assert!(e.contains(&format!("C[{row}][{col}]")), "{e}");
        assert!(check_product(&c[1..], n, (0xa, 0xb)).is_err());
        // The bench's n: 65 lines each way, both ends in.
        let lines = checked_lines(1024);
        assert_eq!((lines.len(), lines[0], lines[64]), (65, 0, 1023));
        assert_eq!(checked_lines(1), [0]);
        assert_eq!(checked_lines(5), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn the_device_s_input_maker_compiles_where_nvrtc_is_installed() {
        match FILL_EIGHTHS.compiles_for(&[], "base", &[], 90) {
            Ok(true) => {}
            Ok(false) => skipped("needs NVRTC (the CUDA toolkit), which is not loaded"),
            Err(e) => panic!("fill_eighths does not compile: {e}"),
        }
    }

    /// On a GPU (skipped without one): the device's matrices are the host's, and base's
    /// product of them passes the bench's check.
    #[test]
    fn on_a_gpu_the_device_makes_the_host_s_matrices() {
        use gputune_runtime::cudarc::driver::{sys, CudaContext};
        // SAFETY: only tries to dlopen the driver library; nothing is called.
        if !unsafe { sys::is_culib_present() } {
            return skipped("needs a CUDA driver, which is not installed");
        }
        let stream = match CudaContext::new(0) {
            Ok(context) => context.default_stream(),
            Err(e) => return skipped(&format!("no usable device: {e}")),
        };
        for (n, seed) in [(1, 0xa), (129, 0xb), (1024, 0xa)] {
            let mut x = stream.alloc_zeros::<f32>(n * n).expect("x");
            fill_eighths(&stream, &mut x, seed).expect("fill_eighths");
            let got = stream.clone_dtoh(&x).expect("copy back");
            assert!(got == eighths(n, seed), "n = {n}, seed {seed}");
        }
        let n = 256;
        let (mut a, mut b) = (
            stream.alloc_zeros::<f32>(n * n).expect("a"),
            stream.alloc_zeros::<f32>(n * n).expect("b"),
        );
        fill_eighths(&stream, &mut a, 0xa).expect("a");
        fill_eighths(&stream, &mut b, 0xb).expect("b");
        let mut c = stream.alloc_zeros::<f32>(n * n).expect("c");
        sgemm(&stream, (&a, &b), &mut c, n).expect("base launches");
        let got = stream.clone_dtoh(&c).expect("copy back");
        assert_eq!(check_product(&got, n, (0xa, 0xb)), Ok(()));
    }

    /// Every label of the space, from the build script's manifest.
    fn labels() -> Vec<String> {
        // Compiled in, so that the test binary runs on a GPU machine without the build tree.
        let text = include_str!(concat!(env!("OUT_DIR"), "/gputune/manifest.json"));
        let m: serde_json::Value = serde_json::from_str(text).expect("JSON");
        m["functions"][0]["labels"]
            .as_array()
            .expect("labels")
            .iter()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect()
    }

    /// The defines NVRTC gets for `label`.
    fn defines(label: &str) -> Vec<(String, String)> {
        SGEMM
            .label_defines(SGEMM_PARAMS, label, &[])
            .expect("a label")
    }

    /// The parameters the kernel sees for `label`, read back from its defines.
    fn params(label: &str) -> Params {
        let defines = defines(label);
        let get = |name: &str| -> usize {
            defines
                .iter()
                .find(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("{label}: no define {name}"))
                .1
                .parse()
                .expect("an integer")
        };
        Params {
            bm: get("BM"),
            bn: get("BN"),
            bk: get("BK"),
            tm: get("TM"),
            tn: get("TN"),
            vec: get("VEC"),
            sa: get("SA"),
            sb: get("SB"),
            unroll: get("UNROLL"),
            pad: get("PAD"),
        }
    }

    #[test]
    fn the_space_has_16020_points() {
        let labels = labels();
        assert_eq!(labels.len(), 16_020);
        assert!(labels.len() >= 10_000);
        let mut unique = labels.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), labels.len());
    }

    #[test]
    fn every_point_fits_a_block_and_divides_its_loads() {
        for label in labels() {
            let p = params(&label);
            let threads = p.threads();
            assert!((32..=1024).contains(&threads), "{label}: {threads} threads");
            assert!(
                p.shared_bytes() <= SHARED_LIMIT,
                "{label}: {} bytes of shared memory",
                p.shared_bytes()
            );
            assert_eq!(p.bm % p.tm + p.bn % p.tn, 0, "{label}");
            assert!(
                MAX_TILE % p.bm + MAX_TILE % p.bn + MAX_TILE % p.bk == 0,
                "{label}"
            );
            assert_eq!(p.bk % p.unroll, 0, "{label}");
            if p.sa == 1 {
                assert_eq!(p.bk % p.vec, 0, "{label}");
                assert_eq!((p.bm * p.bk) % (threads * p.vec), 0, "{label}");
            }
            if p.sb == 1 {
                assert_eq!(p.bn % p.vec, 0, "{label}");
                assert_eq!((p.bk * p.bn) % (threads * p.vec), 0, "{label}");
            }
            assert!(p.sa <= 1 && p.sb <= 1 && p.pad <= 1, "{label}");
        }
    }

    #[test]
    fn the_limits_bite() {
        // The shared-memory require is not vacuous: the largest slabs fill 48 KiB exactly.
        let all: Vec<Params> = labels().iter().map(|l| params(l)).collect();
        assert_eq!(
            all.iter().map(Params::shared_bytes).max(),
            Some(SHARED_LIMIT)
        );
        let threads: Vec<usize> = all.iter().map(Params::threads).collect();
        assert_eq!(threads.iter().min(), Some(&32));
        assert_eq!(threads.iter().max(), Some(&1024));
    }

    #[test]
    fn base_is_the_middle_point() {
        let base = params("base");
        assert_eq!(
            base,
            Params {
                bm: 64,
                bn: 64,
                bk: 16,
                tm: 4,
                tn: 4,
                vec: 1,
                sa: 1,
                sb: 1,
                unroll: 1,
                pad: 0
            }
        );
        let config = base.launch_config(1024);
        assert_eq!(config.grid_dim, (16, 16, 1));
        assert_eq!(config.block_dim, (256, 1, 1));
        assert_eq!(config.shared_mem_bytes, 2 * 16 * 64 * 4);
    }

    /// The `TUNED` `#[tune]` gives the variant `p`, built here for the tests that launch
    /// every point directly: the table of [`SGEMM_PARAMS`] once, each point's values once.
    fn tuned(p: &Params) -> Tuned {
        static TABLE: OnceLock<&'static [(&'static str, &'static str, &'static str)]> =
            OnceLock::new();
        static VALUES: OnceLock<Mutex<HashMap<Params, &'static str>>> = OnceLock::new();
        let table = TABLE.get_or_init(|| {
            let rows: Vec<(&str, &str, &str)> = SGEMM_PARAMS
                .iter()
                .map(|(n, b)| (*n, &*Box::leak(n.to_uppercase().into_boxed_str()), *b))
                .collect();
            Box::leak(rows.into_boxed_slice())
        });
        let mut values = VALUES
            .get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let text = *values.entry(*p).or_insert_with(|| {
            let v: Vec<String> = SGEMM_PARAMS
                .iter()
                .map(|(n, _)| p.get(n).expect("a parameter of Params").to_string())
                .collect();
            Box::leak(
                v.join(gputune_runtime::kernel::VALUE_SEPARATOR)
                    .into_boxed_str(),
            )
        });
        Tuned::new("sgemm", table, text)
    }

    #[test]
    fn every_point_s_tuned_makes_its_label_s_defines() {
        for label in labels() {
            let got: Vec<(String, String)> = SGEMM
                .variant_defines(tuned(&params(&label)), &[])
                .into_iter()
                .map(|(n, v)| (n.to_string(), v))
                .collect();
            assert_eq!(got, defines(&label), "{label}");
        }
    }

    /// Base, the extremes (fewest and most threads, most shared memory, largest register
    /// tile) and every 97th label: a spread of every parameter's values.
    fn sample() -> Vec<String> {
        let labels = labels();
        let all: Vec<Params> = labels.iter().map(|l| params(l)).collect();
        let pick = |key: &dyn Fn(&Params) -> usize, max: bool| {
            let i = (0..all.len())
                .max_by_key(|&i| {
                    let k = key(&all[i]);
                    if max {
                        k
                    } else {
                        usize::MAX - k
                    }
                })
                .expect("a point");
            labels[i].clone()
        };
        let mut sample = vec!["base".to_string()];
        sample.push(pick(&Params::threads, false));
        sample.push(pick(&Params::threads, true));
        sample.push(pick(&Params::shared_bytes, true));
        sample.push(pick(&|p| p.tm * p.tn * p.unroll * p.vec, true));
        sample.extend(labels.iter().step_by(97).cloned());
        sample
    }

    #[test]
    fn the_sample_takes_every_value_of_every_parameter() {
        let values = |labels: &[String]| {
            let mut seen: Vec<(&str, usize)> = Vec::new();
            for label in labels {
                let p = params(label);
                for (name, _) in SGEMM_PARAMS {
                    let v = (*name, p.get(name).expect("a parameter"));
                    if !seen.contains(&v) {
                        seen.push(v);
                    }
                }
            }
            seen.sort();
            seen
        };
        assert_eq!(values(&sample()), values(&labels()));
    }

    #[test]
    fn nvrtc_compiles_a_spread_of_points() {
        let sample = sample();
        assert!(sample.len() > 160, "{}", sample.len());
        for label in sample {
            let defines = defines(&label);
            let defines: Vec<(&str, String)> = defines
                .iter()
                .map(|(n, v)| (n.as_str(), v.clone()))
                .collect();
            match gputune_runtime::backend::cuda::compiles_for(SOURCE, &defines, 90) {
                Ok(true) => {}
                Ok(false) => {
                    return skipped("needs NVRTC (the CUDA toolkit), which is not installed")
                }
                Err(e) => panic!("{label} {defines:?} does not compile: {e}"),
            }
        }
    }

    #[test]
    fn nvrtc_rejects_a_point_outside_the_space() {
        // The kernel's static_asserts back the requires: A's 32·16 floats do not divide among
        // 256 threads loading float4s.
        let mut defines = defines("base");
        for (name, value) in &mut defines {
            match name.as_str() {
                "BM" => *value = "32".into(),
                "TM" => *value = "2".into(),
                "VEC" => *value = "4".into(),
                _ => {}
            }
        }
        let defines: Vec<(&str, String)> = defines
            .iter()
            .map(|(n, v)| (n.as_str(), v.clone()))
            .collect();
        match gputune_runtime::backend::cuda::compiles_for(SOURCE, &defines, 90) {
            Ok(true) => panic!("{defines:?} compiled"),
            Ok(false) => skipped("needs NVRTC (the CUDA toolkit), which is not installed"),
            Err(e) => assert!(e.to_string().contains("divide among the threads"), "{e}"),
        }
    }

    /// The host's `a·b`, exact for these inputs whatever the order of the additions.
    fn host_product(a: &[f32], b: &[f32], n: usize) -> Vec<f32> {
        let mut c = vec![0.0f32; n * n];
        for i in 0..n {
            for k in 0..n {
                let x = a[i * n + k];
                for j in 0..n {
                    c[i * n + j] += x * b[k * n + j];
                }
            }
        }
        c
    }

    /// On a GPU (skipped without one): base, the extremes and every 97th point, or every
    /// `SGEMM_LARGE_GPU_EVERY`-th point of the space (`1`: all of them), compute exactly the
    /// host's product at n = 256, two blocks of the largest tile each way.
    #[test]
    fn on_a_gpu_the_points_compute_the_exact_product() {
        use gputune_runtime::backend::cuda::CudaHandles;
        use gputune_runtime::cudarc::driver::{sys, CudaContext};
        // SAFETY: only tries to dlopen the driver library; nothing is called.
        if !unsafe { sys::is_culib_present() } {
            return skipped("needs a CUDA driver, which is not installed");
        }
        let context = match CudaContext::new(0) {
            Ok(context) => context,
            Err(e) => return skipped(&format!("no usable device: {e}")),
        };
        let stream = context.default_stream();
        let labels: Vec<String> = match std::env::var("SGEMM_LARGE_GPU_EVERY") {
            Ok(every) => {
                let every: usize = every.parse().expect("SGEMM_LARGE_GPU_EVERY: a number");
                let mut labels: Vec<String> = labels().into_iter().step_by(every).collect();
                labels.insert(0, "base".into());
                labels
            }
            Err(_) => sample(),
        };
        // Compile on every core but one, in the background, in the order they run.
        let sets: Vec<Vec<(String, String)>> = labels.iter().map(|l| defines(l)).collect();
        let sets: Vec<Vec<(&str, String)>> = sets
            .iter()
            .map(|s| s.iter().map(|(n, v)| (n.as_str(), v.clone())).collect())
            .collect();
        let handles = CudaHandles {
            context: context.clone(),
            stream: stream.clone(),
        };
        let started = std::time::Instant::now();
        let background = handles
            .precompile_named(SOURCE, &sets, &["sgemm"])
            .expect("NVRTC");

        let n = 256;
        let (a_host, b_host) = (eighths(n, 0xa), eighths(n, 0xb));
        let expected = host_product(&a_host, &b_host, n);
        let a = stream.clone_htod(&a_host).expect("a");
        let b = stream.clone_htod(&b_host).expect("b");
        let mut c = stream.alloc_zeros::<f32>(n * n).expect("c");
        let poison = vec![f32::NAN; n * n];
        let (mut checked, mut invalid) = (0, Vec::new());
        for label in &labels {
            let p = params(label);
            stream.memcpy_htod(&poison, &mut c).expect("poison");
            match launch(tuned(&p), &p, &stream, (&a, &b), &mut c, n) {
                Ok(()) => {}
                Err(e)
                    if matches!(
                        e.downcast_ref::<gputune_runtime::Error>(),
                        Some(gputune_runtime::Error::InvalidLaunch(_))
                    ) =>
                {
                    invalid.push(format!("{label}: {e}"));
                    continue;
                }
                Err(e) => panic!("{label}: {e}"),
            }
            let got = stream.clone_dtoh(&c).expect("c back");
            if let Some(i) = (0..n * n).find(|&i| got[i] != expected[i]) {
                panic!(
                    "{label}: C[{}][{}] is {}, not {}",
                    i / n,
                    i % n,
                    got[i],
                    expected[i]
                );
            }
            checked += 1;
        }
        let summary = background.wait();
        eprintln!(
            "{checked} points exact, {} refused at launch (first: {:?}); compiled {} ({} from \
             disk, {} threads), {:.1} s in all",
            invalid.len(),
            invalid.first(),
            summary.compiled,
            summary.from_disk,
            summary.threads,
            started.elapsed().as_secs_f64()
        );
        assert!(summary.failed.is_empty(), "{:?}", summary.failed);
        assert_eq!(checked + invalid.len(), labels.len());
    }
}

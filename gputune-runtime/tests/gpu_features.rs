//! On a GPU: a launch asking for more than 48 KiB of dynamic shared memory is opted in to by
//! the kernel handle's `check` and runs (up to the device's opt-in limit, beyond which it is
//! invalid), half-precision outputs verify on the device by value, and small outputs relative
//! to their own size. Without a driver each
//! test says it was skipped. `bash scripts/gpu/build-gpu.sh features` builds the test into
//! `.gpu/gpu-features-test`, which runs on the GPU machine as it is.
#![cfg(feature = "cuda")]

use std::sync::Arc;

use gputune_runtime::cudarc::driver::{CudaContext, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::Kernel;
use gputune_runtime::verify::{Bf16, Tolerance, Verify, F16};

/// Each block stages `per_block` floats in dynamic shared memory, reversed, and writes them
/// out: every element of the output is read back from shared memory.
const SOURCE: &str = r#"
extern "C" __global__ void reverse_blocks(const float* x, float* y, unsigned per_block) {
    extern __shared__ float staged[];
    const float* in = x + (size_t)blockIdx.x * per_block;
    for (unsigned i = threadIdx.x; i < per_block; i += blockDim.x) staged[per_block - 1 - i] = in[i];
    __syncthreads();
    float* out = y + (size_t)blockIdx.x * per_block;
    for (unsigned i = threadIdx.x; i < per_block; i += blockDim.x) out[i] = staged[i];
}
"#;

static REVERSE: Kernel = Kernel::new(SOURCE, "reverse_blocks");

fn skipped(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
}

fn stream(test: &str) -> Option<Arc<CudaStream>> {
    // SAFETY: only tries to dlopen the driver's library names; nothing is called.
    if !unsafe { gputune_runtime::cudarc::driver::sys::is_culib_present() } {
        skipped(test, "no CUDA driver");
        return None;
    }
    match CudaContext::new(0) {
        Ok(c) => Some(c.default_stream()),
        Err(e) => {
            skipped(test, &format!("no CUDA device ({e})"));
            None
        }
    }
}

#[test]
fn more_than_48_kib_of_dynamic_shared_memory_is_opted_in_and_runs() {
    let Some(stream) = stream("more_than_48_kib_of_dynamic_shared_memory_is_opted_in_and_runs")
    else {
        return;
    };
    let kernel = REVERSE
        .fixed(&stream, &[])
        .expect("compiles (NVRTC on the GPU machine)");
    let optin = kernel.limits().max_dynamic_shared_optin;
    assert!(
        optin > 48 * 1024,
        "an H100 or H200 opts in to more: {optin}"
    );
    let per_block: u32 = 25_000; // 100,000 bytes of floats
    let blocks = 8u32;
    let n = (per_block * blocks) as usize;
    let host: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let x = stream.clone_htod(&host).expect("copy in");
    let mut y = stream.alloc_zeros::<f32>(n).expect("alloc");
    let config = kernel
        .check(LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: per_block * 4,
        })
        .expect("100,000 bytes are opted in to");
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(&x).arg(&mut y).arg(&per_block);
    // SAFETY: reverse_blocks(const float*, float*, unsigned) over blocks × per_block floats.
    unsafe { launch.launch(config) }.expect("the launch runs");
    let got = stream.clone_dtoh(&y).expect("copy out");
    for b in 0..blocks as usize {
        let p = per_block as usize;
        for i in [0, 1, p / 2, p - 1] {
            assert_eq!(
                got[b * p + i],
                host[b * p + p - 1 - i],
                "block {b}, element {i}"
            );
        }
    }
    // A second copy of the same compiled kernel sees the raised limit, and more than the
    // device's opt-in limit stays invalid.
    let again = REVERSE.fixed(&stream, &[]).expect("cached");
    let too_much = again.check(LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: optin + 4,
    });
    assert!(
        matches!(&too_much, Err(gputune_runtime::Error::InvalidLaunch(m)) if m.contains("opt-in")),
        "{too_much:?}"
    );
}

#[test]
fn half_precision_outputs_verify_by_value_on_the_device() {
    let Some(stream) = stream("half_precision_outputs_verify_by_value_on_the_device") else {
        return;
    };
    let values: Vec<f32> = (0..100_000)
        .map(|i| (i % 977) as f32 / 97.0 - 5.0)
        .collect();
    let bf: Vec<Bf16> = values.iter().map(|v| Bf16::from_f32(*v)).collect();
    let near: Vec<Bf16> = values
        .iter()
        .map(|v| Bf16::from_f32(v * (1.0 + 3e-3)))
        .collect();
    let mut far = bf.clone();
    far[12_345] = Bf16::from_f32(values[12_345] + 1.0);
    let reference = stream.clone_htod(&bf).expect("copy");
    let check = |host: &[Bf16], tolerance| {
        let out = stream.clone_htod(host).expect("copy");
        out.compare(&reference, tolerance).expect("compares")
    };
    assert!(check(&near, Bf16::default_tolerance_of()).passed());
    assert!(!check(&near, Tolerance::EXACT).passed(), "bits differ");
    let c = check(&far, Bf16::default_tolerance_of());
    assert_eq!((c.mismatches, c.worst_index), (1, Some(12_345)));

    let h: Vec<F16> = values.iter().map(|v| F16::from_f32(*v)).collect();
    let reference = stream.clone_htod(&h).expect("copy");
    let mut poisoned = stream.clone_htod(&h).expect("copy");
    poisoned.poison().expect("poisons");
    let c = poisoned
        .compare(&reference, Tolerance::new(1.0, 1.0))
        .expect("compares");
    assert_eq!(c.mismatches, h.len() as u64, "poison (NaN) never passes");
}

#[test]
fn small_outputs_verify_relative_to_their_own_size_on_the_device() {
    let Some(stream) = stream("small_outputs_verify_relative_to_their_own_size_on_the_device")
    else {
        return;
    };
    // Softmax probabilities over a 32k vocabulary, 1e-9 to 5e-5.
    let p: Vec<f32> = (0..32_768)
        .map(|i| 1e-9 * 5e4f32.powf(i as f32 / 32_767.0))
        .collect();
    let reference = stream.clone_htod(&p).expect("copy");
    let default = <gputune_runtime::cudarc::driver::CudaSlice<f32> as Verify>::default_tolerance();
    let check = |host: &[f32], tolerance| {
        let out = stream.clone_htod(host).expect("copy");
        out.compare(&reference, tolerance).expect("compares")
    };
    // Every probability under 1e-6 lost and the rest 20 % high: the old fixed floor passed
    // it, the floor relative to the output does not.
    let wrong: Vec<f32> = p
        .iter()
        .map(|&v| if v < 1e-6 { 0.0 } else { v * 1.2 })
        .collect();
    assert!(check(&wrong, Tolerance::new(1e-5, 1e-5)).passed());
    assert_eq!(check(&wrong, default).mismatches, p.len() as u64);
    let mut one = p.clone();
    one[13_947] *= 1.01; // about 1e-7
    let c = check(&one, default);
    assert_eq!((c.mismatches, c.worst_index), (1, Some(13_947)));
    let reordered: Vec<f32> = p
        .iter()
        .enumerate()
        .map(|(i, &v)| f32::from_bits(v.to_bits() + (i % 9) as u32))
        .collect();
    assert!(check(&reordered, default).passed());
    // EXACT compares bits: a negative zero is not base's positive zero.
    let zeros = stream.clone_htod(&[0.0f32, 0.0, 1.0]).expect("copy");
    let signed = stream.clone_htod(&[0.0f32, -0.0, 1.0]).expect("copy");
    let c = signed.compare(&zeros, Tolerance::EXACT).expect("compares");
    assert_eq!(
        (c.mismatches, c.worst_index, c.max_abs_error),
        (1, Some(1), 0.0)
    );
}

/// The element type's default tolerance, as `exec_verified` uses it.
trait DefaultTolerance {
    fn default_tolerance_of() -> Tolerance;
}

impl DefaultTolerance for Bf16 {
    fn default_tolerance_of() -> Tolerance {
        <gputune_runtime::cudarc::driver::CudaSlice<Bf16> as Verify>::default_tolerance()
    }
}

const TWO_KERNELS: &str = r#"
extern "C" __global__ void fill(float* y, float v) { y[threadIdx.x] = v; }
namespace ops { __global__ void add(float* y, float v) { y[threadIdx.x] += v; } }
"#;

/// One handle, both kernels of its file: `ops::add` by its C++ name (listed), `fill` by
/// its symbol.
static FILL: Kernel = Kernel::new(TWO_KERNELS, "fill").module_names(&["fill", "ops::add"]);

#[test]
fn the_other_kernels_of_a_compiled_module_come_from_one_handle() {
    let Some(stream) = stream("the_other_kernels_of_a_compiled_module_come_from_one_handle") else {
        return;
    };
    let fill = FILL.fixed(&stream, &[]).expect("compiles");
    let add = fill.kernel("ops::add").expect("the C++ name, lowered");
    assert_eq!(add.record().name, "ops::add");
    assert!(
        fill.kernel("nope").is_err(),
        "an unknown kernel is an error"
    );
    let mut y = stream.alloc_zeros::<f32>(32).expect("alloc");
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let (v, w) = (2.0f32, 0.5f32);
    let mut launch = stream.launch_builder(fill.function());
    launch.arg(&mut y).arg(&v);
    // SAFETY: fill(float*, float) writes 32 floats.
    unsafe { launch.launch(fill.check(config).expect("fits")) }.expect("runs");
    let mut launch = stream.launch_builder(add.function());
    launch.arg(&mut y).arg(&w);
    // SAFETY: ops::add(float*, float) updates 32 floats.
    unsafe { launch.launch(add.check(config).expect("fits")) }.expect("runs");
    assert_eq!(stream.clone_dtoh(&y).expect("copy"), vec![2.5f32; 32]);
    // The same module: the second ask loads nothing.
    let again = fill.kernel("ops::add").expect("cached");
    assert_eq!(again.record(), add.record());
}

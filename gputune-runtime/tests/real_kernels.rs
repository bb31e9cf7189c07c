//! On a GPU: kernels that include CUDA's headers (fp16, bf16, cooperative groups, CUB's
//! BlockLoad, BlockReduce and BlockRadixSort) and a header handed over by name compile through
//! the kernel handle with no include path written, launch, and compute the right answers; a
//! register limit as a tuning parameter changes the registers recorded. Without a driver each
//! test says it was skipped. `bash scripts/gpu/build-gpu.sh real-kernels` builds it into
//! `.gpu/real-kernels-test`, which runs on the GPU machine as it is.
#![cfg(feature = "cuda")]

use std::sync::Arc;

use gputune_runtime::cudarc::driver::{CudaContext, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::{Kernel, OptionRule, Tuned};

const FP16: &str = r#"#include <cuda_fp16.h>
__global__ void halves(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __half2float(__hmul(__float2half(x[i]), __float2half(2.0f)));
}"#;

const BF16: &str = r#"#include <cuda_bf16.h>
__global__ void bhalves(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __bfloat162float(__hmul(__float2bfloat16(x[i]), __float2bfloat16(2.0f)));
}"#;

const GROUPS: &str = r#"#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
__global__ void warp_sums(const float* x, float* y) {
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    float s = cg::reduce(warp, x[blockIdx.x * blockDim.x + threadIdx.x], cg::plus<float>());
    if (warp.thread_rank() == 0) y[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = s;
}"#;

const CUB: &str = r#"#include <cub/block/block_load.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
// One block of TPB threads: sorts TPB * IPT keys and sums them.
__global__ void sort_and_sum(const int* keys, int* sorted, int* sum) {
    using Load = cub::BlockLoad<int, TPB, IPT, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Sort = cub::BlockRadixSort<int, TPB, IPT>;
    using Reduce = cub::BlockReduce<int, TPB>;
    __shared__ union { typename Load::TempStorage load; typename Sort::TempStorage sort;
                       typename Reduce::TempStorage reduce; } temp;
    int items[IPT];
    Load(temp.load).Load(keys, items);
    __syncthreads();
    Sort(temp.sort).Sort(items);
    for (int i = 0; i < IPT; ++i) sorted[threadIdx.x * IPT + i] = items[i];
    __syncthreads();
    int total = Reduce(temp.reduce).Sum(items);
    if (threadIdx.x == 0) *sum = total;
}"#;

const WITH_HEADER: &str = r#"#include "twice.cuh"
__global__ void doubled(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = twice(x[i]);
}"#;

/// Many live values per thread: without a limit it takes more than 32 registers.
const HEAVY: &str = r#"__global__ void heavy(const float* x, float* y) {
    float v[48];
#pragma unroll
    for (int i = 0; i < 48; ++i) v[i] = x[threadIdx.x * 48 + i];
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 48; ++i) s += v[i] * v[47 - i] + v[(i * 7) % 48];
    y[threadIdx.x] = s;
}"#;

static HALVES: Kernel = Kernel::new(FP16, "halves");
static BHALVES: Kernel = Kernel::new(BF16, "bhalves");
static WARP_SUMS: Kernel = Kernel::new(GROUPS, "warp_sums");
static SORT_AND_SUM: Kernel = Kernel::new(CUB, "sort_and_sum");
static DOUBLED: Kernel = Kernel::new(WITH_HEADER, "doubled").headers(&[(
    "twice.cuh",
    "__device__ inline float twice(float x) { return 2 * x; }",
)]);
static HEAVY_KERNEL: Kernel =
    Kernel::new(HEAVY, "heavy").option_params(&[("maxrreg", OptionRule::MaxRegisters)]);

fn skipped(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
}

/// The first device's stream, or why there is none.
fn stream() -> Result<Arc<CudaStream>, String> {
    // SAFETY: only tries to dlopen the driver's library names; nothing is called.
    if !unsafe { gputune_runtime::cudarc::driver::sys::is_culib_present() } {
        return Err("no CUDA driver".into());
    }
    CudaContext::new(0)
        .map(|c| c.default_stream())
        .map_err(|e| format!("no CUDA device ({e})"))
}

fn one_dim(n: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(128), 1, 1),
        block_dim: (128, 1, 1),
        shared_mem_bytes: 0,
    }
}

#[test]
fn kernels_with_cuda_headers_and_embedded_ones_compute_right() {
    let test = "kernels_with_cuda_headers_and_embedded_ones_compute_right";
    let stream = match stream() {
        Ok(s) => s,
        Err(why) => return skipped(test, &why),
    };
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 64) as f32 / 8.0).collect();
    let d_x = stream.clone_htod(&x).expect("upload");
    for (what, kernel) in [
        ("fp16", &HALVES),
        ("bf16", &BHALVES),
        ("an embedded header", &DOUBLED),
    ] {
        let compiled = kernel
            .fixed(&stream, &[])
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut y = stream.alloc_zeros::<f32>(n).expect("alloc");
        let ni = n as i32;
        let mut launch = stream.launch_builder(compiled.function());
        launch.arg(&d_x).arg(&mut y).arg(&ni);
        // SAFETY: (const float*, float*, int), touching indices below n.
        unsafe { launch.launch(one_dim(n as u32)) }.expect("launch");
        let y = stream.clone_dtoh(&y).expect("download");
        // Eighths below 8 are exact in both 16-bit types, and so are their doubles.
        assert!(
            y.iter().zip(&x).all(|(y, x)| *y == 2.0 * x),
            "{what}: {:?}",
            &y[..8]
        );
        eprintln!("{what}: {} registers", compiled.record().registers);
    }

    let compiled = WARP_SUMS.fixed(&stream, &[]).expect("cooperative groups");
    let mut sums = stream.alloc_zeros::<f32>(n / 32).expect("alloc");
    let mut launch = stream.launch_builder(compiled.function());
    launch.arg(&d_x).arg(&mut sums);
    let warps = (n / 32) as u32;
    // SAFETY: each of the (n / 32) * 32 threads reads x[its index] and lane 0 writes its sum.
    unsafe {
        launch.launch(LaunchConfig {
            grid_dim: (warps, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        })
    }
    .expect("launch");
    let sums = stream.clone_dtoh(&sums).expect("download");
    for (w, s) in sums.iter().enumerate() {
        let want: f32 = x[w * 32..(w + 1) * 32].iter().sum();
        assert_eq!(*s, want, "warp {w}");
    }
}

#[test]
fn cub_block_load_radix_sort_and_reduce_run_through_the_handle() {
    let test = "cub_block_load_radix_sort_and_reduce_run_through_the_handle";
    let stream = match stream() {
        Ok(s) => s,
        Err(why) => return skipped(test, &why),
    };
    // A variant as `#[tune(tpb = …, ipt = …)]` would give it.
    const TUNED: Tuned = Tuned::new(
        "cub_block",
        &[("tpb", "TPB", "128"), ("ipt", "IPT", "4")],
        "128\u{1f}4",
    );
    let keys: Vec<i32> = (0..512).map(|i| (i * 7919) % 1009 - 500).collect();
    let compiled = SORT_AND_SUM.get(TUNED, &stream, &[]).expect("CUB compiles");
    let d_keys = stream.clone_htod(&keys).expect("upload");
    let mut sorted = stream.alloc_zeros::<i32>(512).expect("alloc");
    let mut sum = stream.alloc_zeros::<i32>(1).expect("alloc");
    let mut launch = stream.launch_builder(compiled.function());
    launch.arg(&d_keys).arg(&mut sorted).arg(&mut sum);
    let config = compiled
        .check(LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        })
        .expect("a launch it takes");
    // SAFETY: one block of 128 threads over 512 keys, as the kernel is written for.
    unsafe { launch.launch(config) }.expect("launch");
    let mut want = keys.clone();
    want.sort_unstable();
    assert_eq!(stream.clone_dtoh(&sorted).expect("download"), want);
    assert_eq!(
        stream.clone_dtoh(&sum).expect("download"),
        [keys.iter().sum::<i32>()]
    );
    let record = compiled.record();
    eprintln!(
        "CUB: {} registers, {} B shared, options {:?}",
        record.registers, record.shared_bytes, record.options
    );
    assert!(
        record.shared_bytes > 0,
        "CUB's temp storage is static shared memory"
    );
}

#[test]
fn a_register_limit_as_a_tuning_parameter_changes_the_registers_recorded() {
    let test = "a_register_limit_as_a_tuning_parameter_changes_the_registers_recorded";
    let stream = match stream() {
        Ok(s) => s,
        Err(why) => return skipped(test, &why),
    };
    const FREE: Tuned = Tuned::new("heavy", &[("maxrreg", "MAXRREG", "0")], "0");
    const LIMITED: Tuned = Tuned::new("heavy", &[("maxrreg", "MAXRREG", "0")], "32");
    let free = HEAVY_KERNEL.get(FREE, &stream, &[]).expect("compiles");
    let limited = HEAVY_KERNEL.get(LIMITED, &stream, &[]).expect("compiles");
    let (f, l) = (free.record(), limited.record());
    eprintln!(
        "heavy: {} registers ({} B local) free, {} registers ({} B local) at --maxrregcount=32",
        f.registers, f.local_bytes, l.registers, l.local_bytes
    );
    assert!(l.registers <= 32, "{l:?}");
    assert!(f.registers > l.registers, "{f:?} against {l:?}");
    assert!(
        l.options.contains(&"--maxrregcount=32".to_string()),
        "{l:?}"
    );
    assert!(
        !f.options.iter().any(|o| o.starts_with("--maxrregcount")),
        "{f:?}"
    );
}

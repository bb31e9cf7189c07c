//! On a GPU: the kernel handle finds kernels by their C++ names (NVRTC name expressions),
//! loads the lowered symbol and launches it, with each tuning parameter as a define. Without
//! a driver the test says it was skipped. `bash scripts/gpu/build-gpu.sh names` builds it into
//! `.gpu/cuda-names-test`, which runs on the GPU machine as it is.
#![cfg(feature = "cuda")]

use gputune_runtime::cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::{Kernel, Tuned};

const SOURCE: &str = r#"
__global__ void plain(float* y, unsigned n) {
    unsigned i = blockIdx.x * TPB + threadIdx.x;
    if (i < n) y[i] = 1.0f * TPB + i;
}
namespace ns {
template <typename T> __global__ void scaled(T* y, unsigned n) {
    unsigned i = blockIdx.x * TPB + threadIdx.x;
    if (i < n) y[i] = T(2) * TPB + i;
}
}
extern "C" __global__ void c_linkage(float* y, unsigned n) {
    unsigned i = blockIdx.x * TPB + threadIdx.x;
    if (i < n) y[i] = 3.0f * TPB + i;
}
"#;

static PLAIN: Kernel = Kernel::new(SOURCE, "plain");
static TEMPLATE: Kernel = Kernel::new(SOURCE, "ns::scaled<float>");
static C_LINKAGE: Kernel = Kernel::new(SOURCE, "c_linkage");

/// A variant as `#[tune(tpb = …, base(tpb = 256))]` would give it: tpb 128.
const TUNED: Tuned = Tuned::new("names", &[("tpb", "TPB", "256")], "128");

fn skipped(why: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "skipped: cpp_named_kernels_launch: {why}"
    );
}

#[test]
fn cpp_named_kernels_launch() {
    // SAFETY: only tries to dlopen the driver's library names; nothing is called.
    if !unsafe { gputune_runtime::cudarc::driver::sys::is_culib_present() } {
        return skipped("no CUDA driver");
    }
    let context = match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => return skipped(&format!("no CUDA device ({e})")),
    };
    let stream = context.default_stream();
    let n = 1000u32;
    let kernels = [
        ("plain", &PLAIN, 1.0f32),
        ("ns::scaled<float>", &TEMPLATE, 2.0),
        ("c_linkage", &C_LINKAGE, 3.0),
    ];
    for (name, kernel, factor) in kernels {
        let compiled = match kernel.get(TUNED, &stream, &[]) {
            Ok(k) => k,
            Err(e) if e.to_string().contains("NVRTC") && e.to_string().contains("load") => {
                return skipped(&format!("no NVRTC ({e})"))
            }
            Err(e) => panic!("{name}: {e}"),
        };
        let mut y = stream.alloc_zeros::<f32>(n as usize).expect("alloc");
        let config = compiled
            .check(LaunchConfig {
                grid_dim: (n.div_ceil(128), 1, 1),
                block_dim: (128, 1, 1),
                shared_mem_bytes: 0,
            })
            .expect("128 threads fit");
        let mut launch = stream.launch_builder(compiled.function());
        launch.arg(&mut y).arg(&n);
        // SAFETY: every kernel of SOURCE takes (float*, unsigned) and writes y[i] for i < n.
        unsafe { launch.launch(config) }.expect("launch");
        let host = stream.clone_dtoh(&y).expect("copy back");
        for (i, v) in host.iter().enumerate() {
            assert_eq!(*v, factor * 128.0 + i as f32, "{name} at {i}");
        }
        println!("ok: {name} ran with TPB = 128");
    }
}

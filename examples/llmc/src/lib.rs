//! karpathy/llm.c's `dev/cuda/layernorm_forward.cu` and `dev/cuda/softmax_forward.cu` as llm.c
//! ships them (`src/*.cu` and `src/common.h`, verbatim under a header naming the commit; MIT
//! licence), tuned over kernel version × block size: every version each file's `main`
//! dispatches (layernorm 1–6, softmax 1–8: llm.c times each at every block size, and none is
//! meant for other shapes; softmax's version 7, "for very large C", is for its 50257 columns),
//! each launched as llm.c's launcher of it launches it (`layernorm_forward1` …
//! `softmax_forward_online8`), at llm.c's block sizes 32 … 1024.
//!
//! The files include host headers (`<stdio.h>`, cuBLAS's) and hold host code (`main`, the CPU
//! references), which NVRTC cannot compile, so `build.rs` has nvcc compile each file once, on
//! the nvcc path (docs/build-paths.md), naming no tuned function: both parameters change only
//! the launch, so every variant launches a kernel of that one image (`Kernel::fixed`), and
//! nothing is compiled per variant. Where CUDA has no cuBLAS (PyPI's nvcc), `src/cublas-stub`
//! declares the few cuBLAS names `common.h`'s host code uses; nothing of llm.c is changed.

use gputune_macros::{nvcc_kernel, tune};
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::{kernel::Kernel, BoxError};

/// `layernorm_forward.cu`'s image: all its kernels (the name is one of them).
pub static LAYERNORM: Kernel = nvcc_kernel!("src/layernorm_forward.cu", "mean_kernel");
/// `softmax_forward.cu`'s image: all its kernels.
pub static SOFTMAX: Kernel = nvcc_kernel!("src/softmax_forward.cu", "softmax_forward_kernel1");

/// Launches `$kernel` on `$stream` with `(blocks, threads x, threads y, dynamic shared memory
/// bytes)` and the arguments, once `check` has passed the launch (a launch the kernel cannot
/// take makes the variant `invalid`) and opted in to what it asks for beyond 48 KiB.
macro_rules! launch {
    ($stream:expr, $kernel:expr, $launch:expr; $($arg:expr),*) => {{
        let (kernel, (grid, x, y, smem)) = ($kernel, $launch);
        let (grid_dim, block_dim) = ((u32::try_from(grid)?, 1, 1), (x as u32, y as u32, 1));
        let config = LaunchConfig { grid_dim, block_dim, shared_mem_bytes: u32::try_from(smem)? };
        let mut launch = $stream.launch_builder(kernel.function());
        $(launch.arg($arg);)*
        // SAFETY: every use passes its kernel's parameters in order, over buffers of the lengths
        // llm.c's launcher allocates for it (each tuned function checks them first).
        unsafe { launch.launch(kernel.check(config)?) }.map(drop).map_err(BoxError::from)
    }};
}

/// llm.c's `layernorm_forward(kernel_num, …)`: `out`, `mean` and `rstd` of the layer norm of
/// the `b·t` rows of `c` values of `inp`, scaled by `weight` and shifted by `bias`, enqueued on
/// `stream`. Base is llm.c's training launch (`train_gpt2_fp32.cu`: kernel 3, 512 threads).
///
/// # Errors
///
/// Lengths other than `out`, `inp`: B·T·C, `mean`, `rstd`: B·T, `weight`, `bias`: C, or sizes
/// llm.c's kernels do not take (B·T·C from 2^31 on, C not a multiple of 4, B·T·C not of 256);
/// a launch the device refuses (`invalid`), or the driver's error.
#[tune(version = 1..=6, block_size = pow2(5..=10), base(version = 3, block_size = 512))]
pub fn layernorm_forward(
    stream: &std::sync::Arc<CudaStream>,
    (out, mean, rstd): &mut (CudaSlice<f32>, CudaSlice<f32>, CudaSlice<f32>),
    [inp, weight, bias]: &[CudaSlice<f32>; 3],
    (b, t, c): (usize, usize, usize),
) -> Result<(), BoxError> {
    let (n, bs, warps) = (b * t, BLOCK_SIZE, BLOCK_SIZE / 32);
    let lens = [&*out, inp, &*mean, &*rstd, weight, bias].map(CudaSlice::len);
    // The kernels index with int; version 6 loads four floats at once; version 2 normalizes
    // in whole blocks of 256.
    let ok = lens == [n * c, n * c, n, n, c, c] && n * c < 1 << 31 && c % 4 + n * c % 256 == 0;
    ok.then_some(()).ok_or("layernorm_forward: bad lengths")?;
    let (module, n32, c32) = (LAYERNORM.fixed(stream, &[])?, n as i32, c as i32);
    let launch = match VERSION {
        1 => (n.div_ceil(bs), bs, 1, 0),
        3 | 4 => (n.div_ceil(warps), bs, 1, 0),
        5 => (n, bs, 1, 0),
        6 => (n.div_ceil(warps), 32, warps, (2 + warps) * c * 4),
        _ => {
            let (rows, b32, t32, bs32) = ((n, bs, 1, bs * 4), b as i32, t as i32, bs as i32);
            let [k1, k2, k3] = ["mean_kernel", "rstd_kernel", "normalization_kernel"];
            launch!(stream, module.kernel(k1)?, rows; &mut *mean, inp, &n32, &c32, &bs32)?;
            launch!(stream, module.kernel(k2)?, rows; &mut *rstd, inp, &*mean, &n32, &c32, &bs32)?;
            return launch!(stream, module.kernel(k3)?, (n * c / 256, 256, 1, 0);
                out, inp, mean, rstd, weight, bias, &b32, &t32, &c32);
        }
    };
    let kernel = module.kernel(&format!("layernorm_forward_kernel{VERSION}"))?;
    launch!(stream, kernel, launch; out, mean, rstd, inp, weight, bias, &n32, &c32)
}

/// llm.c's `softmax_forward(kernel_num, …)`: the softmax of each of the `n` rows of `c` values
/// of `inp` into `out`, enqueued on `stream`. llm.c's launcher of version 3 sets 32 threads
/// whatever it is asked, so version 3 is one point, not six. Base: version 4 (the file's
/// "hopefully the most efficient version") at 512 threads.
///
/// # Errors
///
/// `out` or `inp` not of `n·c` values, `n·c` from 2^31 on (the kernels index with `int`), a
/// launch the device refuses (`invalid`), or the driver's error.
#[tune(version = 1..=8, block_size = pow2(5..=10), base(version = 4, block_size = 512),
       require(version != 3 || block_size == 32))]
pub fn softmax_forward(
    stream: &std::sync::Arc<CudaStream>,
    out: &mut CudaSlice<f32>,
    inp: &CudaSlice<f32>,
    (n, c): (usize, usize),
) -> Result<(), BoxError> {
    let ok = [out.len(), inp.len()] == [n * c; 2] && n * c < 1 << 31;
    ok.then_some(()).ok_or("softmax_forward: bad lengths")?;
    let (bs, w) = (BLOCK_SIZE, BLOCK_SIZE / 32);
    let (name, grid, smem) = match VERSION {
        1 => ("softmax_forward_kernel1", n.div_ceil(bs), 0),
        2 => ("softmax_forward_kernel2", n, bs * 4),
        3 => ("softmax_forward_kernel3", n, 32 * 4),
        4 => ("softmax_forward_kernel4", n, w * 4),
        5 => ("softmax_forward_online_kernel1", n.div_ceil(bs), 0),
        6 => ("softmax_forward_online_kernel2", n.div_ceil(w), 0),
        7 => ("softmax_forward_kernel7", n, 2 * w * 4),
        _ => ("softmax_forward_online_kernel8", n.div_ceil(w), 0),
    };
    let (module, n32, c32) = (SOFTMAX.fixed(stream, &[])?, n as i32, c as i32);
    launch!(stream, module.kernel(name)?, (grid, bs, 1, smem); out, inp, &n32, &c32)
}

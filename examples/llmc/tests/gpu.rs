//! On a GPU (each test says it was skipped without one): base of both tuned functions, the
//! reference every variant is verified against, checked against llm.c's own CPU references
//! (`layernorm_forward_cpu` and `softmax_forward_cpu`, ported below line for line) with llm.c's
//! inputs; and every kernel the wrappers launch found in its image, with version 6's largest
//! launch (1024 threads, 102 KiB of dynamic shared memory) accepted by `check`.

use std::sync::Arc;

use gputune_example_llmc::{layernorm_forward, softmax_forward, LAYERNORM, SOFTMAX};
use gputune_runtime::cudarc::driver::{sys, CudaContext, CudaStream, LaunchConfig};
use gputune_runtime::generate::host;
use gputune_runtime::skipped;

/// The first device's stream, or why there is none.
fn stream() -> Result<Arc<CudaStream>, String> {
    // SAFETY: only tries to dlopen the driver library; nothing is called.
    if !unsafe { sys::is_culib_present() } {
        return Err("needs a CUDA driver, which is not installed".into());
    }
    match CudaContext::new(0) {
        Ok(context) => Ok(context.default_stream()),
        Err(e) => Err(format!("no usable device: {e}")),
    }
}

/// `len` seeded values uniform in [-1, 1), as the bench makes them on the device.
fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut x = vec![0.0f32; len];
    host::uniform(&mut x, -1.0, 1.0, seed).expect("uniform");
    x
}

/// llm.c's `layernorm_forward_cpu` (dev/cuda/layernorm_forward.cu).
#[allow(clippy::too_many_arguments)]
fn layernorm_forward_cpu(
    out: &mut [f32],
    mean: &mut [f32],
    rstd: &mut [f32],
    inp: &[f32],
    weight: &[f32],
    bias: &[f32],
    (b, t, c): (usize, usize, usize),
) {
    let eps = 1e-5f32;
    for row in 0..b * t {
        let x = &inp[row * c..(row + 1) * c];
        let m = x.iter().fold(0.0f32, |m, &xi| m + xi) / c as f32;
        let v = x.iter().fold(0.0f32, |v, &xi| v + (xi - m) * (xi - m)) / c as f32;
        let s = 1.0 / (v + eps).sqrt();
        for i in 0..c {
            out[row * c + i] = s * (x[i] - m) * weight[i] + bias[i];
        }
        mean[row] = m;
        rstd[row] = s;
    }
}

/// llm.c's `softmax_forward_cpu` (dev/cuda/softmax_forward.cu): the sum in double.
fn softmax_forward_cpu(out: &mut [f32], inp: &[f32], n: usize, c: usize) {
    for row in 0..n {
        let x = &inp[row * c..(row + 1) * c];
        let y = &mut out[row * c..(row + 1) * c];
        let max = x.iter().fold(f32::NEG_INFINITY, |m, &xi| m.max(xi));
        let mut sum = 0.0f64;
        for j in 0..c {
            y[j] = (x[j] - max).exp();
            sum += f64::from(y[j]);
        }
        let norm = 1.0 / sum as f32;
        y.iter_mut().for_each(|yj| *yj *= norm);
    }
}

/// llm.c's check (`validate_result`): `|gpu − cpu| ≤ tolerance + |cpu|·FLT_EPSILON`.
fn validate(name: &str, gpu: &[f32], cpu: &[f32], tolerance: f32) {
    assert_eq!(gpu.len(), cpu.len(), "{name}");
    for (i, (&g, &r)) in gpu.iter().zip(cpu).enumerate() {
        let limit = tolerance + r.abs() * f32::EPSILON;
        assert!((g - r).abs() <= limit, "{name}[{i}]: GPU {g}, CPU {r}");
    }
}

#[test]
fn base_layernorm_matches_llm_c_s_cpu_reference() {
    let stream = match stream() {
        Ok(stream) => stream,
        Err(why) => return skipped(&why),
    };
    let (b, t, c) = (8, 1024, 768);
    let n = b * t;
    let (inp, weight, bias) = (random(n * c, 1), random(c, 2), random(c, 3));
    let ins = [&inp, &weight, &bias].map(|x| stream.clone_htod(x).expect("to the device"));
    let zeros = |len| stream.alloc_zeros::<f32>(len).expect("alloc");
    let mut outs = (zeros(n * c), zeros(n), zeros(n));
    layernorm_forward(&stream, &mut outs, &ins, (b, t, c)).expect("base launches");
    let (mut out, mut mean, mut rstd) = (vec![0.0; n * c], vec![0.0; n], vec![0.0; n]);
    let (o, m, r) = (&mut out, &mut mean, &mut rstd);
    layernorm_forward_cpu(o, m, r, &inp, &weight, &bias, (b, t, c));
    // llm.c's own tolerance for all three (its main checks every kernel with it).
    validate("out", &stream.clone_dtoh(&outs.0).expect("out"), &out, 1e-5);
    validate(
        "mean",
        &stream.clone_dtoh(&outs.1).expect("mean"),
        &mean,
        1e-5,
    );
    validate(
        "rstd",
        &stream.clone_dtoh(&outs.2).expect("rstd"),
        &rstd,
        1e-5,
    );
    let short = &mut (zeros(n * c), zeros(n), zeros(n - 1));
    assert!(layernorm_forward(&stream, short, &ins, (b, t, c)).is_err());
}

#[test]
fn base_softmax_matches_llm_c_s_cpu_reference_relative_to_each_probability() {
    let stream = match stream() {
        Ok(stream) => stream,
        Err(why) => return skipped(&why),
    };
    // 256 of llm.c's 8192 rows, with its outliers: three values of each row times 20.
    let (n, v) = (256, 50257);
    let mut inp = random(n * v, 4);
    let mut picks = vec![0u32; n * 3];
    host::uniform(&mut picks, 0, v as u32 - 1, 5).expect("picks");
    (0..n * 3).for_each(|i| inp[i / 3 * v + picks[i] as usize] *= 20.0);
    let x = stream.clone_htod(&inp).expect("to the device");
    let mut y = stream.alloc_zeros::<f32>(n * v).expect("alloc");
    softmax_forward(&stream, &mut y, &x, (n, v)).expect("base launches");
    let gpu = stream.clone_dtoh(&y).expect("back");
    let mut cpu = vec![0.0; n * v];
    softmax_forward_cpu(&mut cpu, &inp, n, v);
    assert!(
        cpu.iter().any(|&p| p > 0.5),
        "outliers make some probabilities large"
    );
    assert!(cpu.iter().any(|&p| p < 1e-9), "and most of them small");
    // The bench's tolerance: 1e-4 of each probability's own value.
    for (i, (&g, &r)) in gpu.iter().zip(&cpu).enumerate() {
        assert!((g - r).abs() <= 1e-4 * r, "p[{i}]: GPU {g}, CPU {r}");
    }
}

#[test]
fn every_kernel_is_found_and_version_6_opts_in_to_102_kib() {
    let stream = match stream() {
        Ok(stream) => stream,
        Err(why) => return skipped(&why),
    };
    let layernorm = LAYERNORM
        .fixed(&stream, &[])
        .expect("the layernorm image loads");
    for name in ["mean_kernel", "rstd_kernel", "normalization_kernel"]
        .into_iter()
        .map(String::from)
        .chain([1, 3, 4, 5, 6].map(|v| format!("layernorm_forward_kernel{v}")))
    {
        layernorm
            .kernel(&name)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let six = layernorm
        .kernel("layernorm_forward_kernel6")
        .expect("kernel 6");
    let config = LaunchConfig {
        grid_dim: (8192 / 32, 1, 1),
        block_dim: (32, 32, 1),
        shared_mem_bytes: (2 + 32) * 768 * 4,
    };
    six.check(config)
        .expect("1024 threads with 102 KiB of dynamic shared memory");
    let softmax = SOFTMAX
        .fixed(&stream, &[])
        .expect("the softmax image loads");
    for name in [1, 2, 3, 4, 7]
        .map(|v| format!("softmax_forward_kernel{v}"))
        .into_iter()
        .chain([1, 2, 8].map(|v| format!("softmax_forward_online_kernel{v}")))
    {
        softmax
            .kernel(&name)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

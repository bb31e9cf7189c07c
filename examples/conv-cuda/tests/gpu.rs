//! The space compiles (NVRTC, no GPU needed), and the kernel on a GPU, where there is one:
//! every point of the space on shapes that no tile divides (partial tiles at the right and
//! bottom edges, single rows and columns), every output checked on the host, with a guard after
//! the output that no variant may write; and the device's input maker against the host's data.
//! Where there is no NVIDIA driver, GPU or NVRTC (CI) a
//! test passes and says `skipped: …` on stderr.

use gputune_example_conv_cuda::{
    conv, eighths, fill_eighths, output_at, CONV, CONV_PARAMS, FILTER, SOURCE,
};
use gputune_runtime::backend::cuda::{compiles_for, CudaBackend, CudaHandles, LaunchLimits};
use gputune_runtime::backend::Backend;
use gputune_runtime::cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use gputune_runtime::tuned::Variant;
use gputune_runtime::BoxError;

/// `(w, h)` of the outputs each point computes.
const SHAPES: [(usize, usize); 5] = [(1, 1), (1, 70), (70, 1), (257, 129), (1000, 77)];

/// Elements after the output that no variant may touch.
const GUARD: usize = 4096;

/// Every label of the space, from the build script's manifest.
fn space() -> Vec<String> {
    // Built in, so that the test binary runs where the build directory is not (a GPU host).
    let text = include_str!(concat!(env!("OUT_DIR"), "/gputune/manifest.json"));
    let m: serde_json::Value = serde_json::from_str(text).expect("JSON");
    m["functions"][0]["labels"]
        .as_array()
        .expect("labels")
        .iter()
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect()
}

use gputune_runtime::skipped;

/// A point's compiled kernel, its block `(x, y)` and its outputs per thread `(x, y)`.
type Point = (CudaFunction, (u32, u32), (u32, u32));

/// Whether point `label` compiles under NVRTC for sm_90 (`Ok(false)`: no NVRTC here).
fn compiles(label: &str) -> gputune_runtime::Result<bool> {
    let defines = CONV.label_defines(CONV_PARAMS, label, &[])?;
    let defines: Vec<(&str, String)> = defines
        .iter()
        .map(|(n, v)| (n.as_str(), v.clone()))
        .collect();
    compiles_for(SOURCE, &defines, 90)
}

/// The kernel of point `label`, compiled as `conv` compiles it (a test build holds only base's
/// arm of `conv`, so it cannot run the other points itself), and its block and tile.
fn compile_point(cuda: &CudaHandles, label: &str) -> Result<Point, BoxError> {
    let defines = CONV.label_defines(CONV_PARAMS, label, &[])?;
    let defines: Vec<(&str, String)> = defines
        .iter()
        .map(|(n, v)| (n.as_str(), v.clone()))
        .collect();
    let function = cuda.compile(SOURCE, &defines)?.load_function("conv")?;
    let p = Variant::parse(label, CONV_PARAMS)?;
    let block = (p.get("block_x")?, p.get("block_y")?);
    let tile = (p.get("tile_x")?, p.get("tile_y")?);
    Ok((function, block, tile))
}

/// Launches a compiled point over a `w`×`h` output, as `conv` launches it.
fn launch_point(
    cuda: &CudaHandles,
    (function, (bx, by), (tx, ty)): &Point,
    (input, filter, out): (&CudaSlice<f32>, &CudaSlice<f32>, &mut CudaSlice<f32>),
    (w, h): (usize, usize),
) -> Result<(), BoxError> {
    let config = LaunchConfig {
        grid_dim: (
            (w as u32).div_ceil(bx * tx),
            (h as u32).div_ceil(by * ty),
            1,
        ),
        block_dim: (*bx, *by, 1),
        shared_mem_bytes: 0,
    };
    LaunchLimits::of(function)?.check(&config)?;
    let (w, h) = (w as i32, h as i32);
    let mut launch = cuda.stream.launch_builder(function);
    launch.arg(out).arg(input).arg(filter).arg(&w).arg(&h);
    // SAFETY: the arguments match conv(float*, const float*, const float*, int, int); the
    // callers allocate (w + 16)·(h + 16) inputs, 17·17 filter taps and w·h outputs.
    unsafe { launch.launch(config) }?;
    Ok(())
}

#[test]
fn the_space_has_268_points_and_each_compiles() {
    let labels = space();
    assert_eq!(labels.len(), 268);
    assert!(labels.contains(&"block_x_32.block_y_8.tile_x_1.tile_y_1.pad_0".to_string()));
    // Every 7th point keeps the test short where there is no GPU; the GPU test below and the
    // search compile all of them.
    for label in labels.iter().step_by(7) {
        match compiles(label) {
            Ok(true) => {}
            Ok(false) => return skipped("needs NVRTC (the CUDA toolkit), which is not installed"),
            Err(e) => panic!("{label} does not compile: {e}"),
        }
    }
}

#[test]
fn every_variant_convolves_every_shape() {
    match compiles("base") {
        Ok(true) => {}
        Ok(false) => return skipped("NVRTC is not installed"),
        Err(e) => panic!("the base kernel does not compile: {e}"),
    }
    let backend = match CudaBackend::open(0) {
        Ok(b) => b,
        Err(e) => return skipped(&format!("no CUDA driver or GPU ({e})")),
    };
    let cuda = backend
        .cuda()
        .expect("the CUDA backend has handles")
        .clone();
    let stream = &cuda.stream;
    let filter_host = eighths(FILTER * FILTER, 2);
    let filter = stream.clone_htod(&filter_host).expect("filter");
    let poison = -1.5f32;
    let shapes: Vec<_> = SHAPES
        .iter()
        .map(|&(w, h)| {
            let input_host = eighths((w + FILTER - 1) * (h + FILTER - 1), 1);
            let input = stream.clone_htod(&input_host).expect("input");
            let want: Vec<f32> = (0..w * h)
                .map(|i| output_at(&input_host, &filter_host, w, (i % w, i / w)))
                .collect();
            ((w, h), input, want)
        })
        .collect();
    for point in space() {
        let compiled = compile_point(&cuda, &point).unwrap_or_else(|e| panic!("{point}: {e}"));
        for ((w, h), input, want) in &shapes {
            let (w, h) = (*w, *h);
            let label = format!("{point} {w}×{h}");
            let mut out = stream
                .clone_htod(&vec![poison; w * h + GUARD])
                .expect("output");
            launch_point(&cuda, &compiled, (input, &filter, &mut out), (w, h))
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            let host = stream.clone_dtoh(&out).expect("copy back");
            if let Some(i) = (0..w * h).find(|&i| host[i] != want[i]) {
                panic!(
                    "{label}: out[{}][{}] = {}, not {}",
                    i / w,
                    i % w,
                    host[i],
                    want[i]
                );
            }
            assert!(
                host[w * h..].iter().all(|&x| x == poison),
                "{label}: wrote past the output"
            );
        }
    }
    // The tuned function itself (base in a test build), and its refusals.
    let (w, h) = (300, 200);
    let input_host = eighths((w + FILTER - 1) * (h + FILTER - 1), 1);
    let input = stream.clone_htod(&input_host).expect("input");
    let mut out = stream.alloc_zeros::<f32>(w * h).expect("output");
    conv(stream, &input, &filter, &mut out, (w, h)).expect("base launches");
    let host = stream.clone_dtoh(&out).expect("copy back");
    for i in (0..w * h).step_by(97) {
        assert_eq!(
            host[i],
            output_at(&input_host, &filter_host, w, (i % w, i / w)),
            "out[{i}]"
        );
    }
    let e = conv(stream, &input, &filter, &mut out, (w + 1, h)).expect_err("too small");
    assert!(e.to_string().contains("needs"), "{e}");
    conv(stream, &input, &filter, &mut out, (0, h)).expect("nothing to compute");
    stream.synchronize().expect("no error on the stream");
}

#[test]
fn the_device_makes_the_host_s_eighths() {
    match compiles("base") {
        Ok(true) => {}
        Ok(false) => return skipped("NVRTC is not installed"),
        Err(e) => panic!("the base kernel does not compile: {e}"),
    }
    let backend = match CudaBackend::open(0) {
        Ok(b) => b,
        Err(e) => return skipped(&format!("no CUDA driver or GPU ({e})")),
    };
    let stream = &backend.cuda().expect("the CUDA backend has handles").stream;
    // Lengths that no block divides, the bench's filter and its input.
    for (n, seed) in [(1, 1), (FILTER * FILTER, 2), (100_003, 1), (4112 * 4112, 1)] {
        let mut x = stream.clone_htod(&vec![-1.5f32; n]).expect("x");
        fill_eighths(stream, &mut x, seed).expect("fill_eighths");
        let host = stream.clone_dtoh(&x).expect("copy back");
        let want = eighths(n, seed);
        if let Some(i) = (0..n).find(|&i| host[i] != want[i]) {
            panic!(
                "n = {n}, seed {seed}: x[{i}] = {}, not {}",
                host[i], want[i]
            );
        }
    }
    stream.synchronize().expect("no error on the stream");
}

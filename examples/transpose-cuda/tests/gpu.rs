//! The kernel on a GPU, where there is one: every point of the space, for `f32` and `f64`,
//! on shapes whose sides are not multiples of the tiles (partial tiles at both far edges,
//! single rows and columns), checked on the host, with a guard after the output that no
//! variant may write; and the device's input maker against the host's input, element for
//! element. Where there is no NVIDIA driver, GPU or NVRTC (CI) it passes and says
//! `skipped: …` on stderr.

use gputune_example_transpose_cuda::{
    check_transposed, fill_input, input, launch_config, transpose, Element, SOURCE, TRANSPOSE,
    TRANSPOSE_PARAMS,
};
use gputune_runtime::backend::cuda::{compiles_for, CudaBackend, CudaHandles, LaunchLimits};
use gputune_runtime::backend::Backend;
use gputune_runtime::cudarc::driver::{CudaSlice, PushKernelArg};
use gputune_runtime::tuned::Variant;
use gputune_runtime::{BoxError, Error};

/// `(rows, cols)` of the matrices each point transposes.
const SHAPES: [(usize, usize); 8] = [
    (1, 1),
    (1, 100),
    (100, 1),
    (33, 47),
    (257, 129),
    (1000, 777),
    (64, 4096),
    (4096, 64),
];

/// Elements after the output that no variant may touch.
const GUARD: usize = 4096;

/// Every label of the space, as the build script enumerated it.
fn space() -> Vec<String> {
    let manifest: serde_json::Value = serde_json::from_str(include_str!(concat!(
        env!("OUT_DIR"),
        "/gputune/manifest.json"
    )))
    .expect("the build script's manifest is JSON");
    let function = manifest["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .find(|f| f["name"] == "transpose")
        .expect("transpose is a tuned function");
    function["labels"]
        .as_array()
        .expect("labels")
        .iter()
        .map(|l| l.as_str().expect("a label").to_string())
        .collect()
}

/// The defines of `label` for `T`, as the kernel handle passes them.
fn defines<T: Element>(label: &str) -> Result<Vec<(String, String)>, Error> {
    TRANSPOSE.label_defines(TRANSPOSE_PARAMS, label, &[("VALUE_T", T::CUDA_NAME)])
}

/// Enqueues the transpose of `input` (`rows × cols`) into `output` with the kernel of point
/// `label`, compiled and launched as `transpose` does (a test build holds only base's arm of
/// `transpose`, so it cannot run the other points itself).
fn transpose_at<T: Element>(
    cuda: &CudaHandles,
    label: &str,
    (input, output): (&CudaSlice<T>, &mut CudaSlice<T>),
    rows: usize,
    cols: usize,
) -> Result<(), BoxError> {
    let defines = defines::<T>(label)?;
    let defines: Vec<(&str, String)> = defines
        .iter()
        .map(|(n, v)| (n.as_str(), v.clone()))
        .collect();
    let function = cuda.compile(SOURCE, &defines)?.load_function("transpose")?;
    let point = Variant::parse(label, TRANSPOSE_PARAMS)?;
    let config = launch_config(rows, cols, point.get("tile")?, point.get("rows")?)?;
    LaunchLimits::of(&function)?.check(&config)?;
    let (rows, cols) = (rows as u32, cols as u32);
    let mut launch = cuda.stream.launch_builder(&function);
    launch.arg(input).arg(output).arg(&rows).arg(&cols);
    // SAFETY: the arguments match `transpose(const T*, T*, unsigned, unsigned)`, and both
    // slices hold rows × cols elements (the callers allocate them so).
    unsafe { launch.launch(config) }?;
    Ok(())
}

use gputune_runtime::skipped;

/// The device and NVRTC, or why the test cannot run here.
fn device() -> Result<CudaBackend, String> {
    let base = defines::<f32>("base").expect("base's defines");
    let base: Vec<(&str, String)> = base.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
    match compiles_for(SOURCE, &base, 90) {
        Ok(true) => {}
        Ok(false) => return Err("NVRTC is not installed".into()),
        Err(e) => panic!("the base kernel does not compile: {e}"),
    }
    CudaBackend::open(0).map_err(|e| e.to_string())
}

/// Transposes every shape with every point for `T` and checks the answers.
fn every_point_on_every_shape<T: Element>(cuda: &CudaHandles, space: &[String]) {
    let stream = &cuda.stream;
    for (rows, cols) in SHAPES {
        let n = rows * cols;
        let input = stream.clone_htod(&input::<T>(rows, cols)).expect("input");
        let poison = T::from(-1.5);
        for point in space {
            let label = format!("{point} {rows}×{cols}");
            let mut output = stream.clone_htod(&vec![poison; n + GUARD]).expect("output");
            transpose_at(cuda, point, (&input, &mut output), rows, cols)
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            let host = stream.clone_dtoh(&output).expect("copy back");
            check_transposed(&host[..n], rows, cols).unwrap_or_else(|e| panic!("{label}: {e}"));
            assert!(
                host[n..].iter().all(|&x| x == poison),
                "{label}: wrote past the output"
            );
        }
    }
}

#[test]
fn every_variant_transposes_every_shape() {
    let backend = match device() {
        Ok(b) => b,
        Err(why) => return skipped(&format!("no CUDA driver, GPU or NVRTC ({why})")),
    };
    let cuda = backend
        .cuda()
        .expect("the CUDA backend has handles")
        .clone();
    let space = space();
    every_point_on_every_shape::<f32>(&cuda, &space);
    every_point_on_every_shape::<f64>(&cuda, &space);

    // The tuned function itself (base here: no variant is selected in a test build).
    let (rows, cols) = (300, 200);
    let input = cuda
        .stream
        .clone_htod(&input::<f32>(rows, cols))
        .expect("input");
    let mut output = cuda.stream.alloc_zeros::<f32>(rows * cols).expect("output");
    transpose(&cuda.stream, &input, &mut output, rows, cols).expect("base launches");
    let host = cuda.stream.clone_dtoh(&output).expect("copy back");
    check_transposed(&host, rows, cols).expect("base transposes");

    // Too small a buffer is refused before launching.
    let e = transpose(&cuda.stream, &input, &mut output, rows + 1, cols).expect_err("too small");
    assert!(e.to_string().contains("needs"), "{e}");

    // A grid over the device's limit (65535 row tiles of base's 32) is an invalid launch,
    // which a search records as `invalid`, not a failed launch.
    let rows = 32 * 65535 + 1;
    let input = cuda.stream.alloc_zeros::<f32>(rows).expect("input");
    let mut output = cuda.stream.alloc_zeros::<f32>(rows).expect("output");
    let e = transpose(&cuda.stream, &input, &mut output, rows, 1).expect_err("65536 row tiles");
    match e.downcast_ref::<Error>() {
        Some(Error::InvalidLaunch(why)) => assert!(why.contains("grid"), "{why}"),
        _ => panic!("not an invalid launch: {e}"),
    }
    cuda.stream.synchronize().expect("no error on the stream");
}

/// `fill_input` makes on the device what `input` makes on the host, for `T`, on every shape
/// (and leaves the elements after the matrix alone).
fn the_device_input_on_every_shape<T: Element>(cuda: &CudaHandles) {
    let stream = &cuda.stream;
    let poison = T::from(-1.5);
    for (rows, cols) in SHAPES.into_iter().chain([(3000, 5), (1, 70_000)]) {
        let n = rows * cols;
        let mut x = stream.clone_htod(&vec![poison; n + GUARD]).expect("x");
        fill_input(stream, &mut x, rows, cols).expect("fill_input");
        let host = stream.clone_dtoh(&x).expect("copy back");
        let want = input::<T>(rows, cols);
        if let Some(i) = (0..n).find(|&i| host[i] != want[i]) {
            panic!(
                "{rows}×{cols}: x[{}][{}] = {:?}, not {:?}",
                i / cols,
                i % cols,
                host[i],
                want[i]
            );
        }
        assert!(
            host[n..].iter().all(|&v| v == poison),
            "{rows}×{cols}: wrote past the matrix"
        );
    }
    // Too small a buffer is refused before launching.
    let mut x = stream.alloc_zeros::<T>(10).expect("x");
    assert!(fill_input(stream, &mut x, 3, 4).is_err());
}

#[test]
fn the_device_makes_the_host_s_input() {
    let backend = match device() {
        Ok(b) => b,
        Err(why) => return skipped(&format!("no CUDA driver, GPU or NVRTC ({why})")),
    };
    let cuda = backend
        .cuda()
        .expect("the CUDA backend has handles")
        .clone();
    the_device_input_on_every_shape::<f32>(&cuda);
    the_device_input_on_every_shape::<f64>(&cuda);
    cuda.stream.synchronize().expect("no error on the stream");
}

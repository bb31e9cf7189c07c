//! What an application's launches record with `GPUTUNE_CAPTURE` set, without a GPU: the tuned
//! functions are lookups of the launch, so calling them is what candle's launch code does, and
//! each records its workload (type and shape) once, with a count. Its own test binary: the
//! capture folder is read from the environment once per process.

use gputune_example_candle_ops::mmvq::{mmvq, Matvec, Q4K};
use gputune_example_candle_ops::{rmsnorm, softmax, Shape, BF16};
use gputune_protocol::capture::CaptureFile;

#[test]
fn each_lookup_records_its_shape_and_how_often_it_was_asked() {
    let dir = std::env::temp_dir().join(format!("candle-ops-capture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var("GPUTUNE_CAPTURE", &dir);
    // A decode step's norms (one token) three times, a prompt's once; 4096 × 1 and 1 × 4096
    // are different shapes.
    for _ in 0..3 {
        assert_eq!(
            rmsnorm::<BF16>((1, 4096)),
            Shape::CANDLE_NORM,
            "base, as built"
        );
    }
    rmsnorm::<BF16>((512, 4096));
    rmsnorm::<BF16>((4096, 1));
    assert_eq!(softmax::<BF16>((32, 513)), Shape::CANDLE_SOFTMAX);
    // The matrix-vector lookup answers with a launcher even with no GPU: it only links.
    let shape = Matvec {
        rows: 14336,
        cols: 4096,
        batch: 1,
    };
    match mmvq::<Q4K>(shape) {
        Ok(_) => {}
        Err(e) if e.to_string().contains("nvcc was not found") => {}
        Err(e) => panic!("{e}"),
    }
    gputune_runtime::capture::flush().expect("written");

    let read = |function: &str| -> CaptureFile {
        let file = std::fs::read_dir(&dir)
            .expect("the folder")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.contains(&format!(".{function}.")) && !n.starts_with('.'))
            })
            .unwrap_or_else(|| panic!("a capture of {function}"));
        serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("JSON")
    };
    let shapes = |file: &CaptureFile| -> Vec<(Vec<u64>, u64)> {
        file.workloads
            .iter()
            .map(|w| (w.sizes.iter().map(|(_, v)| *v).collect(), w.count))
            .collect()
    };
    let norms = read("rmsnorm");
    assert_eq!(
        norms.workloads[0].types[0].1,
        "gputune_example_candle_ops::BF16"
    );
    assert_eq!(norms.workloads[0].sizes[0].0, "Rows");
    assert_eq!(
        shapes(&norms),
        [(vec![1, 4096], 3), (vec![512, 4096], 1), (vec![4096, 1], 1)]
    );
    assert_eq!(shapes(&read("softmax")), [(vec![32, 513], 1)]);
    assert_eq!(shapes(&read("mmvq")), [(vec![14336, 4096, 1], 1)]);
    let _ = std::fs::remove_dir_all(&dir);
}

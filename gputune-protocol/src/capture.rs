//! What `GPUTUNE_CAPTURE=DIR` records of a running application: per tuned function, each
//! distinct workload it was called with (the types of its generic parameters and the values
//! of its `size(…)` axes) and how many calls had it. The runtime writes one file per process
//! and function ([`file_name`]); `cargo gputune search --captured DIR` reads them all
//! ([`read_dir`]) and searches each function on exactly those workloads.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The version of the capture files; a reader refuses another.
pub const CAPTURE_VERSION: u32 = 1;

/// The environment variable that turns capture on: the directory to write to.
pub const CAPTURE_ENV: &str = "GPUTUNE_CAPTURE";

/// One process's record of one tuned function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureFile {
    /// [`CAPTURE_VERSION`].
    pub version: u32,
    /// The package the function is in (`CARGO_PKG_NAME`).
    pub package: String,
    /// The tuned function.
    pub function: String,
    /// Each distinct workload, in the order first seen.
    pub workloads: Vec<Captured>,
}

/// One distinct workload of a tuned function and its calls.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Captured {
    /// Each generic type parameter and the type it was (`("T", "f32")`), as
    /// `std::any::type_name` writes it.
    pub types: Vec<(String, String)>,
    /// Each `size(…)` axis and its value in the call (`("Elements", 1048576)`).
    pub sizes: Vec<(String, u64)>,
    /// How many calls had this workload.
    pub count: u64,
}

/// The file a process `pid` writes for `function` of `package`: one per process, so that
/// processes never write the same file.
pub fn file_name(package: &str, function: &str, pid: u32) -> String {
    format!("{package}.{function}.{pid}.capture.json")
}

/// Why captured workloads cannot be read.
#[derive(Debug)]
pub struct CaptureError(pub String);

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CaptureError {}

/// Every capture file in `dir`, merged per package and function: the same workload seen by
/// several processes is one, with their counts added. Sorted by package and function, each
/// function's workloads by their key.
pub fn read_dir(dir: &Path) -> Result<Vec<CaptureFile>, CaptureError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| CaptureError(format!("cannot read captures in {}: {e}", dir.display())))?;
    let mut merged: BTreeMap<(String, String), BTreeMap<Captured, u64>> = BTreeMap::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if !path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with(".capture.json"))
        {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| CaptureError(format!("{}: {e}", path.display())))?;
        let file: CaptureFile = serde_json::from_str(&text)
            .map_err(|e| CaptureError(format!("{}: not a capture file: {e}", path.display())))?;
        if file.version != CAPTURE_VERSION {
            return Err(CaptureError(format!(
                "{}: capture version {}, this cargo-gputune reads {CAPTURE_VERSION}",
                path.display(),
                file.version
            )));
        }
        let function = merged.entry((file.package, file.function)).or_default();
        for w in file.workloads {
            let count = w.count;
            let key = Captured { count: 0, ..w };
            *function.entry(key).or_default() += count;
        }
    }
    Ok(merged
        .into_iter()
        .map(|((package, function), workloads)| CaptureFile {
            version: CAPTURE_VERSION,
            package,
            function,
            workloads: workloads
                .into_iter()
                .map(|(w, count)| Captured { count, ..w })
                .collect(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(t: &str, n: u64, count: u64) -> Captured {
        Captured {
            types: vec![("T".into(), t.into())],
            sizes: vec![("Elements".into(), n)],
            count,
        }
    }

    #[test]
    fn processes_files_merge_per_function_adding_counts() {
        let dir = std::env::temp_dir().join(format!("gputune-capture-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let write = |pid: u32, function: &str, workloads: Vec<Captured>| {
            let file = CaptureFile {
                version: CAPTURE_VERSION,
                package: "app".into(),
                function: function.into(),
                workloads,
            };
            let path = dir.join(file_name("app", function, pid));
            std::fs::write(path, serde_json::to_string(&file).expect("json")).expect("write");
        };
        write(
            1,
            "scale",
            vec![workload("f32", 4096, 3), workload("f32", 64, 1)],
        );
        write(2, "scale", vec![workload("f32", 4096, 2)]);
        write(2, "norm", vec![workload("f64", 8, 7)]);
        std::fs::write(dir.join("notes.txt"), "not a capture").expect("write");
        let read = read_dir(&dir).expect("readable");
        assert_eq!(read.len(), 2);
        assert_eq!(
            (read[0].function.as_str(), read[1].function.as_str()),
            ("norm", "scale")
        );
        assert_eq!(
            read[1].workloads,
            [workload("f32", 64, 1), workload("f32", 4096, 5)]
        );
        std::fs::write(dir.join(file_name("app", "bad", 3)), "{").expect("write");
        let e = read_dir(&dir).expect_err("a damaged file");
        assert!(e.to_string().contains("not a capture file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(read_dir(&dir).is_err(), "a missing directory is an error");
    }
}

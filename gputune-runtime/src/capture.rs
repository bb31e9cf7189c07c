//! Capturing what an application launches: with `GPUTUNE_CAPTURE=DIR` set, every call of a
//! `#[tune]` function (in any build, production included) notes its workload: the types of
//! its generic parameters and the values of its `size(…)` axes. Each distinct workload is
//! written once, with a count, to `DIR/PACKAGE.FUNCTION.PID.capture.json`
//! ([`gputune_protocol::capture`]); `cargo gputune search --captured DIR` then searches each
//! function on exactly those workloads, as Kernel Launcher tunes the launches it captured.
//!
//! Unset, a call costs one relaxed load of a flag. Set, a call takes a lock and looks its
//! workload up; a new workload, and a count reaching a power of two, rewrite the function's
//! file at once (a crash loses nothing new), and a background thread writes the latest
//! counts every second. [`flush`] writes them now: call it before the program exits for
//! exact counts.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

use gputune_protocol::capture::{file_name, CaptureFile, Captured, CAPTURE_ENV, CAPTURE_VERSION};

/// 0: not read yet, 1: off, 2: on.
static STATE: AtomicU8 = AtomicU8::new(0);

fn dir() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        std::env::var_os(CAPTURE_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
    })
    .as_ref()
}

/// Whether `GPUTUNE_CAPTURE` is set: the generated code asks before noting a call.
#[inline]
pub fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let on = dir().is_some();
            STATE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
    }
}

/// The workloads of each function, and which functions changed since they were written.
#[derive(Debug, Default)]
struct Recorder {
    functions: HashMap<(&'static str, &'static str), Vec<Captured>>,
    dirty: Vec<(&'static str, &'static str)>,
}

fn recorder() -> &'static Mutex<Recorder> {
    static RECORDER: OnceLock<Mutex<Recorder>> = OnceLock::new();
    RECORDER.get_or_init(|| {
        // The latest counts, every second, for programs that never call `flush`.
        let _ = std::thread::Builder::new()
            .name("gputune-capture".into())
            .spawn(|| loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
                let _ = flush();
            });
        Mutex::new(Recorder::default())
    })
}

impl Recorder {
    /// Counts the call; whether its function's file should be written now.
    fn note(
        &mut self,
        package: &'static str,
        function: &'static str,
        types: &[(&str, &str)],
        sizes: &[(&str, u64)],
    ) -> bool {
        let workloads = self.functions.entry((package, function)).or_default();
        let same = |w: &Captured| {
            w.types.len() == types.len()
                && w.sizes.len() == sizes.len()
                && w.types
                    .iter()
                    .zip(types)
                    .all(|((a, b), (c, d))| a == c && b == d)
                && w.sizes
                    .iter()
                    .zip(sizes)
                    .all(|((a, b), (c, d))| a == c && b == d)
        };
        let write = match workloads.iter_mut().find(|w| same(w)) {
            Some(w) => {
                w.count += 1;
                w.count.is_power_of_two()
            }
            None => {
                workloads.push(Captured {
                    types: types
                        .iter()
                        .map(|(a, b)| (a.to_string(), b.to_string()))
                        .collect(),
                    sizes: sizes.iter().map(|(a, b)| (a.to_string(), *b)).collect(),
                    count: 1,
                });
                true
            }
        };
        if !self.dirty.contains(&(package, function)) {
            self.dirty.push((package, function));
        }
        write
    }

    /// The file of one function.
    fn file(&self, package: &str, function: &str) -> CaptureFile {
        CaptureFile {
            version: CAPTURE_VERSION,
            package: package.to_string(),
            function: function.to_string(),
            workloads: self
                .functions
                .get(&(package, function))
                .cloned()
                .unwrap_or_default(),
        }
    }
}

/// Writes `file` under `dir`, through a temporary file so that a reader never sees half.
fn write(dir: &std::path::Path, file: &CaptureFile) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let name = file_name(&file.package, &file.function, std::process::id());
    let tmp = dir.join(format!(".{name}.tmp"));
    let text = serde_json::to_string_pretty(file).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, dir.join(name))
}

/// Notes a call of `function` (of `package`) with `types` (each generic parameter and its
/// type's name) and `sizes` (each `size(…)` axis and its value); what `#[tune]` generates
/// when [`enabled`]. A directory that cannot be written is said once on stderr.
pub fn note(
    package: &'static str,
    function: &'static str,
    types: &[(&str, &str)],
    sizes: &[(&str, u64)],
) {
    let Some(dir) = dir() else { return };
    let mut r = recorder().lock().unwrap_or_else(|e| e.into_inner());
    if r.note(package, function, types, sizes) {
        let file = r.file(package, function);
        r.dirty.retain(|k| *k != (package, function));
        drop(r);
        if let Err(e) = write(dir, &file) {
            warn_once(dir, &e);
        }
    }
}

fn warn_once(dir: &std::path::Path, e: &std::io::Error) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "warning: gputune cannot write captured workloads to {}: {e}",
            dir.display()
        );
    });
}

/// Writes every function's latest counts now. Nothing to do without `GPUTUNE_CAPTURE`.
pub fn flush() -> std::io::Result<()> {
    let Some(dir) = dir() else { return Ok(()) };
    let files: Vec<CaptureFile> = {
        let mut r = recorder().lock().unwrap_or_else(|e| e.into_inner());
        let dirty = std::mem::take(&mut r.dirty);
        dirty.iter().map(|(p, f)| r.file(p, f)).collect()
    };
    for file in &files {
        write(dir, file)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_distinct_workload_once_with_its_count_written_when_new_or_doubled() {
        let mut r = Recorder::default();
        let f32s: &[(&str, &str)] = &[("T", "f32")];
        let writes: Vec<bool> = (0..9)
            .map(|_| r.note("app", "scale", f32s, &[("Elements", 4096)]))
            .collect();
        // New (1), then counts 2, 4 and 8.
        assert_eq!(
            writes,
            [true, true, false, true, false, false, false, true, false]
        );
        assert!(
            r.note("app", "scale", f32s, &[("Elements", 64)]),
            "a new size"
        );
        assert!(
            r.note("app", "scale", &[("T", "f64")], &[("Elements", 64)]),
            "a new type"
        );
        let file = r.file("app", "scale");
        assert_eq!(file.workloads.len(), 3);
        assert_eq!(file.workloads[0].count, 9);
        assert_eq!(file.workloads[0].sizes, [("Elements".to_string(), 4096)]);
        assert_eq!(r.dirty, [("app", "scale")]);
        assert!(r.file("app", "other").workloads.is_empty());
    }

    #[test]
    fn a_written_file_reads_back_through_the_protocol() {
        let dir = std::env::temp_dir().join(format!("gputune-capture-rt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut r = Recorder::default();
        r.note("app", "scale", &[], &[("Elements", 7)]);
        r.note("app", "scale", &[], &[("Elements", 7)]);
        write(&dir, &r.file("app", "scale")).expect("writable");
        let read = gputune_protocol::capture::read_dir(&dir).expect("readable");
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].workloads[0].count, 2);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

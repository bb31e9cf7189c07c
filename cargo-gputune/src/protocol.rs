//! Talking to bench binaries through the typed protocol (`gputune-protocol`,
//! `docs/bench-json.md`): `--list`, `--devices`, and runs whose results come back as
//! events. Nothing here links user code.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use gputune_protocol::{AxisDoc, BenchListing, DevicesDoc, ExitCode, ListDoc};

use crate::cli::Usage;
use crate::process::{self, Exit};

/// The protocol version this cargo-gputune speaks.
pub use gputune_protocol::PROTOCOL_VERSION as PROTOCOL;

/// A bench's exit code for "device lost": a sticky CUDA error made its context unusable
/// after the state it reported last; the variant in progress crashed, and the rest run in a
/// fresh process.
pub const EXIT_DEVICE_LOST: i32 = ExitCode::DeviceLost as i32;

/// One axis of a bench, as `--list` gives it.
pub type Axis = AxisDoc;

/// One bench, as `--list` gives it.
pub type BenchInfo = BenchListing;

fn output(bin: &Path, args: &[String]) -> Result<(i32, String, String)> {
    let out = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", bin.display()))?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    ))
}

/// A bench binary's non-zero exit as an error; exit 2 (it rejected its arguments: an
/// undeclared axis or value, say) is the user's usage error.
pub fn check_exit(code: i32, stderr: &str) -> Result<()> {
    let message = stderr.trim().trim_start_matches("error: ").to_string();
    match code {
        0 => Ok(()),
        // A bad command line, and a device the bench cannot open (no driver, no GPU): both
        // are the user's to fix, and no variant would fare better.
        2 | 3 => Err(anyhow::Error::new(Usage(message))),
        _ => bail!("{message}"),
    }
}

/// Reads a document a bench printed, refusing another protocol version by name.
fn document<T: serde::de::DeserializeOwned>(
    bin: &Path,
    flag: &str,
    stdout: &str,
    protocol: impl Fn(&T) -> u32,
) -> Result<T> {
    // The version first, so that an old bench is named as such rather than as malformed.
    #[derive(serde::Deserialize)]
    struct Versioned {
        protocol: Option<u32>,
    }
    let version = serde_json::from_str::<Versioned>(stdout)
        .with_context(|| format!("{flag} did not print JSON"))?
        .protocol;
    if version != Some(PROTOCOL) {
        bail!(
            "{} speaks bench protocol {}, this cargo-gputune speaks {PROTOCOL}: rebuild it \
             against this gputune",
            bin.display(),
            version.map_or("(unknown)".into(), |v| v.to_string())
        );
    }
    let doc: T = serde_json::from_str(stdout)
        .with_context(|| format!("{flag} printed JSON that is not protocol {PROTOCOL}"))?;
    debug_assert_eq!(protocol(&doc), PROTOCOL);
    Ok(doc)
}

/// `--list` with `axis_args` (`-a …` pairs): the benches and their axes after filtering.
pub fn list(bin: &Path, axis_args: &[String]) -> Result<Vec<BenchInfo>> {
    let mut args = vec!["--list".to_string()];
    args.extend(axis_args.iter().cloned());
    let (code, stdout, stderr) = output(bin, &args)?;
    check_exit(code, &stderr)?;
    let doc: ListDoc = document(bin, "--list", &stdout, |d: &ListDoc| d.protocol)?;
    Ok(doc.benchmarks)
}

/// `--devices -b bench --device N`: the identity and architecture of the device the bench runs
/// on at ordinal N.
pub fn device(bin: &Path, bench: &str, ordinal: u32) -> Result<(String, String)> {
    let args = [
        "--devices".to_string(),
        "-b".into(),
        bench.into(),
        "--device".into(),
        ordinal.to_string(),
    ];
    let (code, stdout, stderr) = output(bin, &args)?;
    check_exit(code, &stderr)?;
    let doc: DevicesDoc = document(bin, "--devices", &stdout, |d: &DevicesDoc| d.protocol)?;
    let Some(d) = doc.devices.first() else {
        bail!("bench `{bench}` reported no device");
    };
    Ok((d.identity(), d.arch()))
}

/// What one bench process produced (its results came as [`Event`]s).
#[derive(Debug)]
pub struct RunOutcome {
    /// How it ended.
    pub exit: Exit,
    /// Its wall time.
    pub seconds: f64,
    /// The last lines of its stderr.
    pub stderr: String,
}

/// One line of a bench's `--jsonl` stream.
pub use gputune_protocol::Event;

/// Reads the complete lines appended to a file since the last call.
struct Tail<'p> {
    path: &'p Path,
    offset: u64,
    partial: Vec<u8>,
}

impl Tail<'_> {
    fn read(&mut self) -> Result<Vec<Event>> {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut file) = std::fs::File::open(self.path) else {
            return Ok(Vec::new());
        };
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::new();
        file.read_to_end(&mut buf)?;
        self.offset += buf.len() as u64;
        self.partial.extend_from_slice(&buf);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Ok(Vec::new());
        };
        let complete: Vec<u8> = self.partial.drain(..=end).collect();
        let mut events = Vec::new();
        for line in complete.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            events.push(serde_json::from_slice(line).with_context(|| {
                format!(
                    "{} holds a line that is not a protocol {PROTOCOL} event",
                    self.path.display()
                )
            })?);
        }
        Ok(events)
    }
}

/// Runs `args` with `--jsonl FILE`, handing each event to `on_event` as the bench streams
/// it. `limit` counts from the last event, so it bounds each state, not the whole run.
pub fn run(
    bin: &Path,
    args: &[String],
    jsonl: &Path,
    limit: Option<Duration>,
    mut on_event: impl FnMut(Event) -> Result<()>,
) -> Result<RunOutcome> {
    let _ = std::fs::remove_file(jsonl);
    let err_path = jsonl.with_extension("stderr");
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .arg("--jsonl")
        .arg(jsonl)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path)?);
    let mut tail = Tail {
        path: jsonl,
        offset: 0,
        partial: Vec::new(),
    };
    let finished = process::run_observed(&mut cmd, limit, || -> Result<bool> {
        let events = tail.read()?;
        let progress = !events.is_empty();
        for e in events {
            on_event(e)?;
        }
        Ok(progress)
    })
    .with_context(|| format!("running {}", bin.display()))?;
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            !["Run:", "Pass:", "Fail:", "Skip:"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    Ok(RunOutcome {
        exit: finished.exit,
        seconds: finished.seconds,
        stderr: lines[lines.len().saturating_sub(5)..].join("\n"),
    })
}

#[cfg(test)]
mod tests {
    use gputune_protocol::StateStatus;

    use super::*;

    #[test]
    fn bench_exit_codes_map_to_ours() {
        assert!(check_exit(0, "").is_ok());
        for code in [2, 3] {
            let e = check_exit(code, "error: no usable device: libcuda.so.1 not found")
                .expect_err("fails");
            assert!(e.chain().any(|c| c.is::<Usage>()), "{code}");
            assert_eq!(e.to_string(), "no usable device: libcuda.so.1 not found");
        }
        let e = check_exit(1, "boom").expect_err("fails");
        assert!(!e.chain().any(|c| c.is::<Usage>()));
    }

    #[test]
    fn the_stream_is_read_in_whole_lines() {
        let dir = std::env::temp_dir().join(format!("gputune-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("run.jsonl");
        let mut tail = Tail {
            path: &path,
            offset: 0,
            partial: Vec::new(),
        };
        assert!(tail.read().expect("no file yet").is_empty());
        std::fs::write(
            &path,
            "{\"event\":\"variant\",\"bench\":\"b\",\"variant\":\"x_1\"}\n{\"event\":\"state\",",
        )
        .expect("write");
        assert_eq!(
            tail.read().expect("reads"),
            vec![Event::Variant {
                bench: "b".into(),
                variant: Some("x_1".into())
            }]
        );
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        use std::io::Write;
        let state = gputune_protocol::StateRecord::unmeasured("Device=0", StateStatus::Ok);
        let line = serde_json::to_string(&state).expect("serialises");
        writeln!(f, "\"bench\":\"b\",\"variant\":\"x_1\",\"state\":{line}}}").expect("append");
        assert_eq!(
            tail.read().expect("reads"),
            vec![Event::State {
                bench: "b".into(),
                variant: Some("x_1".into()),
                state: Box::new(state)
            }]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

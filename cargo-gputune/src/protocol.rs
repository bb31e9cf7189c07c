//! Talking to bench binaries through protocol 3 (`docs/bench-json.md`): `--list`,
//! `--devices`, and runs whose results come back as JSON. Nothing here links user code.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::cli::Usage;
use crate::process::{self, Exit};

/// The protocol version this cargo-gputune speaks.
pub const PROTOCOL: i64 = 3;

/// A bench's exit code for "device lost": a sticky CUDA error made its context unusable
/// after the state it reported last; the variant in progress crashed, and the rest run in a
/// fresh process.
pub const EXIT_DEVICE_LOST: i32 = 4;

/// One axis of a bench, as `--list` gives it.
#[derive(Debug, Clone)]
pub struct Axis {
    /// Full name (`Elements{io}`).
    pub name: String,
    /// Name without marks (`Elements`).
    pub short: String,
    /// A `{ct}` axis.
    pub compile_time: bool,
    /// An `{io}` axis.
    pub importance_ordered: bool,
    /// Values as `-a` accepts them (`f32`, `2^20` as the input string).
    pub values: Vec<String>,
}

/// One bench, as `--list` gives it.
#[derive(Debug, Clone)]
pub struct BenchInfo {
    /// Name.
    pub name: String,
    /// The tuned function, if any.
    pub tunes: Option<String>,
    /// `cpu` or `cuda`.
    pub backend: String,
    /// Axes in declaration order.
    pub axes: Vec<Axis>,
}

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

/// `--list` with `axis_args` (`-a …` pairs): the benches and their axes after filtering.
pub fn list(bin: &Path, axis_args: &[String]) -> Result<Vec<BenchInfo>> {
    let mut args = vec!["--list".to_string()];
    args.extend(axis_args.iter().cloned());
    let (code, stdout, stderr) = output(bin, &args)?;
    check_exit(code, &stderr)?;
    let doc: Value = serde_json::from_str(&stdout).context("--list did not print JSON")?;
    if doc["protocol"].as_i64() != Some(PROTOCOL) {
        bail!(
            "{} speaks bench protocol {}, this cargo-gputune speaks {PROTOCOL}",
            bin.display(),
            doc["protocol"]
        );
    }
    let benches = doc["benchmarks"].as_array().cloned().unwrap_or_default();
    Ok(benches
        .iter()
        .map(|b| BenchInfo {
            name: b["name"].as_str().unwrap_or_default().to_string(),
            tunes: b["tunes"].as_str().map(str::to_string),
            backend: b["backend"].as_str().unwrap_or("cpu").to_string(),
            axes: b["axes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .map(|a| {
                    let name = a["name"].as_str().unwrap_or_default().to_string();
                    Axis {
                        short: name.replace("{ct}", "").replace("{io}", ""),
                        compile_time: a["compile_time"].as_bool().unwrap_or(false),
                        importance_ordered: a["importance_ordered"].as_bool().unwrap_or(false),
                        values: a["values"]
                            .as_array()
                            .cloned()
                            .unwrap_or_default()
                            .iter()
                            .map(|v| {
                                v["input_string"]
                                    .as_str()
                                    .map(str::to_string)
                                    .unwrap_or_else(|| {
                                        v["value"].to_string().trim_matches('"').to_string()
                                    })
                            })
                            .collect(),
                        name,
                    }
                })
                .collect(),
        })
        .collect())
}

/// `--devices -b bench`: the identity and architecture of the device the bench runs on.
pub fn device(bin: &Path, bench: &str) -> Result<(String, String)> {
    let (code, stdout, stderr) = output(bin, &["--devices".into(), "-b".into(), bench.into()])?;
    check_exit(code, &stderr)?;
    let doc: Value = serde_json::from_str(&stdout).context("--devices did not print JSON")?;
    let d = &doc["devices"][0];
    if d.is_null() {
        bail!("bench `{bench}` reported no device");
    }
    let arch = match d["sm_version"].as_i64() {
        Some(v) if d["backend"] == "cuda" => format!("sm_{v}"),
        _ => "cpu".to_string(),
    };
    let identity = format!(
        "{}|{}|sms={}|bus={}|ecc={}",
        d["name"].as_str().unwrap_or("?"),
        arch,
        d["number_of_sms"],
        d["global_memory_bus_width"],
        d["ecc_state"]
    );
    Ok((identity, arch))
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
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The bench starts running this variant (`None`: the production choice).
    Variant(Option<String>),
    /// A state finished: its entry as in the JSON document.
    State(Value),
}

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
            let v: Value = serde_json::from_slice(line).with_context(|| {
                format!("{} holds a line that is not JSON", self.path.display())
            })?;
            events.push(match v["event"].as_str() {
                Some("variant") => Event::Variant(v["variant"].as_str().map(str::to_string)),
                Some("state") => Event::State(v["state"].clone()),
                other => bail!("unknown event {other:?} in {}", self.path.display()),
            });
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

/// A numeric summary of a state by tag.
pub fn summary(state: &Value, tag: &str) -> Option<f64> {
    state["summaries"]
        .as_array()?
        .iter()
        .find(|s| s["tag"] == tag)?["data"][0]["value"]
        .as_str()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
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
            vec![Event::Variant(Some("x_1".into()))]
        );
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        use std::io::Write;
        writeln!(
            f,
            "\"bench\":\"b\",\"variant\":\"x_1\",\"state\":{{\"status\":\"ok\"}}}}"
        )
        .expect("append");
        assert_eq!(
            tail.read().expect("reads"),
            vec![Event::State(serde_json::json!({"status": "ok"}))]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

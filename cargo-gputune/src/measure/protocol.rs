//! Talking to bench binaries through the typed protocol (`gputune-protocol`,
//! `docs/bench-json.md`): `--list`, `--devices`, and runs whose results come back as
//! events. Nothing here links user code.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use gputune_protocol::{AxisDoc, BenchListing, DevicesDoc, ExitCode, ListDoc, Timeline};

use crate::host::process::{Exit, Finished, Group, Step, Watched};
use crate::host::usage::Usage;
use crate::measure::one_gpu;

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
    let mut cmd = Command::new(bin);
    one_gpu::add_args(&mut cmd, args);
    let out = cmd
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

/// Reads a document a bench printed (`--list`, `--devices`), refusing another protocol version
/// by name; `bin` and `flag` name the source in errors.
pub fn document<T: serde::de::DeserializeOwned>(
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
#[derive(Debug)]
struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl Tail {
    fn read(&mut self) -> Result<Vec<Event>> {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut file) = std::fs::File::open(&self.path) else {
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
        parse_events(&complete).with_context(|| {
            format!(
                "{} holds a line that is not a protocol {PROTOCOL} event",
                self.path.display()
            )
        })
    }
}

/// The events of complete `--jsonl` lines (empty lines skipped); an error names the first
/// line that is not a protocol event.
pub fn parse_events(lines: &[u8]) -> Result<Vec<Event>> {
    lines
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(i, line)| serde_json::from_slice(line).with_context(|| format!("line {}", i + 1)))
        .collect()
}

/// Runs `args` with `--jsonl FILE`, handing each event to `on_event` as the bench streams
/// it. `limit` counts from the last event, so it bounds each state, not the whole run.
pub fn run(
    bin: &Path,
    args: &[String],
    jsonl: &Path,
    limit: Option<Duration>,
    on_event: impl FnMut(Event) -> Result<()>,
) -> Result<RunOutcome> {
    let mut session = Session::start(bin, "", args, jsonl, false)?;
    match session.watch(limit, on_event)? {
        Pass::Ended(outcome) => Ok(outcome),
        // Without `--more-on-stdin` a bench sends no `pass_done`.
        Pass::Done => session.finish(limit, |_| Ok(())),
    }
}

/// How a pass of a [`Session`] ended.
#[derive(Debug)]
pub enum Pass {
    /// Its variants are done (`pass_done`); the process waits for the next pass.
    Done,
    /// The process ended.
    Ended(RunOutcome),
}

/// A bench process that may run several passes (`--more-on-stdin`): the screening of a batch
/// and, when the finalists are in the same binary, their finals, with one start-up.
#[derive(Debug)]
pub struct Session {
    bin: PathBuf,
    /// The compile-time workload its `-a` flags select, as the store keys it.
    ct: String,
    group: Group,
    started: Instant,
    tail: Tail,
    err_path: PathBuf,
}

impl Session {
    /// Starts `bin` with `args` (which select compile-time workload `ct`) and `--jsonl FILE`;
    /// with `more`, also `--more-on-stdin`, its stdin a pipe for the passes to come.
    pub fn start(
        bin: &Path,
        ct: &str,
        args: &[String],
        jsonl: &Path,
        more: bool,
    ) -> Result<Session> {
        // Every process has its own events and stderr beside `jsonl` (`run.PID-N.jsonl`,
        // `run.PID-N.stderr`): several wait at once (one per compile-time workload), and the
        // next process does not overwrite what the last one said.
        static PROCESSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = PROCESSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("{}-{n}", std::process::id());
        let err_path = jsonl.with_extension(format!("{id}.stderr"));
        let jsonl = &jsonl.with_extension(format!("{id}.jsonl"));
        let _ = std::fs::remove_file(jsonl);
        let mut cmd = Command::new(bin);
        one_gpu::add_args(&mut cmd, args);
        cmd.arg("--jsonl")
            .arg(jsonl)
            .stdin(if more { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err_path)?);
        if more {
            cmd.arg("--more-on-stdin");
        }
        let group = Group::spawn(&mut cmd).with_context(|| format!("running {}", bin.display()))?;
        Ok(Session {
            bin: bin.to_path_buf(),
            ct: ct.to_string(),
            started: Instant::now(),
            group,
            tail: Tail {
                path: jsonl.to_path_buf(),
                offset: 0,
                partial: Vec::new(),
            },
            err_path,
        })
    }

    /// Whether it runs `bin` on compile-time workload `ct`: then it can take a pass of
    /// them.
    pub fn serves(&self, bin: &Path, ct: &str) -> bool {
        self.bin == bin && self.ct == ct
    }

    /// The compile-time workload it runs.
    pub fn ct(&self) -> &str {
        &self.ct
    }

    /// When it started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Its outcome so far, for a pass that ended with the process waiting for the next.
    pub fn between_passes(&self) -> RunOutcome {
        RunOutcome {
            exit: Exit::Code(0),
            seconds: self.started.elapsed().as_secs_f64(),
            stderr: String::new(),
        }
    }

    /// Hands each event to `on_event` until the pass is done or the process ends. `limit`
    /// counts from the last event.
    pub fn watch(
        &mut self,
        limit: Option<Duration>,
        mut on_event: impl FnMut(Event) -> Result<()>,
    ) -> Result<Pass> {
        let tail = &mut self.tail;
        let watched = self
            .group
            .watch(limit, || -> Result<Step> {
                let events = tail.read()?;
                let mut step = if events.is_empty() {
                    Step::Idle
                } else {
                    Step::Progress
                };
                for e in events {
                    if e == Event::PassDone {
                        step = Step::Stop;
                    }
                    on_event(e)?;
                }
                Ok(step)
            })
            .with_context(|| format!("running {}", self.bin.display()))?;
        match watched {
            Watched::Stopped => Ok(Pass::Done),
            Watched::Ended(f) => Ok(Pass::Ended(self.outcome(f))),
        }
    }

    /// Sends the next pass's flags (`args`: the variants and the measurement settings; the
    /// process keeps its own `-b` and `-a`). Watch it with [`Session::watch`].
    pub fn send(&mut self, args: &[String]) -> Result<()> {
        use std::io::Write;
        let line = serde_json::to_string(args)?;
        let sent = match self.group.stdin() {
            Some(stdin) => stdin
                .write_all(format!("{line}\n").as_bytes())
                .and_then(|()| stdin.flush()),
            None => Err(std::io::Error::other("its stdin is closed")),
        };
        sent.with_context(|| format!("sending a pass to {}", self.bin.display()))
    }

    /// Ends a process that waits for a pass (closes its stdin), watches it to its end and
    /// returns how it ended and its `process` event's timeline.
    pub fn close(mut self, limit: Option<Duration>) -> Result<(RunOutcome, Option<Timeline>)> {
        let mut timeline = None;
        let outcome = self.finish(limit, |e| {
            if let Event::Process { timeline: t } = e {
                timeline = Some(t);
            }
            Ok(())
        })?;
        Ok((outcome, timeline))
    }

    /// Ends the process after its current pass (closes its stdin) and watches it to the end.
    pub fn finish(
        &mut self,
        limit: Option<Duration>,
        mut on_event: impl FnMut(Event) -> Result<()>,
    ) -> Result<RunOutcome> {
        drop(self.group.stdin().take());
        loop {
            // A `pass_done` after the last pass only says the process reads stdin once more.
            if let Pass::Ended(outcome) = self.watch(limit, &mut on_event)? {
                return Ok(outcome);
            }
        }
    }

    fn outcome(&self, finished: Finished) -> RunOutcome {
        let stderr = std::fs::read_to_string(&self.err_path).unwrap_or_default();
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| {
                !["Run:", "Pass:", "Fail:", "Skip:"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .collect();
        RunOutcome {
            exit: finished.exit,
            seconds: finished.seconds,
            stderr: lines[lines.len().saturating_sub(5)..].join("\n"),
        }
    }
}

impl Drop for Session {
    /// A session dropped before its end (an error elsewhere) ends its process: a closed stdin
    /// ends a waiting bench; one that does not end soon is killed with its group.
    fn drop(&mut self) {
        drop(self.group.stdin().take());
        let ended = self.group.watch(Some(Duration::from_secs(5)), || {
            Ok::<Step, std::io::Error>(Step::Idle)
        });
        if !matches!(ended, Ok(Watched::Ended(_))) {
            self.group.kill();
        }
        // Its events are in the store by now; its stderr stays.
        let _ = std::fs::remove_file(&self.tail.path);
    }
}

/// The axis an `-a` spec sets: `Elements{io}[pow2]=[12]` sets `Elements`.
pub fn spec_axis(spec: &str) -> &str {
    spec.split(['{', '[', '=']).next().unwrap_or(spec).trim()
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
            path: path.clone(),
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

    #[test]
    fn a_session_runs_passes_until_its_stdin_closes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("gputune-session-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        // A bench in miniature: one variant per pass, named by the pass's line, then
        // `pass_done`; the end of stdin ends it with its `process` event.
        let bench = dir.join("bench.sh");
        std::fs::write(
            &bench,
            r#"#!/bin/sh
out=""; prev=""
for a in "$@"; do [ "$prev" = --jsonl ] && out=$a; prev=$a; done
echo '{"event":"variant","bench":"b","variant":"first"}' >> "$out"
echo '{"event":"pass_done"}' >> "$out"
while read -r line; do
  [ -z "$line" ] && break
  echo "{\"event\":\"variant\",\"bench\":\"b\",\"variant\":\"$(echo "$line" | tr -d '[]\" ')\"}" >> "$out"
  echo '{"event":"pass_done"}' >> "$out"
done
echo '{"event":"process","timeline":{"first_sample":null,"device_open":0,"setup":0,"reference":0,"compile_wait":0,"measure":0,"total":0.5}}' >> "$out"
"#,
        )
        .expect("script");
        std::fs::set_permissions(&bench, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let jsonl = dir.join("run.jsonl");
        let limit = Some(Duration::from_secs(20));
        let mut session = Session::start(&bench, "ct", &[], &jsonl, true).expect("starts");
        assert!(session.serves(&bench, "ct") && !session.serves(&bench, "other"));
        let mut seen = Vec::new();
        let mut variants = |e: Event| {
            if let Event::Variant { variant, .. } = e {
                seen.push(variant.unwrap_or_default());
            }
            Ok(())
        };
        assert!(matches!(
            session.watch(limit, &mut variants).expect("watches"),
            Pass::Done
        ));
        session.send(&["second".to_string()]).expect("sends");
        assert!(matches!(
            session.watch(limit, &mut variants).expect("watches"),
            Pass::Done
        ));
        let (outcome, timeline) = session.close(limit).expect("ends");
        assert_eq!(outcome.exit, Exit::Code(0));
        assert_eq!(timeline.map(|t| t.total), Some(0.5));
        assert_eq!(seen, ["first", "second"]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! `--jsonl FILE`: the run's events as they happen.

use std::io::Write;

use gputune_protocol::Event;

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::output::{self, StateReport};

/// The `--jsonl` file, or nothing without the flag.
pub(super) struct EventStream(Option<JsonLines>);

impl EventStream {
    pub(super) fn open(path: Option<&str>) -> Result<EventStream> {
        Ok(EventStream(path.map(JsonLines::open).transpose()?))
    }

    /// A variant of `bench` starts (`None`: the production choice).
    pub(super) fn variant(&mut self, bench: &str, variant: Option<&str>) -> Result<()> {
        let Some(lines) = &mut self.0 else {
            return Ok(());
        };
        lines.emit(&Event::Variant {
            bench: bench.to_string(),
            variant: variant.map(str::to_string),
        })
    }

    /// A state of `bench` finished; `devices` are the run's, which its device indexes into.
    pub(super) fn state(
        &mut self,
        bench: &str,
        variant: Option<&str>,
        state: &StateReport,
        devices: &[DeviceInfo],
    ) -> Result<()> {
        let Some(lines) = &mut self.0 else {
            return Ok(());
        };
        lines.emit(&Event::State {
            bench: bench.to_string(),
            variant: variant.map(str::to_string),
            state: Box::new(output::state_record(state, devices)),
        })
    }
}

impl EventStream {
    /// A pass of `--more-on-stdin` is done; the process reads the next from stdin.
    pub(super) fn pass_done(&mut self) -> Result<()> {
        let Some(lines) = &mut self.0 else {
            return Ok(());
        };
        lines.emit(&Event::PassDone)
    }

    /// A pass starts: where and how it measures, and on which device.
    pub(super) fn provenance(
        &mut self,
        provenance: &gputune_protocol::Provenance,
        device: Option<gputune_protocol::Device>,
    ) -> Result<()> {
        let Some(lines) = &mut self.0 else {
            return Ok(());
        };
        lines.emit(&Event::Provenance {
            provenance: Box::new(provenance.clone()),
            device: device.map(Box::new),
        })
    }

    /// The process is done: where its time went, as its last event.
    pub(super) fn process(&mut self) -> Result<()> {
        let Some(lines) = &mut self.0 else {
            return Ok(());
        };
        lines.emit(&Event::Process {
            timeline: crate::timeline::snapshot(),
        })
    }
}

/// One line per event, each written whole (one `write`) as it happens, so a reader sees
/// every finished state even if the process dies later.
struct JsonLines {
    file: std::fs::File,
    path: String,
}

impl JsonLines {
    fn open(path: &str) -> Result<JsonLines> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| Error::Io {
                path: path.to_string(),
                source,
            })?;
        Ok(JsonLines {
            file,
            path: path.to_string(),
        })
    }

    fn emit(&mut self, event: &Event) -> Result<()> {
        let line = serde_json::to_string(event)
            .map_err(|e| Error::Device(format!("cannot serialise an event: {e}")))?;
        self.file
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })
    }
}

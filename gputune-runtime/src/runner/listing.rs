//! `--list` and `--devices`: documents that describe the binary instead of running it.

use gputune_protocol::{BenchListing, DevicesDoc, ListDoc};

use super::backends::Backends;
use super::results::to_stdout;
use super::PROTOCOL;
use crate::bench::Bench;
use crate::cli::Cli;
use crate::error::Result;
use crate::output;

/// Prints the selected benches, their axes and state counts.
pub(super) fn list(benches: &[Bench], indices: &[usize]) {
    let list = serde_json::to_string_pretty(&list_doc(benches, indices));
    to_stdout(&format!("{}\n", list.unwrap_or_default()));
}

/// Opens the devices the selected benches need and prints them.
pub(super) fn devices(benches: &[Bench], cli: &Cli) -> Result<()> {
    let doc = DevicesDoc {
        protocol: PROTOCOL,
        devices: Backends::describe(benches, cli)?
            .iter()
            .map(output::device_record)
            .collect(),
    };
    to_stdout(&format!(
        "{}\n",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    ));
    Ok(())
}

fn list_doc(benches: &[Bench], indices: &[usize]) -> ListDoc {
    ListDoc {
        protocol: PROTOCOL,
        benchmarks: benches
            .iter()
            .zip(indices)
            .map(|(b, i)| BenchListing {
                name: b.name.clone(),
                index: *i,
                tunes: b.tunes.clone(),
                backend: b.backend,
                axes: output::axis_docs(&b.axes),
                states: b.state_count(),
            })
            .collect(),
    }
}

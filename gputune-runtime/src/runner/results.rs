//! Writing the results: the table and the JSON document, where `--json` says.

use std::io::Write;

use crate::error::{Error, Result};
use crate::output::{self, RunReport};

/// The table on stdout and, with `--json FILE`, the document in FILE; with `--json -` the
/// document takes stdout and the table goes to stderr.
pub(super) fn write(report: &RunReport, json: Option<&str>) -> Result<()> {
    let table = output::to_table(report);
    let doc = output::results_doc(report);
    let text = serde_json::to_string_pretty(&doc)
        .map_err(|e| Error::Device(format!("cannot serialise the results: {e}")))?;
    match json {
        Some("-") => {
            eprint!("{table}");
            to_stdout(&format!("{text}\n"));
        }
        Some(path) => {
            to_stdout(&table);
            write_atomically(path, &text)?;
        }
        None => to_stdout(&table),
    }
    Ok(())
}

/// Writes `text` to stdout. A reader that stopped reading (`--list | head`) is not the
/// bench's failure: a broken pipe ends the output quietly where `print!` would panic.
pub(super) fn to_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("warning: writing to stdout failed: {e}");
        }
        _ => {}
    }
}

/// Writes via a temporary file and a rename, so a reader never sees half a document.
fn write_atomically(path: &str, text: &str) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_string(),
        source,
    };
    let tmp = format!("{path}.tmp{}", std::process::id());
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

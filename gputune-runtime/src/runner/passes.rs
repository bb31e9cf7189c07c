//! `--more-on-stdin`: further passes in one process, each read from a line on stdin.
//!
//! A deciding search screens every variant of a batch, then measures the finalists in full
//! with other settings. Doing both in one process spares the second one's start-up: the
//! CUDA context, the workloads' setups and the compiled kernels are already there.

use std::io::BufRead;

use crate::cli::Cli;
use crate::error::{Error, Result};

/// The next pass's flags, or `None` at an empty line or the end of stdin.
pub(super) fn read_next() -> Result<Option<Cli>> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|source| Error::Io {
            path: "stdin".into(),
            source,
        })?;
    parse(&line)
}

/// A pass's line as flags (`None` for an empty one), as the first pass's are checked.
fn parse(line: &str) -> Result<Option<Cli>> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let mut cli = Cli::next_pass(line.trim())?;
    cli.read_variant_files()?;
    cli.read_workload_files()?;
    Ok(Some(cli.effective()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_a_json_array_of_flags_and_an_empty_one_ends() {
        assert!(parse("\n").expect("ends").is_none());
        let cli = parse(r#"["--variant", "f.base,f.a_1", "--stopping-criterion", "entropy"]"#)
            .expect("parses")
            .expect("a pass");
        assert_eq!(cli.variant, ["f.base", "f.a_1"]);
        assert_eq!(cli.criterion(), "entropy");
    }

    #[test]
    fn a_pass_cannot_change_what_the_process_keeps() {
        for bad in [
            r#"["-b", "other"]"#,
            r#"["-a", "N=1"]"#,
            r#"["--jsonl", "x"]"#,
            r#"["--more-on-stdin"]"#,
        ] {
            let e = parse(bad).expect_err(bad);
            assert!(
                e.to_string().contains("belongs to the process"),
                "{bad}: {e}"
            );
        }
        assert!(parse("not json").is_err());
        assert!(parse(r#"["--max-noise", "0"]"#).is_err());
    }
}

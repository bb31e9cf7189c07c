//! Which benches run, with which axis values: the positional bench names and `-a`.

use crate::bench::Bench;
use crate::cli::{ApplyOverride, AxisOverride, Cli};
use crate::error::{Error, Result};

/// The benches the command line selects, in registration order, with their `-a`
/// overrides applied, and each one's index among all the binary's benches.
pub(super) fn select(benches: Vec<Bench>, cli: &Cli) -> Result<(Vec<Bench>, Vec<usize>)> {
    let indices = select_benches(&benches, &cli.benchmarks)?;
    let mut benches: Vec<Bench> = benches
        .into_iter()
        .enumerate()
        .filter(|(i, _)| indices.contains(i))
        .map(|(_, b)| b)
        .collect();
    apply_overrides(&mut benches, &cli.axes)?;
    Ok((benches, indices))
}

fn select_benches(benches: &[Bench], wanted: &[String]) -> Result<Vec<usize>> {
    if wanted.is_empty() {
        return Ok((0..benches.len()).collect());
    }
    let mut out = Vec::new();
    for w in wanted {
        let found = benches
            .iter()
            .position(|b| &b.name == w)
            .or_else(|| w.parse::<usize>().ok().filter(|i| *i < benches.len()));
        match found {
            Some(i) if !out.contains(&i) => out.push(i),
            Some(_) => {}
            None => {
                let names: Vec<&str> = benches.iter().map(|b| b.name.as_str()).collect();
                return Err(Error::Usage(format!(
                    "unknown bench `{w}`; benches: {}",
                    names.join(", ")
                )));
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

fn apply_overrides(benches: &mut [Bench], specs: &[String]) -> Result<()> {
    for spec in specs {
        let o = AxisOverride::parse(spec)?;
        let mut matched = false;
        for b in benches.iter_mut() {
            for axis in b.axes.iter_mut() {
                if axis.answers_to(&o.name) {
                    axis.values = o.apply(axis)?;
                    matched = true;
                }
            }
        }
        if !matched {
            let mut names: Vec<&str> = Vec::new();
            for a in benches.iter().flat_map(|b| &b.axes) {
                if !names.contains(&a.name.as_str()) {
                    names.push(&a.name);
                }
            }
            return Err(Error::Usage(format!(
                "unknown axis `{}`; axes: {}",
                o.name,
                if names.is_empty() {
                    "(none)".to_string()
                } else {
                    names.join(", ")
                }
            )));
        }
    }
    Ok(())
}

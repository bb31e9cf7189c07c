//! `--workloads`: only the listed points of the axes' product run. A state outside the list is
//! not run and not reported (no `state` event, no row in the results document): it is not part
//! of the problem, as an application's captured workloads define it, so nothing downstream
//! (the store, `report`, `apply --per-size`) should meet it, not even as skipped.

use gputune_protocol::workloads::Workload;

use crate::axis::{name_refers_to, AxisValue};
use crate::bench::Bench;
use crate::cli::Cli;
use crate::error::{Error, Result};

/// The workloads a pass runs: all, or the listed ones.
#[derive(Debug, Clone, Default)]
pub(super) struct Listed(Option<Vec<Workload>>);

impl Listed {
    /// The pass's `--workloads` (its files read). A list that names no workload, or an axis
    /// none of `benches` has, is a usage error: it would run nothing, silently.
    pub(super) fn new(cli: &Cli, benches: &[Bench]) -> Result<Listed> {
        let Some(list) = cli.listed_workloads()? else {
            return Ok(Listed(None));
        };
        for (name, _) in list.iter().flat_map(|w| &w.pairs) {
            let known = benches
                .iter()
                .flat_map(Bench::axes)
                .any(|a| name_refers_to(name, &a.name));
            if !known {
                let mut names: Vec<&str> = Vec::new();
                for a in benches.iter().flat_map(Bench::axes) {
                    if !names.contains(&a.name.as_str()) {
                        names.push(&a.name);
                    }
                }
                return Err(Error::Usage(format!(
                    "--workloads names axis `{name}`, which no selected bench has; axes: {}",
                    if names.is_empty() {
                        "(none)".to_string()
                    } else {
                        names.join(", ")
                    }
                )));
            }
        }
        Ok(Listed(Some(list)))
    }

    /// Whether the state with `values` (its full axis names and values) runs.
    pub(super) fn admits(&self, values: &[(String, AxisValue)]) -> bool {
        let Some(list) = &self.0 else {
            return true;
        };
        let written: Vec<(&str, String)> = values
            .iter()
            .map(|(n, v)| (n.as_str(), v.display()))
            .collect();
        list.iter()
            .any(|w| w.admits(written.iter().map(|(n, v)| (*n, v.as_str()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BenchResult;
    use crate::state::State;

    fn cli(workloads: &[&str]) -> Cli {
        Cli {
            workloads: workloads.iter().map(|w| w.to_string()).collect(),
            ..Cli::default()
        }
    }

    fn shaped() -> Bench {
        let f = |state: &mut State<'_>| -> BenchResult {
            state.exec(|_| Ok(()));
            Ok(())
        };
        Bench::new("shaped", f)
            .add_int64_power_of_two_axis("Rows{io}", [0, 12])
            .add_int64_axis("Cols", [1, 4096])
    }

    fn state(rows: u32, cols: i64) -> Vec<(String, AxisValue)> {
        vec![
            (
                "Rows{io}".into(),
                AxisValue::Int64Pow2 {
                    exponent: rows,
                    value: 1 << rows,
                },
            ),
            ("Cols".into(), AxisValue::Int64(cols)),
        ]
    }

    #[test]
    fn only_the_listed_points_of_the_product_run() {
        let benches = [shaped()];
        let all = Listed::new(&cli(&[]), &benches).expect("no list");
        assert!(all.admits(&state(12, 4096)));
        let listed =
            Listed::new(&cli(&["Rows=4096 Cols=1", "Rows=1 Cols=4096"]), &benches).expect("valid");
        assert!(listed.admits(&state(12, 1)));
        assert!(listed.admits(&state(0, 4096)));
        assert!(!listed.admits(&state(12, 4096)));
        assert!(!listed.admits(&state(0, 1)));
        // One axis named: the other takes any value.
        let rows = Listed::new(&cli(&["Rows{io}=2^12"]), &benches).expect("valid");
        assert!(rows.admits(&state(12, 4096)) && rows.admits(&state(12, 1)));
        assert!(!rows.admits(&state(0, 1)));
    }

    #[test]
    fn a_list_naming_an_unknown_axis_or_nothing_is_refused() {
        let benches = [shaped()];
        let e = Listed::new(&cli(&["Row=1"]), &benches).expect_err("unknown axis");
        assert!(
            e.to_string().contains("`Row`, which no selected bench has"),
            "{e}"
        );
        assert!(e.to_string().contains("axes: Rows{io}, Cols"), "{e}");
        let e = Listed::new(&cli(&[""]), &benches).expect_err("nothing listed");
        assert!(e.to_string().contains("lists no workload"), "{e}");
    }
}

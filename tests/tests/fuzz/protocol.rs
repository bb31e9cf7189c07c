//! What bench processes print, as cargo gputune reads it.

use std::path::PathBuf;

use gputune_protocol::{AxisDoc, DevicesDoc, Event, ListDoc, ResultsDoc};
use gputune_tests::fuzz::{self, mutate, mutate_lines};

use super::{mutated, text};

fn declared_axes() -> Vec<AxisDoc> {
    let list = fuzz::seeds("documents")
        .into_iter()
        .find_map(|d| serde_json::from_slice::<ListDoc>(&d).ok())
        .expect("tests/fuzz/seeds/documents holds a --list document");
    list.benchmarks.into_iter().flat_map(|b| b.axes).collect()
}

#[test]
fn jsonl_events_are_read_or_refused() {
    let seeds = fuzz::seeds("events");
    let declared = declared_axes();
    fuzz::run(
        "events",
        |rng| {
            let mut input = rng.pick(&seeds).clone();
            for _ in 0..=rng.below(4) {
                if rng.one_in(2) {
                    mutate_lines(rng, &mut input);
                } else {
                    mutate(
                        rng,
                        &mut input,
                        &["\"state\"", "\"variant\"", "null", "1e999"],
                        b"",
                    );
                }
            }
            input
        },
        |input| {
            let Ok(events) = cargo_gputune::measure::protocol::parse_events(input) else {
                return Ok(());
            };
            for e in events {
                if let Event::State { state, .. } = e {
                    let (key, weight) =
                        cargo_gputune::measure::runs::rt_workload(&state, &declared);
                    if weight.is_nan() {
                        return Err(format!("workload {key} has a NaN weight"));
                    }
                    let _ = cargo_gputune::measure::runs::state_status(&state);
                    let _ = state.summary("nv/cold/time/gpu/median");
                }
            }
            Ok(())
        },
    );
}

#[test]
fn protocol_documents_are_read_or_refused() {
    let seeds = fuzz::seeds("documents");
    let bin = PathBuf::from("bench");
    fuzz::run(
        "documents",
        |rng| {
            mutated(
                rng,
                &seeds,
                &["\"protocol\"", "7", "\"benchmarks\"", "\"devices\""],
                4,
            )
        },
        |input| {
            let stdout = text(input);
            let _ = cargo_gputune::measure::protocol::document(
                &bin,
                "--list",
                &stdout,
                |d: &ListDoc| d.protocol,
            );
            let _ = cargo_gputune::measure::protocol::document(
                &bin,
                "--devices",
                &stdout,
                |d: &DevicesDoc| d.protocol,
            )
            .map(|d| {
                d.devices
                    .iter()
                    .map(|x| (x.identity(), x.arch()))
                    .collect::<Vec<_>>()
            });
            let _ = serde_json::from_slice::<ResultsDoc>(input);
            Ok(())
        },
    );
}

//! Generated inputs against every reader of user or process input (issue 30): the `#[tune]`
//! grammar and its enumeration, `gputune.toml`, the bench flags and `-a` axes, the protocol's
//! documents and `--jsonl` events as `cargo gputune` reads them, the Kernel Tuner cache / T4
//! importers, and a store with corrupt pages. Every reader must answer with a value or an error,
//! never a panic or a hang, and the grammar's enumeration must equal a brute-force evaluation
//! of `require` written here.
//!
//! Each test is one target of `gputune_tests::fuzz` (the engine: seeds, mutations, budget,
//! regressions). Under `cargo test` each runs for about a second and a half on a fixed seed;
//! `scripts/local/fuzz.sh` runs them for as long as it is asked, on fresh seeds. One module per
//! family of readers.

mod flags;
mod gputune_toml;
mod grammar;
mod import;
mod protocol;
mod require;
mod store;

use std::path::PathBuf;

use gputune_tests::fuzz::{mutate, Rng};

/// A mutated copy of one of `seeds`, changed `1..=max` times.
fn mutated(rng: &mut Rng, seeds: &[Vec<u8>], dictionary: &[&str], max: usize) -> Vec<u8> {
    let mut input = rng.pick(seeds).clone();
    let other = rng.pick(seeds).clone();
    for _ in 0..=rng.below(max) {
        mutate(rng, &mut input, dictionary, &other);
    }
    input
}

fn text(input: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(input)
}

fn scratch(name: &str) -> PathBuf {
    // One folder per test process, shared by the targets (which run side by side): each
    // target's files carry its thread's name.
    let dir = std::env::temp_dir().join(format!("gputune-fuzz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!("{name}-{:?}", std::thread::current().id()).replace(['(', ')'], ""))
}

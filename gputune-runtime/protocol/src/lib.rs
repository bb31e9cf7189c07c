//! The typed contract between `cargo gputune` and bench binaries.
//!
//! `cargo gputune` never links user code: it runs bench binaries as child processes, passes
//! flags in and reads JSON out. Both sides use the types of this crate, so the contract is
//! written once; `docs/bench-json.md` is its human description, checked against these types
//! by a test.

pub mod hash;

//! What every stage stands on: the workspace as cargo knows it (discovery and builds of
//! bench targets, `cargo`), child processes in their own process group (`process`),
//! advisory file locks (`lock`), where lines go (`output`) and the one error kind the CLI
//! tells apart from failures (`usage`).
//!
//! May import: nothing of this crate outside this folder.

pub mod cargo;
pub mod lock;
pub mod output;
pub mod process;
pub mod usage;

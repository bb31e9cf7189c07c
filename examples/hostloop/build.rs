//! Generates the variants of the `#[tune]` functions (see gputune_runtime::build).
fn main() {
    gputune_runtime::build::main();
}

//! Generates the variants of the `#[tune]` launches (see gputune_runtime::build).
fn main() {
    gputune_runtime::build::main();
}

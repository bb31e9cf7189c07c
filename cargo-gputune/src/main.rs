//! `cargo gputune`: a thin binary over the `cargo_gputune` library.

fn main() {
    std::process::exit(cargo_gputune::main_with(std::env::args_os().collect()));
}

//! `cargo gputune`: the subcommand is specified in `../shared/DESIGN.md` and tracked as
//! issue #4; until it lands, this binary says so instead of pretending to work.

fn main() {
    eprintln!(
        "error: cargo gputune is not implemented yet; run a bench binary directly (see README.md)"
    );
    std::process::exit(2);
}

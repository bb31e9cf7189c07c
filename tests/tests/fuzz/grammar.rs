//! The #[tune] grammar: any text is an error or a space.

use std::collections::BTreeSet;

use gputune_tests::fuzz;

use super::{mutated, text};

const GRAMMAR_TOKENS: &[&str] = &[
    "..=",
    "..",
    "pow2(",
    ".step_by(",
    "require(",
    "base(",
    "size(",
    "min(",
    "max(",
    "&&",
    "||",
    "!",
    "%",
    "/",
    "*",
    "-",
    "==",
    "!=",
    "<=",
    ">=",
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    "true",
    "false",
    "\"s\"",
    "x",
    "65535",
    "65536",
    "62",
    "63",
    "0",
    "-0",
    "1..=1000000",
];

#[test]
fn grammar_text() {
    let seeds = fuzz::seeds("grammar");
    assert!(
        !seeds.is_empty(),
        "tests/fuzz/seeds/grammar holds the examples' attributes"
    );
    fuzz::run(
        "grammar",
        |rng| mutated(rng, &seeds, GRAMMAR_TOKENS, 6),
        |input| {
            let Ok(spec) = gputune_grammar::parse_str(&text(input)) else {
                return Ok(());
            };
            let combinations: usize = spec.params.iter().map(|p| p.values.len()).product();
            if combinations > 200_000 {
                // Parsing bounded it (2^22); enumerating a space this size is the build's
                // work, not a reader's, so the generated inputs stop at parsing it.
                return Ok(());
            }
            let space = spec.space();
            let labels: BTreeSet<String> = space.iter().map(|p| p.label()).collect();
            if labels.len() != space.len() {
                return Err("two points share a label".into());
            }
            for p in &space {
                if !spec.admits(&p.values) {
                    return Err(format!("{} is enumerated but not admitted", p.label()));
                }
            }
            if spec.base.len() != spec.params.len() {
                return Err("base does not give every parameter a value".into());
            }
            Ok(())
        },
    );
}

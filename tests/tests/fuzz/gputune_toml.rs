//! `gputune.toml`: any text is read or refused, and what `apply` writes reads back the same.

use gputune_tests::fuzz;

use super::{mutated, text};

const TOML_TOKENS: &[&str] = &[
    "version = 2",
    "version = 1",
    "[[",
    "]]",
    "[scale.\"*\".sm_90]",
    "size-axis",
    "size-from",
    "size-below",
    "measured-on",
    "\"Elements\"",
    "\"NVIDIA H200\"",
    "ipt",
    "tpb",
    "=",
    "\n",
    "18446744073709551615",
    "-1",
    "inf",
];

#[test]
fn gputune_toml_is_read_or_refused() {
    use gputune_protocol::gputune_toml::GputuneToml;
    let seeds = fuzz::seeds("gputune-toml");
    let spec = gputune_grammar::parse_str(
        "ipt = [1, 2, 4, 8], tpb = pow2(6..=10), base(ipt = 4, tpb = 256), size(Elements = n)",
    )
    .expect("a valid spec");
    fuzz::run(
        "gputune-toml",
        |rng| mutated(rng, &seeds, TOML_TOKENS, 5),
        |input| {
            let Ok(file) = GputuneToml::parse(&text(input)) else {
                return Ok(());
            };
            let _ = file.entries("scale", &spec);
            // What `apply` writes must read back as the same file.
            let again = GputuneToml::parse(&file.to_text())
                .map_err(|e| format!("its own text does not parse: {e}"))?;
            if again != file {
                return Err("its own text reads back differently".into());
            }
            Ok(())
        },
    );
}

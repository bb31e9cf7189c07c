//! Kernel Tuner caches, T1 and T4 files.

use gputune_tests::fuzz;

use super::{mutated, scratch};

const IMPORT_TOKENS: &[&str] = &[
    "\"time\"",
    "\"times\"",
    "\"cache\"",
    "\"tune_params\"",
    "\"tune_params_keys\"",
    "\"InvalidConfig\"",
    "\"CompilationFailedConfig\"",
    "\"RuntimeFailedConfig\"",
    "\"schema_version\"",
    "\"results\"",
    "\"configuration\"",
    "\"invalidity\"",
    "\"compile\"",
    "\"runtimes\"",
    "\"1.0.0\"",
    "\"0.0.1\"",
    "\"device_name\"",
    "1e20",
    "-0.0",
    "[[]]",
];

#[test]
fn community_files_import_or_are_refused() {
    let seeds = fuzz::seeds("import");
    let path = scratch("import.json");
    fuzz::run(
        "import",
        |rng| mutated(rng, &seeds, IMPORT_TOKENS, 5),
        |input| {
            std::fs::write(&path, input).map_err(|e| e.to_string())?;
            let Ok(file) = cargo_gputune::results::import::read(&path) else {
                return Ok(());
            };
            if let Ok(plan) = cargo_gputune::results::import::plan(vec![file], None) {
                for row in &plan.rows {
                    if row.samples.iter().any(|s| !s.is_finite()) {
                        return Err(format!("{}: a sample that is not finite", row.variant));
                    }
                }
            }
            Ok(())
        },
    );
}

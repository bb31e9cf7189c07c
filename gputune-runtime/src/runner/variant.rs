//! `--variant`: asking a tuned function for a variant, and checking that it ran.

use crate::bench::Bench;
use crate::error::ErrorKind;
use crate::state::Outcome;

/// Tells each tuned function every variant this process will run, before the first state,
/// so that a bench can prepare them all (`tuned::planned`).
pub(super) fn plan(benches: &[Bench], variants: &[String]) {
    for function in benches.iter().filter_map(|b| b.tunes.as_deref()) {
        let labels: Vec<&str> = variants.iter().map(|v| label(v, function)).collect();
        crate::tuned::plan(function, &labels);
    }
}

/// Asks `bench`'s tuned function to run `variant` from now on and returns its label;
/// `None` (the production choice) without a variant or a tuned function.
pub(super) fn request<'a>(bench: &Bench, variant: Option<&'a str>) -> Option<&'a str> {
    let (variant, function) = (variant?, bench.tunes.as_deref()?);
    let label = label(variant, function);
    crate::tuned::request(function, label);
    Some(label)
}

/// Before each state of a production run (no variant), makes `function` resolve anew, so
/// that a per-size choice is reported (`tuned::resolved`) for the state's own size.
pub(super) fn begin_state(function: &str, requested: Option<&str>) {
    if requested.is_none() {
        crate::tuned::refresh(function);
    }
}

/// `ipt_8.tpb_128` from `--variant scale.ipt_8.tpb_128` or `--variant ipt_8.tpb_128`.
fn label<'a>(variant: &'a str, function: &str) -> &'a str {
    variant
        .strip_prefix(function)
        .and_then(|l| l.strip_prefix('.'))
        .unwrap_or(variant)
}

/// Records which variant of `function` ran, and fails the state when the requested one did
/// not: a timing of base reported as a variant would be a wrong result, not a slow one.
pub(super) fn check(function: &str, requested: Option<&str>, outcome: &mut Outcome) {
    let resolved = crate::tuned::resolved(function);
    let missing = match (&resolved, requested) {
        (Some(r), _) => r.missing.clone(),
        // A build with nothing but base compiles no dispatch, so nothing resolves.
        (None, Some("base")) => {
            outcome.variant = Some("base".into());
            None
        }
        (None, Some(label)) if outcome.skipped.is_none() => Some(label.to_string()),
        (None, _) => None,
    };
    if let Some(r) = resolved {
        outcome.variant = Some(r.label);
    }
    if let Some(label) = missing {
        outcome.fail(
            format!(
                "variant `{label}` of `{function}` did not run: it is not compiled into this \
                 binary (build it with GPUTUNE_VARIANTS={function}.{label}), or the bench \
                 never calls `{function}`"
            ),
            ErrorKind::Other,
        );
    }
}

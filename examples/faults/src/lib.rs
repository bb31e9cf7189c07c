//! Fault injection: one tuned function whose `fault` parameter makes a variant fail in each
//! way a search must survive, next to variants that work.
//!
//! | `fault` | what the variant does | what `cargo gputune search` records |
//! |---|---|---|
//! | `none` | sums correctly (`work` repeats the pass: 1 is fastest) | `ok` |
//! | `compile` | does not compile (a failing `const` assertion) | `build_failed` |
//! | `launch` | returns an error | `launch_failed` |
//! | `crash` | aborts the process | `crashed` |
//! | `hang` | never returns | `timeout` |
//! | `wrong` | returns a wrong sum, faster than any correct one | `verify_failed` |
//!
//! The search must finish, record each of these, and pick a `none` variant as the winner.
//!
//! With the `cuda` feature, `cuda` does the same on the GPU, where a crash is a sticky CUDA
//! error and a launch can be invalid (bench `faults-cuda`).

#[cfg(feature = "cuda")]
pub mod cuda;

use gputune_macros::tune;

/// What a failing variant returns.
#[derive(Debug)]
pub struct InjectedFault(pub &'static str);

impl std::fmt::Display for InjectedFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "injected fault: {}", self.0)
    }
}

impl std::error::Error for InjectedFault {}

/// Wrapping sum of `data`, `work` times over; or one of the injected faults.
#[tune(
    fault = [none, compile, launch, crash, hang, wrong],
    work = [1, 2, 3],
    base(fault = none, work = 3)
)]
pub fn checksum(data: &[u64]) -> Result<u64, InjectedFault> {
    // Evaluated when this variant is compiled, and only then: a build holding it fails.
    const _: () = assert!(
        !matches!(FAULT.as_bytes(), b"compile"),
        "injected fault: this variant does not compile"
    );
    match FAULT.as_bytes() {
        b"launch" => return Err(InjectedFault("launch")),
        b"crash" => std::process::abort(),
        b"hang" => loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
        },
        b"wrong" => return Ok(data.first().copied().unwrap_or(0)),
        _ => {}
    }
    let mut total = 0u64;
    for _ in 0..WORK {
        total = std::hint::black_box(data)
            .iter()
            .fold(0u64, |a, &x| a.wrapping_add(x));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    #[test]
    fn base_sums() {
        let data: Vec<u64> = (1..=100).collect();
        assert_eq!(super::checksum(&data).expect("base works"), 5050);
    }
}

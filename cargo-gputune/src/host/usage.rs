//! The one error kind the CLI tells apart from failures: a mistake in how it was called.

/// A mistake in how cargo gputune (or a bench binary, through it) was called: exit 2, where
/// a failure exits 1.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

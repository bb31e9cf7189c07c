//! The exit codes of a bench binary.

/// How a bench process ends; any other code, or death by a signal, is a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum ExitCode {
    /// Every selected state ran, was skipped, or timed out with samples.
    Ok = 0,
    /// At least one state failed (the document says which and why).
    Failed = 1,
    /// A usage error: one line on stderr, starting `error: `.
    Usage = 2,
    /// No usable device (no driver, no GPU, bad ordinal).
    NoDevice = 3,
    /// A sticky device error made the context unusable after the state reported last.
    DeviceLost = 4,
}

impl ExitCode {
    /// Every code, for exhaustive tests and documentation checks.
    pub const ALL: [ExitCode; 5] = [
        ExitCode::Ok,
        ExitCode::Failed,
        ExitCode::Usage,
        ExitCode::NoDevice,
        ExitCode::DeviceLost,
    ];

    /// The process exit code.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The variant of a process exit code, `None` for a crash.
    pub fn from_code(code: i32) -> Option<ExitCode> {
        ExitCode::ALL.into_iter().find(|c| c.code() == code)
    }
}

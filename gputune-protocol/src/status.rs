//! What became of a variant on one workload: the store's `status` column.

use serde::{Deserialize, Serialize};

use crate::record::ErrorKind;

/// A variant's status in the store (`docs/store.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Measured.
    Ok,
    /// Did not build (or its kernel did not compile at run time).
    BuildFailed,
    /// The build ran past its limit.
    BuildTimeout,
    /// The launches failed, or the bench's own code failed.
    LaunchFailed,
    /// The bench process died, or lost the device.
    Crashed,
    /// The run ran past its limit.
    Timeout,
    /// The outputs differ from the reference.
    VerifyFailed,
    /// Not a valid point: a launch the kernel cannot take.
    Invalid,
    /// The bench skipped the workload.
    Skipped,
}

impl Status {
    /// Every status, in declaration order.
    pub const ALL: [Status; 9] = [
        Status::Ok,
        Status::BuildFailed,
        Status::BuildTimeout,
        Status::LaunchFailed,
        Status::Crashed,
        Status::Timeout,
        Status::VerifyFailed,
        Status::Invalid,
        Status::Skipped,
    ];

    /// The stable name, as in the store and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::BuildFailed => "build_failed",
            Status::BuildTimeout => "build_timeout",
            Status::LaunchFailed => "launch_failed",
            Status::Crashed => "crashed",
            Status::Timeout => "timeout",
            Status::VerifyFailed => "verify_failed",
            Status::Invalid => "invalid",
            Status::Skipped => "skipped",
        }
    }

    /// The status of a state that failed with `kind`.
    pub fn of_failure(kind: ErrorKind) -> Status {
        match kind {
            ErrorKind::Compile => Status::BuildFailed,
            ErrorKind::Invalid => Status::Invalid,
            ErrorKind::Launch | ErrorKind::Other => Status::LaunchFailed,
            ErrorKind::DeviceLost => Status::Crashed,
            ErrorKind::Verification => Status::VerifyFailed,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A name that is no [`Status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStatus(pub String);

impl std::fmt::Display for UnknownStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown status `{}`", self.0)
    }
}

impl std::error::Error for UnknownStatus {}

impl std::str::FromStr for Status {
    type Err = UnknownStatus;

    fn from_str(s: &str) -> Result<Status, UnknownStatus> {
        Status::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

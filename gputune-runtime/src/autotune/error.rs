//! What the autotuner can fail with.

use std::path::PathBuf;

use crate::error::BoxError;

/// Result alias of the autotuner.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the autotuner can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The builder was given something that cannot be tuned (even sample count, no valid
    /// candidate, zero period); the message says what.
    #[error("invalid autotuner configuration: {0}")]
    Config(String),
    /// `begin` and `end` were not called in pairs.
    #[error("autotuner misuse: {0}")]
    Sequence(&'static str),
    /// The timer could not start, stop or read a sample (a CUDA error, a non-finite reading).
    /// The sample is discarded and the same parameter is sampled again.
    #[error("autotuner timer failed: {0}")]
    Timer(BoxError),
    /// The device could not be queried or set up for timing (creating events, reading a
    /// kernel's attributes).
    #[error("device error: {0}")]
    Device(String),
    /// The cache file exists but is not a cache this version can read. The tuner tunes as if
    /// it were absent and replaces the file on its next write.
    #[error("the autotune cache {} is corrupt: {message}", path.display())]
    CorruptCache {
        /// The cache file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The cache file could not be read or written.
    #[error("cannot {action} the autotune cache {}: {source}", path.display())]
    CacheIo {
        /// What was being done (`read`, `write`, `create the directory of`, ...).
        action: &'static str,
        /// The file (or directory) concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Persistence was asked for, but no cache location could be found.
    #[error(
        "no location for the autotune cache: set GPUTUNE_AUTOTUNE_CACHE, or HOME \
         (XDG_CACHE_HOME, LOCALAPPDATA on Windows)"
    )]
    NoCacheLocation,
}

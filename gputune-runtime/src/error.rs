//! Error type of the runtime.

/// Boxed error that a bench function or an `exec` closure may return; `?` converts any
/// `std::error::Error` into it.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a bench function returns: an error marks its state failed and the run goes on.
pub type BenchResult = std::result::Result<(), BoxError>;

/// Result alias of the runtime.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything the runtime itself can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A command-line argument or axis override is malformed; the message names what is allowed.
    #[error("{0}")]
    Usage(String),
    /// No device of the requested kind could be opened (no driver, no GPU, bad ordinal).
    #[error("no usable device: {0}")]
    NoDevice(String),
    /// The device reported an error while measuring.
    #[error("device error: {0}")]
    Device(String),
    /// The spin kernel that holds the stream was released by its own timeout: the launches
    /// enqueued behind it did not start within the limit.
    #[error("the blocking kernel timed out after {seconds} s: the launches behind it did not start in time (too many launches per sample, or a hung device)")]
    BlockingKernelTimeout {
        /// The limit that fired, in seconds.
        seconds: f64,
    },
    /// The user's launches failed.
    #[error("launch failed: {0}")]
    Launch(BoxError),
    /// Writing output failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file that could not be written.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

//! Error type of the runtime, and the kinds of failure `cargo gputune` tells apart.

#[cfg(feature = "cuda")]
pub(crate) mod cuda;

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
    /// The device reported an error while measuring; its context is still usable.
    #[error("device error: {0}")]
    Device(String),
    /// The device reported a sticky error (an illegal address, a failed launch, a trap, …):
    /// the CUDA context cannot be used again, so the process must end and the next variant
    /// start in a fresh one. The message names the CUDA error.
    #[error("sticky CUDA error, the context is unusable: {0}")]
    DeviceLost(String),
    /// A kernel compiled at run time did not compile (NVRTC rejected the source, or the
    /// driver rejected its PTX): the variant does not build. The message holds the log.
    #[error("kernel compilation failed: {0}")]
    Compile(String),
    /// A launch configuration exceeds what the kernel or the device allows (block size,
    /// dynamic shared memory, grid size): the variant is not a valid point, and nothing was
    /// launched.
    #[error("invalid launch: {0}")]
    InvalidLaunch(String),
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

impl Error {
    /// What kind of failure this is (see [`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Device(_) | Error::BlockingKernelTimeout { .. } => ErrorKind::Launch,
            Error::DeviceLost(_) => ErrorKind::DeviceLost,
            Error::Compile(_) => ErrorKind::Compile,
            Error::InvalidLaunch(_) => ErrorKind::Invalid,
            // The user's closure failed: what it failed with says more, if it is known.
            Error::Launch(inner) => match ErrorKind::of(inner.as_ref()) {
                ErrorKind::Other => ErrorKind::Launch,
                kind => kind,
            },
            Error::Usage(_) | Error::NoDevice(_) | Error::Io { .. } => ErrorKind::Other,
        }
    }
}

/// What kind of failure a state's error is: `error_kind` on the wire (`docs/bench-json.md`),
/// from which `cargo gputune` chooses the variant's status in the store. One type for both
/// sides, in the protocol crate.
pub use gputune_protocol::ErrorKind;

/// Classifies errors into [`ErrorKind`]s: `ErrorKind::of(error)` with this trait in scope.
/// (The kind is the protocol's; how the runtime's errors map to it is the runtime's.)
pub trait KindOf {
    /// The kind of any error a bench function or a closure returned: the first error in
    /// its `source` chain whose kind is known decides (the runtime's [`Error`], a failed
    /// verification, and with the `cuda` feature cudarc's driver and NVRTC errors, which a
    /// bench's own cudarc calls return); [`ErrorKind::Other`] when none is known.
    fn of(error: &(dyn std::error::Error + 'static)) -> ErrorKind {
        let mut next = Some(error);
        while let Some(e) = next {
            if let Some(e) = e.downcast_ref::<Error>() {
                return e.kind();
            }
            if let Some(e) = e.downcast_ref::<BaseFailed>() {
                return e.kind();
            }
            if e.is::<VerificationFailed>() {
                return ErrorKind::Verification;
            }
            #[cfg(feature = "cuda")]
            if let Some(kind) = cuda::cudarc_error_kind(e) {
                return kind;
            }
            next = e.source();
        }
        ErrorKind::Other
    }
}

impl KindOf for ErrorKind {}

/// The error a failed verification returns from the bench function.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct VerificationFailed(pub String);

/// Base failed while producing the reference a variant is compared with.
///
/// Its kind is not the failure's own: base not compiling, say, is no build failure of the
/// variant being verified. Only a lost device keeps its kind, because it ends the process
/// whoever lost it.
#[derive(Debug, thiserror::Error)]
#[error("running base for its reference outputs: {0}")]
pub struct BaseFailed(pub BoxError);

impl BaseFailed {
    /// [`ErrorKind::DeviceLost`] if base lost the device, else [`ErrorKind::Other`].
    pub fn kind(&self) -> ErrorKind {
        match ErrorKind::of(self.0.as_ref()) {
            ErrorKind::DeviceLost => ErrorKind::DeviceLost,
            _ => ErrorKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> BoxError {
        Box::new(e)
    }

    #[test]
    fn each_error_has_the_kind_its_status_needs() {
        let cases = [
            (Error::Compile("x".into()), ErrorKind::Compile),
            (Error::InvalidLaunch("x".into()), ErrorKind::Invalid),
            (Error::DeviceLost("x".into()), ErrorKind::DeviceLost),
            (Error::Device("x".into()), ErrorKind::Launch),
            (
                Error::BlockingKernelTimeout { seconds: 1.0 },
                ErrorKind::Launch,
            ),
            (Error::Usage("x".into()), ErrorKind::Other),
            (Error::NoDevice("x".into()), ErrorKind::Other),
        ];
        for (error, kind) in cases {
            assert_eq!(error.kind(), kind, "{error}");
            assert_eq!(ErrorKind::of(&error), kind, "{error}");
        }
    }

    #[test]
    fn a_failed_launch_takes_the_kind_of_what_it_failed_with() {
        // The closure's own error says more than "the launches failed".
        let lost = Error::Launch(boxed(Error::DeviceLost(
            "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
        )));
        assert_eq!(lost.kind(), ErrorKind::DeviceLost);
        let invalid = Error::Launch(boxed(Error::InvalidLaunch("2048 threads".into())));
        assert_eq!(invalid.kind(), ErrorKind::Invalid);
        // An error of the bench's own: the launches failed.
        let own = Error::Launch("the bench's own error".into());
        assert_eq!(own.kind(), ErrorKind::Launch);
    }

    #[test]
    fn unknown_errors_are_other_and_verification_is_known() {
        let own: BoxError = "a bench's own error".into();
        assert_eq!(ErrorKind::of(own.as_ref()), ErrorKind::Other);
        let failed = VerificationFailed("verification failed".into());
        assert_eq!(ErrorKind::of(&failed), ErrorKind::Verification);
    }

    #[test]
    fn the_kind_is_found_through_the_source_chain() {
        #[derive(Debug, thiserror::Error)]
        #[error("while compiling the variant")]
        struct Wrapper(#[source] Error);
        let wrapped = Wrapper(Error::Compile("error: expected a `;`".into()));
        assert_eq!(ErrorKind::of(&wrapped), ErrorKind::Compile);
    }

    #[test]
    fn base_failing_for_its_reference_is_not_the_variants_build_failure() {
        // Base not compiling says nothing about the variant being verified …
        let base = BaseFailed(boxed(Error::Compile("bad".into())));
        assert_eq!(ErrorKind::of(&base), ErrorKind::Other);
        // … but a lost context ends the process whoever lost it.
        let base = BaseFailed(boxed(Error::DeviceLost("x".into())));
        assert_eq!(ErrorKind::of(&base), ErrorKind::DeviceLost);
    }

    #[test]
    fn kinds_serialise_as_their_json_names() {
        for kind in [
            ErrorKind::Compile,
            ErrorKind::Invalid,
            ErrorKind::Launch,
            ErrorKind::DeviceLost,
            ErrorKind::Verification,
            ErrorKind::Other,
        ] {
            assert_eq!(
                serde_json::to_value(kind).ok(),
                Some(serde_json::Value::from(kind.as_str()))
            );
            assert_eq!(kind.to_string(), kind.as_str());
        }
    }
}

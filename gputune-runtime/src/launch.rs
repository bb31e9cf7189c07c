//! What an `exec` closure receives: the stream to launch on.

/// Handed to the closure given to [`crate::State::exec`] for each execution.
///
/// On the CUDA backend it carries the stream the measurement records its events on; work
/// launched on another stream is not timed.
#[derive(Debug)]
pub struct Launch<'a> {
    #[cfg(feature = "cuda")]
    pub(crate) stream: Option<&'a std::sync::Arc<cudarc::driver::CudaStream>>,
    #[cfg(not(feature = "cuda"))]
    pub(crate) _marker: std::marker::PhantomData<&'a ()>,
}

impl Launch<'_> {
    /// A launch for CPU code: no stream.
    pub(crate) fn cpu() -> Self {
        Launch {
            #[cfg(feature = "cuda")]
            stream: None,
            #[cfg(not(feature = "cuda"))]
            _marker: std::marker::PhantomData,
        }
    }

    /// The CUDA stream to launch on; an error when the state runs on the CPU backend.
    #[cfg(feature = "cuda")]
    pub fn stream(&self) -> crate::Result<&std::sync::Arc<cudarc::driver::CudaStream>> {
        self.stream.ok_or_else(|| {
            crate::Error::NoDevice(
                "this bench launches CUDA work but runs on the CPU backend".into(),
            )
        })
    }
}

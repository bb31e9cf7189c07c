//! What a bench holds of the measured device: its context and stream, and the kernels it
//! compiles on them.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaModule, CudaStream};

use super::module::load_module;
use super::program::Program;
use crate::error::Result;

/// Each name expression and the lowered (mangled) name a module holds its kernel under.
pub type LoweredNames = Vec<(String, String)>;

/// What a bench uses to allocate buffers, copy data and load its kernels on the measured
/// device.
///
/// Launch timed work on [`Launch::stream`](crate::Launch::stream) inside `exec`; `stream` here
/// is that same stream, for setup and verification outside the timed region.
#[derive(Debug, Clone)]
pub struct CudaHandles {
    /// The primary context of the measured device.
    pub context: Arc<CudaContext>,
    /// The stream the measurement records its events on; work on another stream is not timed.
    pub stream: Arc<CudaStream>,
}

// `precompile` is with the background pool it starts, in precompile.rs.
impl CudaHandles {
    /// Compiles CUDA C++ with NVRTC for this device and loads the module.
    ///
    /// Each `(NAME, VALUE)` in `defines` becomes `-DNAME=VALUE`, which is how tuned parameters
    /// reach the kernel. The code is compiled to SASS for the device's own architecture
    /// (`sm_XY`); if this NVRTC does not know that architecture, to PTX (`compute_XY`, then the
    /// newest architecture it knows below the device's) for the driver to JIT. Kernels need
    /// `extern "C"` to be found by name. The NVRTC log is part of the error, which is
    /// [`Error::Compile`](crate::Error::Compile) when NVRTC rejects the source (the variant
    /// does not build, and `cargo gputune` records it as `build_failed`).
    ///
    /// Compiling is cached: the same `(source, defines)` is compiled at most once per process
    /// (later calls return the loaded module), and images are kept on disk across processes
    /// (see [`kernel_cache`](crate::backend::kernel_cache): `$GPUTUNE_KERNEL_CACHE`, else
    /// `$XDG_CACHE_HOME/gputune/kernels`, else `~/.cache/gputune/kernels`), keyed by the
    /// source, the options and NVRTC's version. The order of `defines` is part of the key.
    ///
    /// CUDA's headers (`<cuda_fp16.h>`, CUB, cooperative groups) are found without asking, and
    /// the code is C++17; [`CudaHandles::compile_program`] adds headers and options.
    ///
    /// Defines reach NVRTC's built-in headers too: a one-letter name such as `T` turns their
    /// `template <typename T>` into nonsense, so give defines distinctive names (`VALUE_T`).
    pub fn compile(&self, source: &str, defines: &[(&str, String)]) -> Result<Arc<CudaModule>> {
        load_module(&self.context, &Program::new(source), defines, &[]).map(|(module, _)| module)
    }

    /// [`CudaHandles::compile`], finding kernels by C++ name: each of `names` is an NVRTC name
    /// expression (`scale`, `ns::scale`, `scale<float>`), and the result pairs it with the
    /// lowered (mangled) name to load it by, so kernels need no `extern "C"`. The names are
    /// part of the cache key.
    pub fn compile_named(
        &self,
        source: &str,
        defines: &[(&str, String)],
        names: &[&str],
    ) -> Result<(Arc<CudaModule>, LoweredNames)> {
        self.compile_program(&Program::new(source), defines, names)
    }

    /// [`CudaHandles::compile_named`] for a [`Program`]: a source with the headers it includes
    /// by name, include directories and compiler options, all part of the cache key.
    pub fn compile_program(
        &self,
        program: &Program,
        defines: &[(&str, String)],
        names: &[&str],
    ) -> Result<(Arc<CudaModule>, LoweredNames)> {
        load_module(&self.context, program, defines, names)
            .map(|(module, image)| (module, image.names.clone()))
    }
}

//! A kernel compiled (or loaded) for one variant on one context: the function, the limits its
//! launches must respect, what it compiled to, and the other kernels of its module.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::{
    sys::CUfunction_attribute as Attribute, CudaContext, CudaFunction, CudaModule, LaunchConfig,
};
use gputune_protocol::KernelRecord;

use crate::backend::cuda::{driver_error, LaunchLimits};
use crate::error::{Error, Result};

/// A kernel compiled for one variant on one context, with the limits its launches must
/// respect and what it compiled to.
#[derive(Debug, Clone)]
pub struct Compiled {
    function: CudaFunction,
    limits: LaunchLimits,
    record: Arc<KernelRecord>,
    /// The dynamic shared memory the function was opted in to, shared by every copy of this
    /// compiled kernel (the attribute belongs to the function).
    raised: Arc<AtomicU32>,
    /// The module it is in, for the other kernels of the same compilation.
    module: Arc<Module>,
}

/// Whether two C++ names are the same, whitespace aside (`scale<float, 4>`).
pub(super) fn same_name(a: &str, b: &str) -> bool {
    a.chars()
        .filter(|c| !c.is_whitespace())
        .eq(b.chars().filter(|c| !c.is_whitespace()))
}

/// What the kernels of one compiled module share.
#[derive(Debug)]
pub(super) struct Module {
    /// The module.
    pub module: Arc<CudaModule>,
    /// Its context: bound to the calling thread before a call on its functions that cudarc
    /// does not bind itself (`set_attribute`).
    pub context: Arc<CudaContext>,
    /// Each name the module was compiled with (a name expression) and its symbol.
    pub names: Vec<(String, String)>,
    /// The options its kernels' records name.
    pub options: Vec<String>,
    /// Its other kernels, loaded once each, with the state epoch each was last noted in
    /// ([`crate::launched`]).
    pub siblings: Mutex<Vec<(String, Compiled, AtomicU64)>>,
}

impl Compiled {
    /// `function` of `module`, named `name`, with its limits read and what it compiled to.
    pub(super) fn new(function: CudaFunction, name: &str, module: Arc<Module>) -> Result<Compiled> {
        Ok(Compiled {
            limits: LaunchLimits::of(&function)?,
            record: Arc::new(compiled_to(&function, name, module.options.clone())?),
            function,
            raised: Arc::default(),
            module,
        })
    }

    /// Another kernel of the same compiled module (the same variant's program, compiled once):
    /// `LAYERNORM.get(TUNED, stream, &[])?.kernel("layernorm_forward_kernel3")?`, by its C++
    /// name where the handle lists it in [`Kernel::module_names`](super::Kernel::module_names),
    /// or by its symbol (an `extern "C"` kernel's name). In an image nvcc built
    /// ([`Kernel::nvcc`](super::Kernel::nvcc)) every kernel is found by its C++ name, listed or
    /// not; in a shipped module ([`Kernel::ptx`](super::Kernel::ptx)), by its symbol. Loaded once
    /// per compiled module.
    pub fn kernel(&self, name: &str) -> Result<Compiled> {
        let mut siblings = self
            .module
            .siblings
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((_, k, seen)) = siblings.iter().find(|(n, _, _)| n == name) {
            crate::launched::note(seen, k.record());
            return Ok(k.clone());
        }
        // As an nvcc image's table is searched: `k<float,4>` is `k<float, 4>`.
        let same = |a: &str| same_name(a, name);
        let symbol = self
            .module
            .names
            .iter()
            .find(|(n, _)| same(n))
            .map_or(name, |(_, s)| s.as_str());
        let function = self.module.module.load_function(symbol).map_err(|e| {
            Error::Compile(format!(
                "kernel `{name}` (symbol `{symbol}`) is not in the module ({e}); a kernel with \
                 C++ linkage is found by name where the handle lists it in \
                 `Kernel::module_names`"
            ))
        })?;
        let kernel = Compiled::new(function, name, self.module.clone())?;
        let seen = AtomicU64::new(0);
        crate::launched::note(&seen, kernel.record());
        siblings.push((name.to_string(), kernel.clone(), seen));
        Ok(kernel)
    }

    /// What it compiled to: registers per thread, local memory per thread, static shared
    /// memory per block, and the compiler options of its variant.
    pub fn record(&self) -> &KernelRecord {
        &self.record
    }

    /// The function, for `stream.launch_builder`. cudarc's launches bind the stream's context
    /// to the calling thread, but some of its other calls on the function do not
    /// (`occupancy_max_active_blocks_per_multiprocessor`, `set_attribute`): call
    /// `stream.context().bind_to_thread()` before those.
    pub fn function(&self) -> &CudaFunction {
        &self.function
    }

    /// The limits its launches must respect (threads and dynamic shared memory per block as
    /// this kernel, with its registers and `__launch_bounds__`, allows; the device's grid).
    pub fn limits(&self) -> &LaunchLimits {
        &self.limits
    }

    /// `config` if this kernel can be launched with it; else [`Error::InvalidLaunch`] naming
    /// the limit, which makes the variant `invalid` (not a point of the space) rather than a
    /// failed launch. More dynamic shared memory than the default 48 KiB is opted in to here,
    /// once per compiled kernel, up to the device's opt-in limit (227 KiB on an H100).
    pub fn check(&self, config: LaunchConfig) -> Result<LaunchConfig> {
        let mut limits = self.limits;
        let raised = self.raised.load(Ordering::Relaxed);
        limits.max_dynamic_shared_bytes = limits.max_dynamic_shared_bytes.max(raised);
        let wanted = config.shared_mem_bytes;
        if wanted > limits.max_dynamic_shared_bytes && wanted <= limits.max_dynamic_shared_optin {
            // A thread of the application's may have no context current.
            self.module
                .context
                .bind_to_thread()
                .map_err(|e| driver_error("binding the kernel's context", e))?;
            self.function
                .set_attribute(
                    Attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    i32::try_from(wanted).unwrap_or(i32::MAX),
                )
                .map_err(|e| driver_error("opting in to more dynamic shared memory", e))?;
            self.raised.fetch_max(wanted, Ordering::Relaxed);
            limits.max_dynamic_shared_bytes = wanted;
        }
        limits.check(&config)?;
        Ok(config)
    }

    /// A checked one-dimensional grid-stride launch of `block` threads per block over `n`
    /// items ([`LaunchLimits::grid_stride`]).
    pub fn grid_stride(&self, n: usize, block: u32) -> Result<LaunchConfig> {
        self.limits.grid_stride(n, block)
    }
}

/// What `function` (the kernel `name`, built with `options`) compiled to, from the driver.
pub(super) fn compiled_to(
    function: &CudaFunction,
    name: &str,
    options: Vec<String>,
) -> Result<KernelRecord> {
    let attribute = |a: Attribute| {
        function
            .get_attribute(a)
            .map(|v| u32::try_from(v).unwrap_or(0))
            .map_err(|e| driver_error("reading what the kernel compiled to", e))
    };
    Ok(KernelRecord {
        name: name.to_string(),
        registers: attribute(Attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
        local_bytes: attribute(Attribute::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
        shared_bytes: attribute(Attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
        options,
    })
}

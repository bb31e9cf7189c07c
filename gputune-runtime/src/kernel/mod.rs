//! A tuned CUDA kernel in a few lines: [`Kernel`] takes the CUDA source and the kernel's
//! name; inside a `#[tune]` function, [`Kernel::get`] with the variant's `TUNED` compiles the
//! kernel with every tuning parameter as a `-D` define, starts compiling every other variant
//! the process will run in the background the first time, and returns a [`Compiled`] kernel
//! whose [`check`](Compiled::check) refuses a launch the kernel cannot take (recorded
//! `invalid`, not `launch_failed`).
//!
//! A kernel compiles as nvcc compiles device code: CUDA's headers (`<cuda_bf16.h>`, CUB,
//! cooperative groups) are found without asking and the dialect is C++17. A kernel kept in a
//! `.cu` file of the crate is best declared with `gputune_macros::kernel!("src/sum.cu",
//! "sum")`, which embeds the file and every header of the crate it includes with
//! `#include "…"`, so the bench binary needs no source tree. Compiler options may be fixed
//! ([`Kernel::options`]) or tuning parameters ([`Kernel::option_params`]); what each variant
//! compiled to (registers, local memory) is recorded with its results.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use gputune_macros::tune;
//! use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
//! use gputune_runtime::kernel::Kernel;
//!
//! static SCALE: Kernel = Kernel::new(
//!     r#"__global__ void scale(const float* x, float* y, float a, unsigned n) {
//!         unsigned i = blockIdx.x * TPB + threadIdx.x;
//!         if (i < n) y[i] = a * x[i];
//!     }"#,
//!     "scale",
//! );
//!
//! #[tune(tpb = [128, 256, 512, 2048], base(tpb = 256))]
//! pub fn scale(
//!     stream: &Arc<CudaStream>,
//!     x: &CudaSlice<f32>,
//!     y: &mut CudaSlice<f32>,
//!     a: f32,
//! ) -> gputune_runtime::Result<()> {
//!     let n = x.len() as u32;
//!     let kernel = SCALE.get(TUNED, stream, &[])?;
//!     // tpb = 2048 is more than a block can hold: `check` makes that variant `invalid`.
//!     let config = kernel.check(LaunchConfig {
//!         grid_dim: (n.div_ceil(TPB as u32), 1, 1),
//!         block_dim: (TPB as u32, 1, 1),
//!         shared_mem_bytes: 0,
//!     })?;
//!     let mut launch = stream.launch_builder(kernel.function());
//!     launch.arg(x).arg(y).arg(&a).arg(&n);
//!     // SAFETY: the arguments match the kernel's signature, and it touches only i < n.
//!     unsafe { launch.launch(config) }.map_err(|e| gputune_runtime::Error::Device(e.to_string()))?;
//!     Ok(())
//! }
//! ```

mod compiled;
mod launchers;
mod options;
mod prebuilt;

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use cudarc::driver::{sys::CUfunction_attribute as Attribute, CudaFunction, CudaStream};

use crate::backend::cuda::{driver_error, CompileJob, CudaHandles, Program};
use crate::cuda_text::Declared;
use crate::error::{Error, Result};
use crate::tuned::{self, Variant};

pub use compiled::Compiled;
pub use launchers::{launch_status, LauncherImage, Launchers};
pub use options::OptionRule;
pub use prebuilt::{runs_on, NvccImage};

use prebuilt::Prebuilt;

/// The kernel symbols of a PTX text (`.entry` names), such as the ones a shipped module
/// holds.
pub fn ptx_entries(ptx: &str) -> Vec<String> {
    crate::cuda_text::ptx_entries(ptx)
}

/// A Rust element type and the name CUDA C++ gives it, for an element-type define
/// (`SCALE.get(TUNED, stream, &[("VALUE_T", T::CUDA_NAME)])`).
pub trait CudaType: cudarc::driver::DeviceRepr + Copy + Send + Sync + 'static {
    /// The CUDA C++ type name (`float`, `unsigned int`, …).
    const CUDA_NAME: &'static str;
}

macro_rules! cuda_types {
    ($($t:ty => $name:literal),* $(,)?) => {$(
        impl CudaType for $t {
            const CUDA_NAME: &'static str = $name;
        }
    )*};
}

cuda_types!(
    f32 => "float", f64 => "double", i8 => "signed char", u8 => "unsigned char",
    i16 => "short", u16 => "unsigned short", i32 => "int", u32 => "unsigned int",
    i64 => "long long", u64 => "unsigned long long",
);

pub use crate::tuned::{Tuned, VALUE_SEPARATOR};

/// A CUDA C++ kernel that tuned functions launch: declare it once as a `static`.
///
/// Each parameter of the running variant reaches the source as `-DCONST=value` under its
/// `const` name (`ipt` → `IPT`; booleans as `1`/`0`, identifiers as written), unless
/// [`Kernel::rename`] maps it to another macro name. Further defines that are not tuning
/// parameters (an element type, say) are passed to [`Kernel::get`]. The name is an NVRTC
/// name expression: a plain `__global__ void scale(…)` (C++ linkage), `ns::scale`, a
/// template instance `scale<float>` and an `extern "C"` kernel are all found.
#[derive(Debug)]
pub struct Kernel {
    source: &'static str,
    name: &'static str,
    /// Code compiled before the process started; `None`: `source` compiled by NVRTC.
    prebuilt: Option<Prebuilt>,
    /// Function attributes set once per compiled kernel.
    attributes: &'static [(Attribute, i32)],
    /// The source's file name in NVRTC's messages (empty: NVRTC's default for gputune).
    file_name: &'static str,
    /// Headers handed to NVRTC by include name: `(name, contents)`.
    headers: &'static [(&'static str, &'static str)],
    /// Include directories searched before CUDA's.
    include_dirs: &'static [&'static str],
    /// Compiler options of every variant.
    options: &'static [&'static str],
    /// Tuning parameters that are compiler options too: declared name and rule.
    option_params: &'static [(&'static str, OptionRule)],
    renames: &'static [(&'static str, &'static str)],
    /// Every kernel of the source that handles use ([`Kernel::module_names`]): the name
    /// expressions it is compiled with, the same for all of them so that they share one
    /// module. Empty: only `name`.
    module_names: &'static [&'static str],
    /// The program every variant starts from (source, headers, directories, fixed options),
    /// built once: variants share its source instead of copying it.
    base: OnceLock<Program>,
    /// The identifiers of the source and its headers, read once.
    identifiers: OnceLock<std::collections::HashSet<String>>,
    /// The names the source and its headers declare, with the file that does, read once.
    declared: OnceLock<std::collections::HashMap<String, (&'static str, Declared)>>,
    /// Compiled kernels by context, variant and extra defines; a few entries per process.
    compiled: Mutex<Vec<Entry>>,
    /// The (context, extra defines, plan) whose planned variants are compiling in the
    /// background ([`crate::tuned::plans`]: a later pass plans anew).
    prepared: Mutex<Vec<(usize, Defines, u64)>>,
}

/// Owned `(NAME, VALUE)` defines.
type Defines = Vec<(String, String)>;

#[derive(Debug)]
struct Entry {
    context: usize,
    /// The variant's function and values (its `TUNED`): two variants never share both, and
    /// comparing them is cheaper than comparing defines.
    variant: (&'static str, &'static str),
    extra: Defines,
    kernel: Compiled,
    /// The state epoch it was last noted in ([`crate::launched`]).
    seen: AtomicU64,
}

/// A label's value as a define: labels write booleans as Rust does, defines as C does.
fn c_value(label_value: String) -> String {
    match label_value.as_str() {
        "true" => "1".to_string(),
        "false" => "0".to_string(),
        _ => label_value,
    }
}

/// Locks a mutex whose data stays whole even if a thread panicked while holding it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Kernel {
    /// The kernel `name` of the CUDA C++ `source`.
    pub const fn new(source: &'static str, name: &'static str) -> Kernel {
        Kernel {
            source,
            name,
            prebuilt: None,
            attributes: &[],
            file_name: "",
            headers: &[],
            include_dirs: &[],
            options: &[],
            option_params: &[],
            renames: &[],
            module_names: &[],
            base: OnceLock::new(),
            identifiers: OnceLock::new(),
            declared: OnceLock::new(),
            compiled: Mutex::new(Vec::new()),
            prepared: Mutex::new(Vec::new()),
        }
    }

    /// The kernel `name` of PTX text an application ships (`candle_kernels::REDUCE`): the
    /// module is handed to the driver as the application hands it (its JIT compiles it once
    /// per process and context, and handles of the same text share the module), nothing is
    /// compiled per variant, and the tuning parameters change only the launch. `name` is the
    /// symbol as the PTX holds it (`.entry`).
    pub const fn ptx(ptx: &'static str, name: &'static str) -> Kernel {
        let mut kernel = Kernel::new("", name);
        kernel.prebuilt = Some(Prebuilt::Ptx(ptx));
        kernel
    }

    /// [`Kernel::ptx`] of PTX text an application hands out through a function, which a
    /// `static` cannot call: `Kernel::ptx_from(|| candle_kernels::REDUCE.ptx(), "rmsnorm_f32")`.
    pub const fn ptx_from(ptx: fn() -> &'static str, name: &'static str) -> Kernel {
        let mut kernel = Kernel::new("", name);
        kernel.prebuilt = Some(Prebuilt::PtxFrom(ptx));
        kernel
    }

    /// The kernel `name` (its symbol) of a cubin's or fatbin's bytes an application ships,
    /// loaded once per process and context as [`Kernel::ptx`] is.
    pub const fn image(image: &'static [u8], name: &'static str) -> Kernel {
        let mut kernel = Kernel::new("", name);
        kernel.prebuilt = Some(Prebuilt::Image(image));
        kernel
    }

    /// The kernel `name` (as C++ writes it: `scale`, `ns::scale<float>`, or its symbol) of
    /// the images nvcc compiled at build time, one per variant: what
    /// `gputune_macros::nvcc_kernel!("src/scale.cu", "scale")` declares over the table the
    /// build helper wrote (`Builder::kernels` in build.rs). The variant's image is loaded once
    /// per process and context; nothing compiles on the GPU host.
    pub const fn nvcc(images: &'static [NvccImage], name: &'static str) -> Kernel {
        let mut kernel = Kernel::new("", name);
        kernel.prebuilt = Some(Prebuilt::Nvcc(images));
        kernel
    }

    /// Function attributes set once on each compiled kernel before its limits are read, such
    /// as the preferred shared-memory carveout: `&[(CUfunction_attribute::
    /// CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100)]`. (More dynamic shared memory
    /// needs none: [`Compiled::check`] opts in to what a launch asks for.)
    pub const fn attributes(mut self, attributes: &'static [(Attribute, i32)]) -> Kernel {
        self.attributes = attributes;
        self
    }

    /// Names the source in NVRTC's messages (`sum.cu`); `kernel!` gives the file's name.
    pub const fn file_name(mut self, name: &'static str) -> Kernel {
        self.file_name = name;
        self
    }

    /// Hands NVRTC these headers by include name (`("my_utils.cuh", contents)`), so that
    /// `#include "my_utils.cuh"` needs no file at run time; `kernel!` finds and embeds them.
    /// Their contents are part of the kernel cache's key.
    pub const fn headers(mut self, headers: &'static [(&'static str, &'static str)]) -> Kernel {
        self.headers = headers;
        self
    }

    /// Include directories (`-I`) searched before CUDA's: headers outside the crate and
    /// outside CUDA. They must exist where the bench runs; the cache keys them by path.
    pub const fn include_dirs(mut self, dirs: &'static [&'static str]) -> Kernel {
        self.include_dirs = dirs;
        self
    }

    /// Compiler options of every variant, as NVRTC takes them: `--use_fast_math`,
    /// `-lineinfo`, `-std=c++20` (which replaces the default C++17).
    pub const fn options(mut self, options: &'static [&'static str]) -> Kernel {
        self.options = options;
        self
    }

    /// Tuning parameters that are compiler options: each declared name and the rule that
    /// makes its value an option, e.g. for `#[tune(maxrreg = [0, 32, 64], fast_math =
    /// [false, true], …)]`, `&[("maxrreg", OptionRule::MaxRegisters), ("fast_math",
    /// OptionRule::Flag("--use_fast_math"))]`. The parameters stay defines too.
    pub const fn option_params(mut self, params: &'static [(&'static str, OptionRule)]) -> Kernel {
        self.option_params = params;
        self
    }

    /// Passes the parameters named in `renames` (declared name → macro name) under another
    /// macro name than their `const` name: `&[("tpb", "BLOCK_SIZE")]`.
    pub const fn rename(mut self, renames: &'static [(&'static str, &'static str)]) -> Kernel {
        self.renames = renames;
        self
    }

    /// Declares every kernel of the source that handles launch (this one included), for a
    /// source with several: each handle then compiles the source with all their names, so
    /// the handles share one module (one compilation per variant) instead of compiling it
    /// once each.
    pub const fn module_names(mut self, names: &'static [&'static str]) -> Kernel {
        self.module_names = names;
        self
    }

    /// The name expressions the source is compiled with.
    fn names(&self) -> &[&'static str] {
        if self.module_names.is_empty() {
            std::slice::from_ref(&self.name)
        } else {
            self.module_names
        }
    }

    /// The program of a variant whose parameters have the declared names and values
    /// `values` (as a label writes them): the source, headers, include directories, the
    /// options of every variant, then those [`Kernel::option_params`] make of its values.
    pub fn program<'a>(
        &self,
        values: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Program> {
        let mut program = self
            .base
            .get_or_init(|| {
                let mut program = Program::new(self.source);
                if !self.file_name.is_empty() {
                    program = program.file_name(self.file_name);
                }
                for (name, contents) in self.headers {
                    program = program.header(name, contents);
                }
                for dir in self.include_dirs {
                    program = program.include_dir(dir);
                }
                for option in self.options {
                    program = program.option(*option);
                }
                program
            })
            .clone();
        if self.option_params.is_empty() {
            return Ok(program);
        }
        for (name, value) in values {
            if let Some((_, rule)) = self.option_params.iter().find(|(n, _)| *n == name) {
                if let Some(option) = rule.option(value)? {
                    program = program.option(option);
                }
            }
        }
        Ok(program)
    }

    /// [`Kernel::program`] of the variant `tuned` is.
    fn variant_program(&self, tuned: Tuned) -> Result<Program> {
        self.program(tuned.entries().map(|(n, _, v, _)| (n, v)))
    }

    /// Whether the variant `label` of a function whose parameters and base values are
    /// `params` (its `NAME_PARAMS`) compiles for compute capability `cc` with `extra`
    /// defines, without a GPU: headers, options and option parameters included. `Ok(false)`
    /// where NVRTC cannot be loaded; a rejected source is [`Error::Compile`] with the log.
    /// Every label of the space is in the build script's `OUT_DIR/gputune/manifest.json`
    /// (`functions[i].labels`).
    pub fn compiles_for(
        &self,
        params: &'static [(&'static str, &'static str)],
        label: &str,
        extra: &[(&str, &str)],
        cc: i32,
    ) -> Result<bool> {
        let variant = Variant::parse(label, params)?;
        let program = self.program(variant.values.iter().map(|(n, v)| (*n, v.as_str())))?;
        let defines = self.label_defines(params, label, extra)?;
        let defines: Vec<(&str, String)> = defines
            .iter()
            .map(|(n, v)| (n.as_str(), v.clone()))
            .collect();
        crate::backend::cuda::compiles_for(program, &defines, cc)
    }

    /// The defines of one variant: `extra` first, then each parameter the source reads under
    /// its macro name ([`Kernel::reads`]): a parameter only the launch uses compiles nothing.
    pub fn defines<'a>(
        &self,
        params: impl IntoIterator<Item = (&'a str, &'a str, String)>,
        extra: &[(&'a str, &str)],
    ) -> Vec<(&'a str, String)> {
        let mut out: Vec<(&str, String)> =
            extra.iter().map(|(n, v)| (*n, (*v).to_string())).collect();
        for (name, const_name, value) in params {
            let macro_name = self.macro_name(name, const_name);
            if self.reads(name, macro_name) {
                out.push((macro_name, value));
            }
        }
        out
    }

    /// The macro name of parameter `name` whose `const` is `const_name`: its mapping
    /// ([`Kernel::rename`]) or the `const` name.
    fn macro_name<'a>(&self, name: &str, const_name: &'a str) -> &'a str {
        self.renames
            .iter()
            .find(|(from, _)| *from == name)
            .map_or(const_name, |(_, to)| *to)
    }

    /// [`Error::Compile`] where a tuning parameter's define would replace a name that the
    /// source or an embedded header declares itself (`const int BLOCK_SIZE = 256;`, an
    /// unguarded `#define BLOCK_SIZE`): NVRTC would compile the value in its place and point
    /// at the replaced text. Sources that only read the macro pass. `params` are
    /// `(name, const name)` pairs.
    pub fn check_defines<'a>(
        &self,
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<()> {
        let declared = self.declared.get_or_init(|| {
            let mut all = std::collections::HashMap::new();
            let source = if self.file_name.is_empty() {
                "the kernel source"
            } else {
                self.file_name
            };
            for (file, text) in std::iter::once((source, self.source))
                .chain(self.headers.iter().map(|(name, text)| (*name, *text)))
            {
                for (name, d) in crate::cuda_text::declared(text) {
                    all.entry(name).or_insert((file, d));
                }
            }
            all
        });
        for (name, const_name) in params {
            let macro_name = self.macro_name(name, const_name);
            if let Some((file, d)) = declared.get(macro_name) {
                if self.reads(name, macro_name) {
                    return Err(Error::Compile(d.clash(name, macro_name, file)));
                }
            }
        }
        Ok(())
    }

    /// Whether the variant's parameter `param` reaches the compiler as the define
    /// `macro_name`: where the source or its embedded headers name it, where it is an option
    /// parameter, and always where include directories hold headers this handle cannot read.
    pub fn reads(&self, param: &str, macro_name: &str) -> bool {
        if !self.include_dirs.is_empty() || self.option_params.iter().any(|(n, _)| *n == param) {
            return true;
        }
        self.identifiers
            .get_or_init(|| {
                let mut ids = crate::cuda_text::identifiers(self.source);
                for (_, text) in self.headers {
                    ids.extend(crate::cuda_text::identifiers(text));
                }
                ids
            })
            .contains(macro_name)
    }

    /// The defines of the variant `tuned` is.
    pub fn variant_defines<'a>(
        &self,
        tuned: Tuned,
        extra: &[(&'a str, &str)],
    ) -> Vec<(&'a str, String)>
    where
        'static: 'a,
    {
        self.defines(
            tuned.entries().map(|(n, c, v, _)| (n, c, v.to_string())),
            extra,
        )
    }

    /// The defines of every variant this process was asked to run (`--variant`; base first,
    /// which verification runs), in the order they run: what to compile in the background.
    pub fn planned_defines<'a>(
        &self,
        tuned: Tuned,
        extra: &[(&'a str, &str)],
    ) -> Result<Vec<Vec<(&'a str, String)>>>
    where
        'static: 'a,
    {
        Ok(self
            .planned(tuned, extra)?
            .into_iter()
            .map(|(_, defines)| defines)
            .collect())
    }

    /// Each planned variant's parameter values (as labels write them) and defines.
    #[allow(clippy::type_complexity)]
    fn planned<'a>(
        &self,
        tuned: Tuned,
        extra: &[(&'a str, &str)],
    ) -> Result<Vec<(Vec<(&'static str, String)>, Vec<(&'a str, String)>)>>
    where
        'static: 'a,
    {
        let names: Vec<(&'static str, &'static str)> = tuned
            .params()
            .iter()
            .map(|(n, _, base)| (*n, *base))
            .collect();
        tuned::to_prepare(tuned.function())
            .iter()
            .map(|label| {
                let variant = Variant::parse(label, &names)?;
                let params = tuned
                    .params()
                    .iter()
                    .zip(&variant.values)
                    .map(|((n, c, _), (_, v))| (*n, *c, c_value(v.clone())));
                Ok((variant.values.clone(), self.defines(params, extra)))
            })
            .collect()
    }

    /// The defines of the variant `label` (`bm_64.bn_128…`, or `base`) of a function whose
    /// parameters and base values are `params` (the `NAME_PARAMS` that `#[tune]` declares):
    /// for tests that compile every point of a space with NVRTC.
    pub fn label_defines(
        &self,
        params: &'static [(&'static str, &'static str)],
        label: &str,
        extra: &[(&str, &str)],
    ) -> Result<Vec<(String, String)>> {
        let variant = Variant::parse(label, params)?;
        let consts: Vec<String> = params.iter().map(|(n, _)| n.to_uppercase()).collect();
        self.check_defines(
            params
                .iter()
                .zip(&consts)
                .map(|((n, _), c)| (*n, c.as_str())),
        )?;
        let values = variant.values.into_iter().map(|(_, v)| c_value(v));
        let defines = self.defines(
            params
                .iter()
                .zip(&consts)
                .zip(values)
                .map(|(((n, _), c), v)| (*n, c.as_str(), v)),
            extra,
        );
        Ok(defines
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect())
    }

    /// The kernel of variant `tuned` on `stream`'s context, with `extra` defines (an element
    /// type, say): compiled once per process, context, variant and defines (NVRTC, with the
    /// runtime's kernel cache), its launch limits read once. The first call for a context and
    /// set of `extra` defines starts compiling every planned variant in the background.
    pub fn get(
        &self,
        tuned: Tuned,
        stream: &Arc<CudaStream>,
        extra: &[(&str, &str)],
    ) -> Result<Compiled> {
        let context = stream.context().cu_ctx() as usize;
        let variant = (tuned.function(), tuned.values());
        let same_extra = |e: &[(String, String)]| {
            e.len() == extra.len() && e.iter().zip(extra).all(|((a, b), (c, d))| a == c && b == d)
        };
        if let Some(e) = lock(&self.compiled)
            .iter()
            .find(|e| e.context == context && e.variant == variant && same_extra(&e.extra))
        {
            crate::launched::note(&e.seen, e.kernel.record());
            return Ok(e.kernel.clone());
        }
        let (function, module) = match self.prebuilt {
            Some(prebuilt) => {
                let loaded = prebuilt.load(self.name, tuned, extra, stream.context())?;
                (loaded.function, loaded.module)
            }
            None => self.compile(tuned, stream, extra)?,
        };
        if !self.attributes.is_empty() {
            // cudarc does not bind the context for `set_attribute`.
            stream
                .context()
                .bind_to_thread()
                .map_err(|e| driver_error("binding the kernel's context", e))?;
        }
        for (attribute, value) in self.attributes {
            function
                .set_attribute(*attribute, *value)
                .map_err(|e| driver_error("setting the kernel's attributes", e))?;
        }
        let kernel = Compiled::new(function, self.name, Arc::new(module))?;
        let entry = Entry {
            context,
            variant,
            extra: extra
                .iter()
                .map(|(n, v)| ((*n).to_string(), (*v).to_string()))
                .collect(),
            kernel: kernel.clone(),
            seen: AtomicU64::new(0),
        };
        crate::launched::note(&entry.seen, kernel.record());
        lock(&self.compiled).push(entry);
        Ok(kernel)
    }

    /// The variant's function compiled by NVRTC (every planned variant starting in the
    /// background the first time), and its code options.
    fn compile(
        &self,
        tuned: Tuned,
        stream: &Arc<CudaStream>,
        extra: &[(&str, &str)],
    ) -> Result<(CudaFunction, compiled::Module)> {
        // Before anything compiles: every variant would fail the same way, in NVRTC's words.
        self.check_defines(tuned.entries().map(|(n, c, _, _)| (n, c)))?;
        let handles = CudaHandles {
            context: stream.context().clone(),
            stream: stream.clone(),
        };
        self.prepare(tuned, &handles, extra)?;
        let defines = self.variant_defines(tuned, extra);
        let program = self.variant_program(tuned)?;
        let (module, lowered) = crate::timeline::timed(crate::timeline::Part::CompileWait, || {
            handles.compile_program(&program, &defines, self.names())
        })?;
        let symbol = lowered
            .iter()
            .find(|(expression, _)| expression == self.name)
            .map_or(self.name, |(_, symbol)| symbol.as_str());
        let function = module.load_function(symbol).map_err(|e| {
            Error::Compile(format!(
                "kernel `{}` (symbol `{symbol}`) is not in the compiled module: {e}",
                self.name
            ))
        })?;
        let module = compiled::Module {
            module,
            context: stream.context().clone(),
            names: lowered,
            options: program.code_options(),
            siblings: Mutex::default(),
        };
        Ok((function, module))
    }

    /// The kernel of a source that is not tuned (an input generator, a second pass at fixed
    /// parameters), with `extra` defines: compiled once per process, context and defines. Of
    /// an nvcc file, the image built once, for no tuned function (`CudaFile::new(…)` without
    /// `functions` in build.rs), whose kernels a tuned function's launch may pick from.
    pub fn fixed(&self, stream: &Arc<CudaStream>, extra: &[(&str, &str)]) -> Result<Compiled> {
        self.get(Tuned::UNTUNED, stream, extra)
    }

    /// Starts compiling the planned variants once per context, `extra` defines and plan.
    fn prepare(&self, tuned: Tuned, handles: &CudaHandles, extra: &[(&str, &str)]) -> Result<()> {
        let context = handles.context.cu_ctx() as usize;
        let key: Vec<(String, String)> = extra
            .iter()
            .map(|(n, v)| ((*n).to_string(), (*v).to_string()))
            .collect();
        let plan = crate::tuned::plans();
        {
            let mut prepared = lock(&self.prepared);
            if prepared
                .iter()
                .any(|(c, e, p)| *c == context && *e == key && *p == plan)
            {
                return Ok(());
            }
            prepared.push((context, key, plan));
        }
        let jobs = self.planned_jobs(tuned, extra)?;
        if !jobs.is_empty() {
            // Each job's errors come back from its own `compile`; dropping the handle leaves
            // the work going on.
            let _background = handles.precompile_programs(&jobs, self.names())?;
        }
        Ok(())
    }

    /// The program and defines of every planned variant, in the order they run. A variant
    /// whose option parameters make no option is left to fail when it runs.
    fn planned_jobs<'a>(
        &self,
        tuned: Tuned,
        extra: &[(&'a str, &str)],
    ) -> Result<Vec<CompileJob<'a>>>
    where
        'static: 'a,
    {
        let mut jobs = Vec::new();
        for (values, defines) in self.planned(tuned, extra)? {
            if let Ok(program) = self.program(values.iter().map(|(n, v)| (*n, v.as_str()))) {
                jobs.push((program, defines));
            }
        }
        Ok(jobs)
    }
}

#[cfg(test)]
mod tests;

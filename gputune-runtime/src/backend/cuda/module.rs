//! Loading compiled kernels: each image is compiled once per process (or read from the disk
//! cache), and each module loaded once per context.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once, OnceLock};

use cudarc::driver::{CudaContext, CudaModule};
use cudarc::nvrtc::Ptx;

use super::compile_worker::{compile_on_spare, Job};
use super::device::device_cc;
use super::errors::device_error;
use super::nvrtc::{cuda_includes, nvrtc_version, CompileFailed};
use super::program::{Program, Target};
use crate::backend::kernel_cache::{DiskCache, Image, Key, Memo, Origin, KERNEL_CACHE_ENV};
use crate::error::{Error, ErrorKind, Result};

/// The in-process image cache of every context (images do not depend on the context).
fn memo() -> &'static Memo<CompileFailed> {
    static MEMO: OnceLock<Memo<CompileFailed>> = OnceLock::new();
    MEMO.get_or_init(Memo::default)
}

/// The disk cache of this process, resolved once from the environment.
fn disk_cache() -> Option<&'static DiskCache> {
    static DISK: OnceLock<Option<DiskCache>> = OnceLock::new();
    DISK.get_or_init(DiskCache::from_env).as_ref()
}

/// Whether the image of `key` would come without compiling: settled in this process, or
/// stored in the disk cache.
pub(super) fn is_cached(key: Key) -> bool {
    memo().holds(key) || disk_cache().is_some_and(|d| d.contains(key))
}

/// The cache key of compiling `program` with `defines` for compute capability `cc`: the
/// options of the first target tried (the device's own `sm_XY`) stand for the device, and the
/// headers' contents are part of it (the include directories by path only).
pub(super) fn image_key(
    program: &Program,
    defines: &[(&str, String)],
    names: &[&str],
    cc: i32,
    version: (i32, i32),
) -> Key {
    let arch = u32::try_from(cc).unwrap_or(0);
    let mut options = program.nvrtc_options(defines, &Target::Cubin(arch), cuda_includes());
    // The name expressions change what an entry holds (its lowered names), not the code.
    options.extend(names.iter().map(|n| format!("name-expression {n}")));
    Key::with_headers(program.source(), program.headers(), &options, version)
}

/// The image for `key` from the caches, else compiled in an idle compile worker or on this
/// thread (and stored on disk).
pub(super) fn cached_image(
    key: Key,
    program: &Program,
    (defines, names): (&[(&str, String)], &[&str]),
    cc: i32,
) -> (std::result::Result<Arc<Image>, CompileFailed>, Origin) {
    cached_image_by(key, || {
        compile_on_spare(&Job {
            key,
            program,
            defines,
            names,
            cc,
        })
    })
}

/// The image for `key` from the caches, else from `compile` (and stored on disk).
pub(super) fn cached_image_by(
    key: Key,
    compile: impl FnOnce() -> std::result::Result<Image, CompileFailed>,
) -> (std::result::Result<Arc<Image>, CompileFailed>, Origin) {
    memo().get_or_compile(key, disk_cache(), compile, |dir, e| {
        // Once per process: a cache that cannot be written slows later runs, nothing else.
        static WARNED: Once = Once::new();
        WARNED.call_once(|| {
            eprintln!(
                "warning: cannot write the kernel cache in {} ({e}); kernels are compiled \
                     again in each process (set {KERNEL_CACHE_ENV} to another directory, or to \
                     `off`)",
                dir.display()
            );
        });
    })
}

/// A loaded module and its image (whose `names` hold the lowered names of its name
/// expressions).
pub(crate) type Loaded = (Arc<CudaModule>, Arc<Image>);

/// [`CudaHandles::compile`] for any context, with the name expressions `names`.
pub(crate) fn load_module(
    context: &Arc<CudaContext>,
    program: &Program,
    defines: &[(&str, String)],
    names: &[&str],
) -> Result<Loaded> {
    /// Loaded modules by context and key: loading a module again for every state of every
    /// variant would cost a driver call and device memory each time.
    type Modules = Mutex<HashMap<(usize, Key), Loaded>>;
    static MODULES: OnceLock<Modules> = OnceLock::new();

    let cc = device_cc(context)?;
    let key = image_key(program, defines, names, cc, nvrtc_version()?);
    let modules = MODULES.get_or_init(Modules::default);
    let id = (context.cu_ctx() as usize, key);
    // A poisoned lock only means a thread panicked while inserting; the map is whole.
    if let Some(m) = modules.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
        return Ok(m.clone());
    }
    let image = cached_image(key, program, (defines, names), cc)
        .0
        .map_err(|(kind, message)| match kind {
            // NVRTC rejected the source: the variant does not build.
            ErrorKind::Compile => Error::Compile(message),
            _ => Error::Device(message),
        })?;
    // A driver that rejects the image (CUDA_ERROR_INVALID_PTX) classifies as a compile error.
    let module = context
        .load_module(Ptx::from_binary(image.bytes.clone()))
        .map_err(device_error("loading the compiled kernel module"))?;
    // Two threads may load the same module at once; the first one stored is the one shared.
    let shared = modules
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(id)
        .or_insert((module, image))
        .clone();
    Ok(shared)
}

/// A module whose code the process already holds (PTX an application ships, an image nvcc
/// embedded at build time), loaded once per context however many handles launch from it:
/// keyed by where its `'static` bytes are. PTX text goes to the driver's JIT as the
/// application hands it over (`load_module(Ptx::from_src(…))`, as candle loads its kernels),
/// so the machine code measured is the machine code the application runs.
pub(crate) fn load_static(
    context: &Arc<CudaContext>,
    code: &'static [u8],
    ptx_text: bool,
) -> Result<Arc<CudaModule>> {
    type Modules = Mutex<HashMap<(usize, usize, usize), Arc<CudaModule>>>;
    static MODULES: OnceLock<Modules> = OnceLock::new();
    let id = (
        context.cu_ctx() as usize,
        code.as_ptr() as usize,
        code.len(),
    );
    let modules = MODULES.get_or_init(Modules::default);
    if let Some(m) = modules.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
        return Ok(m.clone());
    }
    let ptx = if ptx_text {
        // The driver reads PTX up to its NUL: a trailing one is the text's end, an inner one
        // would cut it short without a word.
        let text = String::from_utf8_lossy(code);
        let text = text.trim_end_matches('\0');
        if text.trim().is_empty() || text.contains('\0') {
            return Err(crate::error::Error::Compile(format!(
                "the shipped PTX is {}: nothing to load",
                if text.contains('\0') {
                    "cut by a NUL byte"
                } else {
                    "empty"
                }
            )));
        }
        Ptx::from_src(text.to_string())
    } else {
        Ptx::from_binary(code.to_vec())
    };
    let module = crate::timeline::timed(crate::timeline::Part::CompileWait, || {
        context.load_module(ptx)
    })
    .map_err(device_error("loading the kernel module"))?;
    Ok(modules
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(id)
        .or_insert(module)
        .clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_key_covers_defines_their_order_the_device_and_nvrtc() {
        let src = &Program::new("extern \"C\" __global__ void k() {}");
        let d = |ipt: &str, tpb: &str| vec![("IPT", ipt.to_string()), ("TPB", tpb.to_string())];
        let key = image_key(src, &d("4", "256"), &[], 90, (13, 0));
        assert_eq!(key, image_key(src, &d("4", "256"), &[], 90, (13, 0)));
        assert_eq!(
            key,
            Key::new(
                src.source(),
                &src.nvrtc_options(&d("4", "256"), &Target::Cubin(90), cuda_includes()),
                (13, 0)
            )
        );
        for other in [
            image_key(src, &d("8", "256"), &[], 90, (13, 0)),
            image_key(src, &d("4", "128"), &[], 90, (13, 0)),
            image_key(src, &d("4", "256"), &[], 100, (13, 0)),
            image_key(src, &d("4", "256"), &[], 90, (13, 1)),
            image_key(
                &Program::new("extern \"C\" __global__ void j() {}"),
                &d("4", "256"),
                &[],
                90,
                (13, 0),
            ),
            image_key(
                src,
                &[("TPB", "256".to_string()), ("IPT", "4".to_string())],
                &[],
                90,
                (13, 0),
            ),
        ] {
            assert_ne!(other, key);
        }
        assert_ne!(image_key(src, &d("4", "256"), &["k"], 90, (13, 0)), key);
    }

    #[test]
    fn header_contents_and_options_are_part_of_the_key() {
        let src = "#include \"h.cuh\"\nextern \"C\" __global__ void k() { f(); }";
        let key = |p: &Program| image_key(p, &[], &[], 90, (13, 0));
        let with = |h: &str| Program::new(src).header("h.cuh", h);
        let base = key(&with("__device__ void f() {}"));
        assert_eq!(base, key(&with("__device__ void f() {}")));
        assert_ne!(base, key(&with("__device__ void f() { }")), "contents");
        assert_ne!(
            base,
            key(&Program::new(src).header("g.cuh", "__device__ void f() {}")),
            "name"
        );
        assert_ne!(base, key(&Program::new(src)), "no header");
        assert_ne!(
            base,
            key(&with("__device__ void f() {}").option("--use_fast_math")),
            "options"
        );
        assert_ne!(
            base,
            key(&with("__device__ void f() {}").option("-std=c++20")),
            "dialect"
        );
    }
}

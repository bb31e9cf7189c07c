//! NVRTC: the options a kernel is compiled with, the targets tried in turn, and the log of a
//! rejected source.

use std::ffi::{c_char, CStr, CString};
use std::sync::OnceLock;

use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};

use super::include::{
    explain_missing, explain_undefined, missing_headers, search, CudaIncludes, Probe,
};
use super::program::{Program, Target};
use super::quiet::quietly;
use crate::backend::kernel_cache::Image;
use crate::error::{Error, ErrorKind, Result};

/// Why nothing can be compiled on a machine without NVRTC.
const NO_NVRTC: &str = "NVRTC (libnvrtc.so.13, part of the CUDA toolkit) could not be loaded, \
                        so kernels cannot be compiled at run time: install the CUDA toolkit or \
                        put its lib directory on LD_LIBRARY_PATH";

/// What a failed compilation leaves in the memo: its kind (NVRTC rejected the source, or
/// something else went wrong) and the message.
pub(super) type CompileFailed = (ErrorKind, String);

/// What a failed compilation leaves in the memo, from its error.
pub(super) fn compile_failed(e: Error) -> CompileFailed {
    let kind = e.kind();
    match e {
        Error::Device(message) | Error::Compile(message) => (kind, message),
        other => (kind, other.to_string()),
    }
}

/// NVRTC's version, which is part of every cache key; an error without NVRTC.
pub(super) fn nvrtc_version() -> Result<(i32, i32)> {
    static VERSION: OnceLock<std::result::Result<(i32, i32), String>> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            if !crate::backend::cuda::library::nvrtc_present() {
                return Err(NO_NVRTC.to_string());
            }
            quietly(|| {
                let (mut major, mut minor) = (0, 0);
                // SAFETY: writes two ints.
                unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }
                    .result()
                    .map(|()| (major, minor))
                    .map_err(|e| format!("cannot read NVRTC's version: {e}"))
            })
            .unwrap_or_else(|panic| Err(format!("NVRTC cannot be used: {panic}")))
        })
        .clone()
        .map_err(Error::Device)
}

/// CUDA's include directories for this process, searched once, after loading NVRTC (so
/// that its location and version are known).
pub fn cuda_includes() -> &'static CudaIncludes {
    static FOUND: OnceLock<CudaIncludes> = OnceLock::new();
    FOUND.get_or_init(|| search(&Probe::of_this_process(nvrtc_version().ok())))
}

/// Initialises NVRTC on the calling thread.
pub(super) fn init_on_this_thread() {
    let _ = quietly(|| nvrtc::create_program(c"", None).map(Nvrtc));
}

/// Why one NVRTC attempt failed.
enum CompileFailure {
    /// NVRTC does not accept the architecture option: try the next target.
    ArchRejected(String),
    /// NVRTC rejected the source (`NVRTC_ERROR_COMPILATION`): the variant does not build.
    Source(String),
    /// Anything else (a compile error in the source, an NVRTC failure): final.
    Final(String),
}

/// Whether `program` (a source, or a [`Program`] with headers and options) compiles under
/// NVRTC with `defines` for compute capability `cc` (`major * 10 + minor`), without a GPU:
/// what kernel crates unit-test their sources with.
///
/// `Ok(false)` when NVRTC cannot be loaded (nothing to compile with); a rejected source is an
/// [`Error::Compile`] with NVRTC's log.
///
/// ```
/// # fn main() -> gputune_runtime::Result<()> {
/// let source = r#"extern "C" __global__ void k(float* y) { y[threadIdx.x] = TPB; }"#;
/// let checked = gputune_runtime::backend::cuda::compiles_for(source, &[("TPB", "256".into())], 90)?;
/// # let _ = checked;
/// # Ok(())
/// # }
/// ```
pub fn compiles_for(
    program: impl Into<Program>,
    defines: &[(&str, String)],
    cc: i32,
) -> Result<bool> {
    match compile_for(&program.into(), defines, &[], cc) {
        Ok(_) => Ok(true),
        Err(Error::Device(m)) if m == NO_NVRTC => Ok(false),
        Err(e) => Err(e),
    }
}

/// The lowered (mangled) name NVRTC gives each of `names` (C++ name expressions such as
/// `scale` or `scale<float>`) when `program` compiles for `cc`; `Ok(None)` without NVRTC.
/// What [`Kernel`](crate::kernel::Kernel) loads a C++-named kernel by.
pub fn lowered_names(
    program: impl Into<Program>,
    defines: &[(&str, String)],
    names: &[&str],
    cc: i32,
) -> Result<Option<Vec<(String, String)>>> {
    match compile_for(&program.into(), defines, names, cc) {
        Ok(image) => Ok(Some(image.names)),
        Err(Error::Device(m)) if m == NO_NVRTC => Ok(None),
        Err(e) => Err(e),
    }
}

/// Compiles `program` for compute capability `cc` (`major * 10 + minor`), with the lowered
/// names of the C++ name expressions `names` (kernels found without `extern "C"`).
pub(crate) fn compile_for(
    program: &Program,
    defines: &[(&str, String)],
    names: &[&str],
    cc: i32,
) -> Result<Image> {
    let cc =
        u32::try_from(cc).map_err(|_| Error::Device(format!("invalid compute capability {cc}")))?;
    let sources = Sources::of(program)?;
    if let Some((name, value)) = defines
        .iter()
        .find(|(n, v)| n.contains('\0') || v.contains('\0'))
    {
        return Err(Error::Device(format!(
            "the define {name:?}={value:?} contains a NUL byte"
        )));
    }
    let names: Vec<CString> = names
        .iter()
        .map(|n| {
            CString::new(*n)
                .map_err(|_| Error::Device(format!("the kernel name {n:?} contains a NUL byte")))
        })
        .collect::<Result<_>>()?;
    nvrtc_version()?;
    let cuda = cuda_includes();
    let mut targets = vec![Target::Cubin(cc), Target::Ptx(cc)];
    let mut rejected = Vec::new();
    let mut i = 0;
    while i < targets.len() {
        let target = targets[i].clone();
        let options = program.nvrtc_options(defines, &target, cuda);
        let attempt = quietly(|| compile_once(&sources, &options, &names, &target))
            .unwrap_or_else(|panic| Err(CompileFailure::Final(format!("NVRTC failed: {panic}"))));
        match attempt {
            Ok(image) => return Ok(image),
            Err(CompileFailure::Source(mut message)) => {
                let missing = missing_headers(&message);
                if !missing.is_empty() {
                    let embedded: Vec<&str> =
                        program.headers().iter().map(|(n, _)| n.as_str()).collect();
                    message.push_str(&explain_missing(
                        &missing,
                        &program.all_include_dirs(cuda),
                        &embedded,
                        cuda,
                    ));
                }
                message.push_str(&explain_undefined(&message.clone()));
                return Err(Error::Compile(message));
            }
            Err(CompileFailure::Final(message)) => return Err(Error::Device(message)),
            Err(CompileFailure::ArchRejected(log)) => {
                rejected.push(format!("{} ({log})", target.option()));
                if i == 1 {
                    // Neither form of the device's own architecture is known to this NVRTC
                    // (a GPU newer than the toolkit): compile PTX for the newest one it
                    // knows below it, which the driver can JIT forward.
                    if let Some(older) = quietly(supported_archs)
                        .ok()
                        .flatten()
                        .and_then(|archs| archs.into_iter().filter(|&a| a < cc).max())
                    {
                        targets.push(Target::Ptx(older));
                    }
                }
            }
        }
        i += 1;
    }
    Err(Error::Device(format!(
        "NVRTC rejected every target architecture for this compute {}.{} device: {}",
        cc / 10,
        cc % 10,
        rejected.join("; ")
    )))
}

/// An NVRTC program, destroyed on drop.
struct Nvrtc(nvrtc_sys::nvrtcProgram);

impl Drop for Nvrtc {
    fn drop(&mut self) {
        // SAFETY: created by `create_program` and destroyed only here.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

/// A program's source, file name and headers as the C strings NVRTC takes.
struct Sources {
    source: CString,
    name: CString,
    /// `(include name, contents)`.
    headers: Vec<(CString, CString)>,
}

impl Sources {
    fn of(program: &Program) -> Result<Sources> {
        let c = |what: &str, text: &str| {
            CString::new(text).map_err(|_| Error::Device(format!("{what} contains a NUL byte")))
        };
        Ok(Sources {
            source: c("the kernel source", program.source())?,
            name: c("the kernel's file name", program.name())?,
            headers: program
                .headers()
                .iter()
                .map(|(name, contents)| {
                    Ok((
                        c(&format!("the header name {name:?}"), name)?,
                        c(&format!("the header {name:?}"), contents)?,
                    ))
                })
                .collect::<Result<_>>()?,
        })
    }
}

/// `nvrtcCreateProgram` with the headers handed over by name.
fn create_program(sources: &Sources) -> std::result::Result<Nvrtc, CompileFailure> {
    let contents: Vec<*const c_char> = sources.headers.iter().map(|(_, c)| c.as_ptr()).collect();
    let names: Vec<*const c_char> = sources.headers.iter().map(|(n, _)| n.as_ptr()).collect();
    let count = i32::try_from(contents.len())
        .map_err(|_| CompileFailure::Final("too many headers for NVRTC".into()))?;
    let mut program = std::mem::MaybeUninit::uninit();
    // SAFETY: every pointer is a live NUL-terminated string (owned by `sources`, which
    // outlives the call; NVRTC copies them), and both arrays hold `count` entries.
    unsafe {
        nvrtc_sys::nvrtcCreateProgram(
            program.as_mut_ptr(),
            sources.source.as_ptr(),
            sources.name.as_ptr(),
            count,
            contents.as_ptr(),
            names.as_ptr(),
        )
    }
    .result()
    .map_err(|e| CompileFailure::Final(format!("NVRTC cannot create a program: {e}")))?;
    // SAFETY: nvrtcCreateProgram succeeded, so it wrote the handle.
    Ok(Nvrtc(unsafe { program.assume_init() }))
}

fn compile_once(
    sources: &Sources,
    options: &[String],
    names: &[CString],
    target: &Target,
) -> std::result::Result<Image, CompileFailure> {
    let program = create_program(sources)?;
    for name in names {
        // SAFETY: `program` is live and `name` NUL-terminated.
        unsafe { nvrtc_sys::nvrtcAddNameExpression(program.0, name.as_ptr()) }
            .result()
            .map_err(|e| CompileFailure::Final(format!("NVRTC rejected the name {name:?}: {e}")))?;
    }
    // SAFETY: `program` is live; the options contain no NUL (checked by the caller).
    if let Err(e) = unsafe { nvrtc::compile_program(program.0, options) } {
        let log = program_log(&program);
        return Err(match e.0 {
            nvrtc_sys::nvrtcResult::NVRTC_ERROR_INVALID_OPTION => {
                CompileFailure::ArchRejected(if log.is_empty() { format!("{e}") } else { log })
            }
            code => {
                let message = format!(
                    "NVRTC could not compile the kernel ({e}) with options {}:\n{log}",
                    options.join(" ")
                );
                if code == nvrtc_sys::nvrtcResult::NVRTC_ERROR_COMPILATION {
                    CompileFailure::Source(message)
                } else {
                    CompileFailure::Final(message)
                }
            }
        });
    }
    let output = |what: &str, e: nvrtc::NvrtcError| {
        CompileFailure::Final(format!("NVRTC compiled the kernel but {what} failed: {e}"))
    };
    let mut lowered = Vec::with_capacity(names.len());
    for name in names {
        let mut out: *const c_char = std::ptr::null();
        // SAFETY: `program` compiled with `name` added; NVRTC owns the returned string until
        // the program is destroyed, and it is copied out before that.
        let found = unsafe { nvrtc_sys::nvrtcGetLoweredName(program.0, name.as_ptr(), &mut out) };
        if found.result().is_err() || out.is_null() {
            return Err(CompileFailure::Source(format!(
                "the source has no __global__ function {}: a kernel's name must name one \
                 (`scale`, `ns::scale`, `scale<float>`)",
                name.to_string_lossy()
            )));
        }
        // SAFETY: non-null and NUL-terminated, as NVRTC documents.
        let text = unsafe { CStr::from_ptr(out) }
            .to_string_lossy()
            .into_owned();
        lowered.push((name.to_string_lossy().into_owned(), text));
    }
    let with_names = |mut image: Image| {
        image.names = lowered.clone();
        image
    };
    match target {
        Target::Cubin(_) => {
            let mut size = 0usize;
            // SAFETY: `program` compiled successfully for a real architecture.
            unsafe { nvrtc_sys::nvrtcGetCUBINSize(program.0, &mut size) }
                .result()
                .map_err(|e| output("nvrtcGetCUBINSize", e))?;
            let mut cubin = vec![0u8; size];
            // SAFETY: `cubin` holds `size` bytes as NVRTC asked.
            unsafe { nvrtc_sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr().cast::<c_char>()) }
                .result()
                .map_err(|e| output("nvrtcGetCUBIN", e))?;
            Ok(with_names(Image::cubin(cubin)))
        }
        Target::Ptx(_) => {
            // SAFETY: `program` compiled successfully.
            let ptx = unsafe { nvrtc::get_ptx(program.0) }.map_err(|e| output("nvrtcGetPTX", e))?;
            // Kept NUL-terminated: the driver reads the image as a C string.
            Ok(with_names(Image::ptx(&c_chars_to_string(&ptx))))
        }
    }
}

fn program_log(program: &Nvrtc) -> String {
    // SAFETY: `program` is live.
    match unsafe { nvrtc::get_program_log(program.0) } {
        Ok(log) => c_chars_to_string(&log).trim().to_owned(),
        Err(e) => format!("(no log: {e})"),
    }
}

/// The architectures this NVRTC can compile for, as `major * 10 + minor`.
fn supported_archs() -> Option<Vec<u32>> {
    let mut count = 0;
    // SAFETY: writes one int.
    unsafe { nvrtc_sys::nvrtcGetNumSupportedArchs(&mut count) }
        .result()
        .ok()?;
    let mut archs = vec![0; usize::try_from(count).ok()?];
    // SAFETY: `archs` holds `count` ints as NVRTC asked.
    unsafe { nvrtc_sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }
        .result()
        .ok()?;
    Some(
        archs
            .into_iter()
            .filter_map(|a| u32::try_from(a).ok())
            .collect(),
    )
}

/// A NUL-terminated C buffer as a string (everything if there is no NUL).
fn c_chars_to_string(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn compiling_without_nvrtc_is_an_error_not_a_panic() {
        if crate::backend::cuda::library::nvrtc_present() {
            crate::skipped("checks the path without NVRTC, and NVRTC is installed here");
            return;
        }
        match compile_for(
            &Program::new("extern \"C\" __global__ void k() {}"),
            &[],
            &[],
            90,
        ) {
            Err(Error::Device(msg)) => assert!(msg.contains("NVRTC"), "{msg}"),
            Err(other) => panic!("expected a device error, got {other:?}"),
            Ok(_) => panic!("compiled without NVRTC"),
        }
    }

    #[test]
    fn a_source_nvrtc_rejects_is_a_compile_error_where_it_is_installed() {
        // NVRTC needs no GPU, but it is part of the CUDA toolkit: skip where it is missing.
        if !crate::backend::cuda::library::nvrtc_present() {
            crate::skipped("needs NVRTC (the CUDA toolkit), which could not be loaded");
            return;
        }
        let source = "#if BROKEN\n#error \"injected\"\n#endif\nextern \"C\" __global__ void k() {}";
        match compile_for(&source.into(), &[("BROKEN", "1".into())], &[], 90) {
            Err(e @ Error::Compile(_)) => {
                assert_eq!(e.kind(), ErrorKind::Compile);
                let msg = e.to_string();
                assert!(
                    msg.contains("injected") && msg.contains("-DBROKEN=1"),
                    "{msg}"
                );
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
        assert!(compile_for(&source.into(), &[("BROKEN", "0".into())], &[], 90).is_ok());
    }

    #[test]
    fn a_c_library_constant_is_answered_with_its_cuda_spelling_where_nvrtc_is_installed() {
        if !crate::backend::cuda::library::nvrtc_present() {
            crate::skipped("needs NVRTC (the CUDA toolkit), which could not be loaded");
            return;
        }
        let source = "extern \"C\" __global__ void k(float* x) { x[0] = INFINITY; }";
        match compile_for(&source.into(), &[], &[], 90) {
            Err(Error::Compile(msg)) => assert!(msg.contains("CUDART_INF_F"), "{msg}"),
            other => panic!("expected a compile error, got {other:?}"),
        }
    }

    #[test]
    fn no_nvrtc_means_no_version_and_a_plain_error() {
        if crate::backend::cuda::library::nvrtc_present() {
            crate::skipped("checks the path without NVRTC, and NVRTC is installed here");
            return;
        }
        match nvrtc_version() {
            Err(Error::Device(msg)) => assert!(msg.contains("NVRTC"), "{msg}"),
            other => panic!("expected a device error, got {other:?}"),
        }
    }

    #[test]
    fn c_buffers_stop_at_the_first_nul() {
        let chars: Vec<c_char> = b"ptx text\0junk".iter().map(|&b| b as c_char).collect();
        assert_eq!(c_chars_to_string(&chars), "ptx text");
        let chars: Vec<c_char> = b"no nul".iter().map(|&b| b as c_char).collect();
        assert_eq!(c_chars_to_string(&chars), "no nul");
    }

    #[test]
    fn kernels_are_found_by_their_cpp_names() {
        let source = r#"
            __global__ void plain(float* y) { y[threadIdx.x] = 1.0f; }
            namespace ns { template <typename T> __global__ void tmpl(T* y) { y[0] = T(2); } }
            template __global__ void ns::tmpl<float>(float*);
            extern "C" __global__ void c_named(float* y) { y[0] = 3.0f; }
        "#;
        let names = ["plain", "ns::tmpl<float>", "c_named"];
        let lowered = match lowered_names(source, &[], &names, 90) {
            Ok(Some(lowered)) => lowered,
            Ok(None) => {
                return crate::skipped("needs NVRTC (the CUDA toolkit), which is not installed")
            }
            Err(e) => panic!("{e}"),
        };
        let symbol = |n: &str| lowered.iter().find(|(e, _)| e == n).map(|(_, s)| s.clone());
        assert_eq!(symbol("plain").as_deref(), Some("_Z5plainPf"));
        assert!(symbol("ns::tmpl<float>").is_some_and(|s| s.starts_with("_ZN2ns4tmpl")));
        assert_eq!(symbol("c_named").as_deref(), Some("c_named"));
        let missing = lowered_names(source, &[], &["nowhere"], 90);
        assert!(
            // NVRTC itself says so, in the variant's build_failed message.
            matches!(&missing, Err(Error::Compile(m)) if m.contains("nowhere")),
            "{missing:?}"
        );
    }
}

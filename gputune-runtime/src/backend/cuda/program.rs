//! What NVRTC compiles besides one variant's defines: the source, the headers it includes by
//! name, include directories and compiler options; and the option list NVRTC gets.

use std::path::PathBuf;
use std::sync::Arc;

use super::include::CudaIncludes;

/// The C++ dialect a kernel is compiled as unless its options name one: nvcc's default.
pub const DEFAULT_STD: &str = "-std=c++17";

/// A CUDA C++ program as NVRTC compiles it, without the variant's defines: the source, the
/// headers handed to NVRTC by name (a crate's own headers, embedded at build time), extra
/// include directories and compiler options. CUDA's own include directories are added to
/// every compilation (see [`include`](super::include)), and C++17 unless an option names a
/// dialect.
///
/// Cheap to clone: the source and headers are shared.
///
/// ```
/// use gputune_runtime::backend::cuda::Program;
///
/// let program = Program::new(r#"#include "twice.cuh"
///     extern "C" __global__ void k(float* y) { y[threadIdx.x] = twice(IPT); }"#)
///     .header("twice.cuh", "__device__ float twice(float x) { return 2 * x; }")
///     .option("--use_fast_math");
/// assert_eq!(program.headers().len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    source: Arc<str>,
    file_name: Arc<str>,
    headers: Arc<[(String, String)]>,
    include_dirs: Vec<PathBuf>,
    options: Vec<String>,
}

impl Program {
    /// The program of `source`, with no headers and no options of its own.
    pub fn new(source: &str) -> Program {
        Program {
            source: Arc::from(source),
            file_name: Arc::from("gputune_kernel.cu"),
            headers: Arc::from(Vec::new()),
            include_dirs: Vec::new(),
            options: Vec::new(),
        }
    }

    /// The name NVRTC gives the source in its messages (`sum.cu`).
    pub fn file_name(mut self, name: &str) -> Program {
        self.file_name = Arc::from(name);
        self
    }

    /// Hands NVRTC `contents` as the header included as `#include "name"` (or `<name>`).
    /// A header of the same name is replaced.
    pub fn header(mut self, name: &str, contents: &str) -> Program {
        let mut headers: Vec<(String, String)> = self
            .headers
            .iter()
            .filter(|(n, _)| n != name)
            .cloned()
            .collect();
        headers.push((name.to_string(), contents.to_string()));
        self.headers = Arc::from(headers);
        self
    }

    /// Adds an include directory (`-I`), searched before CUDA's.
    pub fn include_dir(mut self, dir: impl Into<PathBuf>) -> Program {
        self.include_dirs.push(dir.into());
        self
    }

    /// Adds a compiler option as NVRTC takes it (`--use_fast_math`, `-lineinfo`,
    /// `--maxrregcount=64`, `-std=c++20`).
    pub fn option(mut self, option: impl Into<String>) -> Program {
        self.options.push(option.into());
        self
    }

    /// The source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The name the source has in NVRTC's messages.
    pub fn name(&self) -> &str {
        &self.file_name
    }

    /// The headers handed to NVRTC: `(include name, contents)`.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The include directories of its own, in order.
    pub fn include_dirs(&self) -> &[PathBuf] {
        &self.include_dirs
    }

    /// The options of its own, in order: what a variant records beside the defines.
    pub fn options(&self) -> &[String] {
        &self.options
    }

    /// The options that say what the code is, without the machine's paths: the dialect (the
    /// default one unless given) and the program's own options, in order.
    pub fn code_options(&self) -> Vec<String> {
        let names_std = self
            .options
            .iter()
            .any(|o| o.starts_with("-std=") || o.starts_with("--std="));
        let mut out = Vec::with_capacity(self.options.len() + 1);
        if !names_std {
            out.push(DEFAULT_STD.to_string());
        }
        out.extend(self.options.iter().cloned());
        out
    }

    /// The include directories a compilation gets, in order: the program's own, then
    /// `cuda`'s (`$GPUTUNE_INCLUDE_PATH`, the toolkit's, CCCL's).
    pub(crate) fn all_include_dirs(&self, cuda: &CudaIncludes) -> Vec<PathBuf> {
        self.include_dirs
            .iter()
            .chain(&cuda.dirs)
            .cloned()
            .collect()
    }

    /// NVRTC's option list for one target: the architecture, the dialect and the program's
    /// options, the include directories, then each define as `-DNAME=VALUE`.
    pub(super) fn nvrtc_options(
        &self,
        defines: &[(&str, String)],
        target: &Target,
        cuda: &CudaIncludes,
    ) -> Vec<String> {
        let mut options = vec![target.option()];
        options.extend(self.code_options());
        options.extend(
            self.all_include_dirs(cuda)
                .iter()
                .map(|d| format!("-I{}", d.display())),
        );
        options.extend(
            defines
                .iter()
                .map(|(name, value)| format!("-D{name}={value}")),
        );
        options
    }
}

impl From<&str> for Program {
    fn from(source: &str) -> Program {
        Program::new(source)
    }
}

impl From<&Program> for Program {
    fn from(program: &Program) -> Program {
        program.clone()
    }
}

/// Where NVRTC is asked to compile to, in the order tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// SASS for a real architecture (`sm_XY`): loads without JIT.
    Cubin(u32),
    /// PTX for a virtual architecture (`compute_XY`): the driver JITs it.
    Ptx(u32),
}

impl Target {
    /// NVRTC's architecture option for it.
    pub(super) fn option(&self) -> String {
        match self {
            Target::Cubin(arch) => format!("--gpu-architecture=sm_{arch}"),
            Target::Ptx(arch) => format!("--gpu-architecture=compute_{arch}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cuda() -> CudaIncludes {
        CudaIncludes {
            dirs: vec![
                PathBuf::from("/cuda/include"),
                PathBuf::from("/cuda/include/cccl"),
            ],
            looked: Vec::new(),
        }
    }

    #[test]
    fn options_run_architecture_dialect_own_includes_cuda_defines() {
        let program = Program::new("src")
            .include_dir("/mine")
            .option("--use_fast_math");
        assert_eq!(
            program.nvrtc_options(&[("IPT", "4".into())], &Target::Cubin(90), &cuda()),
            [
                "--gpu-architecture=sm_90",
                "-std=c++17",
                "--use_fast_math",
                "-I/mine",
                "-I/cuda/include",
                "-I/cuda/include/cccl",
                "-DIPT=4",
            ]
        );
    }

    #[test]
    fn a_dialect_of_the_user_replaces_the_default() {
        let program = Program::new("src").option("-std=c++20");
        assert_eq!(program.code_options(), ["-std=c++20"]);
        let program = Program::new("src").option("--std=c++14");
        assert_eq!(program.code_options(), ["--std=c++14"]);
    }

    #[test]
    fn a_header_of_the_same_name_is_replaced() {
        let program = Program::new("src")
            .header("a.cuh", "1")
            .header("b.cuh", "2");
        let program = program.header("a.cuh", "3");
        assert_eq!(
            program.headers(),
            [
                ("b.cuh".to_string(), "2".to_string()),
                ("a.cuh".to_string(), "3".to_string())
            ]
        );
    }

    /// Kernels as newcomers write them, each including one of CUDA's headers.
    const REAL: [(&str, &str); 5] = [
        (
            "fp16",
            "#include <cuda_fp16.h>\n__global__ void k(__half* y) { y[threadIdx.x] = \
             __hadd(y[threadIdx.x], __float2half(1.0f)); }",
        ),
        (
            "bf16",
            "#include <cuda_bf16.h>\n__global__ void k(__nv_bfloat16* y) { y[threadIdx.x] = \
             __float2bfloat16(__bfloat162float(y[threadIdx.x]) * 2.0f); }",
        ),
        (
            "cooperative groups",
            "#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\n\
             namespace cg = cooperative_groups;\n__global__ void k(int* y) { auto t = \
             cg::tiled_partition<32>(cg::this_thread_block()); y[threadIdx.x] = \
             cg::reduce(t, (int)threadIdx.x, cg::plus<int>()); }",
        ),
        (
            "CUB block primitives",
            "#include <cub/block/block_load.cuh>\n#include <cub/block/block_reduce.cuh>\n\
             #include <cub/block/block_radix_sort.cuh>\n__global__ void k(const int* x, int* y) \
             { using Load = cub::BlockLoad<int, 128, 4, cub::BLOCK_LOAD_TRANSPOSE>; using Sort = \
             cub::BlockRadixSort<int, 128, 4>; using Reduce = cub::BlockReduce<int, 128>; \
             __shared__ union { typename Load::TempStorage l; typename Sort::TempStorage s; \
             typename Reduce::TempStorage r; } tmp; int v[4]; Load(tmp.l).Load(x, v); \
             __syncthreads(); Sort(tmp.s).Sort(v); __syncthreads(); int s = \
             Reduce(tmp.r).Sum(v); if (threadIdx.x == 0) *y = s; }",
        ),
        (
            "libcu++",
            "#include <cuda/std/cstdint>\n__global__ void k(cuda::std::uint64_t* y) { *y = 1; }",
        ),
    ];

    /// Whether NVRTC and CUDA's headers are here; says why not where they are not.
    fn toolkit_here() -> bool {
        match super::super::nvrtc::nvrtc_version() {
            Err(_) => {
                crate::skipped("needs NVRTC (the CUDA toolkit), which could not be loaded");
                false
            }
            Ok(_) if super::super::nvrtc::cuda_includes().dirs.is_empty() => {
                crate::skipped(&format!(
                    "needs CUDA's headers, not found: {:?}",
                    super::super::nvrtc::cuda_includes().looked
                ));
                false
            }
            Ok(_) => true,
        }
    }

    #[test]
    fn real_kernels_compile_with_cuda_headers_found_without_asking() {
        if !toolkit_here() {
            return;
        }
        for (what, source) in REAL {
            let compiled = crate::backend::cuda::compiles_for(source, &[], 90);
            assert!(matches!(compiled, Ok(true)), "{what}: {compiled:?}");
        }
    }

    #[test]
    fn embedded_headers_compile_and_a_missing_one_is_explained() {
        if !toolkit_here() {
            return;
        }
        let source = "#include \"twice.cuh\"\n__global__ void k(float* y) { y[0] = twice(3); }";
        let program = Program::new(source).header(
            "twice.cuh",
            "#pragma once\n#include <cuda_bf16.h>\n__device__ float twice(float x) { return 2 * x; }",
        );
        assert!(matches!(
            crate::backend::cuda::compiles_for(&program, &[], 90),
            Ok(true)
        ));
        match crate::backend::cuda::compiles_for(source, &[], 90) {
            Err(crate::Error::Compile(message)) => {
                for needle in [
                    "\"twice.cuh\"",
                    "GPUTUNE_INCLUDE_PATH",
                    "include directories",
                ] {
                    assert!(message.contains(needle), "{needle} missing from {message}");
                }
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
        let c_library = "#include <stdint.h>\n__global__ void k(uint32_t* y) { *y = 1; }";
        match crate::backend::cuda::compiles_for(c_library, &[], 90) {
            Err(crate::Error::Compile(message)) => {
                assert!(message.contains("<cuda/std/cstdint>"), "{message}");
            }
            other => panic!("expected a compile error, got {other:?}"),
        }
    }
}

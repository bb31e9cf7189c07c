//! Fault injection on the GPU (feature `cuda`): one tuned function whose `fault` parameter
//! makes a CUDA variant fail in each way a search must survive, next to variants that work.
//! Each variant is a kernel compiled by NVRTC at run time, with its parameters as `-D`
//! defines (`faults.cu`).
//!
//! | `fault` | what the variant does | what `cargo gputune search` records |
//! |---|---|---|
//! | `none` | computes `y = 2x + 1` (`work` repeats busy work: 1 is fastest) | `ok` |
//! | `compile` | its source does not compile (`#error`): NVRTC rejects it | `build_failed` |
//! | `launch` | asks for a block larger than the kernel allows, caught before launching | `invalid` |
//! | `crash` | stores to address 0: an illegal address, a sticky error; the process ends with exit 4 | `crashed` |
//! | `hang` | spins on a flag nobody sets | `timeout` |
//! | `wrong` | copies `x` to `y`, faster than any correct variant | `verify_failed` |

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::backend::cuda::{check_launch, CudaHandles};
use gputune_runtime::cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use gputune_runtime::BoxError;

/// The kernel's CUDA C++ source.
pub const SOURCE: &str = include_str!("faults.cu");

/// Threads per block every variant is compiled for (`__launch_bounds__`).
pub const THREADS: u32 = 256;

/// The block the `launch` fault asks for: more threads than any kernel can have (CUDA's
/// limit is 1024), and more than this one's `__launch_bounds__`.
pub const OVERSIZED_BLOCK: u32 = 8 * THREADS;

/// The faults, as `faults.cu` names them.
pub const FAULTS: [(&str, &str); 6] = [
    ("none", "FAULT_NONE"),
    ("compile", "FAULT_COMPILE"),
    ("launch", "FAULT_LAUNCH"),
    ("crash", "FAULT_CRASH"),
    ("hang", "FAULT_HANG"),
    ("wrong", "FAULT_WRONG"),
];

/// One variant of the kernel, compiled and loaded.
#[derive(Debug, Clone)]
pub struct FaultKernel {
    function: CudaFunction,
    block: u32,
}

impl FaultKernel {
    /// Compiles the kernel with `fault` injected and `work` rounds of busy work.
    pub fn compile(cuda: &CudaHandles, fault: &str, work: usize) -> Result<FaultKernel, BoxError> {
        let module = cuda.compile(SOURCE, &defines(fault, work)?)?;
        let function = module.load_function("affine")?;
        Ok(FaultKernel {
            function,
            block: block_threads(fault),
        })
    }

    /// The launch shape for `n` elements, checked against the kernel's limits: a block it
    /// cannot take is an invalid launch (`gputune_runtime::Error::InvalidLaunch`).
    pub fn config(&self, n: usize) -> Result<LaunchConfig, BoxError> {
        let config = launch_config(n, self.block)?;
        check_launch(&self.function, &config)?;
        Ok(config)
    }

    /// Enqueues `y = 2x + 1` (or the fault) on `stream` with a shape from
    /// [`FaultKernel::config`]; `never` is a zero word the `hang` fault waits on.
    pub fn launch(
        &self,
        stream: &Arc<CudaStream>,
        config: LaunchConfig,
        x: &CudaSlice<f32>,
        y: &mut CudaSlice<f32>,
        never: &CudaSlice<u32>,
    ) -> Result<(), BoxError> {
        let n = x.len().min(y.len()) as u64;
        let zero = 0u32;
        let nowhere = 0u64;
        let mut builder = stream.launch_builder(&self.function);
        builder
            .arg(x)
            .arg(y)
            .arg(&n)
            .arg(&zero)
            .arg(&nowhere)
            .arg(never);
        // SAFETY: the arguments match `affine(const float*, float*, unsigned long long,
        // unsigned int, float*, const volatile unsigned int*)` in faults.cu, and a correct
        // variant touches only indices below n, which both slices hold. The faulting store
        // through `nowhere` is the point of the `crash` variant: the device reports it as
        // an illegal address, and the process ends before using the context again.
        unsafe { builder.launch(config) }?;
        Ok(())
    }
}

/// The NVRTC defines of one variant.
fn defines(fault: &str, work: usize) -> Result<[(&'static str, String); 3], BoxError> {
    let name = FAULTS
        .iter()
        .find(|(f, _)| *f == fault)
        .map(|(_, name)| *name)
        .ok_or_else(|| format!("unknown fault `{fault}`"))?;
    Ok([
        ("GPUTUNE_FAULT", name.to_string()),
        ("GPUTUNE_WORK", work.to_string()),
        ("GPUTUNE_TPB", THREADS.to_string()),
    ])
}

/// Threads per block a variant launches with.
fn block_threads(fault: &str) -> u32 {
    if fault == "launch" {
        OVERSIZED_BLOCK
    } else {
        THREADS
    }
}

/// One thread per element, `block` threads per block.
fn launch_config(n: usize, block: u32) -> Result<LaunchConfig, BoxError> {
    let blocks = (n as u64).div_ceil(u64::from(block)).max(1);
    let blocks = u32::try_from(blocks)
        .map_err(|_| format!("{n} elements need more than 2^32 blocks of {block} threads"))?;
    Ok(LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// The kernel of this variant, compiled for the device of `cuda`; or one of the injected
/// faults.
#[tune(
    fault = [none, compile, launch, crash, hang, wrong],
    work = [1, 4],
    base(fault = none, work = 4)
)]
pub fn fault_kernel(cuda: &CudaHandles) -> Result<FaultKernel, BoxError> {
    FaultKernel::compile(cuda, FAULT, WORK)
}

#[cfg(test)]
mod tests {
    /// Says on stderr, past libtest's capture (so it shows without `--nocapture` too), that the
    /// running test checked nothing on this machine: a pass that returned early must not read as
    /// a check that passed.
    fn skipped(why: &str) {
        use std::io::Write;
        let test = std::thread::current().name().unwrap_or("test").to_owned();
        let _ = writeln!(std::io::stderr(), "skipped: {test}: {why}");
    }
    use super::*;

    #[test]
    fn every_fault_has_a_define_the_source_knows() {
        // Needs no device: only the text the variants are compiled from.
        for (fault, name) in FAULTS {
            assert!(SOURCE.contains(&format!("#define {name} ")), "{fault}");
            let d = defines(fault, 4).expect("known fault");
            assert_eq!(d[0], ("GPUTUNE_FAULT", name.to_string()));
            assert_eq!(d[1], ("GPUTUNE_WORK", "4".to_string()));
        }
        assert!(defines("melt", 1).is_err());
        assert!(SOURCE.contains("extern \"C\" __global__"));
        assert!(SOURCE.contains("__launch_bounds__(GPUTUNE_TPB)"));
        assert!(SOURCE.contains("#if GPUTUNE_FAULT == FAULT_COMPILE\n#error"));
    }

    #[test]
    fn nvrtc_rejects_only_the_compile_fault_where_it_is_installed() {
        use gputune_runtime::cudarc::nvrtc::{self, CompileError, CompileOptions};
        // NVRTC needs no GPU, but it is part of the CUDA toolkit: skip where it is missing.
        // SAFETY: only tries to dlopen the candidate library names; nothing is called.
        if !unsafe { nvrtc::sys::is_culib_present() } {
            return skipped("needs NVRTC (the CUDA toolkit), which could not be loaded");
        }
        for (fault, _) in FAULTS {
            for work in [1, 4] {
                let options = defines(fault, work)
                    .expect("known fault")
                    .iter()
                    .map(|(name, value)| format!("-D{name}={value}"))
                    .collect();
                let compiled = nvrtc::compile_ptx_with_opts(
                    SOURCE,
                    CompileOptions {
                        arch: Some("compute_90"),
                        options,
                        ..Default::default()
                    },
                );
                match (fault, compiled) {
                    ("compile", Err(CompileError::CompileError { log, .. })) => {
                        let log = log.to_string_lossy();
                        assert!(log.contains("injected fault"), "{log}");
                    }
                    ("compile", other) => panic!("the compile fault compiled: {other:?}"),
                    (_, Ok(ptx)) => {
                        let ptx = ptx.to_src();
                        // What check_launch reads back as the kernel's block limit.
                        assert!(ptx.contains(".maxntid 256, 1, 1"), "{fault}");
                        if fault == "hang" {
                            assert!(ptx.contains("ld.volatile.global.u32"), "{ptx}");
                        }
                    }
                    (_, Err(e)) => panic!("{fault}.work_{work} does not compile: {e}"),
                }
            }
        }
    }

    #[test]
    fn only_the_launch_fault_asks_for_an_oversized_block() {
        for (fault, _) in FAULTS {
            let block = block_threads(fault);
            if fault == "launch" {
                // Over CUDA's 1024 threads per block, so over any kernel's limit.
                assert!(block > 1024);
            } else {
                assert_eq!(block, THREADS);
            }
        }
    }

    #[test]
    fn the_grid_covers_every_element() {
        let c = launch_config(1 << 20, THREADS).expect("fits");
        assert_eq!((c.grid_dim, c.block_dim), ((4096, 1, 1), (256, 1, 1)));
        let c = launch_config(1000, THREADS).expect("fits");
        assert_eq!(c.grid_dim.0, 4);
        assert_eq!(launch_config(0, THREADS).expect("fits").grid_dim.0, 1);
    }
}

//! Fault injection on the GPU (feature `cuda`): one tuned function whose `fault` parameter
//! makes a CUDA variant fail in each way a search must survive, next to variants that work.
//! Each variant is a kernel compiled by NVRTC at run time through the kernel handle
//! (`gputune_runtime::kernel`), with its parameters as `-D` defines (`faults.cu`).
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
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::Kernel;
use gputune_runtime::BoxError;

/// The kernel's CUDA C++ source.
pub const SOURCE: &str = include_str!("faults.cu");

/// Threads per block every variant is compiled for (`__launch_bounds__`).
pub const THREADS: u32 = 256;

/// The block the `launch` fault asks for: more threads than any kernel can have (CUDA's
/// limit is 1024), and more than this one's `__launch_bounds__`.
pub const OVERSIZED_BLOCK: u32 = 8 * THREADS;

/// The faults, as `#[tune]` and `faults.cu` name them.
pub const FAULTS: [&str; 6] = ["none", "compile", "launch", "crash", "hang", "wrong"];

// The parameters under names of their own in the source (`GPUTUNE_…`): a define called WORK
// or FAULT would be a plainer name for NVRTC's built-in headers to trip on.
static AFFINE: Kernel =
    Kernel::new(SOURCE, "affine").rename(&[("fault", "GPUTUNE_FAULT"), ("work", "GPUTUNE_WORK")]);

/// Enqueues this variant's kernel on `stream`: `y = 2x + 1` over the first
/// `min(x.len(), y.len())` elements, or one of the injected faults; `never` is a zero word
/// the `hang` fault waits on.
#[tune(
    fault = [none, compile, launch, crash, hang, wrong],
    work = [1, 4],
    base(fault = none, work = 4)
)]
pub fn fault_kernel(
    stream: &Arc<CudaStream>,
    x: &CudaSlice<f32>,
    y: &mut CudaSlice<f32>,
    never: &CudaSlice<u32>,
) -> Result<(), BoxError> {
    let kernel = AFFINE.get(TUNED, stream, &[("GPUTUNE_TPB", &THREADS.to_string())])?;
    let n = x.len().min(y.len());
    // A block the kernel cannot take (the `launch` fault's) is `invalid`, not launched.
    let config = kernel.check(launch_config(n, block_threads(FAULT))?)?;
    let (n, zero, nowhere) = (n as u64, 0u32, 0u64);
    let mut launch = stream.launch_builder(kernel.function());
    launch
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
    unsafe { launch.launch(config) }?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use gputune_runtime::skipped;

    /// The defines of variant `label`, as the kernel handle passes them.
    fn defines(label: &str) -> Vec<(String, String)> {
        AFFINE
            .label_defines(FAULT_KERNEL_PARAMS, label, &[("GPUTUNE_TPB", "256")])
            .expect("a label of the space")
    }

    #[test]
    fn every_fault_has_a_define_the_source_knows() {
        // Needs no device: only the text the variants are compiled from.
        let names: Vec<&str> = FAULT_KERNEL_PARAMS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["fault", "work"]);
        for fault in FAULTS {
            assert!(
                SOURCE.contains(&format!("#define FAULT_{fault} ")),
                "{fault}"
            );
            let d = defines(&format!("fault_{fault}.work_4"));
            let pairs: Vec<(&str, &str)> =
                d.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            assert_eq!(
                pairs,
                [
                    ("GPUTUNE_TPB", "256"),
                    ("GPUTUNE_FAULT", fault),
                    ("GPUTUNE_WORK", "4")
                ]
            );
        }
        assert!(SOURCE.contains("extern \"C\" __global__"));
        assert!(SOURCE.contains("__launch_bounds__(GPUTUNE_TPB)"));
        assert!(SOURCE.contains("#if FAULT == FAULT_compile\n#error"));
    }

    #[test]
    fn nvrtc_rejects_only_the_compile_fault_where_it_is_installed() {
        use gputune_runtime::cudarc::nvrtc::{self, CompileError, CompileOptions};
        // NVRTC needs no GPU, but it is part of the CUDA toolkit: skip where it is missing.
        // SAFETY: only tries to dlopen the candidate library names; nothing is called.
        if !unsafe { nvrtc::sys::is_culib_present() } {
            return skipped("needs NVRTC (the CUDA toolkit), which could not be loaded");
        }
        let compile = |label: &str| {
            let options = defines(label)
                .iter()
                .map(|(name, value)| format!("-D{name}={value}"))
                .collect();
            let options = CompileOptions {
                arch: Some("compute_90"),
                options,
                ..Default::default()
            };
            nvrtc::compile_ptx_with_opts(SOURCE, options)
        };
        let none = [1, 4].map(|work| {
            let ptx = compile(&format!("fault_none.work_{work}")).expect("fault none compiles");
            ptx.to_src()
        });
        for fault in FAULTS {
            for work in [1, 4] {
                match (fault, compile(&format!("fault_{fault}.work_{work}"))) {
                    ("compile", Err(CompileError::CompileError { log, .. })) => {
                        let log = log.to_string_lossy();
                        assert!(log.contains("injected fault"), "{log}");
                    }
                    ("compile", other) => panic!("the compile fault compiled: {other:?}"),
                    (_, Ok(ptx)) => {
                        let ptx = ptx.to_src();
                        // What the kernel handle reads back as the kernel's block limit.
                        assert!(ptx.contains(".maxntid 256, 1, 1"), "{fault}");
                        // The fault reaches the code: the GPU faults change the kernel, the
                        // launch fault (a host-side one) does not.
                        let same = ptx == none[usize::from(work == 4)];
                        assert_eq!(same, matches!(fault, "none" | "launch"), "{fault}");
                        if fault == "hang" {
                            assert!(ptx.contains("ld.volatile.global.u32"), "{ptx}");
                        }
                    }
                    (_, Err(e)) => panic!("fault_{fault}.work_{work} does not compile: {e}"),
                }
            }
        }
        // A name that is not a fault does not compile either, rather than run as `none`.
        match compile("fault_melt.work_1") {
            Err(CompileError::CompileError { log, .. }) => {
                assert!(log.to_string_lossy().contains("none of"))
            }
            other => panic!("an unknown fault compiled: {other:?}"),
        }
    }

    #[test]
    fn only_the_launch_fault_asks_for_an_oversized_block() {
        for fault in FAULTS {
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

//! The devices a run measures on.

use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
use crate::bench::Bench;
use crate::cli::Cli;
use crate::device::{BackendKind, DeviceInfo};
#[cfg(not(feature = "cuda"))]
use crate::error::Error;
use crate::error::Result;

/// The backends a run needs, opened once up front so a missing device fails fast.
pub(super) struct Backends {
    cpu: Option<CpuBackend>,
    #[cfg(feature = "cuda")]
    cuda: Option<crate::backend::cuda::CudaBackend>,
}

impl Backends {
    pub(super) fn open(benches: &[Bench], cli: &Cli) -> Result<Backends> {
        let wants = |k: BackendKind| benches.iter().any(|b| b.backend == k);
        let needs_cpu = wants(BackendKind::Cpu) && benches.iter().any(|b| b.state_count() > 0);
        let needs_cuda = !cli.cpu && wants(BackendKind::Cuda);
        let cpu = if needs_cpu {
            Some(CpuBackend::open(0)?)
        } else {
            None
        };
        #[cfg(feature = "cuda")]
        let cuda = if needs_cuda {
            use crate::backend::cuda::compile_worker::prestart;
            let workers = compile_workers_wanted(benches);
            prestart(workers.min(EARLY_WORKERS));
            // NVML starts while the driver does: the first pass reads its provenance.
            crate::backend::cuda::nvml::warm_up();
            // The rest start when the first kernel is prepared, for the images not cached.
            let mut b = crate::backend::cuda::CudaBackend::open(cli.device)?;
            b.set_blocking_kernel(!cli.disable_blocking_kernel);
            Some(b)
        } else {
            None
        };
        #[cfg(not(feature = "cuda"))]
        if needs_cuda {
            return Err(Error::NoDevice(
                "a selected bench needs CUDA, but gputune-runtime was built without its `cuda` feature".into(),
            ));
        }
        Ok(Backends {
            cpu,
            #[cfg(feature = "cuda")]
            cuda,
        })
    }

    /// The devices [`Backends::open`] would open, described without opening them (no CUDA
    /// context: `--devices` answers in the time of the driver's initialisation).
    pub(super) fn describe(benches: &[Bench], cli: &Cli) -> Result<Vec<DeviceInfo>> {
        let wants = |k: BackendKind| benches.iter().any(|b| b.backend == k);
        let mut devices = Vec::new();
        if wants(BackendKind::Cpu) && benches.iter().any(|b| b.state_count() > 0) {
            devices.push(CpuBackend::open(0)?.device().clone());
        }
        if !cli.cpu && wants(BackendKind::Cuda) {
            #[cfg(feature = "cuda")]
            devices.push(crate::backend::cuda::CudaBackend::describe(cli.device)?);
            #[cfg(not(feature = "cuda"))]
            return Err(Error::NoDevice(
                "a selected bench needs CUDA, but gputune-runtime was built without its `cuda` feature".into(),
            ));
        }
        Ok(devices)
    }

    /// Where and how the run measures now: what built it, the host, and the CUDA device's
    /// driver, NVRTC and settings where one is open (read again at each call).
    pub(super) fn provenance(&self) -> gputune_protocol::Provenance {
        #[cfg(feature = "cuda")]
        let cuda = self.cuda.as_ref().map(|c| c.provenance());
        #[cfg(not(feature = "cuda"))]
        let cuda = None;
        crate::provenance::provenance(cuda)
    }

    pub(super) fn devices(&self) -> Vec<DeviceInfo> {
        let mut d = Vec::new();
        if let Some(c) = &self.cpu {
            d.push(c.device().clone());
        }
        #[cfg(feature = "cuda")]
        if let Some(c) = &self.cuda {
            d.push(c.device().clone());
        }
        d
    }

    /// The backend for a bench and the index of its device in [`Backends::devices`];
    /// `None` when the bench needs CUDA but the run is CPU-only.
    pub(super) fn for_bench(
        &mut self,
        kind: BackendKind,
        cpu_only: bool,
    ) -> (Option<usize>, Option<&mut dyn Backend>) {
        let cpu_index = self.cpu.as_ref().map(|_| 0);
        match kind {
            BackendKind::Cpu => (cpu_index, self.cpu.as_mut().map(|b| b as &mut dyn Backend)),
            BackendKind::Cuda if cpu_only => (None, None),
            BackendKind::Cuda => {
                #[cfg(feature = "cuda")]
                {
                    let index = cpu_index.map_or(0, |_| 1);
                    (
                        Some(index),
                        self.cuda.as_mut().map(|b| b as &mut dyn Backend),
                    )
                }
                #[cfg(not(feature = "cuda"))]
                (None, None)
            }
        }
    }
}

/// The compile workers the CUDA benches' background compilations will use: as many threads as
/// the largest planned set of variants gets, one where nothing is planned (the production
/// choice, an input maker).
#[cfg(feature = "cuda")]
fn compile_workers_wanted(benches: &[Bench]) -> usize {
    let planned = benches
        .iter()
        .filter(|b| b.backend == BackendKind::Cuda)
        .filter_map(|b| b.tunes.as_deref())
        .map(|f| crate::tuned::to_prepare(f).len())
        .max()
        .unwrap_or(0);
    crate::backend::cuda::compile_threads(planned.max(1))
}

/// Compile workers started before the device opens; the rest start when the background
/// compilation knows how many images are not cached
/// ([`precompile_programs`](crate::backend::cuda::CudaHandles::precompile_programs)). Each loads
/// NVRTC while the driver starts, which a cold search would otherwise wait for before its first
/// sample, but many at once slow the driver's start: on an H200 host (16 cores, 2026-11-26)
/// 15 workers warming up beside it took the device's opening from 0.25 s to 0.37 s, and 4 did
/// not.
#[cfg(feature = "cuda")]
const EARLY_WORKERS: usize = 4;

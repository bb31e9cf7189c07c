//! A memory-bound CUDA kernel, `y = a·x`, tuned by gputune: [`scale`] is compiled by NVRTC
//! with its tuning parameters (items per thread, threads per block) as `-D` defines.
//!
//! Compilation goes through the runtime's kernel cache (once per process, and on disk across
//! processes); [`precompile`] starts compiling every variant a bench process will run on the
//! CPU's cores, so that the GPU measures while they compile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gputune_macros::tune;
use gputune_runtime::backend::cuda::{CudaHandles, Precompile};
use gputune_runtime::cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use gputune_runtime::tuned::{self, Variant};
use gputune_runtime::verify::DeviceElement;
use gputune_runtime::BoxError;

/// The kernel's CUDA C++ source.
pub const SOURCE: &str = include_str!("scale.cu");

/// An element type the kernel is compiled for (and whose outputs verify on the GPU).
pub trait Element:
    DeviceRepr + DeviceElement + ValidAsZeroBits + Copy + Default + Send + Sync + 'static
{
    /// The CUDA C++ type name.
    const CUDA_TYPE: &'static str;
    /// Converts from `f64` (for test data and the scale factor).
    fn from_f64(v: f64) -> Self;
    /// Converts to `f64` (for checking).
    fn to_f64(self) -> f64;
}

impl Element for f32 {
    const CUDA_TYPE: &'static str = "float";
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Element for f64 {
    const CUDA_TYPE: &'static str = "double";
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// `y[i] = a·x[i]` for the first `min(x.len(), y.len())` elements, enqueued on `stream`.
///
/// Tuned: 5 items-per-thread values × 31 block sizes (64 to 1024 in steps of 32) = 155
/// variants; base is 4 items per thread in blocks of 256 threads. The kernel of each
/// variant is compiled on its first call in a process (or found in the kernel cache) and
/// reused after that.
#[tune(
    ipt = [1, 2, 4, 8, 16],
    tpb = (64..=1024).step_by(32),
    base(ipt = 4, tpb = 256)
)]
pub fn scale<T: Element>(
    stream: &Arc<CudaStream>,
    x: &CudaSlice<T>,
    y: &mut CudaSlice<T>,
    a: T,
) -> Result<(), BoxError> {
    Scale::get::<T>(stream, IPT as u32, TPB as u32)?.launch(stream, x, y, a)
}

/// The defines that compile the kernel for `T` at one parameter point: the one place that
/// spells them, so that [`precompile`] fills exactly the cache entries [`scale`] reads.
pub fn defines<T: Element>(ipt: u32, tpb: u32) -> Vec<(&'static str, String)> {
    vec![
        ("VALUE_T", T::CUDA_TYPE.to_string()),
        ("IPT", ipt.to_string()),
        ("TPB", tpb.to_string()),
    ]
}

/// Starts compiling, in the background, the kernels for `T` of every variant of [`scale`]
/// this process was asked to run (`--variant`), base first (verification runs it in every
/// state), then in the order they run. `None` when no variant was requested: the production
/// choice is one kernel, compiled on first use.
pub fn precompile<T: Element>(cuda: &CudaHandles) -> Result<Option<Precompile>, BoxError> {
    let labels = tuned::to_prepare("scale");
    if labels.is_empty() {
        return Ok(None);
    }
    let sets = labels
        .iter()
        .map(|label| {
            let v = Variant::parse(label, SCALE_PARAMS)?;
            Ok(defines::<T>(v.get("ipt")?, v.get("tpb")?))
        })
        .collect::<Result<Vec<_>, gputune_runtime::Error>>()?;
    Ok(Some(cuda.precompile(SOURCE, &sets)?))
}

/// The scale kernel compiled for one element type and one parameter point.
#[derive(Debug, Clone)]
pub struct Scale {
    function: CudaFunction,
    ipt: u32,
    tpb: u32,
}

impl Scale {
    /// Compiles the kernel for `T` with `ipt` items per thread and `tpb` threads per block.
    pub fn compile<T: Element>(cuda: &CudaHandles, ipt: u32, tpb: u32) -> Result<Scale, BoxError> {
        if ipt == 0 || tpb == 0 {
            return Err(format!("ipt ({ipt}) and tpb ({tpb}) must be positive").into());
        }
        let module = cuda.compile(SOURCE, &defines::<T>(ipt, tpb))?;
        let function = module.load_function("scale")?;
        Ok(Scale { function, ipt, tpb })
    }

    /// [`Scale::compile`] on `stream`'s context, once per context, type and point per
    /// process: `scale` runs inside timed loops, where even a cache lookup by source text
    /// would cost more than a launch of a small kernel.
    pub fn get<T: Element>(
        stream: &Arc<CudaStream>,
        ipt: u32,
        tpb: u32,
    ) -> Result<Scale, BoxError> {
        type Compiled = HashMap<(usize, &'static str, u32, u32), Scale>;
        static COMPILED: Mutex<Option<Compiled>> = Mutex::new(None);
        let key = (stream.context().cu_ctx() as usize, T::CUDA_TYPE, ipt, tpb);
        // A poisoned lock only means a thread panicked while inserting; the map is whole.
        let lock = || COMPILED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = lock().get_or_insert_with(HashMap::new).get(&key) {
            return Ok(s.clone());
        }
        let cuda = CudaHandles {
            context: stream.context().clone(),
            stream: stream.clone(),
        };
        let compiled = Scale::compile::<T>(&cuda, ipt, tpb)?;
        lock()
            .get_or_insert_with(HashMap::new)
            .insert(key, compiled.clone());
        Ok(compiled)
    }

    /// The launch shape for `n` elements.
    pub fn config(&self, n: usize) -> LaunchConfig {
        let per_block = u64::from(self.ipt) * u64::from(self.tpb);
        let blocks = (n as u64).div_ceil(per_block).max(1);
        LaunchConfig {
            grid_dim: (u32::try_from(blocks).unwrap_or(u32::MAX), 1, 1),
            block_dim: (self.tpb, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Enqueues `y = a·x` on `stream`.
    pub fn launch<T: Element>(
        &self,
        stream: &Arc<CudaStream>,
        x: &CudaSlice<T>,
        y: &mut CudaSlice<T>,
        a: T,
    ) -> Result<(), BoxError> {
        let n = x.len().min(y.len());
        let per_block = u64::from(self.ipt) * u64::from(self.tpb);
        if (n as u64).div_ceil(per_block) > u64::from(u32::MAX) {
            return Err(format!(
                "{n} elements need more than 2^32 blocks at ipt={} tpb={}",
                self.ipt, self.tpb
            )
            .into());
        }
        let n64 = n as u64;
        let mut builder = stream.launch_builder(&self.function);
        builder.arg(x).arg(y).arg(&a).arg(&n64);
        // SAFETY: the argument list matches `scale(const T*, T*, T, unsigned long long)` in
        // scale.cu, and the kernel touches only indices below n, which both slices hold.
        unsafe { builder.launch(self.config(n)) }?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_covers_every_element() {
        // Needs no device: only the arithmetic of the launch shape.
        let shape = |n: usize, ipt: u64, tpb: u32| {
            let per_block = ipt * u64::from(tpb);
            ((n as u64).div_ceil(per_block).max(1), tpb)
        };
        assert_eq!(shape(1 << 20, 4, 256), (1024, 256));
        assert_eq!(shape(1000, 8, 128), (1, 128));
        assert_eq!(shape(1025, 1, 1024), (2, 1024));
        assert!(SOURCE.contains("extern \"C\" __global__"));
    }

    #[test]
    fn the_parameters_are_the_issue_s_space_and_base() {
        assert_eq!(SCALE_PARAMS, [("ipt", "4"), ("tpb", "256")]);
        let v = Variant::parse("ipt_16.tpb_1024", SCALE_PARAMS).expect("a label of the space");
        assert_eq!(
            defines::<f64>(v.get("ipt").expect("ipt"), v.get("tpb").expect("tpb")),
            [
                ("VALUE_T", "double".to_string()),
                ("IPT", "16".to_string()),
                ("TPB", "1024".to_string())
            ]
        );
    }
}

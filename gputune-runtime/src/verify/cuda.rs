//! [`Verify`] for device buffers: poisoned with a memset, copied on the device, and compared
//! by a kernel whose per-block partial results (a few kilobytes) are all that comes back, so
//! checking a 256 MB output costs a fraction of a millisecond of GPU time.

use std::sync::{Arc, Mutex};

use cudarc::driver::{
    result as driver, CudaContext, CudaFunction, CudaModule, CudaSlice, DevicePtrMut, LaunchConfig,
    PushKernelArg,
};

use super::{Comparison, Tolerance, Verify};
use crate::error::{BoxError, Error};

/// The comparison kernels, one per element type. The error rule is the CPU path's
/// (`super::abs_error`): equal values (NaN included) pass, one-sided NaN is infinitely wrong.
const SOURCE: &str = r#"
// Half-precision values as their bits, read as floats by hand: no header needed.
struct gputune_bf16 { unsigned short bits; };
struct gputune_f16 { unsigned short bits; };
__device__ double gputune_value(float v) { return v; }
__device__ double gputune_value(double v) { return v; }
__device__ double gputune_value(int v) { return v; }
__device__ double gputune_value(unsigned int v) { return v; }
__device__ double gputune_value(gputune_bf16 v) {
    return (double)__int_as_float((int)((unsigned int)v.bits << 16));
}
__device__ double gputune_value(gputune_f16 v) {
    unsigned int sign = (v.bits >> 15) & 1u, exp = (v.bits >> 10) & 0x1fu, mant = v.bits & 0x3ffu;
    double m = (double)mant, x;
    if (exp == 0) x = m * 5.9604644775390625e-8;  // 2^-24
    else if (exp == 31) x = mant ? __longlong_as_double(0x7ff8000000000000LL)
                                 : __longlong_as_double(0x7ff0000000000000LL);
    else x = (1.0 + m / 1024.0) * ldexp(1.0, (int)exp - 15);
    return sign ? -x : x;
}
template <typename T>
__device__ void gputune_compare(const T* out, const T* ref, unsigned long long n, double atol,
                                double rtol, unsigned long long* bad, double* max_abs,
                                unsigned long long* worst, double* max_rel) {
    __shared__ unsigned long long s_bad[256];
    __shared__ double s_abs[256];
    __shared__ unsigned long long s_worst[256];
    __shared__ double s_rel[256];
    unsigned long long b = 0, w = ~0ull;
    double ma = 0.0, mr = 0.0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        double o = gputune_value(out[i]), r = gputune_value(ref[i]);
        if (isnan(o) && isnan(r)) continue;
        if (o == r) {
            // EXACT compares bits: -0 is not +0 (only zeros compare equal with other bits).
            if (atol == 0.0 && rtol == 0.0 && __double_as_longlong(o) != __double_as_longlong(r)) {
                b++;
                if (w == ~0ull) w = i;
            }
            continue;
        }
        double e = fabs(o - r);
        if (isnan(e)) e = __longlong_as_double(0x7ff0000000000000LL);  // +inf: NVRTC has no math.h
        if (!(e <= atol + rtol * fabs(r))) b++;
        if (e > ma) { ma = e; w = i; }
        if (r != 0.0) mr = fmax(mr, e / fabs(r));
    }
    unsigned t = threadIdx.x;
    s_bad[t] = b; s_abs[t] = ma; s_worst[t] = w; s_rel[t] = mr;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) {
            s_bad[t] += s_bad[t + s];
            // A zero error with an index (a sign of zero under EXACT) is kept where none is.
            if (s_abs[t + s] > s_abs[t] || (s_worst[t] == ~0ull && s_abs[t + s] == s_abs[t])) {
                s_abs[t] = s_abs[t + s]; s_worst[t] = s_worst[t + s];
            }
            s_rel[t] = fmax(s_rel[t], s_rel[t + s]);
        }
        __syncthreads();
    }
    if (t == 0) {
        bad[blockIdx.x] = s_bad[0]; max_abs[blockIdx.x] = s_abs[0];
        worst[blockIdx.x] = s_worst[0]; max_rel[blockIdx.x] = s_rel[0];
    }
}
// The largest finite |ref| of each block: the floor of a tolerance relative to the output.
template <typename T>
__device__ void gputune_peak(const T* ref, unsigned long long n, double* peak) {
    __shared__ double s_peak[256];
    double m = 0.0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        double r = fabs(gputune_value(ref[i]));
        if (r <= 1.7976931348623157e308) m = fmax(m, r);  // finite: NaN and inf compare false
    }
    unsigned t = threadIdx.x;
    s_peak[t] = m;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) s_peak[t] = fmax(s_peak[t], s_peak[t + s]);
        __syncthreads();
    }
    if (t == 0) peak[blockIdx.x] = s_peak[0];
}
#define GPUTUNE_PEAK(NAME, T) \
extern "C" __global__ void NAME(const T* ref, unsigned long long n, double* peak) { \
    gputune_peak<T>(ref, n, peak); }
GPUTUNE_PEAK(gputune_peak_f32, float)
GPUTUNE_PEAK(gputune_peak_f64, double)
GPUTUNE_PEAK(gputune_peak_i32, int)
GPUTUNE_PEAK(gputune_peak_u32, unsigned int)
GPUTUNE_PEAK(gputune_peak_bf16, gputune_bf16)
GPUTUNE_PEAK(gputune_peak_f16, gputune_f16)
#define GPUTUNE_COMPARE(NAME, T) \
extern "C" __global__ void NAME(const T* out, const T* ref, unsigned long long n, double atol, \
    double rtol, unsigned long long* bad, double* max_abs, unsigned long long* worst, \
    double* max_rel) { gputune_compare<T>(out, ref, n, atol, rtol, bad, max_abs, worst, max_rel); }
GPUTUNE_COMPARE(gputune_compare_f32, float)
GPUTUNE_COMPARE(gputune_compare_f64, double)
GPUTUNE_COMPARE(gputune_compare_i32, int)
GPUTUNE_COMPARE(gputune_compare_u32, unsigned int)
GPUTUNE_COMPARE(gputune_compare_bf16, gputune_bf16)
GPUTUNE_COMPARE(gputune_compare_f16, gputune_f16)
"#;

const THREADS: u32 = 256;
const MAX_BLOCKS: u64 = 1024;

/// The compiled comparison module of each context this process used (usually one).
fn module(context: &Arc<CudaContext>) -> Result<Arc<CudaModule>, Error> {
    static MODULES: Mutex<Vec<(usize, Arc<CudaModule>)>> = Mutex::new(Vec::new());
    let key = context.cu_ctx() as usize;
    let mut modules = MODULES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, m)) = modules.iter().find(|(k, _)| *k == key) {
        return Ok(m.clone());
    }
    let (m, _) = crate::backend::cuda::load_module(context, &SOURCE.into(), &[], &[])?;
    modules.push((key, m.clone()));
    Ok(m)
}

/// A device element type with a comparison kernel.
pub trait DeviceElement: cudarc::driver::DeviceRepr + Copy {
    /// The default tolerance, as [`Element::TOLERANCE`](super::Element::TOLERANCE).
    const TOLERANCE: super::Tolerance;
    /// The byte every byte of the poison is (0xFF: NaN for floats).
    const POISON_BYTE: u8;
    /// The comparison kernel's name.
    const KERNEL: &'static str;
    /// The name of the kernel that finds the largest finite `|reference|`.
    const PEAK: &'static str;
}

impl DeviceElement for f32 {
    const TOLERANCE: super::Tolerance = <f32 as super::Element>::TOLERANCE;
    const POISON_BYTE: u8 = 0xFF;
    const KERNEL: &'static str = "gputune_compare_f32";
    const PEAK: &'static str = "gputune_peak_f32";
}
impl DeviceElement for f64 {
    const TOLERANCE: super::Tolerance = <f64 as super::Element>::TOLERANCE;
    const POISON_BYTE: u8 = 0xFF;
    const KERNEL: &'static str = "gputune_compare_f64";
    const PEAK: &'static str = "gputune_peak_f64";
}
impl DeviceElement for i32 {
    const TOLERANCE: super::Tolerance = super::Tolerance::EXACT;
    const POISON_BYTE: u8 = 0xA5;
    const KERNEL: &'static str = "gputune_compare_i32";
    const PEAK: &'static str = "gputune_peak_i32";
}
impl DeviceElement for u32 {
    const TOLERANCE: super::Tolerance = super::Tolerance::EXACT;
    const POISON_BYTE: u8 = 0xA5;
    const KERNEL: &'static str = "gputune_compare_u32";
    const PEAK: &'static str = "gputune_peak_u32";
}

impl DeviceElement for super::Bf16 {
    const TOLERANCE: super::Tolerance = <super::Bf16 as super::Element>::TOLERANCE;
    const POISON_BYTE: u8 = 0xFF;
    const KERNEL: &'static str = "gputune_compare_bf16";
    const PEAK: &'static str = "gputune_peak_bf16";
}
impl DeviceElement for super::F16 {
    const TOLERANCE: super::Tolerance = <super::F16 as super::Element>::TOLERANCE;
    const POISON_BYTE: u8 = 0xFF;
    const KERNEL: &'static str = "gputune_compare_f16";
    const PEAK: &'static str = "gputune_peak_f16";
}

// SAFETY: both are a `u16` (`repr(transparent)`), as `__nv_bfloat16` and `__half` are 16 bits.
unsafe impl cudarc::driver::DeviceRepr for super::Bf16 {}
unsafe impl cudarc::driver::DeviceRepr for super::F16 {}
// SAFETY: all-zero bits are +0.0 in both formats.
unsafe impl cudarc::driver::ValidAsZeroBits for super::Bf16 {}
unsafe impl cudarc::driver::ValidAsZeroBits for super::F16 {}

/// A driver error as a classified [`Error`]: a sticky one (the variant just verified wrote
/// out of bounds, say) is [`Error::DeviceLost`], which ends the process.
fn device(what: &'static str) -> impl Fn(cudarc::driver::DriverError) -> BoxError {
    move |e| Box::new(crate::backend::cuda::driver_error(what, e))
}

impl<T: DeviceElement> Verify for CudaSlice<T> {
    fn poison(&mut self) -> Result<(), BoxError> {
        let stream = self.stream().clone();
        let bytes = self.len() * std::mem::size_of::<T>();
        let (ptr, _sync) = self.device_ptr_mut(&stream);
        // SAFETY: `ptr` is this slice's allocation of `bytes` bytes, ordered on its stream.
        unsafe { driver::memset_d8_async(ptr, T::POISON_BYTE, bytes, stream.cu_stream()) }
            .map_err(device("poisoning the outputs"))
    }

    fn snapshot(&self) -> Result<Self, BoxError> {
        self.stream()
            .clone_dtod(self)
            .map_err(device("copying the reference outputs"))
    }

    fn compare(&self, reference: &Self, tolerance: Tolerance) -> Result<Comparison, BoxError> {
        let stream = self.stream().clone();
        let n = self.len().min(reference.len()) as u64;
        let module = module(stream.context())?;
        let f: CudaFunction = module
            .load_function(T::KERNEL)
            .map_err(device("loading the comparison kernel"))?;
        let blocks = n.div_ceil(u64::from(THREADS)).clamp(1, MAX_BLOCKS) as usize;
        let config = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // The floor relative to the output needs its largest value first: one more launch,
        // a few kilobytes back, only for a tolerance that has one.
        let atol = if tolerance.floor > 0.0 {
            tolerance.atol + tolerance.floor * peak(&stream, &module, reference, n, config)?
        } else {
            tolerance.atol
        };
        let alloc = "allocating the comparison's partial results";
        let mut bad = stream.alloc_zeros::<u64>(blocks).map_err(device(alloc))?;
        let mut max_abs = stream.alloc_zeros::<f64>(blocks).map_err(device(alloc))?;
        let mut worst = stream.alloc_zeros::<u64>(blocks).map_err(device(alloc))?;
        let mut max_rel = stream.alloc_zeros::<f64>(blocks).map_err(device(alloc))?;
        // SAFETY: the argument list matches the kernel's signature; both inputs hold at least
        // `n` elements and each partial-result buffer one per block.
        unsafe {
            stream
                .launch_builder(&f)
                .arg(self)
                .arg(reference)
                .arg(&n)
                .arg(&atol)
                .arg(&tolerance.rtol)
                .arg(&mut bad)
                .arg(&mut max_abs)
                .arg(&mut worst)
                .arg(&mut max_rel)
                .launch(config)
        }
        .map_err(device("launching the comparison kernel"))?;
        let read = "reading the comparison back";
        let bad = stream.clone_dtoh(&bad).map_err(device(read))?;
        let max_abs = stream.clone_dtoh(&max_abs).map_err(device(read))?;
        let worst = stream.clone_dtoh(&worst).map_err(device(read))?;
        let max_rel = stream.clone_dtoh(&max_rel).map_err(device(read))?;
        let mut c = Comparison {
            checked: n,
            mismatches: bad.iter().sum::<u64>() + self.len().abs_diff(reference.len()) as u64,
            max_abs_error: 0.0,
            max_rel_error: max_rel.iter().copied().fold(0.0, f64::max),
            worst_index: None,
        };
        for (&e, &w) in max_abs.iter().zip(&worst) {
            if e > c.max_abs_error {
                c.max_abs_error = e;
                c.worst_index = Some(w);
            }
        }
        if c.mismatches > 0 && c.worst_index.is_none() {
            // Only signs of zero differ (EXACT), or else only the lengths.
            c.worst_index = worst.iter().copied().filter(|&w| w != u64::MAX).min();
            if c.worst_index.is_none() {
                c.max_abs_error = f64::INFINITY;
                c.worst_index = Some(n);
            }
        }
        Ok(c)
    }

    fn default_tolerance() -> super::Tolerance {
        T::TOLERANCE
    }
}

/// The largest finite `|reference|` of the first `n` elements, found on the device.
fn peak<T: DeviceElement>(
    stream: &Arc<cudarc::driver::CudaStream>,
    module: &Arc<CudaModule>,
    reference: &CudaSlice<T>,
    n: u64,
    config: LaunchConfig,
) -> Result<f64, BoxError> {
    let f: CudaFunction = module
        .load_function(T::PEAK)
        .map_err(device("loading the comparison kernel"))?;
    let mut peaks = stream
        .alloc_zeros::<f64>(config.grid_dim.0 as usize)
        .map_err(device("allocating the comparison's partial results"))?;
    // SAFETY: the argument list matches the kernel's signature; `reference` holds at least `n`
    // elements and `peaks` one per block.
    unsafe {
        stream
            .launch_builder(&f)
            .arg(reference)
            .arg(&n)
            .arg(&mut peaks)
            .launch(config)
    }
    .map_err(device("launching the comparison kernel"))?;
    let peaks = stream
        .clone_dtoh(&peaks)
        .map_err(device("reading the comparison back"))?;
    Ok(peaks.into_iter().fold(0.0, f64::max))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The comparison kernels go through NVRTC wherever it can be loaded, GPU or not (for
    /// instance with the lib directory of PyPI's `nvidia-cuda-nvrtc` on LD_LIBRARY_PATH);
    /// elsewhere there is nothing to compile with.
    #[test]
    fn the_comparison_kernels_compile_where_nvrtc_is_present() {
        match crate::backend::cuda::compile_for(&SOURCE.into(), &[], &[], 90) {
            Ok(_) => {}
            Err(Error::Device(m)) if m.contains("could not be loaded") => {
                crate::skipped(&m);
            }
            Err(e) => panic!("the comparison kernels do not compile: {e}"),
        }
    }
}

//! A 256-bin histogram of 32-bit keys on the GPU, tuned by gputune over threads per block,
//! keys per thread and step, private shared-memory copies per block and blocks per SM:
//! written for issue 24 as a newcomer would (from the README's "Your first tuned kernel"),
//! before any default of the search was tuned on it.

use std::sync::Arc;

use gputune_macros::tune;
use gputune_runtime::cudarc::driver::sys::CUdevice_attribute;
use gputune_runtime::cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gputune_runtime::kernel::Kernel;
use gputune_runtime::BoxError;

/// Bins of the histogram: keys `0..BINS` are counted.
pub const BINS: usize = 256;

/// The tuned kernel: `histogram` of `histogram.cu`, compiled with the variant's `TPB`, `IPT`
/// and `COPIES` as defines.
pub static HISTOGRAM: Kernel = gputune_macros::kernel!("src/histogram.cu", "histogram");

/// `bins[k]` = the number of `keys` equal to `k`, for `k < 256` (larger keys are not
/// counted), enqueued on `stream`: `bins` is zeroed, then counted into.
///
/// Tuned over threads per block `tpb`, keys each thread loads per step `ipt`, private
/// histograms per block `copies` (warps share them round robin: fewer threads contend for
/// a bin) and resident blocks per SM `bps` (the grid is that many blocks per SM, walking the
/// keys grid-stride), within the SM's 2048 threads: 240 points. Base is 256 threads of one
/// key each, one histogram per block, four blocks per SM. `size(Keys = …)`: production builds
/// may run a winner per range of the key count (`apply --per-size --size-axis Keys`).
#[tune(
    tpb = [128, 256, 512, 1024],
    ipt = [1, 2, 4, 8, 16],
    copies = [1, 2, 4, 8],
    bps = [1, 2, 4, 8],
    require(copies * 32 <= tpb),
    require(tpb * bps <= 2048),
    base(tpb = 256, ipt = 1, copies = 1, bps = 4),
    size(Keys = keys.len())
)]
pub fn histogram(
    stream: &Arc<CudaStream>,
    keys: &CudaSlice<u32>,
    bins: &mut CudaSlice<u32>,
) -> Result<(), BoxError> {
    if bins.len() < BINS {
        return Err(format!("a histogram needs {BINS} bins, not {}", bins.len()).into());
    }
    stream.memset_zeros(bins)?;
    if keys.is_empty() {
        return Ok(());
    }
    let kernel = HISTOGRAM.get(TUNED, stream, &[])?;
    let sms = stream
        .context()
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    let config = kernel.check(LaunchConfig {
        grid_dim: (u32::try_from(sms)? * BPS as u32, 1, 1),
        block_dim: (TPB as u32, 1, 1),
        shared_mem_bytes: 0,
    })?;
    let n = i64::try_from(keys.len())?;
    let mut launch = stream.launch_builder(kernel.function());
    launch.arg(keys).arg(&n).arg(bins);
    // SAFETY: the arguments match histogram(const unsigned*, long long, unsigned*); it reads
    // keys[0..n) and adds into bins[0..256), which the slices hold (checked above).
    unsafe { launch.launch(config) }?;
    Ok(())
}

/// The histogram of `keys` on the host: the reference a bench checks base against.
pub fn host_histogram(keys: &[u32]) -> Vec<u32> {
    let mut bins = vec![0u32; BINS];
    for &k in keys {
        if let Some(b) = bins.get_mut(k as usize) {
            *b += 1;
        }
    }
    bins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_histogram_counts_each_key_below_256_once() {
        let bins = host_histogram(&[0, 255, 256, 7, 7, u32::MAX]);
        assert_eq!(bins.len(), BINS);
        assert_eq!((bins[0], bins[7], bins[255]), (1, 2, 1));
        assert_eq!(bins.iter().sum::<u32>(), 4);
    }

    /// Every point of the space compiles for sm_90 (the source is small: all 240 take NVRTC
    /// about as long as one CUB kernel).
    #[test]
    fn every_point_compiles_where_nvrtc_is_installed() {
        let manifest = include_str!(concat!(env!("OUT_DIR"), "/gputune/manifest.json"));
        let labels: Vec<&str> = manifest
            .split('"')
            .filter(|s| s.starts_with("tpb_") && s.contains(".bps_"))
            .collect();
        assert_eq!(labels.len(), 240, "the space as documented");
        for label in std::iter::once("base").chain(labels) {
            match HISTOGRAM.compiles_for(HISTOGRAM_PARAMS, label, &[], 90) {
                Ok(true) => {}
                Ok(false) => {
                    eprintln!("skipped: needs NVRTC (the CUDA toolkit), which is not loaded");
                    return;
                }
                Err(e) => panic!("{label} does not compile: {e}"),
            }
        }
    }
}

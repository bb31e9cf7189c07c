//! The CPU backend: CPU code timed with the monotonic clock.
//!
//! A cold sample first writes a buffer as large as the last-level cache, capped at 32 MiB
//! (the CPU's counterpart of nvbench's L2 flush), so every sample starts with cold caches.

use std::hint::black_box;
use std::time::Instant;

use super::{Backend, ColdSample, Launches};
use crate::device::{BackendKind, DeviceInfo};
use crate::error::{Error, Result};
use crate::launch::Launch;

/// Used when the cache size cannot be read from sysfs.
const FALLBACK_CACHE_BYTES: u64 = 32 << 20;
/// The flush never writes more than this. Servers (and VMs that show the host's cache)
/// report last-level caches of hundreds of MiB; writing all of it before every sample would
/// cost tens of milliseconds per sample. 32 MiB evicts the private caches and the share of a
/// shared L3 that one process realistically owns.
const MAX_FLUSH_BYTES: u64 = 32 << 20;

/// Times CPU code with [`Instant`].
#[derive(Debug)]
pub struct CpuBackend {
    info: DeviceInfo,
    flush: Vec<u8>,
    flushes: u8,
}

impl CpuBackend {
    /// The CPU backend for this machine. Only device 0 exists.
    pub fn open(ordinal: u32) -> Result<CpuBackend> {
        if ordinal != 0 {
            return Err(Error::NoDevice(format!(
                "the CPU backend has only device 0, not {ordinal}"
            )));
        }
        let cache = last_level_cache_bytes().unwrap_or(FALLBACK_CACHE_BYTES);
        let info = DeviceInfo {
            id: 0,
            backend: BackendKind::Cpu,
            name: model_name(),
            sm_version: None,
            sm_count: std::thread::available_parallelism()
                .ok()
                .and_then(|n| u32::try_from(n.get()).ok()),
            sm_default_clock_rate: None,
            memory_clock_rate: None,
            memory_bus_width: None,
            global_memory_size: None,
            cache_size: Some(cache),
            max_threads_per_block: None,
            shared_memory_per_block: None,
            ecc_enabled: None,
        };
        Ok(CpuBackend {
            info,
            flush: vec![0; cache.min(MAX_FLUSH_BYTES) as usize],
            flushes: 0,
        })
    }

    fn flush_cache(&mut self) {
        // A new byte each time, so the writes cannot be elided as redundant.
        self.flushes = self.flushes.wrapping_add(1);
        self.flush.fill(self.flushes);
        black_box(&self.flush);
    }
}

impl Backend for CpuBackend {
    fn device(&self) -> &DeviceInfo {
        &self.info
    }

    fn cold_sample(&mut self, launches: &mut Launches<'_>) -> Result<ColdSample> {
        self.flush_cache();
        let start = Instant::now();
        launches(&mut Launch::cpu()).map_err(Error::Launch)?;
        let t = start.elapsed().as_secs_f64();
        Ok(ColdSample {
            gpu_time: t,
            cpu_time: t,
            sm_clock_rate: None,
        })
    }

    fn hot_batch(&mut self, launches: &mut Launches<'_>, count: u64) -> Result<f64> {
        let start = Instant::now();
        for _ in 0..count {
            launches(&mut Launch::cpu()).map_err(Error::Launch)?;
        }
        Ok(start.elapsed().as_secs_f64())
    }
}

/// The CPU's model name as the store records it (`AMD EPYC 7B13`): `model name` of
/// `/proc/cpuinfo`, else the target architecture (`x86_64`). Production builds match
/// `gputune.toml` model keys against it on machines without a GPU.
pub(crate) fn model_name() -> String {
    cpu_model_name().unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

fn cpu_model_name() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// The largest cache sysfs lists for CPU 0.
fn last_level_cache_bytes() -> Option<u64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("size")).ok())
        .filter_map(|s| parse_cache_size(s.trim()))
        .max()
}

/// Parses sysfs cache sizes such as `32768K` or `64M`.
fn parse_cache_size(s: &str) -> Option<u64> {
    let (digits, scale) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1u64 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok().map(|d| d * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse() {
        assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
        assert_eq!(parse_cache_size("64M"), Some(64 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("lots"), None);
    }

    #[test]
    fn only_device_zero_exists() {
        assert!(matches!(CpuBackend::open(1), Err(Error::NoDevice(_))));
    }

    #[test]
    fn cold_samples_time_the_launches() {
        let mut b = CpuBackend::open(0).expect("the CPU is there");
        let mut runs = 0;
        let mut f = |_: &mut Launch<'_>| -> std::result::Result<(), crate::BoxError> {
            runs += 1;
            Ok(())
        };
        let s = b.cold_sample(&mut f).expect("no failure");
        assert!(s.gpu_time >= 0.0 && s.cpu_time == s.gpu_time);
        let t = b.hot_batch(&mut f, 5).expect("no failure");
        assert!(t >= 0.0);
        assert_eq!(runs, 6);
    }
}

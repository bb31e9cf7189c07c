//! Where and how this bench process measures: the toolchain and profile that built it
//! (captured by this crate's build script), the host, and, for a CUDA device, what its driver,
//! NVRTC and NVML say ([`crate::backend::cuda::CudaBackend::provenance`]). Read at the start
//! of every pass and sent as the protocol's `provenance` event; never set anything.

use gputune_protocol::{CudaProvenance, Provenance};

/// `rustc -V` of the compiler that built this crate (empty if it could not be asked).
const RUSTC: &str = env!("GPUTUNE_BUILD_RUSTC");
/// The profile directory this crate was built into (`release`, `debug`, a custom name).
const PROFILE: &str = env!("GPUTUNE_BUILD_PROFILE");
/// Its optimisation level.
const OPT_LEVEL: &str = env!("GPUTUNE_BUILD_OPT_LEVEL");

/// The provenance of a pass, with `cuda` the CUDA device's side (`None` without one).
pub fn provenance(cuda: Option<CudaProvenance>) -> Provenance {
    let known = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Provenance {
        host: host_name(),
        gputune: env!("CARGO_PKG_VERSION").to_string(),
        rustc: known(RUSTC),
        profile: known(PROFILE),
        opt_level: known(OPT_LEVEL),
        debug_assertions: Some(cfg!(debug_assertions)),
        cuda,
    }
}

/// The host's name: the kernel's, else `$HOSTNAME`; `None` where neither says.
pub fn host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_run_says_what_built_it_and_where_it_ran() {
        let p = provenance(None);
        assert!(p.cuda.is_none());
        assert_eq!(p.gputune, env!("CARGO_PKG_VERSION"));
        assert!(
            p.rustc.as_deref().is_some_and(|r| r.starts_with("rustc ")),
            "{p:?}"
        );
        // The tests are built into `debug` (or a custom profile's directory), with debug
        // assertions exactly when this test binary has them.
        assert!(p.profile.is_some(), "{p:?}");
        assert!(p.opt_level.is_some(), "{p:?}");
        assert_eq!(p.debug_assertions, Some(cfg!(debug_assertions)));
        assert_eq!(p.host, host_name());
    }
}

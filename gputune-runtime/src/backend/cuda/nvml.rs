//! NVML, the NVIDIA Management Library, loaded at run time (`libnvidia-ml.so.1`, which the
//! driver installs): what a GPU's clocks, power limit and modes are set to, and, for those
//! who want it, its energy counter. Only queries: nothing here sets anything on the GPU.
//!
//! Nothing links NVML at build time, so this builds and its tests run on machines without a
//! driver; there, [`Nvml::shared`] is an [`NvmlError::Unavailable`] that says why, and
//! whoever asked records the fields as unknown. The API is narrow and safe: [`Nvml`] owns the
//! library and its entry points, [`NvmlDevice`] is one GPU found by its PCI bus id (the one
//! identity CUDA and NVML agree on, whatever `CUDA_VISIBLE_DEVICES` renumbers), and each
//! query returns plain units (Hz, W, J) or an error naming the call.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void, CStr, CString};
use std::sync::OnceLock;

use libloading::Library;

/// The library the driver installs (the unversioned name is only in development packages).
pub const LIBRARY: &str = "libnvidia-ml.so.1";

/// What went wrong asking NVML.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NvmlError {
    /// The library could not be loaded or started: no driver, or not NVIDIA's.
    #[error("NVML is not available ({library}: {reason})")]
    Unavailable {
        /// The library asked for.
        library: String,
        /// What the loader or `nvmlInit_v2` said.
        reason: String,
    },
    /// The library has no such entry point: an NVML older than the call.
    #[error("NVML has no {symbol} (a driver older than the call)")]
    Missing {
        /// The entry point.
        symbol: &'static str,
    },
    /// A call returned an error.
    #[error("{call}: {message} (NVML error {code})")]
    Call {
        /// The entry point.
        call: &'static str,
        /// The `nvmlReturn_t`.
        code: c_int,
        /// `nvmlErrorString`'s text for it.
        message: String,
    },
    /// An argument NVML cannot take (a bus id with a NUL byte).
    #[error("{0}")]
    Argument(String),
}

/// `NVML_ERROR_NOT_SUPPORTED`: the GPU does not have the queried feature.
const NOT_SUPPORTED: c_int = 3;

impl NvmlError {
    /// Whether the GPU simply does not support the query (a consumer card without
    /// application clocks, a board without a power limit): the field is unknown, nothing
    /// failed.
    pub fn is_not_supported(&self) -> bool {
        matches!(
            self,
            NvmlError::Call {
                code: NOT_SUPPORTED,
                ..
            } | NvmlError::Missing { .. }
        )
    }
}

/// The clock domains of `nvmlClockType_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// `NVML_CLOCK_GRAPHICS`.
    Graphics,
    /// `NVML_CLOCK_SM`: the streaming multiprocessors'.
    Sm,
    /// `NVML_CLOCK_MEM`: the memory's.
    Memory,
}

impl Clock {
    fn raw(self) -> c_uint {
        match self {
            Clock::Graphics => 0,
            Clock::Sm => 1,
            Clock::Memory => 2,
        }
    }
}

type Device = *mut c_void;
type Init = unsafe extern "C" fn() -> c_int;
type ErrorString = unsafe extern "C" fn(c_int) -> *const c_char;
type DriverVersion = unsafe extern "C" fn(*mut c_char, c_uint) -> c_int;
type ByPciBusId = unsafe extern "C" fn(*const c_char, *mut Device) -> c_int;
type ClockQuery = unsafe extern "C" fn(Device, c_uint, *mut c_uint) -> c_int;
type UintQuery = unsafe extern "C" fn(Device, *mut c_uint) -> c_int;
type EccMode = unsafe extern "C" fn(Device, *mut c_uint, *mut c_uint) -> c_int;
type Energy = unsafe extern "C" fn(Device, *mut c_ulonglong) -> c_int;

/// The entry points, resolved once. An entry point the library lacks is `None`, and only the
/// query that needs it fails.
struct Api {
    error_string: Option<ErrorString>,
    driver_version: Option<DriverVersion>,
    by_pci_bus_id: Option<ByPciBusId>,
    applications_clock: Option<ClockQuery>,
    clock_info: Option<ClockQuery>,
    enforced_power_limit: Option<UintQuery>,
    persistence_mode: Option<UintQuery>,
    ecc_mode: Option<EccMode>,
    total_energy: Option<Energy>,
}

/// NVML, loaded and initialised. It stays loaded for the life of the process (NVML's own
/// state is reference-counted, and a bench asks it again at every pass).
pub struct Nvml {
    api: Api,
    /// Owns the code the entry points point into: it must outlive them, so it is dropped
    /// last and never unloaded while an [`Nvml`] exists.
    _library: Library,
}

impl std::fmt::Debug for Nvml {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvml").finish_non_exhaustive()
    }
}

impl Nvml {
    /// The process's NVML, loaded from [`LIBRARY`] on first use. Where it cannot be loaded,
    /// the same error every time: it is not tried again.
    pub fn shared() -> Result<&'static Nvml, NvmlError> {
        static SHARED: OnceLock<Result<Nvml, NvmlError>> = OnceLock::new();
        SHARED
            .get_or_init(|| Nvml::open(LIBRARY))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Loads and initialises the NVML at `library` (a file name the loader searches for, or a
    /// path). A library that is not NVML (it has no `nvmlInit_v2`) is
    /// [`NvmlError::Unavailable`].
    pub fn open(library: &str) -> Result<Nvml, NvmlError> {
        let unavailable = |reason: String| NvmlError::Unavailable {
            library: library.to_string(),
            reason,
        };
        // SAFETY: loading NVML runs no code of ours; its initialisers are the driver's.
        let lib = unsafe { Library::new(library) }.map_err(|e| unavailable(e.to_string()))?;
        // SAFETY (every `get` below): the types are those of nvml.h for each entry point.
        let init: Init = unsafe { lib.get::<Init>(b"nvmlInit_v2\0") }
            .map(|s| *s)
            .map_err(|_| unavailable("it has no nvmlInit_v2: not NVIDIA's NVML".into()))?;
        fn entry<T: Copy>(lib: &Library, name: &[u8]) -> Option<T> {
            // SAFETY: see above; a missing symbol is `None`.
            unsafe { lib.get::<T>(name) }.ok().map(|s| *s)
        }
        let api = Api {
            error_string: entry(&lib, b"nvmlErrorString\0"),
            driver_version: entry(&lib, b"nvmlSystemGetDriverVersion\0"),
            by_pci_bus_id: entry(&lib, b"nvmlDeviceGetHandleByPciBusId_v2\0"),
            applications_clock: entry(&lib, b"nvmlDeviceGetApplicationsClock\0"),
            clock_info: entry(&lib, b"nvmlDeviceGetClockInfo\0"),
            enforced_power_limit: entry(&lib, b"nvmlDeviceGetEnforcedPowerLimit\0"),
            persistence_mode: entry(&lib, b"nvmlDeviceGetPersistenceMode\0"),
            ecc_mode: entry(&lib, b"nvmlDeviceGetEccMode\0"),
            total_energy: entry(&lib, b"nvmlDeviceGetTotalEnergyConsumption\0"),
        };
        // SAFETY: takes no arguments; NVML counts initialisations, and this one is never
        // undone (the library stays loaded for the process).
        let code = unsafe { init() };
        if code != 0 {
            let nvml = Nvml { api, _library: lib };
            return Err(unavailable(format!("nvmlInit_v2: {}", nvml.message(code))));
        }
        Ok(Nvml { api, _library: lib })
    }

    /// `nvmlErrorString` of `code`, or the code itself.
    fn message(&self, code: c_int) -> String {
        self.api
            .error_string
            // SAFETY: returns a pointer to a static string (or null).
            .map(|f| unsafe { f(code) })
            .filter(|p| !p.is_null())
            // SAFETY: a NUL-terminated static string, as nvml.h documents.
            .map(|p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("error {code}"))
    }

    /// The result of `call`, which returned `code`.
    fn check(&self, call: &'static str, code: c_int) -> Result<(), NvmlError> {
        if code == 0 {
            Ok(())
        } else {
            Err(NvmlError::Call {
                call,
                code,
                message: self.message(code),
            })
        }
    }

    /// The driver's version (`580.159.04`).
    pub fn driver_version(&self) -> Result<String, NvmlError> {
        let f = self.api.driver_version.ok_or(NvmlError::Missing {
            symbol: "nvmlSystemGetDriverVersion",
        })?;
        // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE is 80.
        let mut buffer = [0 as c_char; 96];
        // SAFETY: NVML writes at most `len` bytes, NUL included.
        let code = unsafe { f(buffer.as_mut_ptr(), buffer.len() as c_uint) };
        self.check("nvmlSystemGetDriverVersion", code)?;
        // SAFETY: NUL-terminated within the buffer on success.
        Ok(unsafe { CStr::from_ptr(buffer.as_ptr()) }
            .to_string_lossy()
            .trim()
            .to_string())
    }

    /// The GPU at PCI bus id `bus_id` (`0000:65:00.0`, as `cuDeviceGetPCIBusId` writes it).
    pub fn device_by_pci_bus_id(&self, bus_id: &str) -> Result<NvmlDevice<'_>, NvmlError> {
        let f = self.api.by_pci_bus_id.ok_or(NvmlError::Missing {
            symbol: "nvmlDeviceGetHandleByPciBusId_v2",
        })?;
        let id = CString::new(bus_id)
            .map_err(|_| NvmlError::Argument(format!("bad PCI bus id {bus_id:?}")))?;
        let mut handle: Device = std::ptr::null_mut();
        // SAFETY: a NUL-terminated string and an out-pointer to a local.
        let code = unsafe { f(id.as_ptr(), &mut handle) };
        self.check("nvmlDeviceGetHandleByPciBusId_v2", code)?;
        Ok(NvmlDevice { nvml: self, handle })
    }
}

/// Starts loading the process's NVML ([`Nvml::shared`]) on a thread of its own, so that its
/// initialisation (a few hundred milliseconds on a GPU without persistence mode) overlaps the
/// driver's; the first [`Nvml::shared`] waits for it rather than starting another.
pub fn warm_up() {
    std::thread::spawn(|| {
        let _ = Nvml::shared();
    });
}

/// One GPU as NVML knows it. Queries read; none of them changes the GPU.
pub struct NvmlDevice<'a> {
    nvml: &'a Nvml,
    /// NVML's handle: valid while NVML is initialised, which [`Nvml`] keeps it.
    handle: Device,
}

impl std::fmt::Debug for NvmlDevice<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlDevice").finish_non_exhaustive()
    }
}

impl NvmlDevice<'_> {
    /// `value` of one `unsigned int` query.
    fn uint(&self, call: &'static str, f: Option<UintQuery>) -> Result<c_uint, NvmlError> {
        let f = f.ok_or(NvmlError::Missing { symbol: call })?;
        let mut value: c_uint = 0;
        // SAFETY: the handle came from NVML; an out-pointer to a local.
        let code = unsafe { f(self.handle, &mut value) };
        self.nvml.check(call, code)?;
        Ok(value)
    }

    fn clock_query(
        &self,
        call: &'static str,
        f: Option<ClockQuery>,
        clock: Clock,
    ) -> Result<f64, NvmlError> {
        let f = f.ok_or(NvmlError::Missing { symbol: call })?;
        let mut mhz: c_uint = 0;
        // SAFETY: the handle came from NVML; a valid clock type and an out-pointer.
        let code = unsafe { f(self.handle, clock.raw(), &mut mhz) };
        self.nvml.check(call, code)?;
        Ok(f64::from(mhz) * 1e6)
    }

    /// The application clock of `clock` in Hz: what the GPU runs at unless power or heat
    /// hold it back.
    pub fn application_clock(&self, clock: Clock) -> Result<f64, NvmlError> {
        self.clock_query(
            "nvmlDeviceGetApplicationsClock",
            self.nvml.api.applications_clock,
            clock,
        )
    }

    /// The current clock of `clock` in Hz, as NVML last sampled it.
    pub fn clock(&self, clock: Clock) -> Result<f64, NvmlError> {
        self.clock_query("nvmlDeviceGetClockInfo", self.nvml.api.clock_info, clock)
    }

    /// The enforced power limit in watts.
    pub fn enforced_power_limit(&self) -> Result<f64, NvmlError> {
        let mw = self.uint(
            "nvmlDeviceGetEnforcedPowerLimit",
            self.nvml.api.enforced_power_limit,
        )?;
        Ok(f64::from(mw) / 1e3)
    }

    /// Whether persistence mode is on.
    pub fn persistence_mode(&self) -> Result<bool, NvmlError> {
        Ok(self.uint(
            "nvmlDeviceGetPersistenceMode",
            self.nvml.api.persistence_mode,
        )? != 0)
    }

    /// Whether ECC is on now (the current mode, not the pending one).
    pub fn ecc_mode(&self) -> Result<bool, NvmlError> {
        let call = "nvmlDeviceGetEccMode";
        let f = self
            .nvml
            .api
            .ecc_mode
            .ok_or(NvmlError::Missing { symbol: call })?;
        let (mut current, mut pending): (c_uint, c_uint) = (0, 0);
        // SAFETY: the handle came from NVML; out-pointers to locals.
        let code = unsafe { f(self.handle, &mut current, &mut pending) };
        self.nvml.check(call, code)?;
        Ok(current != 0)
    }

    /// The energy the GPU has used since the driver was loaded, in joules (NVML counts
    /// millijoules; Volta and later). The difference of two readings is what the work between
    /// them cost.
    pub fn total_energy_consumption(&self) -> Result<f64, NvmlError> {
        let call = "nvmlDeviceGetTotalEnergyConsumption";
        let f = self
            .nvml
            .api
            .total_energy
            .ok_or(NvmlError::Missing { symbol: call })?;
        let mut mj: c_ulonglong = 0;
        // SAFETY: the handle came from NVML; an out-pointer to a local.
        let code = unsafe { f(self.handle, &mut mj) };
        self.nvml.check(call, code)?;
        Ok(mj as f64 / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_unavailable_and_says_which() {
        let err = Nvml::open("libgputune-no-such-nvml.so.1").expect_err("no such library");
        match &err {
            NvmlError::Unavailable { library, reason } => {
                assert_eq!(library, "libgputune-no-such-nvml.so.1");
                assert!(!reason.is_empty());
            }
            other => panic!("not Unavailable: {other:?}"),
        }
        assert!(
            err.to_string().starts_with("NVML is not available"),
            "{err}"
        );
        assert!(!err.is_not_supported());
    }

    #[test]
    fn a_library_that_is_not_nvml_is_unavailable() {
        // The C library loads everywhere and has no NVML entry points.
        let err = Nvml::open("libc.so.6").expect_err("libc is not NVML");
        assert!(
            matches!(&err, NvmlError::Unavailable { reason, .. } if reason.contains("nvmlInit_v2")),
            "{err:?}"
        );
    }

    #[test]
    fn the_shared_instance_answers_the_same_every_time() {
        // On a machine without a driver both are the same error; with one, the same NVML.
        match (Nvml::shared(), Nvml::shared()) {
            (Ok(a), Ok(b)) => assert!(std::ptr::eq(a, b)),
            (Err(a), Err(b)) => assert_eq!(a, b),
            (a, b) => panic!("{a:?} then {b:?}"),
        }
    }

    #[test]
    fn unsupported_queries_are_told_apart_from_failures() {
        let unsupported = NvmlError::Call {
            call: "nvmlDeviceGetApplicationsClock",
            code: NOT_SUPPORTED,
            message: "Not Supported".into(),
        };
        assert!(unsupported.is_not_supported());
        assert!(NvmlError::Missing {
            symbol: "nvmlDeviceGetTotalEnergyConsumption"
        }
        .is_not_supported());
        let denied = NvmlError::Call {
            call: "nvmlDeviceGetEnforcedPowerLimit",
            code: 4,
            message: "Insufficient Permissions".into(),
        };
        assert!(!denied.is_not_supported());
        assert_eq!(
            denied.to_string(),
            "nvmlDeviceGetEnforcedPowerLimit: Insufficient Permissions (NVML error 4)"
        );
        assert_eq!(Clock::Sm.raw(), 1);
        assert_eq!(Clock::Memory.raw(), 2);
    }
}

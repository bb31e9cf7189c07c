//! The GPU's energy counter, read through NVML (`nvmlDeviceGetTotalEnergyConsumption`, Volta
//! and later): only read, never reset, and nothing about clocks or power is set.

use super::nvml::Nvml;
use super::provenance::identity;
use super::quiet::quietly;
use super::timing::CudaBackend;
use crate::backend::Backend;

impl CudaBackend {
    /// The device's total energy in joules since the driver loaded, or why it cannot be read.
    /// The device is found in NVML by its PCI bus id once (the one identity CUDA and NVML
    /// agree on, whatever `CUDA_VISIBLE_DEVICES` renumbers); NVML's handle is looked up at
    /// each read, which keeps the backend free of NVML's raw pointers.
    pub(super) fn read_energy(&mut self) -> Result<f64, String> {
        let ordinal = self.device().id;
        let bus_id = self
            .energy_device
            .get_or_insert_with(|| {
                quietly(|| identity(ordinal))
                    .ok()
                    .and_then(|(_, bus)| bus)
                    .ok_or_else(|| "the driver did not say the device's PCI bus id".to_string())
            })
            .clone()?;
        let nvml = Nvml::shared().map_err(|e| e.to_string())?;
        let device = nvml
            .device_by_pci_bus_id(&bus_id)
            .map_err(|e| e.to_string())?;
        device.total_energy_consumption().map_err(|e| e.to_string())
    }
}

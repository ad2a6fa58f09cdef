//! Devices: CUDA devices by ordinal, or the CPU simulator.

use std::fmt;

use crate::backend::{cuda, sim};
use crate::context::Context;
use crate::driver::{self, DeviceAttr};
use crate::error::{Error, Result};

/// The environment variable that selects the backend of [`Device::default_device`].
pub const BACKEND_ENV: &str = "GPUKERNEL_BACKEND";

/// Which kind of machine runs the kernels.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let backend = Device::default_device()?.backend();
/// println!("kernels run on {}", match backend {
///     Backend::Cuda => "a CUDA device",
///     Backend::Simulator => "the simulator",
/// });
/// # use gpukernel_runtime::Backend;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// A CUDA device, through the driver API.
    Cuda,
    /// The CPU simulator: kernels run their Rust body on host threads.
    Simulator,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Cuda {
        ordinal: usize,
        raw: driver::CUdevice,
    },
    /// A simulated device: `index` among the `GPUKERNEL_SIM_DEVICES` the simulator offers.
    Sim { index: usize },
}

/// A device that runs kernels: a CUDA device (by ordinal) or the simulator.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let device = Device::auto()?; // CUDA device 0, else the simulator
/// let ctx = device.primary_context()?;
/// println!("{device}: {}", device.name()?);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    kind: Kind,
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::Cuda { ordinal, .. } => write!(f, "Device(cuda:{ordinal})"),
            Kind::Sim { index: 0 } => write!(f, "Device(simulator)"),
            Kind::Sim { index } => write!(f, "Device(simulator:{index})"),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Kind::Cuda { ordinal, .. } => write!(f, "CUDA device {ordinal}"),
            Kind::Sim { index } => f.write_str(&sim::label(index)),
        }
    }
}

/// What a device is and what it can run (`cuDeviceGetAttribute` and friends).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let p = Device::simulator().properties()?;
/// assert_eq!(p.warp_size, 32);
/// println!("{}: {} SMs, blocks of up to {}", p.name, p.multiprocessor_count, p.max_threads_per_block);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceProperties {
    /// The device's name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Compute capability `(major, minor)`, e.g. `(9, 0)`.
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors (worker threads in the simulator).
    pub multiprocessor_count: u32,
    /// Global memory in bytes.
    pub total_memory: usize,
    /// Largest number of threads in one block.
    pub max_threads_per_block: u32,
    /// Largest block dimensions, x y z.
    pub max_block_dim: [u32; 3],
    /// Largest grid dimensions, x y z.
    pub max_grid_dim: [u32; 3],
    /// Shared memory per block without opting in, in bytes.
    pub max_shared_memory_per_block: u32,
    /// Shared memory per block with the opt-in attribute, in bytes.
    pub max_shared_memory_per_block_optin: u32,
    /// Threads per warp.
    pub warp_size: u32,
    /// L2 cache in bytes.
    pub l2_cache_bytes: u32,
    /// Whether stream-ordered allocation (`cuMemAllocAsync`) is supported.
    pub memory_pools_supported: bool,
}

impl Device {
    /// The number of CUDA devices. Fails with [`Error::DriverUnavailable`] when libcuda cannot
    /// be loaded.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// match Device::count() {
    ///     Ok(n) => println!("{n} CUDA devices"),
    ///     Err(e) => println!("no CUDA driver: {e}"), // Error::DriverUnavailable
    /// }
    /// # Ok(()) }
    /// ```
    pub fn count() -> Result<usize> {
        driver::device_count()
    }

    /// The CUDA device with this ordinal (`cuDeviceGet`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// match Device::get(0) {
    ///     Ok(gpu) => println!("{gpu}: sm_{:?}", gpu.compute_capability()?),
    ///     Err(e) => println!("no CUDA device 0: {e}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn get(ordinal: usize) -> Result<Device> {
        let count = driver::device_count()?;
        if ordinal >= count {
            return Err(Error::NoDevice { ordinal, count });
        }
        let raw = driver::device_get(ordinal)?;
        Ok(Device {
            kind: Kind::Cuda { ordinal, raw },
        })
    }

    /// The CPU simulator (its device 0).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let ctx = Device::simulator().primary_context()?; // no GPU or driver needed
    /// assert!(ctx.is_simulator());
    /// # Ok(()) }
    /// ```
    pub fn simulator() -> Device {
        Device {
            kind: Kind::Sim { index: 0 },
        }
    }

    /// Simulated device `index`: the simulator offers `GPUKERNEL_SIM_DEVICES` devices (1 when
    /// unset), each with its own context, memory and streams, all able to access each other's
    /// memory once peer access is enabled ([`Context::enable_peer_access`]), so that
    /// multi-device code runs without GPUs. [`Error::NoDevice`] when `index` is out of range.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let d = Device::simulated(0)?; // GPUKERNEL_SIM_DEVICES=N offers 0..N
    /// assert_eq!(d, Device::simulator());
    /// assert!(Device::simulated(64).is_err());
    /// # Ok(()) }
    /// ```
    pub fn simulated(index: usize) -> Result<Device> {
        let count = sim::device_count()?;
        if index >= count {
            return Err(Error::NoDevice {
                ordinal: index,
                count,
            });
        }
        Ok(Device {
            kind: Kind::Sim { index },
        })
    }

    /// Every device of the backend [`Device::default_device`] picks: all CUDA devices, or the
    /// `GPUKERNEL_SIM_DEVICES` simulated ones.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// for device in Device::all()? {
    ///     let ctx = device.primary_context()?;
    ///     println!("{device}: {}", ctx.device().index());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn all() -> Result<Vec<Device>> {
        let first = Device::default_device()?;
        if first.is_simulator() {
            (0..sim::device_count()?).map(Device::simulated).collect()
        } else {
            (0..Device::count()?).map(Device::get).collect()
        }
    }

    /// The device's position among the devices of its backend: the CUDA ordinal, or the
    /// simulated device's index.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert_eq!(Device::simulator().index(), 0);
    /// # Ok(()) }
    /// ```
    pub fn index(&self) -> usize {
        match self.kind {
            Kind::Cuda { ordinal, .. } => ordinal,
            Kind::Sim { index } => index,
        }
    }

    /// CUDA device 0 if libcuda loads and a device exists; the simulator when there is no
    /// NVIDIA driver (libcuda missing, or only its stub) or no device. Any other failure (a
    /// broken or too old driver, a device that fails to answer) is returned, never hidden
    /// behind the simulator.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let device = Device::auto()?;
    /// println!("using {device}");
    /// # Ok(()) }
    /// ```
    pub fn auto() -> Result<Device> {
        match auto_choice(driver::device_count())? {
            Some(ordinal) => Device::get(ordinal),
            None => Ok(Device::simulator()),
        }
    }

    /// The device chosen by the environment variable `GPUKERNEL_BACKEND`: `cuda` (CUDA device
    /// 0, an error if there is none), `sim` (the simulator) or `auto` (the default:
    /// [`Device::auto`]). Any other value is an error naming the variable and the accepted
    /// values.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// // GPUKERNEL_BACKEND=sim forces the simulator, =cuda the GPU (an error without one).
    /// let device = Device::default_device()?;
    /// let ctx = device.primary_context()?;
    /// # Ok(()) }
    /// ```
    pub fn default_device() -> Result<Device> {
        let value = std::env::var_os(BACKEND_ENV);
        let value = match &value {
            None => None,
            Some(v) => Some(v.to_str().ok_or_else(|| Error::InvalidEnvVar {
                variable: BACKEND_ENV,
                value: v.to_string_lossy().into_owned(),
                accepted: "cuda, sim, auto",
            })?),
        };
        match parse_backend(value)? {
            Some(Backend::Cuda) => Device::get(0),
            Some(Backend::Simulator) => Ok(Device::simulator()),
            None => Device::auto(),
        }
    }

    /// Which backend this device is.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert_eq!(Device::simulator().backend(), gpukernel_runtime::Backend::Simulator);
    /// # Ok(()) }
    /// ```
    pub fn backend(&self) -> Backend {
        match self.kind {
            Kind::Cuda { .. } => Backend::Cuda,
            Kind::Sim { .. } => Backend::Simulator,
        }
    }

    /// Whether this is the simulator.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert!(Device::simulator().is_simulator());
    /// # Ok(()) }
    /// ```
    pub fn is_simulator(&self) -> bool {
        matches!(self.kind, Kind::Sim { .. })
    }

    /// The CUDA ordinal (`None` for the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert_eq!(Device::simulator().ordinal(), None);
    /// if let Ok(gpu) = Device::get(0) {
    ///     assert_eq!(gpu.ordinal(), Some(0));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn ordinal(&self) -> Option<usize> {
        match self.kind {
            Kind::Cuda { ordinal, .. } => Some(ordinal),
            Kind::Sim { .. } => None,
        }
    }

    pub(crate) fn raw(&self) -> Option<driver::CUdevice> {
        match self.kind {
            Kind::Cuda { raw, .. } => Some(raw),
            Kind::Sim { .. } => None,
        }
    }

    /// The device's name (`cuDeviceGetName`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// println!("{}", Device::auto()?.name()?); // e.g. "NVIDIA H100 80GB HBM3"
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> Result<String> {
        match self.kind {
            Kind::Cuda { raw, .. } => cuda::device_name(raw),
            Kind::Sim { .. } => Ok(sim::DEVICE_NAME.to_owned()),
        }
    }

    /// Compute capability `(major, minor)`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let (major, minor) = Device::auto()?.compute_capability()?;
    /// let arch = format!("sm_{major}{minor}");
    /// # Ok(()) }
    /// ```
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        Ok((
            self.attribute(DeviceAttr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            self.attribute(DeviceAttr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ))
    }

    /// Streaming multiprocessors (the simulator's worker threads).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let sms = Device::auto()?.multiprocessor_count()?;
    /// let blocks = sms * 4; // e.g. a grid-stride loop with a few blocks per SM
    /// # Ok(()) }
    /// ```
    pub fn multiprocessor_count(&self) -> Result<u32> {
        self.attribute(DeviceAttr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    }

    /// Global memory in bytes (`cuDeviceTotalMem`; host memory for the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let gib = Device::auto()?.total_memory()? as f64 / (1u64 << 30) as f64;
    /// println!("{gib:.1} GiB");
    /// # Ok(()) }
    /// ```
    pub fn total_memory(&self) -> Result<usize> {
        match self.kind {
            Kind::Cuda { raw, .. } => cuda::device_total_memory(raw),
            Kind::Sim { .. } => Ok(sim::device_total_memory()),
        }
    }

    /// All the properties at once.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let p = Device::auto()?.properties()?;
    /// let block = p.max_threads_per_block.min(256);
    /// # Ok(()) }
    /// ```
    pub fn properties(&self) -> Result<DeviceProperties> {
        use DeviceAttr::*;
        let a = |attr| self.attribute(attr);
        Ok(DeviceProperties {
            name: self.name()?,
            compute_capability: self.compute_capability()?,
            multiprocessor_count: self.multiprocessor_count()?,
            total_memory: self.total_memory()?,
            max_threads_per_block: a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block_dim: [
                a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dim: [
                a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_shared_memory_per_block: a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            max_shared_memory_per_block_optin: a(
                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?,
            warp_size: a(CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            l2_cache_bytes: a(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            memory_pools_supported: a(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? != 0,
        })
    }

    /// A device attribute (`cuDeviceGetAttribute`; the simulator's own values).
    fn attribute(&self, attr: DeviceAttr) -> Result<u32> {
        match self.kind {
            Kind::Cuda { raw, .. } => cuda::device_attribute(raw, attr),
            Kind::Sim { .. } => Ok(sim::device_attribute(attr)),
        }
    }

    /// The device's primary context (`cuDevicePrimaryCtxRetain`), shared by every caller in the
    /// process: one context per device. It stays alive until the process exits.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let ctx = Device::simulator().primary_context()?;
    /// let again = Device::simulator().primary_context()?; // the same context, shared
    /// assert_eq!(ctx.device(), again.device());
    /// # Ok(()) }
    /// ```
    pub fn primary_context(&self) -> Result<Context> {
        Context::primary(*self)
    }
}

/// What [`Device::auto`] picks given the device count: `Some(0)` for CUDA device 0, `None` for
/// the simulator, or the error.
fn auto_choice(count: Result<usize>) -> Result<Option<usize>> {
    /// `CUDA_ERROR_STUB_LIBRARY`: the libcuda found is the toolkit's stub, no driver.
    const STUB_LIBRARY: u32 = 34;
    match count {
        Ok(0) => Ok(None),
        Ok(_) => Ok(Some(0)),
        Err(Error::DriverUnavailable { error: None, .. }) => Ok(None),
        Err(Error::DriverUnavailable { error: Some(e), .. }) if e.code() == STUB_LIBRARY => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// `None` means `auto`.
fn parse_backend(value: Option<&str>) -> Result<Option<Backend>> {
    match value {
        None | Some("") | Some("auto") => Ok(None),
        Some("cuda") => Ok(Some(Backend::Cuda)),
        Some("sim") => Ok(Some(Backend::Simulator)),
        Some(other) => Err(Error::InvalidEnvVar {
            variable: BACKEND_ENV,
            value: other.to_owned(),
            accepted: "cuda, sim, auto",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_values() {
        assert_eq!(parse_backend(None).unwrap(), None);
        assert_eq!(parse_backend(Some("auto")).unwrap(), None);
        assert_eq!(parse_backend(Some("cuda")).unwrap(), Some(Backend::Cuda));
        assert_eq!(
            parse_backend(Some("sim")).unwrap(),
            Some(Backend::Simulator)
        );
        let e = parse_backend(Some("gpu")).unwrap_err().to_string();
        assert!(
            e.contains("GPUKERNEL_BACKEND") && e.contains("cuda, sim, auto"),
            "{e}"
        );
    }

    #[test]
    fn auto_uses_the_simulator_only_without_a_driver_or_a_device() {
        let unavailable = |error| Error::DriverUnavailable {
            reason: String::new(),
            error,
        };
        let code = |code, name| crate::error::CudaError {
            code,
            name,
            description: "",
        };
        assert_eq!(auto_choice(Ok(2)).unwrap(), Some(0));
        assert_eq!(auto_choice(Ok(0)).unwrap(), None);
        assert_eq!(auto_choice(Err(unavailable(None))).unwrap(), None);
        let stub = unavailable(Some(code(34, "CUDA_ERROR_STUB_LIBRARY")));
        assert_eq!(auto_choice(Err(stub)).unwrap(), None);
        // A driver that loads but fails is reported, not replaced by the simulator.
        let broken = unavailable(Some(code(999, "CUDA_ERROR_UNKNOWN")));
        assert!(matches!(
            auto_choice(Err(broken)),
            Err(Error::DriverUnavailable { .. })
        ));
        let old = Error::DriverTooOld {
            found: (12, 2),
            needed: (12, 4),
            feature: "x",
        };
        assert!(matches!(
            auto_choice(Err(old)),
            Err(Error::DriverTooOld { .. })
        ));
        let failed = Error::Driver {
            call: "cuDeviceGetCount",
            error: code(3, "CUDA_ERROR_NOT_INITIALIZED"),
            context: None,
        };
        assert!(matches!(
            auto_choice(Err(failed)),
            Err(Error::Driver { .. })
        ));
    }

    #[test]
    fn simulator_properties() {
        let d = Device::simulator();
        assert!(d.is_simulator());
        assert_eq!(d.ordinal(), None);
        let p = d.properties().unwrap();
        assert_eq!(p.name, sim::DEVICE_NAME);
        assert_eq!(p.max_threads_per_block, 1024);
        assert!(p.multiprocessor_count >= 1);
        assert_eq!(format!("{d}"), "the simulator");
    }
}

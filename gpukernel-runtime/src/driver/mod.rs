//! Every raw CUDA driver call of the core runtime, on cudarc's `sys` layer (libcuda is loaded at
//! run time).
//!
//! Each function here is a thin, checked wrapper: it turns the `CUresult` into an [`Error`]
//! naming the call, all through [`error_of`]: [`Error::KernelFault`] for a sticky kernel
//! fault, whichever call observes it, else [`Error::Driver`]. Functions that take raw handles
//! are `unsafe` and state what the handles must be; the CUDA backend (`backend::cuda`), the
//! only caller, upholds it through the owning types.
//!
//! This layer knows nothing above it: not contexts, streams or launches (a fault's launch is
//! named by the backend), only cudarc's `sys` and the crate's error type.
//!
//! cudarc resolves each symbol lazily and panics when `libcuda` is missing, so nothing here
//! may run before [`init`] succeeded; every handle type in this crate is only created after it.

use core::ffi::{c_char, c_int};
use std::ffi::CStr;
use std::sync::OnceLock;

use cudarc::driver::sys;

pub(crate) use sys::{CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUmodule, CUstream};

mod device;
mod graph;
mod memory;
mod module;
mod share;
mod stream;

pub(crate) use device::*;
pub(crate) use graph::*;
pub(crate) use memory::*;
pub(crate) use module::*;
pub(crate) use share::*;
pub(crate) use stream::*;

use crate::error::{CudaError, Error, Result};

/// The code, name and description of a driver result.
pub(crate) fn cuda_error(r: sys::CUresult) -> CudaError {
    let code = r as u32;
    let mut name: *const c_char = core::ptr::null();
    let mut desc: *const c_char = core::ptr::null();
    // SAFETY: both calls write a pointer to a static, NUL-terminated string owned by the driver
    // (or leave it untouched and return an error); the out-pointers are valid locals.
    let (name_ok, desc_ok) = unsafe {
        (
            sys::cuGetErrorName(r, &mut name) == sys::CUresult::CUDA_SUCCESS && !name.is_null(),
            sys::cuGetErrorString(r, &mut desc) == sys::CUresult::CUDA_SUCCESS && !desc.is_null(),
        )
    };
    let to_static = |p: *const c_char| -> &'static str {
        // SAFETY: on success the driver returned pointers to static strings that live as long
        // as the loaded library, which cudarc never unloads.
        unsafe { CStr::from_ptr(p) }
            .to_str()
            .unwrap_or("(non-UTF-8 driver string)")
    };
    CudaError {
        code,
        name: if name_ok {
            to_static(name)
        } else {
            "CUDA_ERROR_UNKNOWN_CODE"
        },
        description: if desc_ok {
            to_static(desc)
        } else {
            "unrecognized error code"
        },
    }
}

/// `Ok` for `CUDA_SUCCESS`, else [`Error::Driver`] naming `call`.
#[inline]
pub(crate) fn check(call: &'static str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(driver_error(call, r))
    }
}

#[cold]
#[inline(never)]
pub(super) fn driver_error(call: &'static str, r: sys::CUresult) -> Error {
    error_of(call, cuda_error(r), None)
}

/// The one conversion of a failed driver call into an [`Error`].
///
/// A sticky kernel-execution fault ([`CudaError::is_kernel_fault`]: illegal address, trap,
/// misaligned access…) is reported by whichever call comes next in the faulted context, be it a
/// synchronization, a copy, an allocation or a launch; it becomes [`Error::KernelFault`] naming
/// `call` and `last_launch` when the caller knows it (the layer above fills it in otherwise:
/// this layer knows nothing of launches). Any other code is [`Error::Driver`].
#[cold]
#[inline(never)]
pub(crate) fn error_of(
    call: &'static str,
    error: CudaError,
    last_launch: Option<&'static str>,
) -> Error {
    if error.is_kernel_fault() {
        return Error::KernelFault {
            call,
            error,
            last_launch: last_launch.map(str::to_owned),
        };
    }
    Error::Driver {
        call,
        error,
        context: None,
    }
}

/// Turns the raw result of a synchronizing call into `Ok` or the error [`error_of`] makes of
/// it.
pub(crate) fn sync_result(call: &'static str, r: CuResult) -> Result<()> {
    if is_success(r) {
        return Ok(());
    }
    Err(error_of(call, cuda_error(r), None))
}

#[derive(Clone)]
enum InitFailure {
    NoLibrary,
    Init(CudaError),
    TooOld(u32),
}

/// The oldest driver the runtime runs on: CUDA 12.4, the first with the entry points every
/// module load uses (`cuFuncGetParamInfo` for the typed-kernel check,
/// `cuModuleEnumerateFunctions`, `cuFuncGetName`). Features of newer drivers are checked
/// where they are used ([`require`]).
pub(crate) const MIN_DRIVER: u32 = 12040;

/// What the runtime needs of [`MIN_DRIVER`].
const MIN_DRIVER_FEATURE: &str =
    "gpukernel-runtime (typed kernels check their parameters with cuFuncGetParamInfo)";

/// The driver's CUDA version as `cuDriverGetVersion` gives it (`12040` for 12.4).
static VERSION: OnceLock<u32> = OnceLock::new();

/// Loads libcuda, checks its version and calls `cuInit(0)`, once per process. Nothing else of
/// the driver is called before this succeeded: cudarc resolves entry points lazily and panics
/// on one the installed driver lacks, so an old driver is refused here, by name.
pub(crate) fn init() -> Result<()> {
    static INIT: OnceLock<Result<(), InitFailure>> = OnceLock::new();
    let r = INIT.get_or_init(|| {
        // SAFETY: `is_culib_present` only tries to open the library (and closes it again).
        if !unsafe { sys::is_culib_present() } {
            return Err(InitFailure::NoLibrary);
        }
        let mut version: c_int = 0;
        // SAFETY: the library is present; `cuDriverGetVersion` exists in every driver and may
        // be called before `cuInit`; valid out-pointer.
        let r = unsafe { sys::cuDriverGetVersion(&mut version) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(InitFailure::Init(cuda_error(r)));
        }
        let version = version.max(0) as u32;
        let _ = VERSION.set(version);
        if version < MIN_DRIVER {
            return Err(InitFailure::TooOld(version));
        }
        // SAFETY: the library is present, so the symbol resolves; cuInit takes flags 0.
        let r = unsafe { sys::cuInit(0) };
        if r == sys::CUresult::CUDA_SUCCESS {
            Ok(())
        } else {
            Err(InitFailure::Init(cuda_error(r)))
        }
    });
    match r {
        Ok(()) => Ok(()),
        Err(InitFailure::NoLibrary) => Err(Error::DriverUnavailable {
            reason: "libcuda could not be loaded (no NVIDIA driver on this machine, or it is \
                     not on the library search path)"
                .to_owned(),
            error: None,
        }),
        Err(InitFailure::Init(e)) => Err(Error::DriverUnavailable {
            reason: format!("cuInit failed: {e}"),
            error: Some(*e),
        }),
        Err(InitFailure::TooOld(found)) => {
            Err(require_version(*found, MIN_DRIVER, MIN_DRIVER_FEATURE).unwrap_err())
        }
    }
}

/// The driver's CUDA version (`cuDriverGetVersion`, `12080` for 12.8); 0 before [`init`].
pub(crate) fn version() -> u32 {
    VERSION.get().copied().unwrap_or(0)
}

/// `Ok` when the installed driver supports CUDA `needed` (e.g. `12080`), else
/// [`Error::DriverTooOld`] naming `feature`. Call it before an entry point newer than
/// [`MIN_DRIVER`].
pub(crate) fn require(needed: u32, feature: &'static str) -> Result<()> {
    init()?;
    require_version(VERSION.get().copied().unwrap_or(0), needed, feature)
}

/// The version check itself, on a given driver version (tests inject older ones).
pub(crate) fn require_version(found: u32, needed: u32, feature: &'static str) -> Result<()> {
    if found >= needed {
        return Ok(());
    }
    let v = |n: u32| (n / 1000, n % 1000 / 10);
    Err(Error::DriverTooOld {
        found: v(found),
        needed: v(needed),
        feature,
    })
}

/// The raw result type, for callers that classify results themselves.
pub(crate) type CuResult = sys::CUresult;

/// Whether a raw result is success.
#[inline(always)]
pub(crate) fn is_success(r: CuResult) -> bool {
    r == sys::CUresult::CUDA_SUCCESS
}

/// Device attributes the runtime reads.
pub(crate) use sys::CUdevice_attribute as DeviceAttr;
/// Function attributes the runtime reads.
pub(crate) use sys::CUfunction_attribute as FuncAttr;

#[cfg(test)]
mod tests {
    use super::module::jit_log;
    use super::*;

    #[test]
    fn an_old_driver_is_a_named_error_not_a_panic() {
        // An injected 12.2 driver: older than the runtime's floor and than 12.8's timing API.
        let e = require_version(12020, MIN_DRIVER, MIN_DRIVER_FEATURE).unwrap_err();
        assert!(
            matches!(
                e,
                Error::DriverTooOld {
                    found: (12, 2),
                    needed: (12, 4),
                    ..
                }
            ),
            "{e}"
        );
        let e = require_version(12060, 12080, "Event::elapsed_ms (cuEventElapsedTime_v2)")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "the NVIDIA driver supports CUDA 12.6, but Event::elapsed_ms (cuEventElapsedTime_v2) \
             needs CUDA 12.8 or newer: update the driver"
        );
        require_version(13000, 12080, "x").unwrap();
        require_version(12080, 12080, "x").unwrap();
    }

    #[test]
    fn jit_log_uses_the_size_the_driver_wrote_back() {
        let mut buf = b"ptxas fatal   : Unresolved extern function 'f'\n".to_vec();
        let used = buf.len();
        buf.resize(64, 0);
        assert_eq!(
            jit_log(buf.clone(), used),
            "ptxas fatal   : Unresolved extern function 'f'"
        );
        // Cut at the size written back, and at a NUL inside it; a size past the buffer clamps.
        assert_eq!(jit_log(buf.clone(), 5), "ptxas");
        assert_eq!(
            jit_log(buf.clone(), 1 << 20),
            "ptxas fatal   : Unresolved extern function 'f'"
        );
        assert_eq!(jit_log(vec![0; 16], 16), "");
    }

    fn code(code: u32, name: &'static str) -> CudaError {
        CudaError {
            code,
            name,
            description: "",
        }
    }

    #[test]
    fn every_call_reporting_a_sticky_fault_gives_a_kernel_fault() {
        for (c, name) in [
            (700, "CUDA_ERROR_ILLEGAL_ADDRESS"),
            (702, "CUDA_ERROR_LAUNCH_TIMEOUT"),
            (710, "CUDA_ERROR_ASSERT"),
            (714, "CUDA_ERROR_HARDWARE_STACK_ERROR"),
            (715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"),
            (716, "CUDA_ERROR_MISALIGNED_ADDRESS"),
            (717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"),
            (718, "CUDA_ERROR_INVALID_PC"),
            (719, "CUDA_ERROR_LAUNCH_FAILED"),
            (721, "CUDA_ERROR_TENSOR_MEMORY_LEAK"),
            (214, "CUDA_ERROR_ECC_UNCORRECTABLE"),
            (226, "CUDA_ERROR_CONTAINED"),
        ] {
            match error_of("cuMemcpyDtoHAsync", code(c, name), Some("write_null")) {
                Error::KernelFault {
                    call,
                    error,
                    last_launch,
                } => {
                    assert_eq!(call, "cuMemcpyDtoHAsync");
                    assert_eq!(error.code(), c);
                    assert_eq!(last_launch.as_deref(), Some("write_null"));
                }
                other => panic!("{name}: unexpected {other}"),
            }
        }
        for (c, name) in [
            (1, "CUDA_ERROR_INVALID_VALUE"),
            (2, "CUDA_ERROR_OUT_OF_MEMORY"),
            (218, "CUDA_ERROR_INVALID_PTX"),
            (701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"),
            (720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"),
        ] {
            assert!(
                matches!(
                    error_of("cuMemAllocAsync", code(c, name), Some("k")),
                    Error::Driver {
                        call: "cuMemAllocAsync",
                        context: None,
                        ..
                    }
                ),
                "{name}"
            );
        }
    }
}

//! The driver's linker (`cuLink*`), through cudarc's sys layer.

use std::ffi::{c_uint, c_void};

use cudarc::driver::sys as cu;

use crate::error::{Error, LinkErrorCode, LinkerKind};
use crate::format::InputKind;

use super::{RawInput, RawLinkOutput, buffer_to_string, c_string};

/// The CUDA driver's version, e.g. 13000 for 13.0 (`cuDriverGetVersion`).
///
/// # Safety
/// The driver must be loaded and initialised (a [`crate::Context`] exists).
pub(crate) unsafe fn driver_version() -> Result<i32, Error> {
    let mut version = 0;
    // SAFETY: the caller guarantees libcuda is loaded; `version` is valid for one write.
    let r = unsafe { cu::cuDriverGetVersion(&mut version) };
    crate::driver::check("cuDriverGetVersion", r)?;
    Ok(version)
}

fn culink_input_type(kind: InputKind) -> cu::CUjitInputType {
    match kind {
        InputKind::Cubin => cu::CUjitInputType::CU_JIT_INPUT_CUBIN,
        InputKind::Ptx | InputKind::Cuda => cu::CUjitInputType::CU_JIT_INPUT_PTX,
        InputKind::Fatbin => cu::CUjitInputType::CU_JIT_INPUT_FATBINARY,
        InputKind::Object => cu::CUjitInputType::CU_JIT_INPUT_OBJECT,
        InputKind::Library => cu::CUjitInputType::CU_JIT_INPUT_LIBRARY,
        InputKind::LtoIr => cu::CUjitInputType::CU_JIT_INPUT_NVVM,
    }
}

/// A code generation option of the driver's linker, passed by value: the same options as
/// the PTX JIT at module load takes.
pub(crate) use crate::driver::JitOption;

/// Size of each log buffer handed to the driver's linker.
const CULINK_LOG_BYTES: usize = 64 * 1024;

/// Links `inputs` with the driver's linker for the current context's device.
///
/// # Safety
/// A CUDA context must be current on this thread (the caller binds it).
pub(crate) unsafe fn culink_link(
    inputs: &[RawInput<'_>],
    jit: &[JitOption],
) -> Result<RawLinkOutput, Error> {
    let c_names = inputs
        .iter()
        .map(|i| c_string("an input name", i.name))
        .collect::<Result<Vec<_>, _>>()?;
    // The driver writes both logs into these buffers while the link state lives; they outlive
    // it (declared first, dropped last).
    let mut info = vec![0u8; CULINK_LOG_BYTES];
    let mut error = vec![0u8; CULINK_LOG_BYTES];
    let mut options = vec![
        cu::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
        cu::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        cu::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        cu::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        cu::CUjit_option::CU_JIT_LOG_VERBOSE,
    ];
    // Option values are pointer-sized slots; sizes and flags are passed by value in them.
    let mut values: Vec<*mut c_void> = vec![
        info.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(CULINK_LOG_BYTES),
        error.as_mut_ptr().cast(),
        std::ptr::without_provenance_mut(CULINK_LOG_BYTES),
        std::ptr::without_provenance_mut(1), // CU_JIT_LOG_VERBOSE = 1
    ];
    for option in jit {
        let (name, value) = option.raw();
        options.push(name);
        values.push(std::ptr::without_provenance_mut(value));
    }
    let mut state: cu::CUlinkState = std::ptr::null_mut();
    // SAFETY: a context is current (caller); `options`/`values` have as many entries each and
    // the log buffers they point to have the announced sizes and outlive the link state.
    let r = unsafe {
        cu::cuLinkCreate_v2(
            options.len() as c_uint,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
            &mut state,
        )
    };
    if r != cu::CUresult::CUDA_SUCCESS {
        return Err(Error::LinkFailed {
            linker: LinkerKind::CuLink,
            call: "cuLinkCreate",
            code: driver_code(r),
            error_log: buffer_to_string(error),
            info_log: buffer_to_string(info),
        });
    }
    let guard = CuLinkGuard(state);
    let mut outcome: Result<Vec<u8>, (&'static str, LinkErrorCode)> = Ok(Vec::new());
    let mut failed_input = None;
    for (index, (input, name)) in inputs.iter().zip(&c_names).enumerate() {
        // SAFETY: live link state; `bytes` holds exactly the input (PTX NUL-terminated by the
        // caller) and outlives the call (the driver copies it; it never writes through the
        // pointer despite its `*mut` type); `name` is NUL-terminated; no per-input options.
        let r = unsafe {
            cu::cuLinkAddData_v2(
                guard.0,
                culink_input_type(input.kind),
                input.bytes.as_ptr() as *mut c_void,
                input.bytes.len(),
                name.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        if r != cu::CUresult::CUDA_SUCCESS {
            outcome = Err(("cuLinkAddData", driver_code(r)));
            failed_input = Some(index);
            break;
        }
    }
    if outcome.is_ok() {
        let mut cubin: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: live link state with every input added; both out-pointers are valid.
        let r = unsafe { cu::cuLinkComplete(guard.0, &mut cubin, &mut size) };
        outcome = if r != cu::CUresult::CUDA_SUCCESS {
            Err(("cuLinkComplete", driver_code(r)))
        } else if cubin.is_null() {
            Err((
                "cuLinkComplete",
                driver_code(cu::CUresult::CUDA_ERROR_UNKNOWN),
            ))
        } else {
            // SAFETY: on success the driver returns `size` bytes at `cubin`, owned by the link
            // state, which is still alive: copy them out before it is destroyed.
            Ok(unsafe { std::slice::from_raw_parts(cubin as *const u8, size) }.to_vec())
        };
    }
    drop(guard);
    Ok(RawLinkOutput {
        result: outcome,
        error_log: buffer_to_string(error),
        info_log: buffer_to_string(info),
        failed_input,
    })
}

fn driver_code(r: cu::CUresult) -> LinkErrorCode {
    LinkErrorCode::Driver(crate::driver::cuda_error(r))
}

/// Destroys a driver link state when dropped.
struct CuLinkGuard(cu::CUlinkState);

impl Drop for CuLinkGuard {
    fn drop(&mut self) {
        // SAFETY: the state is live and destroyed only here; a failure cannot be reported from
        // `drop` and leaves nothing to clean up.
        unsafe {
            cu::cuLinkDestroy(self.0);
        }
    }
}

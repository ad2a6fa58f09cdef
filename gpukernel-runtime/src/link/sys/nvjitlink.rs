//! nvJitLink: the linker that needs no driver (and links LTO-IR).

use std::ffi::{c_char, c_int};
use std::path::PathBuf;

use crate::error::{Error, LinkErrorCode, LinkerKind};
use crate::format::InputKind;

use super::{
    NvJitLinkApi, NvJitLinkHandle, RawInput, RawLinkOutput, buffer_to_string, c_string,
    nvjitlink_api,
};

/// nvJitLink's name for a result code.
fn nvjitlink_result_name(code: i32) -> &'static str {
    match code {
        0 => "NVJITLINK_SUCCESS",
        1 => "NVJITLINK_ERROR_UNRECOGNIZED_OPTION",
        2 => "NVJITLINK_ERROR_MISSING_ARCH",
        3 => "NVJITLINK_ERROR_INVALID_INPUT",
        4 => "NVJITLINK_ERROR_PTX_COMPILE",
        5 => "NVJITLINK_ERROR_NVVM_COMPILE",
        6 => "NVJITLINK_ERROR_INTERNAL",
        7 => "NVJITLINK_ERROR_THREADPOOL",
        8 => "NVJITLINK_ERROR_UNRECOGNIZED_INPUT",
        9 => "NVJITLINK_ERROR_FINALIZE",
        10 => "NVJITLINK_ERROR_NULL_INPUT",
        11 => "NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS",
        12 => "NVJITLINK_ERROR_INCORRECT_INPUT_TYPE",
        13 => "NVJITLINK_ERROR_ARCH_MISMATCH",
        14 => "NVJITLINK_ERROR_OUTDATED_LIBRARY",
        15 => "NVJITLINK_ERROR_MISSING_FATBIN",
        16 => "NVJITLINK_ERROR_UNRECOGNIZED_ARCH",
        17 => "NVJITLINK_ERROR_UNSUPPORTED_ARCH",
        18 => "NVJITLINK_ERROR_LTO_NOT_ENABLED",
        _ => "NVJITLINK_ERROR_UNKNOWN",
    }
}

fn nvjitlink_code(code: c_int) -> LinkErrorCode {
    LinkErrorCode::NvJitLink {
        code,
        name: nvjitlink_result_name(code),
    }
}

/// nvJitLink's version, e.g. `(13, 0)`.
pub(crate) fn nvjitlink_version() -> Result<(u32, u32), Error> {
    let api = nvjitlink_api()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both pointers are valid for a write of one unsigned int.
    let code = unsafe { (api.version)(&mut major, &mut minor) };
    if code != 0 {
        return Err(Error::LinkFailed {
            linker: LinkerKind::NvJitLink,
            call: "nvJitLinkVersion",
            code: nvjitlink_code(code),
            error_log: String::new(),
            info_log: String::new(),
        });
    }
    Ok((major, minor))
}

/// Where nvJitLink was loaded from.
pub(crate) fn nvjitlink_path() -> Result<PathBuf, Error> {
    Ok(nvjitlink_api()?.path.clone())
}

/// The `nvJitLinkInputType` of a kind.
fn nvjitlink_input_type(kind: InputKind) -> c_int {
    match kind {
        InputKind::Cubin => 1,
        InputKind::Ptx | InputKind::Cuda => 2,
        InputKind::LtoIr => 3,
        InputKind::Fatbin => 4,
        InputKind::Object => 5,
        InputKind::Library => 6,
    }
}

/// Links `inputs` with nvJitLink (no driver needed). What nvJitLink writes to standard error
/// meanwhile (13.0 reports symbols defined twice only there, when it links without LTO) is
/// added to the error log.
pub(crate) fn nvjitlink_link(
    options: &[String],
    inputs: &[RawInput<'_>],
) -> Result<RawLinkOutput, Error> {
    let (out, printed) = super::stderr::capture(|| link(options, inputs));
    let mut out = out?;
    if !printed.trim().is_empty() {
        if !out.error_log.is_empty() && !out.error_log.ends_with('\n') {
            out.error_log.push('\n');
        }
        out.error_log.push_str(&printed);
    }
    Ok(out)
}

fn link(options: &[String], inputs: &[RawInput<'_>]) -> Result<RawLinkOutput, Error> {
    let api = nvjitlink_api()?;
    let c_options = options
        .iter()
        .map(|o| c_string("an nvJitLink option", o))
        .collect::<Result<Vec<_>, _>>()?;
    let option_ptrs: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
    let c_names = inputs
        .iter()
        .map(|i| c_string("an input name", i.name))
        .collect::<Result<Vec<_>, _>>()?;

    let mut handle: NvJitLinkHandle = std::ptr::null_mut();
    // SAFETY: `handle` is valid for one write; `option_ptrs` holds that many NUL-terminated
    // strings which outlive the call.
    let code = unsafe {
        (api.create)(
            &mut handle,
            u32::try_from(option_ptrs.len()).unwrap_or(u32::MAX),
            option_ptrs.as_ptr(),
        )
    };
    if code != 0 {
        let log = if handle.is_null() {
            (String::new(), String::new())
        } else {
            nvjitlink_logs(api, handle)
        };
        if !handle.is_null() {
            // SAFETY: `handle` was created above and is destroyed once.
            unsafe { (api.destroy)(&mut handle) };
        }
        return Ok(RawLinkOutput {
            result: Err(("nvJitLinkCreate", nvjitlink_code(code))),
            error_log: log.0,
            info_log: log.1,
            failed_input: None,
        });
    }
    let guard = NvJitLinkGuard { api, handle };
    for (index, (input, name)) in inputs.iter().zip(&c_names).enumerate() {
        // SAFETY: live handle; `bytes` is valid for `len` reads and outlives the call (nvJitLink
        // copies what it needs); `name` is NUL-terminated.
        let code = unsafe {
            (api.add_data)(
                guard.handle,
                nvjitlink_input_type(input.kind),
                input.bytes.as_ptr().cast(),
                input.bytes.len(),
                name.as_ptr(),
            )
        };
        if code != 0 {
            let (error_log, info_log) = nvjitlink_logs(api, guard.handle);
            return Ok(RawLinkOutput {
                result: Err(("nvJitLinkAddData", nvjitlink_code(code))),
                error_log,
                info_log,
                failed_input: Some(index),
            });
        }
    }
    // SAFETY: live handle.
    let code = unsafe { (api.complete)(guard.handle) };
    let (error_log, info_log) = nvjitlink_logs(api, guard.handle);
    if code != 0 {
        return Ok(RawLinkOutput {
            result: Err(("nvJitLinkComplete", nvjitlink_code(code))),
            error_log,
            info_log,
            failed_input: None,
        });
    }
    let mut size = 0usize;
    // SAFETY: live, completed handle; `size` valid for one write.
    let code = unsafe { (api.cubin_size)(guard.handle, &mut size) };
    if code != 0 {
        return Ok(RawLinkOutput {
            result: Err(("nvJitLinkGetLinkedCubinSize", nvjitlink_code(code))),
            error_log,
            info_log,
            failed_input: None,
        });
    }
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` has exactly the `size` bytes nvJitLink reported.
    let code = unsafe { (api.cubin)(guard.handle, cubin.as_mut_ptr().cast()) };
    if code != 0 {
        return Ok(RawLinkOutput {
            result: Err(("nvJitLinkGetLinkedCubin", nvjitlink_code(code))),
            error_log,
            info_log,
            failed_input: None,
        });
    }
    Ok(RawLinkOutput {
        result: Ok(cubin),
        error_log,
        info_log,
        failed_input: None,
    })
}

/// Reads both logs of a live nvJitLink handle (empty strings where a log cannot be read).
fn nvjitlink_logs(api: &NvJitLinkApi, handle: NvJitLinkHandle) -> (String, String) {
    let read =
        |size_fn: unsafe extern "C" fn(NvJitLinkHandle, *mut usize) -> c_int,
         get_fn: unsafe extern "C" fn(NvJitLinkHandle, *mut c_char) -> c_int| {
            let mut size = 0usize;
            // SAFETY: live handle; `size` valid for one write.
            if unsafe { size_fn(handle, &mut size) } != 0 || size == 0 {
                return String::new();
            }
            let mut buf = vec![0u8; size];
            // SAFETY: `buf` has the `size` bytes nvJitLink reported.
            if unsafe { get_fn(handle, buf.as_mut_ptr().cast()) } != 0 {
                return String::new();
            }
            buffer_to_string(buf)
        };
    (
        read(api.error_log_size, api.error_log),
        read(api.info_log_size, api.info_log),
    )
}

/// Destroys an nvJitLink handle when dropped.
struct NvJitLinkGuard {
    api: &'static NvJitLinkApi,
    handle: NvJitLinkHandle,
}

impl Drop for NvJitLinkGuard {
    fn drop(&mut self) {
        // SAFETY: `handle` is live and destroyed only here.
        unsafe {
            (self.api.destroy)(&mut self.handle);
        }
    }
}

//! NVRTC: compiling CUDA C++ to PTX or LTO-IR.

use std::ffi::{CStr, c_char, c_int};
use std::path::PathBuf;

use crate::error::Error;

use super::{NvrtcApi, NvrtcProgram, buffer_to_string, c_string, nvrtc_api};

/// NVRTC's version, e.g. `(13, 0)`.
pub(crate) fn nvrtc_version() -> Result<(i32, i32), Error> {
    let api = nvrtc_api()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both pointers are valid for a write of one int.
    let code = unsafe { (api.version)(&mut major, &mut minor) };
    nvrtc_check(api, "nvrtcVersion", code)?;
    Ok((major, minor))
}

/// The SM numbers NVRTC can compile for (`--gpu-architecture=sm_XX`), ascending.
pub(crate) fn nvrtc_supported_archs() -> Result<Vec<u32>, Error> {
    let api = nvrtc_api()?;
    let mut n: c_int = 0;
    // SAFETY: the pointer is valid for a write of one int.
    let code = unsafe { (api.num_supported_archs)(&mut n) };
    nvrtc_check(api, "nvrtcGetNumSupportedArchs", code)?;
    let mut archs: Vec<c_int> = vec![0; usize::try_from(n).unwrap_or(0)];
    if !archs.is_empty() {
        // SAFETY: `archs` holds the number of ints NVRTC just said it writes.
        let code = unsafe { (api.supported_archs)(archs.as_mut_ptr()) };
        nvrtc_check(api, "nvrtcGetSupportedArchs", code)?;
    }
    let mut archs: Vec<u32> = archs
        .into_iter()
        .filter_map(|a| u32::try_from(a).ok())
        .collect();
    archs.sort_unstable();
    Ok(archs)
}

/// Where NVRTC was loaded from.
pub(crate) fn nvrtc_path() -> Result<PathBuf, Error> {
    Ok(nvrtc_api()?.path.clone())
}

fn nvrtc_check(api: &NvrtcApi, call: &'static str, code: c_int) -> Result<(), Error> {
    if code == 0 {
        return Ok(());
    }
    // SAFETY: nvrtcGetErrorString accepts any value and returns a static C string (or NULL).
    let name = unsafe {
        let p = (api.error_string)(code);
        if p.is_null() {
            format!("NVRTC error {code}")
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Err(Error::Nvrtc { call, code, name })
}

/// What an NVRTC compilation produced.
#[derive(Debug)]
pub(crate) enum NvrtcOutput {
    /// Compiled; `code` is PTX text (no trailing NUL) or LTO-IR, `log` holds any warnings.
    Compiled { code: Vec<u8>, log: String },
    /// `nvrtcCompileProgram` reported a compilation error; `log` says where.
    Failed { log: String },
}

/// Compiles one CUDA C++ source. `name` is the file name NVRTC puts in its log.
/// With `ltoir` the output is LTO-IR (the options must contain `-dlto`), else PTX.
pub(crate) fn nvrtc_compile(
    source: &str,
    name: &str,
    headers: &[(String, String)],
    options: &[String],
    ltoir: bool,
) -> Result<NvrtcOutput, Error> {
    let api = nvrtc_api()?;
    let c_source = c_string("the CUDA source", source)?;
    let c_name = c_string("the source name", name)?;
    let c_header_names = headers
        .iter()
        .map(|(n, _)| c_string("a header name", n))
        .collect::<Result<Vec<_>, _>>()?;
    let c_header_texts = headers
        .iter()
        .map(|(_, t)| c_string("a header", t))
        .collect::<Result<Vec<_>, _>>()?;
    let header_name_ptrs: Vec<*const c_char> = c_header_names.iter().map(|h| h.as_ptr()).collect();
    let header_text_ptrs: Vec<*const c_char> = c_header_texts.iter().map(|h| h.as_ptr()).collect();
    let header_count = c_int::try_from(headers.len()).unwrap_or(c_int::MAX);
    let c_options = options
        .iter()
        .map(|o| c_string("an NVRTC option", o))
        .collect::<Result<Vec<_>, _>>()?;
    let option_ptrs: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();

    let mut prog: NvrtcProgram = std::ptr::null_mut();
    // SAFETY: `prog` is valid for one write; source, name and the `header_count` header
    // texts and names are NUL-terminated and outlive the call.
    let code = unsafe {
        (api.create)(
            &mut prog,
            c_source.as_ptr(),
            c_name.as_ptr(),
            header_count,
            header_text_ptrs.as_ptr(),
            header_name_ptrs.as_ptr(),
        )
    };
    nvrtc_check(api, "nvrtcCreateProgram", code)?;
    let program = NvrtcProgramGuard { api, prog };

    let count = c_int::try_from(option_ptrs.len()).unwrap_or(c_int::MAX);
    // SAFETY: `prog` is a live program; `option_ptrs` holds `count` NUL-terminated strings
    // that outlive the call.
    let compile_code = unsafe { (api.compile)(program.prog, count, option_ptrs.as_ptr()) };
    let log = program.log()?;
    if compile_code == 6 {
        // NVRTC_ERROR_COMPILATION: the log says what is wrong.
        return Ok(NvrtcOutput::Failed { log });
    }
    if compile_code == 5 {
        // NVRTC_ERROR_INVALID_OPTION: report it with the log (which names the option).
        return Ok(NvrtcOutput::Failed {
            log: if log.trim().is_empty() {
                "NVRTC rejected an option (NVRTC_ERROR_INVALID_OPTION)".into()
            } else {
                log
            },
        });
    }
    nvrtc_check(api, "nvrtcCompileProgram", compile_code)?;

    let (size_fn, get_fn, call) = if ltoir {
        (api.ltoir_size, api.ltoir, "nvrtcGetLTOIR")
    } else {
        (api.ptx_size, api.ptx, "nvrtcGetPTX")
    };
    let mut size = 0usize;
    // SAFETY: live program, `size` valid for one write.
    nvrtc_check(api, call, unsafe { size_fn(program.prog, &mut size) })?;
    let mut code = vec![0u8; size];
    // SAFETY: `code` has exactly the `size` bytes NVRTC reported.
    nvrtc_check(api, call, unsafe {
        get_fn(program.prog, code.as_mut_ptr().cast())
    })?;
    if !ltoir {
        while code.last() == Some(&0) {
            code.pop();
        }
    }
    Ok(NvrtcOutput::Compiled { code, log })
}

/// Destroys the NVRTC program when dropped.
struct NvrtcProgramGuard {
    api: &'static NvrtcApi,
    prog: NvrtcProgram,
}

impl NvrtcProgramGuard {
    fn log(&self) -> Result<String, Error> {
        let mut size = 0usize;
        // SAFETY: live program, `size` valid for one write.
        nvrtc_check(self.api, "nvrtcGetProgramLogSize", unsafe {
            (self.api.log_size)(self.prog, &mut size)
        })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` holds at least the `size` bytes NVRTC reported.
        nvrtc_check(self.api, "nvrtcGetProgramLog", unsafe {
            (self.api.log)(self.prog, buf.as_mut_ptr().cast())
        })?;
        Ok(buffer_to_string(buf))
    }
}

impl Drop for NvrtcProgramGuard {
    fn drop(&mut self) {
        // SAFETY: `prog` is a live program created by nvrtcCreateProgram and destroyed only
        // here. A failure to destroy leaks it; nothing else can be done in `drop`.
        unsafe {
            (self.api.destroy)(&mut self.prog);
        }
    }
}

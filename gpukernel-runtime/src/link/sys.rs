//! Every raw call of the linker: NVRTC and nvJitLink (bound here with `libloading`, since
//! cudarc has no nvJitLink and its NVRTC loader panics when the library is missing) and the
//! driver's `cuLink*` family (through cudarc's `sys` layer).
//!
//! Each wrapper takes and returns owned Rust values; no raw pointer leaves this file.

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::error::Error;
use crate::error::{LinkErrorCode, LinkerKind};
use crate::format::InputKind;
use crate::link::tools;

type NvrtcProgram = *mut c_void;
type NvJitLinkHandle = *mut c_void;

/// The NVRTC entry points the linker uses.
struct NvrtcApi {
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int,
    error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    create: unsafe extern "C" fn(
        *mut NvrtcProgram,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> c_int,
    compile: unsafe extern "C" fn(NvrtcProgram, c_int, *const *const c_char) -> c_int,
    log_size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> c_int,
    log: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> c_int,
    ptx_size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> c_int,
    ptx: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> c_int,
    ltoir_size: unsafe extern "C" fn(NvrtcProgram, *mut usize) -> c_int,
    ltoir: unsafe extern "C" fn(NvrtcProgram, *mut c_char) -> c_int,
    destroy: unsafe extern "C" fn(*mut NvrtcProgram) -> c_int,
    /// Where the library was loaded from (reported in diagnostics).
    path: PathBuf,
    /// Kept loaded for the life of the process: the function pointers above point into them.
    _libs: Vec<libloading::Library>,
}

/// The nvJitLink entry points the linker uses.
struct NvJitLinkApi {
    version: unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> c_int,
    create: unsafe extern "C" fn(*mut NvJitLinkHandle, u32, *const *const c_char) -> c_int,
    add_data:
        unsafe extern "C" fn(NvJitLinkHandle, c_int, *const c_void, usize, *const c_char) -> c_int,
    complete: unsafe extern "C" fn(NvJitLinkHandle) -> c_int,
    cubin_size: unsafe extern "C" fn(NvJitLinkHandle, *mut usize) -> c_int,
    cubin: unsafe extern "C" fn(NvJitLinkHandle, *mut c_void) -> c_int,
    error_log_size: unsafe extern "C" fn(NvJitLinkHandle, *mut usize) -> c_int,
    error_log: unsafe extern "C" fn(NvJitLinkHandle, *mut c_char) -> c_int,
    info_log_size: unsafe extern "C" fn(NvJitLinkHandle, *mut usize) -> c_int,
    info_log: unsafe extern "C" fn(NvJitLinkHandle, *mut c_char) -> c_int,
    destroy: unsafe extern "C" fn(*mut NvJitLinkHandle) -> c_int,
    path: PathBuf,
    _lib: libloading::Library,
}

/// Why a library could not be loaded, kept so that every later call reports the same error.
#[derive(Debug, Clone)]
struct LoadFailure {
    library: String,
    searched: Vec<PathBuf>,
    reason: String,
}

impl LoadFailure {
    fn from_error(error: Error) -> Self {
        match error {
            Error::LibraryNotFound {
                library,
                searched,
                reason,
                ..
            } => LoadFailure {
                library,
                searched,
                reason,
            },
            other => LoadFailure {
                library: String::new(),
                searched: Vec::new(),
                reason: other.to_string(),
            },
        }
    }

    fn to_error(&self) -> Error {
        Error::LibraryNotFound {
            library: self.library.clone(),
            searched: self.searched.clone(),
            reason: self.reason.clone(),
            hint: tools::DOCTOR_HINT,
        }
    }
}

fn symbol<T: Copy>(
    lib: &libloading::Library,
    name: &str,
    path: &std::path::Path,
) -> Result<T, Error> {
    // SAFETY: every `T` this file asks for is the C signature documented in NVIDIA's headers
    // (nvrtc.h, nvJitLink.h) for the symbol of that name.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| Error::LibraryNotFound {
            library: path.display().to_string(),
            searched: vec![path.to_path_buf()],
            reason: format!("symbol {name} is missing: {e}"),
            hint: tools::DOCTOR_HINT,
        })
}

fn nvrtc_api() -> Result<&'static NvrtcApi, Error> {
    static API: OnceLock<Result<NvrtcApi, LoadFailure>> = OnceLock::new();
    API.get_or_init(|| load_nvrtc().map_err(LoadFailure::from_error))
        .as_ref()
        .map_err(LoadFailure::to_error)
}

fn load_nvrtc() -> Result<NvrtcApi, Error> {
    let (lib, path) = tools::load_library(&["libnvrtc.so.13", "libnvrtc.so"])?;
    let mut libs = Vec::new();
    // libnvrtc opens its builtins library by bare name when it compiles; when NVRTC came from
    // a directory the loader does not search, load the builtins first by full path so that
    // the bare-name lookup finds the already loaded copy.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        let mut builtins: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libnvrtc-builtins.so.") && !n.contains(".alt."))
            })
            .collect();
        builtins.sort();
        for builtin in builtins {
            // SAFETY: NVIDIA's NVRTC builtins library; its initialisers have no
            // preconditions.
            if let Ok(b) = unsafe { libloading::Library::new(&builtin) } {
                libs.push(b);
            }
        }
    }
    let api = NvrtcApi {
        version: symbol(&lib, "nvrtcVersion", &path)?,
        error_string: symbol(&lib, "nvrtcGetErrorString", &path)?,
        create: symbol(&lib, "nvrtcCreateProgram", &path)?,
        compile: symbol(&lib, "nvrtcCompileProgram", &path)?,
        log_size: symbol(&lib, "nvrtcGetProgramLogSize", &path)?,
        log: symbol(&lib, "nvrtcGetProgramLog", &path)?,
        ptx_size: symbol(&lib, "nvrtcGetPTXSize", &path)?,
        ptx: symbol(&lib, "nvrtcGetPTX", &path)?,
        ltoir_size: symbol(&lib, "nvrtcGetLTOIRSize", &path)?,
        ltoir: symbol(&lib, "nvrtcGetLTOIR", &path)?,
        destroy: symbol(&lib, "nvrtcDestroyProgram", &path)?,
        path,
        _libs: {
            libs.push(lib);
            libs
        },
    };
    Ok(api)
}

fn nvjitlink_api() -> Result<&'static NvJitLinkApi, Error> {
    static API: OnceLock<Result<NvJitLinkApi, LoadFailure>> = OnceLock::new();
    API.get_or_init(|| load_nvjitlink().map_err(LoadFailure::from_error))
        .as_ref()
        .map_err(LoadFailure::to_error)
}

fn load_nvjitlink() -> Result<NvJitLinkApi, Error> {
    let (lib, path) = tools::load_library(&["libnvJitLink.so.13", "libnvJitLink.so"])?;
    Ok(NvJitLinkApi {
        version: symbol(&lib, "nvJitLinkVersion", &path)?,
        create: symbol(&lib, "nvJitLinkCreate", &path)?,
        add_data: symbol(&lib, "nvJitLinkAddData", &path)?,
        complete: symbol(&lib, "nvJitLinkComplete", &path)?,
        cubin_size: symbol(&lib, "nvJitLinkGetLinkedCubinSize", &path)?,
        cubin: symbol(&lib, "nvJitLinkGetLinkedCubin", &path)?,
        error_log_size: symbol(&lib, "nvJitLinkGetErrorLogSize", &path)?,
        error_log: symbol(&lib, "nvJitLinkGetErrorLog", &path)?,
        info_log_size: symbol(&lib, "nvJitLinkGetInfoLogSize", &path)?,
        info_log: symbol(&lib, "nvJitLinkGetInfoLog", &path)?,
        destroy: symbol(&lib, "nvJitLinkDestroy", &path)?,
        path,
        _lib: lib,
    })
}

/// Turns a byte buffer from a C API into text, dropping the trailing NULs.
fn buffer_to_string(mut buf: Vec<u8>) -> String {
    while buf.last() == Some(&0) {
        buf.pop();
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn c_string(what: &str, s: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error::InvalidLinkOption {
        option: s.replace('\0', "\\0"),
        reason: format!("{what} contains a NUL byte"),
    })
}

// ---------------------------------------------------------------------------------------------
// NVRTC
// ---------------------------------------------------------------------------------------------

/// NVRTC's version, e.g. `(13, 0)`.
pub(crate) fn nvrtc_version() -> Result<(i32, i32), Error> {
    let api = nvrtc_api()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both pointers are valid for a write of one int.
    let code = unsafe { (api.version)(&mut major, &mut minor) };
    nvrtc_check(api, "nvrtcVersion", code)?;
    Ok((major, minor))
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

// ---------------------------------------------------------------------------------------------
// nvJitLink
// ---------------------------------------------------------------------------------------------

/// nvJitLink's name for a result code.
pub(crate) fn nvjitlink_result_name(code: i32) -> &'static str {
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

/// One input for a raw link: its kind, bytes and name.
#[derive(Debug)]
pub(crate) struct RawInput<'a> {
    /// Its kind (never `Cuda`: sources are compiled first).
    pub(crate) kind: InputKind,
    /// Exact bytes; PTX already ends with a NUL.
    pub(crate) bytes: &'a [u8],
    /// The name the linker's logs use.
    pub(crate) name: &'a str,
}

/// The outcome of a raw link: the cubin, or the failing call and its code; logs either way.
#[derive(Debug)]
pub(crate) struct RawLinkOutput {
    /// The linked cubin on success; on failure the failing call and its result code.
    pub(crate) result: Result<Vec<u8>, (&'static str, LinkErrorCode)>,
    /// The linker's error log.
    pub(crate) error_log: String,
    /// The linker's info log.
    pub(crate) info_log: String,
    /// Which input an `AddData` failure was about (index into the inputs).
    pub(crate) failed_input: Option<usize>,
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

/// Links `inputs` with nvJitLink (no driver needed).
pub(crate) fn nvjitlink_link(
    options: &[String],
    inputs: &[RawInput<'_>],
) -> Result<RawLinkOutput, Error> {
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

// ---------------------------------------------------------------------------------------------
// The driver's linker (cuLink*), through cudarc's sys layer.
// ---------------------------------------------------------------------------------------------

use cudarc::driver::sys as cu;

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

/// Size of each log buffer handed to the driver's linker.
const CULINK_LOG_BYTES: usize = 64 * 1024;

/// Links `inputs` with the driver's linker for the current context's device.
///
/// # Safety
/// A CUDA context must be current on this thread (the caller binds it).
pub(crate) unsafe fn culink_link(inputs: &[RawInput<'_>]) -> Result<RawLinkOutput, Error> {
    let c_names = inputs
        .iter()
        .map(|i| c_string("an input name", i.name))
        .collect::<Result<Vec<_>, _>>()?;
    // The driver writes both logs into these buffers while the link state lives; they outlive
    // it (declared first, dropped last).
    let mut info = vec![0u8; CULINK_LOG_BYTES];
    let mut error = vec![0u8; CULINK_LOG_BYTES];
    let mut options = [
        cu::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
        cu::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        cu::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        cu::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        cu::CUjit_option::CU_JIT_LOG_VERBOSE,
    ];
    // Option values are pointer-sized slots; sizes and flags are passed by value in them.
    let mut values: [*mut c_void; 5] = [
        info.as_mut_ptr().cast(),
        CULINK_LOG_BYTES as *mut c_void,
        error.as_mut_ptr().cast(),
        CULINK_LOG_BYTES as *mut c_void,
        std::ptr::without_provenance_mut(1), // CU_JIT_LOG_VERBOSE = 1
    ];
    let mut state: cu::CUlinkState = std::ptr::null_mut();
    // SAFETY: a context is current (caller); `options`/`values` have 5 entries each and the
    // log buffers they point to have the announced sizes and outlive the link state.
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

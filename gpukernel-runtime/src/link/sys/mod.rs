//! Every raw call of the linker: NVRTC and nvJitLink (bound here with `libloading`, since
//! cudarc has no nvJitLink and its NVRTC loader panics when the library is missing) and the
//! driver's `cuLink*` family (through cudarc's `sys` layer).
//!
//! Each wrapper takes and returns owned Rust values; no raw pointer leaves this module. This
//! file loads the libraries and holds what the linkers share; `nvrtc.rs`, `nvjitlink.rs` and
//! `culink.rs` wrap each library's calls.

mod culink;
mod nvjitlink;
mod nvrtc;
mod stderr;

pub(crate) use culink::{JitOption, culink_link, driver_version};
pub(crate) use nvjitlink::{nvjitlink_link, nvjitlink_path, nvjitlink_version};
pub(crate) use nvrtc::{
    NvrtcOutput, nvrtc_compile, nvrtc_path, nvrtc_supported_archs, nvrtc_version,
};

use std::ffi::{CString, c_char, c_int, c_uint, c_void};
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::error::{Error, LinkErrorCode};
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
    num_supported_archs: unsafe extern "C" fn(*mut c_int) -> c_int,
    supported_archs: unsafe extern "C" fn(*mut c_int) -> c_int,
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

static NVRTC: OnceLock<Result<NvrtcApi, LoadFailure>> = OnceLock::new();
static NVJITLINK: OnceLock<Result<NvJitLinkApi, LoadFailure>> = OnceLock::new();

/// Whether this process has loaded (or tried to load) NVRTC and nvJitLink.
pub(crate) fn loaded() -> (bool, bool) {
    (NVRTC.get().is_some(), NVJITLINK.get().is_some())
}

fn nvrtc_api() -> Result<&'static NvrtcApi, Error> {
    NVRTC
        .get_or_init(|| load_nvrtc().map_err(LoadFailure::from_error))
        .as_ref()
        .map_err(LoadFailure::to_error)
}

fn load_nvrtc() -> Result<NvrtcApi, Error> {
    let (lib, path) = tools::load_library(super::toolinfo::NVRTC_NAMES)?;
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
        num_supported_archs: symbol(&lib, "nvrtcGetNumSupportedArchs", &path)?,
        supported_archs: symbol(&lib, "nvrtcGetSupportedArchs", &path)?,
        path,
        _libs: {
            libs.push(lib);
            libs
        },
    };
    Ok(api)
}

fn nvjitlink_api() -> Result<&'static NvJitLinkApi, Error> {
    NVJITLINK
        .get_or_init(|| load_nvjitlink().map_err(LoadFailure::from_error))
        .as_ref()
        .map_err(LoadFailure::to_error)
}

fn load_nvjitlink() -> Result<NvJitLinkApi, Error> {
    let (lib, path) = tools::load_library(super::toolinfo::NVJITLINK_NAMES)?;
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

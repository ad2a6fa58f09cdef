//! Collectives of CUDA devices through NCCL: cudarc's `nccl` bindings (`result` layer), with
//! `libnccl` loaded at run time.
//!
//! # The library's name
//! cudarc's loader tries `libnccl.so` and a few versioned names (`libnccl.so.13` for CUDA 13,
//! `.so.12` …) but not `libnccl.so.2`, the only name the `nvidia-nccl-cu13` wheel (the NCCL of
//! PyTorch and most Python environments) ships, in `site-packages/nvidia/nccl/lib`. The
//! dynamic loader reads `LD_LIBRARY_PATH` once, at process start, and matches an already loaded
//! library only by its exact file name or soname, so the process cannot fix this for itself
//! once running. So before the first NCCL call this module asks cudarc whether it can load the
//! library (never letting its loader panic); when it cannot, [`Error::NcclUnavailable`] names
//! the `libnccl.so.2` it found (`LD_LIBRARY_PATH`, the system folders, Python's
//! `site-packages` of the usual prefixes, `$VIRTUAL_ENV`, `$CONDA_PREFIX`, `NCCL_HOME`) and the
//! fix: a folder holding a link `libnccl.so` to it, on `LD_LIBRARY_PATH` before the process
//! starts (what the GPU bundle's `run.sh` does).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cudarc::nccl::{result, sys};

use super::types::{DataType, ReduceOp, UniqueId};
use super::{Kind, Op, RawComm};
use crate::backend::StreamHandle;
use crate::context::Context;
use crate::error::{Error, Result};

/// Whether cudarc's loader finds NCCL, checked once (its functions panic when it does not).
fn library() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: loads (dlopen) candidate libraries by name; running a library's initialisers is
    // what loading NCCL means.
    if *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() }) {
        return Ok(());
    }
    let mut names = cudarc::get_lib_name_candidates("nccl");
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    let found = find_versioned();
    let (reason, hint) = match &found {
        Some(p) => (
            format!(
                "cudarc loads NCCL by the names {} but this system has it only as {}",
                names.join(", "),
                p.display()
            ),
            format!(
                "make a folder with a link named libnccl.so to it and put that folder on LD_LIBRARY_PATH before the process starts: `mkdir -p ~/.cache/gpukernel/nccl && ln -sf {} ~/.cache/gpukernel/nccl/libnccl.so && export LD_LIBRARY_PATH=~/.cache/gpukernel/nccl:$LD_LIBRARY_PATH`",
                p.display()
            ),
        ),
        None => (
            format!("no NCCL library found (cudarc tried {})", names.join(", ")),
            "install NCCL (e.g. `pip install nvidia-nccl-cu13`, or the libnccl2 package) and put the folder holding libnccl.so on LD_LIBRARY_PATH".to_owned(),
        ),
    };
    Err(Error::NcclUnavailable { reason, hint })
}

/// A `libnccl.so.2` in the places NCCL is usually installed.
pub(crate) fn find_versioned() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let env_dirs = |v: &str| -> Vec<PathBuf> {
        std::env::var_os(v)
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default()
    };
    dirs.extend(env_dirs("LD_LIBRARY_PATH"));
    if let Some(h) = std::env::var_os("NCCL_HOME") {
        dirs.push(Path::new(&h).join("lib"));
    }
    dirs.extend(
        [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/usr/local/lib",
            "/usr/local/cuda/lib64",
        ]
        .map(PathBuf::from),
    );
    let mut prefixes: Vec<PathBuf> = ["/usr", "/usr/local", "/opt/conda"]
        .map(PathBuf::from)
        .to_vec();
    for v in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(p) = std::env::var_os(v) {
            prefixes.push(PathBuf::from(p));
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        prefixes.push(Path::new(&home).join(".local"));
    }
    for prefix in prefixes {
        for lib in ["lib", "lib64"] {
            let Ok(entries) = std::fs::read_dir(prefix.join(lib)) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with("python3") {
                    for site in ["site-packages", "dist-packages"] {
                        dirs.push(e.path().join(site).join("nvidia/nccl/lib"));
                    }
                }
            }
        }
        dirs.push(prefix.join("lib"));
    }
    dirs.into_iter()
        .map(|d| d.join("libnccl.so.2"))
        .find(|p| p.exists())
}

/// NCCL's error as ours: the code, its name, and NCCL's last error message.
fn nccl_error(call: &'static str, e: result::NcclError) -> Error {
    // SAFETY: ncclGetLastError takes a communicator or null and returns a static string.
    let last = unsafe {
        let p = sys::ncclGetLastError(core::ptr::null_mut());
        if p.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Error::Nccl {
        call,
        code: e.0 as i32,
        name: format!("{:?}", e.0),
        message: last,
    }
}

fn check(
    call: &'static str,
    r: std::result::Result<result::NcclStatus, result::NcclError>,
) -> Result<()> {
    r.map(|_| ()).map_err(|e| nccl_error(call, e))
}

/// NCCL's version.
pub(super) fn version() -> Result<(u32, u32, u32)> {
    library()?;
    let v = result::get_nccl_version().map_err(|e| nccl_error("ncclGetVersion", e))? as u32;
    // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
    Ok((v / 10000, (v / 100) % 100, v % 100))
}

/// A new unique id (`ncclGetUniqueId`).
pub(super) fn unique_id() -> Result<UniqueId> {
    library()?;
    let id = result::get_uniqueid().map_err(|e| nccl_error("ncclGetUniqueId", e))?;
    let mut bytes = [0u8; UniqueId::LEN];
    for (b, c) in bytes.iter_mut().zip(id.internal) {
        *b = c as u8;
    }
    Ok(UniqueId::from_bytes(bytes))
}

/// One NCCL communicator (a rank).
struct NcclComm {
    raw: sys::ncclComm_t,
}

// SAFETY: an NCCL communicator may be used from any thread, one call at a time (the safe
// `Communicator` is not `Sync`); destroyed once.
unsafe impl Send for NcclComm {}
// SAFETY: `RawComm` requires `Sync` for `Box<dyn RawComm>` in a `Send` communicator; no method
// is called concurrently (`Communicator` is not `Sync`).
unsafe impl Sync for NcclComm {}

impl Drop for NcclComm {
    fn drop(&mut self) {
        // SAFETY: made by ncclCommInit*, destroyed once; ncclCommDestroy finalizes first, so
        // pending operations complete.
        let _ = unsafe { result::comm_destroy(self.raw) };
    }
}

/// One communicator per context (`ncclCommInitAll`).
pub(super) fn comm_init_all(contexts: &[Context]) -> Result<Vec<Box<dyn RawComm>>> {
    library()?;
    let devices: Vec<i32> = contexts.iter().map(|c| c.device().index() as i32).collect();
    let mut raws: Vec<sys::ncclComm_t> = vec![core::ptr::null_mut(); devices.len()];
    // Creating the primary contexts first: NCCL uses them (the runtime API's device contexts).
    for c in contexts {
        c.bind_to_thread()?;
    }
    // SAFETY: `raws` has room for one communicator per device; the list is valid.
    check("ncclCommInitAll", unsafe {
        result::comm_init_all(raws.as_mut_ptr(), devices.len() as i32, devices.as_ptr())
    })?;
    Ok(raws
        .into_iter()
        .map(|raw| Box::new(NcclComm { raw }) as Box<dyn RawComm>)
        .collect())
}

/// Rank `rank` of `size` (`ncclCommInitRank`, on `ctx`'s device).
pub(super) fn comm_init_rank(
    ctx: &Context,
    id: &UniqueId,
    rank: usize,
    size: usize,
) -> Result<Box<dyn RawComm>> {
    library()?;
    let mut internal = [0 as core::ffi::c_char; UniqueId::LEN];
    for (c, b) in internal.iter_mut().zip(id.bytes) {
        *c = b as core::ffi::c_char;
    }
    let mut raw: sys::ncclComm_t = core::ptr::null_mut();
    // NCCL takes the calling thread's current device.
    ctx.bind_to_thread()?;
    // SAFETY: valid out-pointer; the id is one ncclGetUniqueId made (or garbage NCCL rejects).
    check("ncclCommInitRank", unsafe {
        result::comm_init_rank(
            &mut raw,
            size as i32,
            sys::ncclUniqueId { internal },
            rank as i32,
        )
    })?;
    Ok(Box::new(NcclComm { raw }))
}

fn dtype(d: DataType) -> sys::ncclDataType_t {
    use sys::ncclDataType_t::*;
    match d {
        DataType::I8 => ncclInt8,
        DataType::U8 => ncclUint8,
        DataType::I32 => ncclInt32,
        DataType::U32 => ncclUint32,
        DataType::I64 => ncclInt64,
        DataType::U64 => ncclUint64,
        DataType::F32 => ncclFloat32,
        DataType::F64 => ncclFloat64,
    }
}

fn red_op(op: ReduceOp) -> sys::ncclRedOp_t {
    use sys::ncclRedOp_t::*;
    match op {
        ReduceOp::Sum => ncclSum,
        ReduceOp::Prod => ncclProd,
        ReduceOp::Max => ncclMax,
        ReduceOp::Min => ncclMin,
        ReduceOp::Avg => ncclAvg,
    }
}

impl RawComm for NcclComm {
    fn implementation(&self) -> &'static str {
        "nccl"
    }

    unsafe fn enqueue(&self, op: &Op, s: StreamHandle, _grouped: bool) -> Result<()> {
        let stream: sys::cudaStream_t = s.0.cast();
        let (send, recv) = (
            op.send as *const core::ffi::c_void,
            op.recv as *mut core::ffi::c_void,
        );
        let t = dtype(op.dtype);
        // NCCL connects to its peers lazily, at the first collective of each algorithm, and
        // part of that set-up (enabling peer access) is refused on a thread whose stream is
        // capturing (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, "failed to peer with device"):
        // the thread's capture mode is relaxed around the call, so the first collective may
        // be a captured one. The kernels NCCL enqueues are captured as before.
        // SAFETY: forwarded from the caller (live memory of the sizes `count` implies, ordered
        // on the stream, kept until complete); the communicator is live.
        crate::driver::with_relaxed_capture_mode(|| unsafe {
            match op.kind {
                Kind::AllReduce(o) => check(
                    "ncclAllReduce",
                    result::all_reduce(send, recv, op.count, t, red_op(o), self.raw, stream),
                ),
                Kind::Broadcast { root } => check(
                    "ncclBroadcast",
                    result::broadcast(send, recv, op.count, t, root as i32, self.raw, stream),
                ),
                Kind::AllGather => check(
                    "ncclAllGather",
                    result::all_gather(send, recv, op.count, t, self.raw, stream),
                ),
                Kind::ReduceScatter(o) => check(
                    "ncclReduceScatter",
                    result::reduce_scatter(send, recv, op.count, t, red_op(o), self.raw, stream),
                ),
            }
        })?
    }

    fn group_start(&self) -> Result<()> {
        check("ncclGroupStart", result::group_start())
    }

    fn group_end(&self) -> Result<()> {
        check("ncclGroupEnd", result::group_end())
    }

    fn async_error(&self) -> Result<()> {
        let mut state = sys::ncclResult_t::ncclSuccess;
        // SAFETY: the communicator is live; valid out-pointer.
        let r = unsafe { sys::ncclCommGetAsyncError(self.raw, &mut state) };
        check("ncclCommGetAsyncError", r.result())?;
        check("ncclCommGetAsyncError", state.result())
    }
}

//! The crate's one error type.
//!
//! Driver failures keep the CUDA error code with its name and description ([`CudaError`]),
//! never flattened into a string, plus what was being done: the driver call, the kernel, the
//! file.

use std::fmt;

use crate::format::{ImageKind, InputKind};

/// `Result` with this crate's [`Error`].
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::{Context, Result};
/// fn zeros(ctx: &Context, n: usize) -> Result<Vec<f32>> {
///     ctx.alloc_zeros::<f32>(n)?.to_host_vec()
/// }
/// # assert_eq!(zeros(&ctx, 4)?, [0.0; 4]);
/// # Ok(()) }
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A CUDA driver error code (`CUresult`) with its name and description, as `cuGetErrorName`
/// and `cuGetErrorString` give them.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// fn explain(e: &Error) {
///     if let Some(cuda) = e.cuda_error() {
///         eprintln!("{} ({}): {}", cuda.name(), cuda.code(), cuda.description());
///     }
/// }
/// if let Err(e) = Device::get(0) {
///     explain(&e); // e.g. CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CudaError {
    pub(crate) code: u32,
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
}

impl CudaError {
    /// The numeric `CUresult`, e.g. 700 for `CUDA_ERROR_ILLEGAL_ADDRESS`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// if let Some(cuda) = Device::get(0).err().and_then(|e| e.cuda_error()) {
    ///     println!("CUresult {}", cuda.code()); // e.g. 100 for CUDA_ERROR_NO_DEVICE
    /// }
    /// # Ok(()) }
    /// ```
    pub fn code(&self) -> u32 {
        self.code
    }

    /// The code's name, e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// if let Some(cuda) = Device::get(0).err().and_then(|e| e.cuda_error()) {
    ///     assert!(cuda.name().starts_with("CUDA_ERROR_"));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The driver's description of the code.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// if let Some(cuda) = Device::get(0).err().and_then(|e| e.cuda_error()) {
    ///     println!("{}", cuda.description()); // e.g. "no CUDA-capable device is detected"
    /// }
    /// # Ok(()) }
    /// ```
    pub fn description(&self) -> &'static str {
        self.description
    }

    /// Whether this code is a sticky fault of a running kernel (illegal address, trap,
    /// misaligned access…) that leaves the context unusable; every driver call in the context
    /// reports it from then on, not only synchronizations.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// fn must_restart(e: &Error) -> bool {
    ///     // A sticky fault leaves the context unusable: the process has to start over.
    ///     e.cuda_error().is_some_and(|c| c.is_kernel_fault())
    /// }
    /// # assert!(!must_restart(&ctx.alloc_zeros::<u8>(1)?.slice(0..2).unwrap_err()));
    /// # Ok(()) }
    /// ```
    pub fn is_kernel_fault(&self) -> bool {
        // CUDA_ERROR_ECC_UNCORRECTABLE (214), CONTAINED (226), ILLEGAL_ADDRESS (700),
        // LAUNCH_TIMEOUT (702), ASSERT (710), HARDWARE_STACK_ERROR (714),
        // ILLEGAL_INSTRUCTION (715), MISALIGNED_ADDRESS (716), INVALID_ADDRESS_SPACE (717),
        // INVALID_PC (718), LAUNCH_FAILED (719), TENSOR_MEMORY_LEAK (721).
        matches!(self.code, 214 | 226 | 700 | 702 | 710 | 714..=719 | 721)
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.name, self.code, self.description)
    }
}

/// Which linker produced an image or an error.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::link::Linker;
/// let image = Linker::for_arch("sm_90")?.add_ptx(&kernels_ptx(), "kernels.ptx").link()?;
/// println!("linked by {:?}", image.linker()); // nvJitLink: no device needed
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LinkerKind {
    /// The CUDA driver's linker (`cuLinkCreate` … `cuLinkComplete`).
    CuLink,
    /// nvJitLink (no driver needed; also does link-time optimisation of LTO-IR).
    NvJitLink,
}

impl fmt::Display for LinkerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinkerKind::CuLink => "cuLink (CUDA driver)",
            LinkerKind::NvJitLink => "nvJitLink",
        })
    }
}

/// The result code of a failed linker call, kept as the linker gave it.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::link::LinkErrorCode;
/// fn code_name(code: &LinkErrorCode) -> String {
///     match code {
///         LinkErrorCode::Driver(cuda) => cuda.name().to_owned(),
///         LinkErrorCode::NvJitLink { name, .. } => name.to_string(),
///         _ => code.to_string(),
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkErrorCode {
    /// A CUDA driver code (from `cuLink*`).
    Driver(CudaError),
    /// An `nvJitLinkResult`.
    NvJitLink {
        /// The numeric code.
        code: i32,
        /// Its name, e.g. `NVJITLINK_ERROR_PTX_COMPILE`.
        name: &'static str,
    },
}

impl fmt::Display for LinkErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkErrorCode::Driver(e) => write!(f, "{e}"),
            LinkErrorCode::NvJitLink { code, name } => write!(f, "{name} ({code})"),
        }
    }
}

/// Every error of gpukernel-runtime.
///
/// `Debug` prints the same text as `Display` (the message, its hint and any compiler or
/// linker log), so that `fn main() -> Result<(), Error>` and `.unwrap()` show the readable
/// message; match on the variants for the fields.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let buf = ctx.htod_copy(&[1, 2, 3])?;
/// let mut host = [0; 2];
/// match buf.copy_to_host(&mut host) {
///     Err(Error::LengthMismatch { destination: 2, source_len: 3, .. }) => {}
///     other => panic!("{other:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---------------------------------------------------------------------------------------
    // Driver, devices, contexts (owned by the core runtime).
    // ---------------------------------------------------------------------------------------
    /// A CUDA driver call failed.
    #[error("{call} failed: {error}{}", in_context(.context))]
    Driver {
        /// The driver function, e.g. `cuMemAllocAsync`.
        call: &'static str,
        /// The code the driver returned.
        error: CudaError,
        /// What was being done (which kernel, which buffer size…), when known.
        context: Option<String>,
    },

    /// The CUDA driver library (`libcuda`) could not be loaded, or `cuInit` failed.
    #[error("the CUDA driver is not available: {reason}")]
    DriverUnavailable {
        /// Why (library not found, or `cuInit`'s error).
        reason: String,
        /// `cuInit`'s error, when the library loaded but initialisation failed.
        error: Option<CudaError>,
    },

    /// The installed NVIDIA driver is older than what a feature needs (the runtime checks the
    /// driver's version before calling newer entry points, which would otherwise abort).
    #[error(
        "the NVIDIA driver supports CUDA {}.{}, but {feature} needs CUDA {}.{} or newer: update the driver",
        found.0, found.1, needed.0, needed.1
    )]
    DriverTooOld {
        /// The CUDA version the driver supports, `(major, minor)`.
        found: (u32, u32),
        /// The version the feature needs.
        needed: (u32, u32),
        /// What needs it.
        feature: &'static str,
    },

    /// No CUDA device has this ordinal.
    #[error("no CUDA device {ordinal}: this machine has {count} device(s)")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices there are.
        count: usize,
    },

    /// An environment variable has a value this crate does not accept.
    #[error("invalid value {value:?} for {variable}: accepted values are {accepted}")]
    InvalidEnvVar {
        /// The variable, e.g. `GPUKERNEL_BACKEND`.
        variable: &'static str,
        /// Its value.
        value: String,
        /// The accepted values, e.g. `cuda, sim, auto`.
        accepted: &'static str,
    },

    /// Two objects of different contexts (devices or backends) were used together: memory of
    /// another device without peer access enabled, a kernel of another device's module, a
    /// stream or event of another context.
    #[error("{operation}: {what} belongs to {found}, but the operation runs on {expected}{}", fmt_hint(.hint))]
    ContextMismatch {
        /// What was being done.
        operation: &'static str,
        /// Which argument is foreign.
        what: &'static str,
        /// The context the operation runs in.
        expected: String,
        /// The argument's context.
        found: String,
        /// What to do instead (peer access, a copy), when there is something.
        hint: Option<&'static str>,
    },

    /// Peer access between two devices was asked for, but they cannot reach each other's
    /// memory (`cuDeviceCanAccessPeer` is false: no NVLink or PCIe peer path, or the
    /// simulator and a GPU).
    #[error(
        "{from} cannot access the memory of {to} (no peer path between the devices); hint: copy between them with `copy_from_device`, which goes through host memory"
    )]
    PeerAccessUnsupported {
        /// The context that asked for access.
        from: String,
        /// The context whose memory it asked for.
        to: String,
    },

    /// A collective was asked for wrongly: buffer lengths that do not fit the number of
    /// ranks, a root or rank out of range, ranks that disagree on the operation, contexts that
    /// cannot form a communicator.
    #[error("{operation}: {reason}")]
    InvalidCollective {
        /// What was being done, e.g. `Communicator::all_gather`.
        operation: &'static str,
        /// What is wrong.
        reason: String,
    },

    /// A simulated collective waited for ranks that never joined it (on a GPU NCCL would wait
    /// forever): when one thread drives several ranks, issue their operations inside one
    /// `collective::group`.
    #[error(
        "{operation}: rank {rank} waited {waited_ms} ms for rank(s) {missing:?}, which never joined the collective; hint: one thread driving several ranks must issue them inside `collective::group(|g| ..)`"
    )]
    CollectiveIncomplete {
        /// The collective.
        operation: &'static str,
        /// The rank that waited.
        rank: usize,
        /// The ranks that had not joined.
        missing: Vec<usize>,
        /// How long it waited.
        waited_ms: u64,
    },

    /// NCCL cannot be used: the library is not found (or not under a name cudarc loads), or
    /// the crate was built without its `nccl` feature.
    #[error("NCCL is unavailable: {reason}; hint: {hint}")]
    NcclUnavailable {
        /// What is missing.
        reason: String,
        /// How to fix it.
        hint: String,
    },

    /// An NCCL call failed.
    #[error("{call} failed: {name} ({code}){}", if .message.is_empty() { String::new() } else { format!(": {}", .message) })]
    Nccl {
        /// The NCCL function.
        call: &'static str,
        /// `ncclResult_t`.
        code: i32,
        /// Its name, e.g. `ncclInvalidArgument`.
        name: String,
        /// NCCL's last error message (`ncclGetLastError`), when it has one.
        message: String,
    },

    /// The operation is not available on this backend.
    #[error("{operation} is not supported on the {backend}{}", fmt_hint(.hint))]
    Unsupported {
        /// What was asked.
        operation: &'static str,
        /// `CUDA device` or `simulator`.
        backend: &'static str,
        /// What to do instead, when there is something.
        hint: Option<&'static str>,
    },

    // ---------------------------------------------------------------------------------------
    // Kernel execution.
    // ---------------------------------------------------------------------------------------
    /// A kernel faulted on the GPU (illegal address, trap, misaligned access…). The fault is
    /// sticky: the next driver call in the context reports it (a synchronization, a copy, an
    /// allocation, a launch…), and so does every later one; the context cannot be used any
    /// more.
    #[error(
        "kernel fault reported by {call}: {error}{}",
        match .last_launch { Some(k) => format!(" (last launch: `{k}`)"), None => String::new() }
    )]
    KernelFault {
        /// The call that reported it (`cuStreamSynchronize`, `cuMemcpyDtoHAsync`…).
        call: &'static str,
        /// The driver's code (`CUDA_ERROR_ILLEGAL_ADDRESS`…).
        error: CudaError,
        /// The last kernel launched on the stream (or the context) before the fault.
        last_launch: Option<String>,
    },

    /// A kernel failed in the simulator (a panic such as an out-of-bounds index, or a block
    /// that could not make progress).
    #[error(
        "kernel `{kernel}` failed in the simulator at block {block:?}, thread {thread:?}: {message}"
    )]
    SimulatorFault {
        /// The kernel.
        kernel: String,
        /// The failing block's index.
        block: [u32; 3],
        /// The failing thread's index in its block.
        thread: [u32; 3],
        /// The panic message (with its location) or the divergence found.
        message: String,
    },

    /// A foreign device function (declared with `declare_device!`) returned a non-zero status:
    /// the first failure of the work the observation covers, and how many more failed there
    /// (every failing call is counted on the device; a module's record keeps the first in
    /// full).
    #[error(
        "foreign device function `{function}` returned status {status} (thread {thread}){}{}",
        match .kernel { Some(k) => format!(" in a launch of `{k}`"), None => String::new() },
        match .more {
            0 => String::new(),
            1 => format!("; 1 more foreign call failed: {}", .others.join("; ")),
            n => format!("; {n} more foreign calls failed: {}", .others.join("; ")),
        }
    )]
    ForeignCallFailed {
        /// The foreign symbol.
        function: String,
        /// The status it returned.
        status: i32,
        /// The linear index of the first failing thread in its launch.
        thread: u64,
        /// The kernel the failing thread ran (a graph node's label where it ran in one); when
        /// the record does not name it (code not entered through `#[kernel]`), the module's
        /// last launched kernel.
        kernel: Option<String>,
        /// How many more foreign calls failed in the work the observation covers (other
        /// threads, launches, streams or modules); 0 when this was the only one.
        more: u64,
        /// Those others, as far as known: another module's or stream's first failure in full
        /// (`` `f` returned 7 (thread 3) in a launch of `k` ``), and counts of the failures
        /// whose details were not kept (`2 more in launches of `k``).
        others: Vec<String>,
    },

    /// A launch configuration the device cannot run, caught before the driver sees it.
    #[error(
        "invalid launch configuration for `{kernel}`: {dimension} = {value}, allowed {min}..={max}"
    )]
    InvalidLaunchConfig {
        /// The kernel (or `LaunchConfig` when no kernel is known yet).
        kernel: String,
        /// The dimension at fault, e.g. `block.x`, `grid.y`, `threads per block`,
        /// `shared_mem_bytes`, `elements`.
        dimension: &'static str,
        /// Its value.
        value: u64,
        /// The smallest allowed value.
        min: u64,
        /// The largest allowed value.
        max: u64,
    },

    /// A typed launch of a kernel whose disjoint outputs need fewer dimensions than the
    /// configuration has: a kernel taking a `DisjointSlice` is written at the one-dimensional
    /// `ThreadIndex` (unique only when `grid.y`, `grid.z`, `block.y`, `block.z` are 1), one
    /// taking a `DisjointSlice2D` at `(x, y)` (unique only when `grid.z` and `block.z` are 1).
    /// Refused on the host, so that the device tests nothing. The message says what to write
    /// instead: the output type of the launch's dimensions, or a raw pointer in an `unsafe fn`.
    #[error(
        "`{kernel}` takes a `{output}`, so its launch must be {allowed}: {dimension} = {value} would give two threads one element\nhint: {}",
        dims_hint(.output)
    )]
    LaunchDimensionsNotAllowed {
        /// The kernel.
        kernel: String,
        /// The parameter type that restricts it: `DisjointSlice` or `DisjointSlice2D`.
        output: &'static str,
        /// What is allowed, e.g. `one-dimensional (grid and blocks (n, 1, 1))`.
        allowed: &'static str,
        /// The first dimension at fault, e.g. `grid.y`.
        dimension: &'static str,
        /// Its value.
        value: u32,
    },

    /// A typed launch whose arguments for parameters that `#[kernel(same_len(..))]` declares
    /// to have one length have different lengths (the kernel's body assumes them equal, so the
    /// launch is refused on the host). A length of `None` is an argument whose length the
    /// launch could not read.
    #[error(
        "`{kernel}` declares `{first}` and `{other}` of one length (`same_len`), but the launch passes {} elements for `{first}` and {} for `{other}`",
        fmt_len(.first_len), fmt_len(.other_len)
    )]
    SameLenViolated {
        /// The kernel.
        kernel: String,
        /// The first parameter of the group.
        first: String,
        /// Its argument's length.
        first_len: Option<u64>,
        /// The parameter whose length differs.
        other: String,
        /// Its argument's length.
        other_len: Option<u64>,
    },

    /// A 2D or 3D view whose shape does not fit the memory it views, or whose pitch is
    /// shorter than a row.
    #[error(
        "{operation}: shape {cols} × {rows} × {depth} with a pitch of {pitch} elements {reason} ({len} elements available)"
    )]
    InvalidShape {
        /// The operation, e.g. `DeviceBuffer::view_2d_mut`.
        operation: &'static str,
        /// Elements per row.
        cols: usize,
        /// Rows (per plane).
        rows: usize,
        /// Planes (1 for a 2D view).
        depth: usize,
        /// Elements from one row's start to the next's.
        pitch: usize,
        /// Elements in the viewed memory.
        len: usize,
        /// What is wrong: `has a pitch shorter than a row`, `needs N elements`, `overflows`.
        reason: String,
    },

    /// A module has no kernel of this name.
    #[error("the module has no kernel `{name}`; its kernels are: {}", list(.available))]
    KernelNotFound {
        /// The name asked for.
        name: String,
        /// The kernels the module has.
        available: Vec<String>,
    },

    /// The image's entry point does not declare the parameters the Rust kernel's signature
    /// lowers to (another build, or another kernel of the same name).
    #[error(
        "kernel `{kernel}`: the loaded image's entry takes parameters of {found:?} bytes, but the \
         Rust signature lowers to {expected:?}; hint: the PTX/cubin is not from this version of \
         the kernels crate (rebuild it), or another kernel has the same name"
    )]
    KernelSignatureMismatch {
        /// The kernel.
        kernel: String,
        /// The `.param` sizes the Rust parameters lower to.
        expected: Vec<usize>,
        /// The sizes the image's entry declares (`cuFuncGetParamInfo`).
        found: Vec<usize>,
    },

    /// A kernel's entry in the module carries no signature fingerprint: it was not compiled by
    /// `#[kernel]`, so its parameter types cannot be checked against the Rust signature.
    #[error(
        "kernel `{kernel}` carries no signature fingerprint (`{symbol}`): it was not compiled by \
         #[kernel] (a CUDA C `__global__`, or PTX from elsewhere), so its parameter types cannot \
         be checked\nhint: if its parameters are exactly the Rust signature's, look it up with \
         `unsafe {{ module.kernel_unverified(..) }}`"
    )]
    KernelNotVerified {
        /// The kernel.
        kernel: String,
        /// The global that `#[kernel]` emits beside each kernel.
        symbol: String,
    },

    /// A kernel's entry was compiled from another Rust signature than the one used to look it
    /// up (another crate's kernel of the same name, or an out-of-date PTX).
    #[error(
        "kernel `{kernel}` in this module was compiled from another Rust signature than the one \
         used here (fingerprint {found:#018x}, expected {expected:#018x})\nhint: rebuild the \
         kernels crate and load the PTX it emits now, or look up the kernel of the crate that \
         compiled this module"
    )]
    KernelFingerprintMismatch {
        /// The kernel.
        kernel: String,
        /// `Kernel::SIGNATURE` of the Rust declaration.
        expected: u64,
        /// The value in the module.
        found: u64,
    },

    /// A module setup or teardown hook of a link input failed (or, for a teardown, panicked
    /// or could not run). A setup's failure is returned by `Linker::link_and_load`; a
    /// teardown's is recorded in the context (`Context::take_teardown_failures`).
    #[error("module {hook} of link input `{input}` failed: {message}")]
    ModuleHook {
        /// `setup` or `teardown`.
        hook: &'static str,
        /// The link input the hook belongs to.
        input: String,
        /// What went wrong.
        message: String,
        /// The hook's own error, when it returned one.
        #[source]
        source: Option<Box<Error>>,
    },

    /// A module has no global of this name.
    #[error("the module has no global `{name}`")]
    GlobalNotFound {
        /// The name asked for.
        name: String,
    },

    /// The driver could not load a module image (`cuModuleLoadDataEx`); the JIT compiler's
    /// error log says why (for PTX: the line and the problem).
    #[error(
        "cuModuleLoadDataEx could not load the {kind} image{}: {error}\nJIT error log:\n{}{}",
        from_origin(.origin),
        or_empty(.error_log),
        labelled("JIT info log", .info_log)
    )]
    ModuleLoad {
        /// The image's kind.
        kind: ImageKind,
        /// Where it came from (a file), when known.
        origin: Option<String>,
        /// The code the driver returned (e.g. `CUDA_ERROR_INVALID_PTX`).
        error: CudaError,
        /// The JIT compiler's error log.
        error_log: String,
        /// The JIT compiler's info log (non-verbose).
        info_log: String,
    },

    /// A PTX image calls foreign device functions (`.extern .func`, from `declare_device!`)
    /// that nothing defines: a module of one PTX cannot resolve them; it must be linked first.
    #[error(
        "cannot load the PTX image: unresolved foreign device function{} {}{}; hint: this PTX \
         calls foreign device functions; link it with `gpukernel_runtime::link::Linker` \
         together with the .cu/.ptx/cubin/fatbin/.a that defines them (use \
         `Linker::add_ptx_kernels(ptx, name, &[kernels])` to keep only the kernels you \
         launch)\ncuModuleLoadDataEx: {error}\nJIT error log:\n{}",
        if .symbols.len() == 1 { "" } else { "s" },
        list(.symbols),
        if .also_declared.is_empty() {
            String::new()
        } else {
            format!(" (the PTX also declares {})", list(.also_declared))
        },
        or_empty(.error_log)
    )]
    UnresolvedForeignSymbols {
        /// Every symbol the JIT log names as unresolved.
        symbols: Vec<String>,
        /// The PTX's other `.extern .func` declarations (the JIT stops at the first
        /// unresolved one, so these may be unresolved too).
        also_declared: Vec<String>,
        /// The code the driver returned (`CUDA_ERROR_INVALID_PTX`).
        error: CudaError,
        /// The JIT compiler's error log.
        error_log: String,
    },

    /// An image given to `load_module` is not PTX, a cubin or a fatbin (or is malformed).
    #[error("invalid module image{}: {reason}", match .origin { Some(o) => format!(" `{o}`"), None => String::new() })]
    InvalidModuleImage {
        /// What is wrong with it.
        reason: String,
        /// Where it came from (a file), when known.
        origin: Option<String>,
    },

    // ---------------------------------------------------------------------------------------
    // Memory.
    // ---------------------------------------------------------------------------------------
    /// A copy between slices of different lengths.
    #[error(
        "{operation}: length mismatch, destination has {destination} elements, source has {source_len}"
    )]
    LengthMismatch {
        /// The copy, e.g. `copy_to_host`.
        operation: &'static str,
        /// Elements in the destination.
        destination: usize,
        /// Elements in the source.
        source_len: usize,
    },

    /// A range outside a buffer.
    #[error("{operation}: range {start}..{end} is out of bounds for {len} elements")]
    OutOfBounds {
        /// The operation, e.g. `slice`.
        operation: &'static str,
        /// Start of the range.
        start: usize,
        /// End of the range (exclusive).
        end: usize,
        /// Elements available.
        len: usize,
    },

    /// A size in bytes does not fit the address space.
    #[error("{operation}: {count} elements of {elem_size} bytes overflow the address space")]
    SizeOverflow {
        /// The operation.
        operation: &'static str,
        /// Elements asked for.
        count: usize,
        /// Bytes per element.
        elem_size: usize,
    },

    /// An allocation the memory could not satisfy (simulator device memory, pinned memory on
    /// the simulator, or the host side of a copy; CUDA device allocations report the driver's
    /// `CUDA_ERROR_OUT_OF_MEMORY` as [`Error::Driver`]).
    #[error("{operation}: out of memory allocating {bytes} bytes on {place}")]
    OutOfMemory {
        /// The operation, e.g. `alloc`.
        operation: &'static str,
        /// Bytes asked for.
        bytes: usize,
        /// Where: `the simulator`, `the host`.
        place: String,
    },

    /// A foreign pointer that cannot hold the element type.
    #[error("{operation}: pointer {ptr:#x} is {problem}")]
    InvalidPointer {
        /// The operation.
        operation: &'static str,
        /// The pointer.
        ptr: u64,
        /// What is wrong (null, misaligned for N-byte elements).
        problem: String,
    },

    /// An event was used before it was recorded.
    #[error("{operation}: the event has not been recorded")]
    EventNotRecorded {
        /// The operation.
        operation: &'static str,
    },
    // ---------------------------------------------------------------------------------------
    // Graphs and stream capture.
    // ---------------------------------------------------------------------------------------
    /// The graph's dependencies form a cycle.
    #[error("graph `{graph}` has a dependency cycle through nodes {}", nodes.iter().map(|n| format!("#{n}")).collect::<Vec<_>>().join(" → "))]
    GraphCycle {
        /// The graph's name.
        graph: String,
        /// The nodes on the cycle, by index (the order they were added in).
        nodes: Vec<usize>,
    },

    /// An operation that would synchronize, block on or read back a stream's work was called
    /// on a stream that is being captured into a graph (nothing runs during a capture). The
    /// stream is untouched and the capture goes on.
    #[error(
        "{operation}: the stream is being captured into a graph; hint: synchronize or read \
         results after the capture, where the graph's launch is observed, and enqueue \
         captured work through the `Capture` the closure receives"
    )]
    StreamCapturing {
        /// The operation refused.
        operation: &'static str,
    },

    /// A node handle of one graph was given to another.
    #[error("{operation}: node #{node} belongs to graph `{owner}`, not to graph `{graph}`")]
    ForeignGraphNode {
        /// The operation.
        operation: &'static str,
        /// The node's index in its own graph.
        node: usize,
        /// The graph the node belongs to.
        owner: String,
        /// The graph it was given to.
        graph: String,
    },

    /// A node handle of the wrong kind (a copy node where a kernel node is needed, say).
    #[error("{operation}: node #{node} of graph `{graph}` is not {expected}")]
    WrongGraphNode {
        /// The operation.
        operation: &'static str,
        /// The node's index.
        node: usize,
        /// The graph's name.
        graph: String,
        /// What kind of node was needed.
        expected: &'static str,
    },

    /// `cuGraphExecUpdate` refused to update an instantiated graph; it is unchanged and
    /// still usable (instantiate the new graph instead).
    #[error("graph `{graph}` cannot be updated in place: {reason}")]
    GraphUpdateRefused {
        /// The graph's name.
        graph: String,
        /// Why (the driver's update result, or the runtime's own check).
        reason: String,
    },

    /// A conditional node's handle given where it cannot be used: to a plain stream launch, a
    /// capture, or a node of a graph that is neither the handle's graph nor inside one of its
    /// conditional bodies.
    #[error("{operation}: {reason} (handle of graph `{graph}`)")]
    ConditionalHandleMisused {
        /// The operation refused.
        operation: &'static str,
        /// The graph the handle was made for.
        graph: String,
        /// What is wrong.
        reason: &'static str,
    },

    /// A conditional node's body graph used as a graph of its own (instantiated, say), or
    /// given a node CUDA does not allow in a conditional body (host calls, copies to or from
    /// host memory), on both backends.
    #[error("{operation}: graph `{graph}` is the body of a conditional node: {reason}")]
    ConditionalBody {
        /// The operation refused.
        operation: &'static str,
        /// The body's name.
        graph: String,
        /// Why, and what to do instead.
        reason: &'static str,
    },

    /// A graph given to [`Graph::add_child`](crate::Graph::add_child) that cannot be a child
    /// graph there: the graph itself, a graph of another context, a conditional body, a graph
    /// with conditional handles (CUDA refuses conditional nodes in a child graph).
    #[error("{operation}: graph `{child}` cannot be a child of graph `{graph}`: {reason}")]
    ChildGraphRefused {
        /// The operation refused.
        operation: &'static str,
        /// The graph given as the child.
        child: String,
        /// The graph the node was to be added to.
        graph: String,
        /// Why, and what to do instead.
        reason: &'static str,
    },

    /// An operation a stream capture cannot record. Nothing was enqueued: the capture goes
    /// on and the stream stays usable.
    #[error("{operation}: cannot be captured into a graph: {reason}")]
    NotCapturable {
        /// The operation refused.
        operation: &'static str,
        /// Why, and what to do instead.
        reason: &'static str,
    },

    // ---------------------------------------------------------------------------------------
    // Linker (NVRTC, cuLink, nvJitLink, cache): variants below are owned by `link`.
    // ---------------------------------------------------------------------------------------
    /// A CUDA compiler library (libnvrtc, libnvJitLink) could not be found or loaded.
    #[error("cannot load {library}: {reason}; searched: {}; hint: {hint}", paths(.searched))]
    LibraryNotFound {
        /// The library, e.g. `libnvrtc.so.13`.
        library: String,
        /// Every path tried.
        searched: Vec<std::path::PathBuf>,
        /// The loader's last error.
        reason: String,
        /// What to do.
        hint: &'static str,
    },

    /// An NVRTC call other than the compilation itself failed.
    #[error("{call} failed: {name} ({code})")]
    Nvrtc {
        /// The NVRTC function.
        call: &'static str,
        /// The `nvrtcResult` code.
        code: i32,
        /// Its name, from `nvrtcGetErrorString`.
        name: String,
    },

    /// NVRTC could not compile a CUDA C++ source; the log says where (file:line).
    #[error("NVRTC could not compile {}:\n{log}\noptions: {}", .file.display(), .options.join(" "))]
    NvrtcCompile {
        /// The source file (or the name given to `add_data`).
        file: std::path::PathBuf,
        /// Every option passed to NVRTC.
        options: Vec<String>,
        /// NVRTC's log.
        log: String,
    },

    /// A foreign function's definition does not match its `declare_device!` declaration
    /// (argument count, argument types or return type). Linking it would pass arguments in
    /// the wrong registers or write the return slot with the wrong size.
    #[error("{0}")]
    ForeignSignatureMismatch(Box<SignatureMismatch>),

    /// Inputs whose definitions cannot be checked (cubin, fatbin, object, archive, LTO-IR: their
    /// C types are gone) may define functions that the selected kernels declare with
    /// `declare_device!`, and were not added as unchecked.
    #[error(
        "{} may define the declared foreign function(s) {}, whose signatures cannot be checked in \
         such inputs; hint: check the definitions against the declarations yourself, then add \
         these inputs with `unsafe {{ linker.add_file_unchecked(..) }}` (or \
         `add_data_unchecked`), or link the functions' `.cu` source or PTX instead, which is checked",
        list(.inputs),
        list(.symbols)
    )]
    UncheckedForeignDefinitions {
        /// The inputs, by name.
        inputs: Vec<String>,
        /// The declared symbols they may define.
        symbols: Vec<String>,
    },

    /// The device's architecture is not one the installed NVRTC / nvJitLink compile for, and
    /// no architecture they support produces code the device can run.
    #[error(
        "cannot link for {device}: the installed NVRTC/nvJitLink compile for {}, and none of \
         these makes code a {device} device can run (a cubin needs the same major architecture; \
         PTX needs an older one); hint: install a CUDA toolkit that supports {device} \
         (`cargo xtask doctor`, or set GPUKERNEL_CUDA_TOOLS), or link through a CUDA context \
         without LTO-IR, which lets the driver compile PTX for the device",
        .supported.join(", ")
    )]
    UnsupportedArchitecture {
        /// The device's architecture, e.g. `sm_130`.
        device: String,
        /// The architectures the tools support.
        supported: Vec<String>,
    },

    /// NVRTC could not find a header a CUDA source includes.
    #[error(
        "NVRTC could not compile {}: it cannot find the header \"{header}\"; hint: add the folder \
         that holds it with `Linker::include_dir(\"<folder>\")`, or its text with \
         `Linker::header(\"{header}\", text)`; toolkit headers (curand_kernel.h, cuda/std/..., \
         cub/...) come from the CUDA include dir, which needs the toolkit's package for them \
         (`cargo xtask doctor`, or set GPUKERNEL_CUDA_TOOLS)\n{log}\noptions: {}",
        .file.display(),
        .options.join(" ")
    )]
    NvrtcMissingHeader {
        /// The source file (or the name given to `add_data`).
        file: std::path::PathBuf,
        /// The header, as the `#include` names it.
        header: String,
        /// Every option passed to NVRTC.
        options: Vec<String>,
        /// NVRTC's log.
        log: String,
    },

    /// `GPUKERNEL_CACHE_MAX` (the linker cache's size bound) cannot be read.
    #[error("invalid GPUKERNEL_CACHE_MAX {value:?}: {reason} (e.g. `512M`, `2G`, `1048576`)")]
    InvalidCacheMax {
        /// The variable's value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A linker or NVRTC option, or an architecture name, that cannot be used.
    #[error("invalid link option {option:?}: {reason}")]
    InvalidLinkOption {
        /// The option as given.
        option: String,
        /// Why it is rejected.
        reason: String,
    },

    /// A link input file could not be read (missing, unreadable).
    #[error("cannot read link input {}: {source}", .path.display())]
    LinkInputRead {
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },

    /// A link input file whose extension names no known input kind.
    #[error(
        "unsupported link input {}: extension {extension} is not one the linker knows \
         (supported: {supported}); hint: rename the file, or add its bytes with \
         `Linker::add_data` and an explicit `InputKind`",
        .path.display()
    )]
    UnsupportedLinkInput {
        /// The file.
        path: std::path::PathBuf,
        /// Its extension (with the dot), or `(none)`.
        extension: String,
        /// The supported extensions.
        supported: String,
    },

    /// A link input whose bytes do not have the shape of its kind (checked before the driver
    /// sees them: wrong magic, truncated, text that is not PTX…).
    #[error("link input {name} is given as {kind}, but {found}")]
    LinkInputMismatch {
        /// The input (path or name).
        name: String,
        /// The kind it was given as (from its extension or `add_data`).
        kind: InputKind,
        /// What its bytes are instead.
        found: String,
    },

    /// `link` was called with no input.
    #[error(
        "nothing to link: add the kernels' PTX and the foreign code (`add_ptx`, `add_file`, `add_data`)"
    )]
    EmptyLink,

    /// A symbol that some input uses is defined by no input.
    #[error(
        "undefined symbol `{symbol}`{}{}: no link input defines it; hint: if it is declared with \
         `declare_device!`, add the .cu/.ptx/.cubin/.fatbin/.a that defines it to the Linker, \
         or link only the kernels that need the inputs you have \
         (`Linker::add_ptx_kernels`) (inputs: {})\nlinker error log:\n{error_log}",
        demangled_note(.symbol),
        declared_note(.declared_at),
        list(.inputs)
    )]
    UndefinedSymbol {
        /// The symbol, as the Rust declaration names it.
        symbol: String,
        /// Where the `declare_device!` declarations of the symbol are (`file:line`), from
        /// their records in the kernels' PTX; empty when no declaration records it. (Boxed:
        /// every `Result` of this crate carries the enum's size.)
        declared_at: Box<[String]>,
        /// The inputs that were linked.
        inputs: Vec<String>,
        /// The linker's error log.
        error_log: String,
        /// The linker's info log.
        info_log: String,
    },

    /// A symbol defined by more than one input.
    #[error(
        "symbol `{symbol}`{} is defined more than once (in {}); hint: link each input once, and \
         keep one definition per symbol\nlinker error log:\n{error_log}",
        demangled_note(.symbol),
        list(.defined_in)
    )]
    DuplicateSymbol {
        /// The symbol.
        symbol: String,
        /// The inputs that define it, where known.
        defined_in: Vec<String>,
        /// The linker's error log.
        error_log: String,
        /// The linker's info log.
        info_log: String,
    },

    /// A foreign source was added to a link whose Rust PTX already holds it: nvptx-builder
    /// linked it in at build time (`Builder::foreign_cuda`), so its functions resolve inside
    /// the PTX, and the run-time copy would only be compiled for nothing (or, if it differs,
    /// silently not be the code that runs).
    #[error(
        "{input} is already linked into {ptx} at build time (the kernels crate's build.rs names `{source_file}` \
         in `foreign_cuda`){}; hint: remove it from the Linker: the PTX resolves those calls itself and loads \
         with `Context::load_module` (or link it with the other inputs only); to link the source at run time \
         instead, move it from `foreign_cuda` to `foreign_sources` in build.rs",
        if .symbols.is_empty() { String::new() } else { format!(" and defines {}", list(.symbols)) }
    )]
    LinkedAtBuildTime {
        /// The input added again (path or name).
        input: String,
        /// The PTX input that holds it.
        ptx: String,
        /// The source as the build script named it.
        source_file: String,
        /// The functions the input defines that the PTX already holds.
        symbols: Vec<String>,
    },

    /// An input has no code the target architecture can run.
    #[error(
        "link input {input} has no code for {arch}; hint: rebuild it with \
         `-arch={arch}` (or include `compute_XX` PTX that {arch} can JIT)\nlinker info log:\n{info_log}"
    )]
    WrongArchitecture {
        /// The input (path or name).
        input: String,
        /// The target architecture, e.g. `sm_90`.
        arch: String,
        /// The linker's info log.
        info_log: String,
    },

    /// The linker (cuLink or nvJitLink) failed for another reason; both logs are kept.
    #[error("{linker}: {call} failed with {code}\nerror log:\n{error_log}\ninfo log:\n{info_log}")]
    LinkFailed {
        /// Which linker.
        linker: LinkerKind,
        /// The failing call, e.g. `cuLinkComplete`.
        call: &'static str,
        /// The code it returned.
        code: LinkErrorCode,
        /// The linker's error log.
        error_log: String,
        /// The linker's info log.
        info_log: String,
    },

    // --- sharing: IPC, external memory and semaphores, interop ----------------------------
    /// A sharing operation (IPC, external memory or semaphores, VMM export) was asked of the
    /// simulator, whose memory is host memory that no other process or API can reach.
    #[error(
        "{operation} is not on the simulator: sharing device memory with other processes or \
         graphics APIs needs a CUDA device\nhint: run on a GPU (`GPUKERNEL_BACKEND=cuda`)"
    )]
    NotOnSimulator {
        /// The operation, e.g. `DeviceBuffer::ipc_handle`.
        operation: &'static str,
    },

    /// A buffer (or event) that was not created for sharing was asked for a shareable handle.
    #[error("{operation}: {what} cannot be exported: {reason}\nhint: {hint}")]
    NotExportable {
        /// The operation.
        operation: &'static str,
        /// What was asked: `this buffer`, `this event`.
        what: &'static str,
        /// Why not.
        reason: String,
        /// How to make one that can be.
        hint: &'static str,
    },

    /// Bytes that are not a handle this crate wrote (wrong length, magic, version or element
    /// size), or a handle's own fields out of range.
    #[error("{operation}: invalid {handle}: {problem}")]
    InvalidShareHandle {
        /// The operation.
        operation: &'static str,
        /// Which handle: `IPC memory handle`, `IPC event handle`, `VMM handle`.
        handle: &'static str,
        /// What is wrong.
        problem: String,
    },

    /// The driver refused a shared handle: closed by its exporter, from another device or
    /// machine, forged, or opened in the process that exported it.
    #[error("{operation}: the driver refused the {handle}: {error}\nhint: {hint}")]
    ShareHandleRejected {
        /// The operation.
        operation: &'static str,
        /// Which handle.
        handle: &'static str,
        /// The driver's error code.
        error: CudaError,
        /// The likely causes.
        hint: &'static str,
    },

    /// A mapped range outside the shared or imported memory, or one not aligned for the element
    /// type.
    #[error(
        "{operation}: bytes {offset}..{end} do not fit {what} of {size} bytes{}",
        if *align > 1 { format!(" (offsets must be multiples of {align})") } else { String::new() },
        end = offset.saturating_add(*bytes)
    )]
    ShareRange {
        /// The operation.
        operation: &'static str,
        /// What is mapped: `the external memory`, `the shared allocation`.
        what: &'static str,
        /// Requested start in bytes.
        offset: u64,
        /// Requested length in bytes.
        bytes: u64,
        /// Size of what is mapped, in bytes.
        size: u64,
        /// The alignment the offset needs.
        align: u64,
    },

    /// A handle type that this platform does not have (a Windows handle on Linux, a POSIX fd on
    /// Windows) or that the device does not support.
    #[error("{operation}: handle type {handle_type} is not supported {place}")]
    UnsupportedHandleType {
        /// The operation.
        operation: &'static str,
        /// The handle type, e.g. `opaque Win32`.
        handle_type: &'static str,
        /// Where: `on this platform`, `by CUDA device 0`.
        place: String,
    },

    /// A semaphore used as the other kind: a value given to a binary semaphore, or a timeline
    /// semaphore signalled or waited on without one.
    #[error("{operation}: the semaphore is {kind}, but {problem}")]
    SemaphoreKind {
        /// The operation.
        operation: &'static str,
        /// `binary` or `timeline`.
        kind: &'static str,
        /// What the call assumed.
        problem: &'static str,
    },

    /// Memory of another library (cudarc) whose context or element size does not match.
    #[error("{operation}: {problem}")]
    InteropMismatch {
        /// The operation.
        operation: &'static str,
        /// What does not match.
        problem: String,
    },

    /// One launch (stream launch, captured launch, graph kernel node or
    /// `GraphExec::set_kernel_args`) was given overlapping bytes of one allocation for two
    /// parameters, one of them written: a `&[T]` that changes under the kernel, or two
    /// `DisjointSlice`s that give one thread two `&mut` to one element. Nothing was launched.
    #[error(
        "kernel `{kernel}`: {first} and {second} are lent the same memory, one of them written \
         ({detail}); hint: pass separate buffers, or disjoint views (`split_at_mut`), or run \
         the kernel twice"
    )]
    AliasedArguments {
        /// The kernel.
        kernel: String,
        /// The earlier parameter: its name where known, position and type.
        first: String,
        /// The later parameter.
        second: String,
        /// The byte ranges and how each is used.
        detail: String,
    },

    /// `GraphExec::set_kernel_args` would make a node conflict (overlapping bytes of one
    /// allocation, one of them written) with a node that no edge of the instantiated graph
    /// orders it against; an instantiated graph's edges cannot change, so the update is
    /// refused and the instantiation unchanged.
    #[error(
        "graph `{graph}`: GraphExec::set_kernel_args on node #{node} would make it {access} \
         memory that node #{other} also uses ({detail}), and no edge of the instantiated graph \
         orders the two; hint: add the dependency (or give node #{node} that memory) in the \
         graph and instantiate it again, or update with `GraphExec::update`"
    )]
    UnorderedGraphUpdate {
        /// The graph's name.
        graph: String,
        /// The node whose arguments were being set.
        node: usize,
        /// The unordered node it would conflict with.
        other: usize,
        /// `write` or `read`.
        access: &'static str,
        /// The allocation's byte ranges.
        detail: String,
    },

    /// A runtime call from inside a host function (a graph host node): CUDA forbids CUDA
    /// calls there (the driver may refuse them with `CUDA_ERROR_NOT_PERMITTED`, deadlock, or
    /// run them), and the simulator runs host nodes inline on the launching thread, where the
    /// call could wait for itself. Refused on both backends before anything is done.
    #[error(
        "{operation} was called inside a graph host node: CUDA forbids CUDA calls in host \
         functions; hint: do that work outside the graph (after its launch) or as a node of \
         the graph (a kernel, copy or memset node)"
    )]
    CallInHostFunction {
        /// The refused operation.
        operation: &'static str,
    },

    /// A rank of a simulated collective failed (its computation panicked, its thread panicked
    /// with its operations issued, or its communicator was dropped before it joined): the
    /// other ranks' waits end at once with this instead of waiting for it.
    #[error("{operation}: rank {rank} failed: {reason}; the collective cannot complete")]
    CollectiveRankFailed {
        /// The collective.
        operation: &'static str,
        /// The rank that failed.
        rank: usize,
        /// How it failed.
        reason: String,
    },

    /// An architecture-specific target (`sm_90a`, `sm_100f`) that the installed tools cannot
    /// compile for: its code would only be correct on exactly that architecture (or family),
    /// so no other one may stand in for it.
    #[error(
        "cannot link for {arch}: architecture-specific code (the `{suffix}` suffix) is compiled \
         for exactly that architecture, and the installed NVRTC/nvJitLink have no {arch}; they \
         know {}; hint: link for one of those, or for the portable `sm_{sm}` (without the \
         architecture-specific instructions)",
        list(.available)
    )]
    ArchitectureSpecificUnavailable {
        /// The architecture asked for, e.g. `sm_91a`.
        arch: String,
        /// Its suffix, `a` or `f`.
        suffix: char,
        /// Its SM number, e.g. 91.
        sm: u32,
        /// The architecture-specific targets of that suffix the tools support.
        available: Vec<String>,
    },

    /// A range of imported memory mapped again while an overlapping mapping of it is still a
    /// live buffer: two buffers of one memory would alias.
    #[error(
        "{operation}: bytes {offset}..{end} of {what} overlap bytes {lent_offset}..{lent_end}, \
         mapped by a buffer that is still alive; drop that buffer first, or take a view of it \
         (`slice`, `slice_mut`) instead of mapping the range again",
        end = offset.saturating_add(*bytes),
        lent_end = lent_offset.saturating_add(*lent_bytes)
    )]
    RangeAlreadyMapped {
        /// The operation.
        operation: &'static str,
        /// What is mapped: `the external memory`.
        what: &'static str,
        /// Requested start in bytes.
        offset: u64,
        /// Requested length in bytes.
        bytes: u64,
        /// Start of the live mapping it overlaps, in bytes.
        lent_offset: u64,
        /// Length of that mapping in bytes.
        lent_bytes: u64,
    },

    /// A `declare_device!` symbol that the kernels call names no function of the user's
    /// foreign code: a PTX system call or device-runtime function (which the driver provides
    /// without any input), or a libdevice, C library or compiler-builtins name.
    #[error(
        "the foreign function `{symbol}` declared at {declared_at} is not defined by your foreign code: it is {provider}\n\
         hint: declare only functions that the inputs you link define; give yours another name"
    )]
    ForeignSymbolNotForeign {
        /// The declared symbol.
        symbol: String,
        /// The Rust declaration, `file:line`.
        declared_at: String,
        /// What provides the name instead.
        provider: &'static str,
    },

    /// A kernel's parameter was compiled into the module from another type, lowering or
    /// `same_len` than the Rust declaration has in this build (a type alias or `cfg_attr` that
    /// differs between the device and the host build, or an out-of-date PTX).
    #[error(
        "kernel `{kernel}`: parameter `{param}` (#{position}, `{ty}`) is {expected} in this \
         build, but the module's code was compiled for {found}\nhint: give the parameter the \
         same type (and `same_len`) on the device and the host (look for a `cfg`'d type alias \
         or a `cfg_attr` on the kernel), rebuild the kernels crate and load the PTX it emits now"
    )]
    KernelParamMismatch {
        /// The kernel.
        kernel: String,
        /// The parameter's name.
        param: &'static str,
        /// Its position among the kernel's parameters.
        position: usize,
        /// Its type as written.
        ty: &'static str,
        /// What this build's declaration has: lowering, kind, size, alignment, `same_len`.
        expected: String,
        /// What the module's code was compiled for.
        found: String,
    },

    /// A kernel's signature global in the module is not in the format this version of
    /// gpukernel writes (PTX from another version, or a global of that name not written by
    /// `#[kernel]`).
    #[error(
        "kernel `{kernel}`: its signature global `{symbol}` is not in the format of this version \
         of gpukernel ({problem})\nhint: rebuild the kernels crate with this version and load \
         the PTX it emits now"
    )]
    KernelSignatureFormat {
        /// The kernel.
        kernel: String,
        /// The global.
        symbol: String,
        /// What is wrong with it.
        problem: String,
    },

    /// Foreign device functions failed, counted on the device, but their details were not
    /// kept: their module's record held an earlier failure (reported already by a check that
    /// ran while their kernel was still running).
    #[error(
        "{count} foreign device function call(s) returned a non-zero status in launches of {} \
         (counted; the record that keeps one in full held an earlier failure, reported before)",
        .kernels.join(", ")
    )]
    ForeignCallsFailed {
        /// How many failed.
        count: u64,
        /// The kernels they may have run in (each module's, as far as known).
        kernels: Vec<String>,
    },

    /// A PTX (an image, a fatbin's PTX entry the driver had to JIT-compile, or a link input) is
    /// of a PTX ISA newer than the installed driver reads: a newer toolkit made it (the driver
    /// fails such a load with `CUDA_ERROR_UNSUPPORTED_PTX_VERSION`, 222).
    #[error(
        "{what} is PTX ISA {}.{}, which {}, but the installed driver supports CUDA {} (PTX ISA up to {}): \
         it cannot JIT-compile it{}\nhint: update the NVIDIA driver to one for CUDA {} or newer, or produce \
         the PTX with a toolkit no newer than CUDA {} (NVRTC, nvcc); for a kernels crate, embed SASS for \
         this GPU's architecture (nvptx-builder's `Builder::sass_archs`) so that the driver JIT-compiles nothing",
        isa.0, isa.1,
        needs_cuda.map_or("a CUDA release newer than this runtime knows introduced".to_owned(), |c| format!("CUDA {} introduced", crate::format::version::cuda_string(c))),
        crate::format::version::cuda_string(*driver_cuda),
        crate::format::version::newest_isa_for(*driver_cuda).map_or("none known".to_owned(), |(a, b)| format!("{a}.{b}")),
        error.map_or(String::new(), |e| format!(" ({e})")),
        needs_cuda.map_or("newer".to_owned(), crate::format::version::cuda_string),
        crate::format::version::cuda_string(*driver_cuda)
    )]
    PtxTooNew {
        /// What was loaded or linked (the input's name, or "the module image").
        what: String,
        /// Its `.version`, `(major, minor)`.
        isa: (u32, u32),
        /// The first CUDA release that reads it (`1000 * major + 10 * minor`); `None` when
        /// newer than this runtime knows.
        needs_cuda: Option<u32>,
        /// The driver's CUDA version (`cuDriverGetVersion`).
        driver_cuda: u32,
        /// The driver's error, when it refused the load (222).
        error: Option<CudaError>,
    },

    /// LTO-IR would be linked by an nvJitLink older than the compiler that produced it
    /// (nvJitLink reads LTO-IR of its own release and older).
    #[error(
        "`{input}` is compiled to LTO-IR by {producer} {}.{}, but the nvJitLink that would link it \
         is {}.{}: nvJitLink must be at least as new as the LTO-IR's producer\nhint: install \
         nvJitLink {}.{} or newer beside NVRTC (the `nvidia-nvjitlink` wheel of the same release, \
         or the CUDA toolkit's), or link without LTO (`Linker::lto(false)`)",
        producer_version.0, producer_version.1, nvjitlink.0, nvjitlink.1,
        producer_version.0, producer_version.1
    )]
    NvJitLinkTooOld {
        /// The input compiled to LTO-IR.
        input: String,
        /// What produced the LTO-IR (`NVRTC`).
        producer: &'static str,
        /// Its version, `(major, minor)`.
        producer_version: (u32, u32),
        /// nvJitLink's version.
        nvjitlink: (u32, u32),
    },

    /// A launch's cluster dimensions do not fit its grid or its kernel.
    #[error("launch of `{kernel}` with grid {grid:?} in clusters of {cluster:?} blocks: {reason}")]
    ClusterShapeInvalid {
        /// The kernel.
        kernel: String,
        /// The grid, in blocks.
        grid: [u32; 3],
        /// The cluster dimensions asked for.
        cluster: [u32; 3],
        /// What is wrong and what to do.
        reason: String,
    },

    /// A cooperative launch asked for more blocks than the device can hold at once (the grid
    /// barrier would wait forever for blocks that cannot start).
    #[error(
        "cooperative launch of `{kernel}` with {blocks} blocks: at most {max} blocks of this \
         size can be resident at once on this device (occupancy per multiprocessor × \
         multiprocessors)\nhint: launch at most LaunchConfig::max_cooperative_blocks blocks and \
         loop over the data inside the kernel (a grid-stride loop)"
    )]
    CooperativeGridTooLarge {
        /// The kernel.
        kernel: String,
        /// Blocks asked for.
        blocks: u64,
        /// Blocks that fit at once.
        max: u32,
    },

    /// A tensor map (TMA descriptor) whose shape, strides, box or swizzle the hardware cannot
    /// take, caught before the driver sees it.
    #[error("tensor map over `{buffer}`: {problem}")]
    TensorMapInvalid {
        /// The buffer or view it describes (its element type and length).
        buffer: String,
        /// What is wrong and what to do.
        problem: String,
    },

    /// `GraphExec::set_kernel_args` was given launch attributes (clusters, cooperative,
    /// programmatic dependent) other than the node's: an instantiated graph keeps the
    /// attributes its kernel nodes were built with (`cuGraphExecKernelNodeSetParams` does not
    /// change them).
    #[error(
        "{operation} on node {node} (`{kernel}`) of graph `{graph}`: {change}\nhint: pass the \
         attributes the node was built with, or build (or update with GraphExec::update) a \
         graph whose node has the new ones"
    )]
    GraphNodeAttributesChanged {
        /// The call.
        operation: &'static str,
        /// The node's index.
        node: usize,
        /// The node's kernel.
        kernel: String,
        /// The graph's name.
        graph: String,
        /// The attributes given and the node's.
        change: String,
    },

    /// An argument of a device-wide algorithm that no launch can run with (empty bins,
    /// levels out of order).
    #[error("{operation}: `{argument}` {reason}")]
    InvalidArgument {
        /// The call, e.g. `Algorithms::histogram_even`.
        operation: &'static str,
        /// The argument at fault.
        argument: &'static str,
        /// What is wrong and what to pass instead.
        reason: String,
    },
}

fn in_context(context: &Option<String>) -> String {
    match context {
        Some(c) => format!(" ({c})"),
        None => String::new(),
    }
}

fn from_origin(origin: &Option<String>) -> String {
    match origin {
        Some(o) => format!(" from `{o}`"),
        None => String::new(),
    }
}

fn or_empty(log: &str) -> &str {
    if log.trim().is_empty() {
        "(empty)"
    } else {
        log
    }
}

fn labelled(label: &str, log: &str) -> String {
    if log.trim().is_empty() {
        String::new()
    } else {
        format!("\n{label}:\n{log}")
    }
}

fn fmt_hint(hint: &Option<&'static str>) -> String {
    match hint {
        Some(h) => format!("; hint: {h}"),
        None => String::new(),
    }
}

fn paths(paths: &[std::path::PathBuf]) -> String {
    if paths.is_empty() {
        "(nothing)".to_owned()
    } else {
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// ` (declared with `declare_device!` at src/lib.rs:18)`, or nothing.
fn declared_note(at: &[String]) -> String {
    if at.is_empty() {
        String::new()
    } else {
        format!(" (declared with `declare_device!` at {})", at.join(", "))
    }
}

/// ` (C++: `ns::f(int)`)` for a mangled C++ symbol, else nothing.
fn demangled_note(symbol: &str) -> String {
    match demangle(symbol) {
        Some(d) => format!(" (C++: `{d}`)"),
        None => String::new(),
    }
}

/// The demangled form of a mangled C++ (Itanium ABI) symbol, e.g. `_Z3addff` → `add(float,
/// float)`; `None` for other names.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::link::demangle;
/// assert_eq!(demangle("_Z3addff").as_deref(), Some("add(float, float)"));
/// assert_eq!(demangle("saxpy"), None);
/// # Ok(()) }
/// ```
pub fn demangle(symbol: &str) -> Option<String> {
    if !symbol.starts_with("_Z") {
        return None;
    }
    let parsed = cpp_demangle::Symbol::new(symbol).ok()?;
    parsed.demangle().ok()
}

/// What [`Error::ForeignSignatureMismatch`] reports.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::SignatureMismatch;
/// fn where_to_fix(e: &Error) -> Option<(&str, &str)> {
///     match e {
///         Error::ForeignSignatureMismatch(m) => Some((&m.declared_at, &m.defined_at)),
///         _ => None,
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the definition of foreign function `{symbol}` in {defined_at} does not match its Rust \
     declaration at {declared_at}, which expects `{expected}`: {detail}\nhint: change the \
     `declare_device!` entry or the definition so that both have the same argument count, \
     argument types and return type"
)]
#[non_exhaustive]
pub struct SignatureMismatch {
    /// The foreign symbol.
    pub symbol: String,
    /// The Rust declaration: `file:line` of the `declare_device!` entry.
    pub declared_at: String,
    /// The C declaration the Rust one stands for.
    pub expected: String,
    /// Where the definition is: `file:line` (a `.cu` source) or the input's name.
    pub defined_at: String,
    /// What differs: the compiler's message, or the parameter lists compared.
    pub detail: String,
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_owned()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Error {
    /// The CUDA error code behind this error, if it came from the driver.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let e = ctx.alloc_zeros::<u8>(4)?.slice(2..8).unwrap_err(); // Error::OutOfBounds
    /// assert!(e.cuda_error().is_none()); // not from the driver
    /// # Ok(()) }
    /// ```
    pub fn cuda_error(&self) -> Option<CudaError> {
        match self {
            Error::Driver { error, .. }
            | Error::KernelFault { error, .. }
            | Error::ModuleLoad { error, .. }
            | Error::UnresolvedForeignSymbols { error, .. }
            | Error::ShareHandleRejected { error, .. } => Some(*error),
            Error::DriverUnavailable { error, .. } => *error,
            Error::LinkFailed {
                code: LinkErrorCode::Driver(error),
                ..
            } => Some(*error),
            _ => None,
        }
    }
}

/// A length for [`Error::SameLenViolated`]'s message.
/// What a kernel refused by `LaunchDimensionsNotAllowed` writes instead, for its output type.
fn dims_hint(output: &str) -> &'static str {
    if output == "DisjointSlice" {
        "a kernel launched on a 2D grid takes `DisjointSlice2D<T>` and writes at `thread::index_2d()` (the host \
         passes `buffer.view_2d_mut(cols, rows, pitch)?`; in 3D, `DisjointSlice3D<T>` at `thread::index_3d()`); a \
         kernel that computes its own indices (a tiled transpose, say) is an `unsafe fn` taking `*mut T`, launched \
         with `launch_unchecked`"
    } else {
        "a kernel launched on a 3D grid takes `DisjointSlice3D<T>` and writes at `thread::index_3d()` (the host \
         passes `buffer.view_3d_mut(cols, rows, depth, pitch)?`); a kernel that computes its own indices is an \
         `unsafe fn` taking `*mut T`, launched with `launch_unchecked`"
    }
}

fn fmt_len(n: &Option<u64>) -> String {
    n.map_or_else(|| "an unknown number of".to_owned(), |n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn illegal_address() -> CudaError {
        CudaError {
            code: 700,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS",
            description: "an illegal memory access was encountered",
        }
    }

    #[test]
    fn debug_reads_like_display() {
        let e = Error::KernelNotFound {
            name: "saxpi".into(),
            available: vec!["saxpy".into()],
        };
        assert_eq!(format!("{e:?}"), e.to_string());
        assert_eq!(format!("{e:#?}"), e.to_string());
    }

    #[test]
    fn error_is_send_sync_static() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Error>();
    }

    #[test]
    fn driver_error_keeps_code_name_description_and_context() {
        let e = Error::Driver {
            call: "cuMemAllocAsync",
            error: CudaError {
                code: 2,
                name: "CUDA_ERROR_OUT_OF_MEMORY",
                description: "out of memory",
            },
            context: Some("allocating 1024 bytes".into()),
        };
        assert_eq!(
            e.to_string(),
            "cuMemAllocAsync failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory (allocating 1024 bytes)"
        );
        assert_eq!(e.cuda_error().map(|c| c.code()), Some(2));
    }

    #[test]
    fn kernel_fault_names_the_launch() {
        let e = Error::KernelFault {
            call: "cuStreamSynchronize",
            error: illegal_address(),
            last_launch: Some("write_null".into()),
        };
        let s = e.to_string();
        assert!(s.contains("CUDA_ERROR_ILLEGAL_ADDRESS (700)"), "{s}");
        assert!(s.contains("last launch: `write_null`"), "{s}");
        assert!(illegal_address().is_kernel_fault());
        assert!(
            !CudaError {
                code: 2,
                name: "",
                description: ""
            }
            .is_kernel_fault()
        );
    }

    #[test]
    fn kernel_not_found_lists_the_kernels() {
        let e = Error::KernelNotFound {
            name: "saxpi".into(),
            available: vec!["saxpy".into(), "empty_kernel".into()],
        };
        assert_eq!(
            e.to_string(),
            "the module has no kernel `saxpi`; its kernels are: `saxpy`, `empty_kernel`"
        );
        let none = Error::KernelNotFound {
            name: "k".into(),
            available: vec![],
        };
        assert!(none.to_string().ends_with("(none)"));
    }

    #[test]
    fn invalid_env_var_names_variable_and_values() {
        let e = Error::InvalidEnvVar {
            variable: "GPUKERNEL_BACKEND",
            value: "gpu".into(),
            accepted: "cuda, sim, auto",
        };
        assert_eq!(
            e.to_string(),
            "invalid value \"gpu\" for GPUKERNEL_BACKEND: accepted values are cuda, sim, auto"
        );
    }

    #[test]
    fn foreign_call_failure_message() {
        let e = Error::ForeignCallFailed {
            function: "mul_f32_f32".into(),
            status: 3,
            thread: 17,
            kernel: Some("saxpy_ffi".into()),
            more: 0,
            others: Vec::new(),
        };
        assert_eq!(
            e.to_string(),
            "foreign device function `mul_f32_f32` returned status 3 (thread 17) in a launch of `saxpy_ffi`"
        );
    }
}

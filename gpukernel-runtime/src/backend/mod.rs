//! The backend boundary: every place where running on a CUDA device and running on the CPU
//! simulator differ, behind one trait ([`Backend`]) with one implementation per backend
//! ([`cuda::CudaBackend`] over the driver layer, [`sim::SimBackend`] over the simulator
//! engine).
//!
//! The safe types above it (contexts, streams, events, buffers, modules, launches) are written
//! once and call a context's backend; they never ask which backend it is. A backend knows
//! nothing of them: it deals in opaque handles, device addresses and byte counts, and returns
//! [`Error`]s. A new backend is a new implementation of [`Backend`] and a constructor in
//! `context.rs`; a new kind of operation (a graph node, say) is a new trait method with an
//! implementation in each backend.
//!
//! # Handles
//! A handle ([`StreamHandle`], [`EventHandle`], [`ModuleHandle`], [`FunctionHandle`]) is an
//! opaque pointer that only the backend that made it interprets (a `CUstream` on CUDA; on the
//! simulator, null or a pointer to the simulator's own state). The safe types own them and
//! give them back exactly once (`*_destroy`, `module_unload`).

pub(crate) mod cuda;
mod share;
pub(crate) mod sim;

pub(crate) use share::{ShareBackend, SharedAlloc, SharedKind};

use core::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};

use gpukernel_device::SimEntry;

use crate::error::Result;
use crate::format::ImageKind;

macro_rules! handle {
    ($($(#[$m:meta])* $name:ident;)*) => { $(
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) struct $name(pub(crate) *mut c_void);

        impl $name {
            /// The handle that stands for nothing (the simulator's streams and modules).
            #[allow(dead_code, reason = "not every kind of handle has a null use")]
            pub(crate) const NULL: $name = $name(core::ptr::null_mut());
        }
    )* };
}

handle! {
    /// A stream of a backend (`CUstream`; null on the simulator).
    StreamHandle;
    /// An event of a backend (`CUevent`; the simulator's own record).
    EventHandle;
    /// A loaded module (`CUmodule`; null on the simulator).
    ModuleHandle;
    /// A kernel of a loaded module (`CUfunction`; null on the simulator).
    FunctionHandle;
    /// A graph being built (`CUgraph`; the simulator's own node list).
    GraphHandle;
    /// An instantiated graph (`CUgraphExec`; the simulator's own ordered copy).
    GraphExecHandle;
    /// A node of a graph (`CUgraphNode`; an index on the simulator).
    NodeHandle;
    /// Imported external memory (`CUexternalMemory`; none on the simulator).
    ExternalMemoryHandle;
    /// An imported external semaphore (`CUexternalSemaphore`; none on the simulator).
    ExternalSemaphoreHandle;
}

/// One end of a copy node: host memory or a device address.
#[derive(Debug, Clone, Copy)]
pub(crate) enum CopyEnd {
    Host(*mut u8),
    Device(u64),
}

/// A function a host node calls with its data pointer (a `CUhostFn`).
pub(crate) type HostFn = unsafe extern "C" fn(*mut c_void);

/// A node to add to a graph, as the backend sees it.
#[derive(Debug)]
pub(crate) enum GraphNode<'a, 'p> {
    /// A kernel launch; `desc.stream` is ignored.
    Kernel {
        desc: &'a LaunchDesc<'a>,
        /// One pointer per ABI parameter. CUDA copies the values when the node is added; the
        /// simulator reads them at each launch, so they stay valid until the graph and every
        /// instantiation of it are destroyed.
        params: &'p mut [*mut c_void],
    },
    /// A copy of `bytes > 0` bytes.
    Copy {
        dst: CopyEnd,
        src: CopyEnd,
        bytes: usize,
    },
    /// A byte fill of `bytes > 0` bytes of device memory.
    Memset { dst: u64, value: u8, bytes: usize },
    /// A call of `f(data)` on a host thread.
    Host { f: HostFn, data: *mut c_void },
    /// Nothing: a join point.
    Empty,
    /// Records `event` when the node runs (the caller keeps the event live while an
    /// instantiation of the graph may run).
    EventRecord { event: EventHandle },
    /// Makes the node's successors wait for the last record of `event` (kept live as above).
    EventWait { event: EventHandle },
    /// Runs a copy of `graph`, taken when the node is added (later changes to `graph` do not
    /// reach it). `graph` has no conditional node and is not the graph the node is added to;
    /// what its nodes reach stays valid as for the node's own graph.
    Child { graph: GraphHandle },
    /// A conditional node reading `handle` (of the graph it is added to); the backend writes
    /// its new, empty body graph (owned by the node: never destroyed by the caller) to `body`.
    Conditional {
        handle: u64,
        kind: ConditionalKind,
        body: &'p mut GraphHandle,
    },
}

/// What a conditional node does with its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConditionalKind {
    /// Runs it once when the condition is non-zero.
    If,
    /// Runs it while the condition is non-zero (tested before each run).
    While,
}

/// Launch limits of a device, read once so launches validate without backend calls.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_threads_per_block: u32,
    pub max_block: [u32; 3],
    pub max_grid: [u32; 3],
    pub max_shared_optin: u32,
}

/// A device allocation: its address and how the backend frees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawAlloc {
    pub ptr: u64,
    pub bytes: usize,
    pub align: usize,
    /// Backend-specific: whether it came from the stream-ordered pool.
    pub pooled: bool,
}

/// A kernel looked up in a module, with the attributes launches check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FunctionInfo {
    pub handle: FunctionHandle,
    pub max_threads_per_block: u32,
    pub static_shared_bytes: u32,
    pub max_dynamic_shared_bytes: u32,
    /// Registers per thread (`CU_FUNC_ATTRIBUTE_NUM_REGS`; 0 on the simulator).
    pub num_registers: u32,
}

/// A module image handed to the backend: its bytes, kind (checked by `format`), origin, and
/// the code generation options for a PTX image the driver compiles at load.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Image<'a> {
    pub bytes: &'a [u8],
    pub kind: ImageKind,
    pub origin: Option<&'a str>,
    pub jit: JitOptions,
}

/// Code generation options of the PTX JIT at module load (`cuModuleLoadDataEx`'s
/// `CU_JIT_*` options; the default adds none). The driver ignores them for machine code; the
/// simulator compiles nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JitOptions {
    /// `CU_JIT_MAX_REGISTERS`.
    pub max_registers: Option<u32>,
    /// `CU_JIT_OPTIMIZATION_LEVEL`.
    pub optimization_level: Option<u32>,
    /// `CU_JIT_GENERATE_LINE_INFO`.
    pub line_info: bool,
    /// `CU_JIT_GENERATE_DEBUG_INFO`.
    pub debug: bool,
}

/// A loaded module: its handle, its kernels' names (sorted, deduplicated) and, when its code
/// holds a foreign-call failure record, that record's device address (0 on the simulator,
/// whose records are on the host).
#[derive(Debug)]
pub(crate) struct LoadedModule {
    pub handle: ModuleHandle,
    pub names: Vec<String>,
    pub ffi_record: Option<u64>,
}

/// Foreign-call failures read from a module's record: the first one in full (when the record
/// kept it) and how many failed in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ForeignFailure {
    /// The foreign symbol; empty when not [`detailed`](Self::detailed).
    pub function: String,
    /// The status it returned.
    pub status: i32,
    /// The linear index of the failing thread in its launch.
    pub thread: u64,
    /// The kernel the failing thread ran, when the record names it.
    pub kernel: Option<String>,
    /// The address of the handle of the stream its launch ran on, when the backend knows it
    /// (the simulator; a GPU's record does not say).
    pub stream: Option<usize>,
    /// How many failures this read accounts for (at least 1): the detailed one and those
    /// counted after it.
    pub count: u64,
    /// Whether the fields above describe the first of them. A GPU record counts failures
    /// whose claim found it holding an earlier one (already read, not yet re-armed): those
    /// come as a count alone.
    pub detailed: bool,
}

/// A module's foreign-call failure record (see `gpukernel_device::ffi`): the device global
/// the kernels write on CUDA, and the host slot the simulator fills. One per module, so a
/// failure belongs to the module whose kernel made it, whichever thread or stream launched it;
/// each one also sets the context's [`FailureWord`](crate::foreign::FailureWord).
#[derive(Debug, Default)]
pub(crate) struct FfiRecord {
    /// The record's device address (CUDA); 0 on the simulator.
    pub device_addr: u64,
    /// How many of the record's counted failures have been read (CUDA: the device's count is
    /// never reset). Read and written under the context's check lock.
    pub seen: std::sync::atomic::AtomicU64,
    /// The failures of simulated launches not yet reported: the first of each stream, with
    /// the count of that stream's failures, so a failure on one stream does not hide another
    /// stream's (bounded by the streams used).
    pub host: std::sync::Mutex<Vec<ForeignFailure>>,
}

/// One launch, as the backend sees it.
#[derive(Debug)]
pub(crate) struct LaunchDesc<'a> {
    pub function: FunctionHandle,
    pub name: &'static &'static str,
    /// The kernel's Rust body, for the simulator (`None` for untyped launches).
    pub sim_entry: Option<SimEntry>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem_bytes: u32,
    pub stream: StreamHandle,
    /// The module's foreign-call record, if it has one.
    pub ffi: Option<&'a FfiRecord>,
    /// Launch attributes (checked by `LaunchConfig::validate`).
    pub attributes: crate::launch::LaunchAttributes,
}

/// The operations whose implementation differs between a CUDA device and the simulator. One
/// instance per context; `Send + Sync`.
///
/// Methods taking a `suspect` attribute a sticky kernel fault they observe to that launch
/// (the last on the synchronized stream, say) before the context's last launch.
pub(crate) trait Backend: ShareBackend + Send + Sync + 'static {
    /// Whether this is the simulator (for `Context::is_simulator` and messages only).
    fn is_simulator(&self) -> bool;
    /// `CUDA device 0 (NVIDIA H100…)` or `the simulator`, for messages.
    fn label(&self) -> &str;
    /// The device's launch limits.
    fn limits(&self) -> Limits;
    /// The last kernel launched in this context, for fault messages.
    fn last_launch(&self) -> &LastLaunch;
    /// The context's foreign-call failure word (see `crate::foreign`).
    fn failure_word(&self) -> &crate::foreign::FailureWord;

    // --- context ---------------------------------------------------------------------------
    /// Makes the context current on the calling thread (for code that calls the driver).
    fn bind(&self) -> Result<()>;
    /// Waits for all work of the context.
    fn synchronize(&self) -> Result<()>;
    /// `(least, greatest)` stream priority.
    fn stream_priority_range(&self) -> Result<(i32, i32)>;

    // --- streams ---------------------------------------------------------------------------
    /// The context's default stream (owned by the backend).
    fn default_stream(&self) -> StreamHandle;
    /// A new stream with a priority.
    fn stream_create(&self, priority: i32) -> Result<StreamHandle>;
    /// Gives a stream back; pending work still completes.
    ///
    /// # Safety
    /// `s` came from [`stream_create`](Self::stream_create) of this backend and is not used
    /// afterwards.
    unsafe fn stream_destroy(&self, s: StreamHandle);
    /// Waits until the work on `s` is done.
    fn stream_synchronize(&self, s: StreamHandle, suspect: Option<&'static str>) -> Result<()>;
    /// Whether the work on `s` is done; never blocks.
    fn stream_query(&self, s: StreamHandle, suspect: Option<&'static str>) -> Result<bool>;
    /// The stream's priority.
    fn stream_priority(&self, s: StreamHandle) -> Result<i32>;
    /// Makes later work on `waiter` wait for the work enqueued on `other` so far.
    fn stream_wait_stream(&self, waiter: StreamHandle, other: StreamHandle) -> Result<()>;
    /// Makes later work on `s` wait until `e` completes.
    fn stream_wait_event(&self, s: StreamHandle, e: EventHandle) -> Result<()>;

    // --- events ----------------------------------------------------------------------------
    /// A new event.
    fn event_create(&self, timing: bool, blocking_sync: bool) -> Result<EventHandle>;
    /// Records `e` at the current end of `s`.
    fn event_record(&self, e: EventHandle, s: StreamHandle) -> Result<()>;
    /// Waits until the work recorded before `e` is done.
    fn event_synchronize(&self, e: EventHandle, suspect: Option<&'static str>) -> Result<()>;
    /// Whether the work recorded before `e` is done; never blocks.
    fn event_query(&self, e: EventHandle, suspect: Option<&'static str>) -> Result<bool>;
    /// Milliseconds between two recorded, completed events (both created with timing).
    fn event_elapsed(&self, start: EventHandle, end: EventHandle) -> Result<f32>;
    /// Gives an event back.
    ///
    /// # Safety
    /// `e` came from [`event_create`](Self::event_create) of this backend and is not used
    /// afterwards.
    unsafe fn event_destroy(&self, e: EventHandle);

    // --- memory ----------------------------------------------------------------------------
    /// Allocates `bytes > 0` bytes of device memory aligned to `align`, ordered on `s`. The
    /// contents are unspecified (zeroed on the simulator).
    fn alloc(&self, bytes: usize, align: usize, s: StreamHandle) -> Result<RawAlloc>;
    /// Frees an allocation once the work enqueued on `home` so far is done (the caller made
    /// `home` wait for every other stream that used it). An error means nothing was freed.
    ///
    /// # Safety
    /// `a` came from [`alloc`](Self::alloc) of this backend and is not used by work enqueued
    /// after this call.
    unsafe fn free(&self, a: RawAlloc, home: StreamHandle) -> Result<()>;
    /// `bytes > 0` bytes of zeroed page-locked host memory aligned to `align`.
    fn host_alloc(&self, bytes: usize, align: usize) -> Result<*mut u8>;
    /// Frees host memory from [`host_alloc`](Self::host_alloc).
    ///
    /// # Safety
    /// `p` came from `host_alloc(bytes, align)` of this backend, and no pending work uses it.
    unsafe fn host_free(&self, p: *mut u8, bytes: usize, align: usize);
    /// Enqueues a host-to-device copy of `bytes > 0` bytes on `s`.
    ///
    /// # Safety
    /// `src` is valid for reads of `bytes` until the copy completes (the backend's copy is
    /// complete when the stream is synchronized); `dst` is `bytes` of device memory of this
    /// context that nothing else accesses meanwhile.
    unsafe fn memcpy_htod(
        &self,
        dst: u64,
        src: *const u8,
        bytes: usize,
        s: StreamHandle,
    ) -> Result<()>;
    /// Enqueues a device-to-host copy.
    ///
    /// # Safety
    /// As [`memcpy_htod`](Self::memcpy_htod), reversed: `dst` valid for writes until the copy
    /// completes.
    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut u8,
        src: u64,
        bytes: usize,
        s: StreamHandle,
    ) -> Result<()>;
    /// Enqueues a device-to-device copy between non-overlapping ranges.
    ///
    /// # Safety
    /// Both ranges are `bytes` of device memory of this context, not overlapping.
    unsafe fn memcpy_dtod(&self, dst: u64, src: u64, bytes: usize, s: StreamHandle) -> Result<()>;
    /// Enqueues a byte fill.
    ///
    /// # Safety
    /// `dst` is `bytes` of device memory of this context that nothing else accesses meanwhile.
    unsafe fn memset_d8(&self, dst: u64, value: u8, bytes: usize, s: StreamHandle) -> Result<()>;

    // --- modules ---------------------------------------------------------------------------
    /// Loads a module image (its kind and shape already checked).
    fn module_load(&self, image: Image<'_>) -> Result<LoadedModule>;
    /// Unloads a module.
    ///
    /// # Safety
    /// `m` came from this backend, no function of it is used afterwards, and no launch of it
    /// is pending.
    unsafe fn module_unload(&self, m: ModuleHandle);
    /// The kernel `name` of module `m`, `Ok(None)` when it has none.
    fn function(
        &self,
        m: ModuleHandle,
        names: &[String],
        name: &str,
    ) -> Result<Option<FunctionInfo>>;
    /// The byte sizes of a kernel's parameters: `Ok(None)` when the backend cannot tell (the
    /// simulator), an error when the query failed.
    fn function_param_sizes(&self, f: FunctionHandle) -> Result<Option<Vec<usize>>>;
    /// The bytes of the signature global `#[kernel]` exported beside `kernel`
    /// (`gpukernel_device::signature_symbol(kernel)`, see `gpukernel_device::signature`),
    /// `Ok(None)` when the module has none.
    fn kernel_signature(&self, m: ModuleHandle, kernel: &str) -> Result<Option<Vec<u8>>>;
    /// The address and size of a module global, `Ok(None)` when it has none.
    fn module_global(&self, m: ModuleHandle, name: &str) -> Result<Option<(u64, usize)>>;
    /// The block size that maximises occupancy.
    fn optimal_block_size(&self, f: FunctionHandle, dynamic_shared_bytes: u32) -> Result<u32>;
    /// Allows launches with up to `bytes` of dynamic shared memory.
    fn set_max_dynamic_shared_bytes(&self, f: FunctionHandle, bytes: u32) -> Result<()>;
    /// The largest cluster, in blocks, `f` can be launched with in this configuration (0:
    /// the device has no clusters).
    fn max_cluster_size(
        &self,
        f: FunctionHandle,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem_bytes: u32,
    ) -> Result<u32>;
    /// Blocks of `threads` threads that fit on one multiprocessor at once.
    fn max_active_blocks_per_sm(
        &self,
        f: FunctionHandle,
        threads: u32,
        shared_mem_bytes: u32,
    ) -> Result<u32>;
    /// The multiprocessors a cooperative launch spreads over; an error when the device cannot
    /// launch cooperatively.
    fn cooperative_multiprocessors(&self) -> Result<u32>;
    /// Encodes a tiled tensor map (TMA descriptor) from checked fields.
    ///
    /// # Safety
    /// `m.base` is memory of this context that outlives every use of the map.
    unsafe fn encode_tensor_map(&self, m: &crate::driver::TiledMap) -> Result<[u64; 16]>;

    /// Begins capturing the stream's work into a new graph: later launches, copies and
    /// memsets on it are recorded, not run, until [`stream_end_capture`](Self::stream_end_capture).
    fn stream_begin_capture(&self, s: StreamHandle) -> Result<()>;
    /// Ends the capture of `s`; the graph is the caller's (destroy it with `graph_destroy`).
    ///
    /// # Safety
    /// `s` is capturing (`stream_begin_capture` succeeded), on the same thread.
    unsafe fn stream_end_capture(&self, s: StreamHandle) -> Result<GraphHandle>;
    /// Adds `node` to the graph `s` is capturing into, after the capture's current
    /// dependencies, and makes it the dependency of the capture's next operation: how a
    /// capture records what the stream API would not (a copy from pageable host memory).
    ///
    /// # Safety
    /// As `stream_end_capture`; as [`graph_add_node`](Self::graph_add_node) for `node`.
    unsafe fn stream_capture_node(
        &self,
        s: StreamHandle,
        node: GraphNode<'_, '_>,
    ) -> Result<NodeHandle>;
    /// The node the capture of `s` added last, if any.
    ///
    /// # Safety
    /// As `stream_end_capture`.
    unsafe fn stream_capture_tail(&self, s: StreamHandle) -> Result<Option<NodeHandle>>;

    // --- launches and foreign-call failures ----------------------------------------------
    /// Launches a kernel and records it as the last launch of the context and of
    /// `stream_last` (the stream's own record).
    ///
    /// # Safety
    /// `params` holds one pointer per ABI parameter of the kernel, each to a value of the
    /// parameter's type, valid for the call; the memory the kernel reaches through them stays
    /// valid, and is ordered after conflicting work, until it completes.
    unsafe fn launch(
        &self,
        desc: &LaunchDesc<'_>,
        params: &mut [*mut c_void],
        stream_last: &LastLaunch,
    ) -> Result<()>;
    // --- graphs ----------------------------------------------------------------------------
    /// A new, empty graph.
    fn graph_create(&self) -> Result<GraphHandle>;
    /// Gives a graph back (its instantiations stay valid).
    ///
    /// # Safety
    /// `g` came from this backend and is not used afterwards.
    unsafe fn graph_destroy(&self, g: GraphHandle);
    /// A conditional handle of graph `g` (for a conditional node of `g`), whose value is set
    /// to `default` at the start of each launch.
    ///
    /// # Safety
    /// `g` is live.
    unsafe fn graph_conditional_handle(&self, g: GraphHandle, default: u32) -> Result<u64>;
    /// Adds a node depending on `deps`.
    ///
    /// # Safety
    /// `g` is live, `deps` are nodes of `g`; the memory the node reaches (copy ends, kernel
    /// arguments, the host function's data) stays valid, and is ordered after conflicting
    /// work, whenever an instantiation of the graph runs; for kernels, as
    /// [`launch`](Self::launch).
    unsafe fn graph_add_node(
        &self,
        g: GraphHandle,
        deps: &[NodeHandle],
        node: GraphNode<'_, '_>,
    ) -> Result<NodeHandle>;
    /// Makes `to` depend on `from`.
    ///
    /// # Safety
    /// `g` is live; both nodes belong to it.
    unsafe fn graph_add_dependency(
        &self,
        g: GraphHandle,
        from: NodeHandle,
        to: NodeHandle,
    ) -> Result<()>;
    /// Makes kernel node `to` a programmatic dependent of kernel node `from`: it may start
    /// before `from` completes, and `grid::wait_dependencies` in it waits for `from`.
    ///
    /// # Safety
    /// `g` is live; both nodes belong to it and are kernel nodes.
    unsafe fn graph_add_programmatic_dependency(
        &self,
        g: GraphHandle,
        from: NodeHandle,
        to: NodeHandle,
    ) -> Result<()>;
    /// Instantiates a graph (the graph is acyclic: the caller checked).
    ///
    /// # Safety
    /// `g` is live.
    unsafe fn graph_instantiate(&self, g: GraphHandle) -> Result<GraphExecHandle>;
    /// Gives an instantiation back (a launch in flight completes first).
    ///
    /// # Safety
    /// `e` came from this backend and is not used afterwards.
    unsafe fn graph_exec_destroy(&self, e: GraphExecHandle);
    /// Launches an instantiated graph on `s`, recording `name` as the last launch of the
    /// context and of `stream_last`.
    ///
    /// # Safety
    /// As [`graph_add_node`](Self::graph_add_node) for every node; one launch of `e` at a time
    /// per stream order (the driver serializes launches of one instantiation).
    unsafe fn graph_launch(
        &self,
        e: GraphExecHandle,
        s: StreamHandle,
        name: &'static &'static str,
        stream_last: &LastLaunch,
    ) -> Result<()>;
    /// Replaces the arguments (and configuration) of kernel node `node` in `e`.
    ///
    /// # Safety
    /// `node` is a kernel node of the graph `e` came from, `desc` names the same function; as
    /// [`graph_add_node`](Self::graph_add_node) for `params`.
    unsafe fn graph_exec_set_kernel(
        &self,
        e: GraphExecHandle,
        node: NodeHandle,
        desc: &LaunchDesc<'_>,
        params: &mut [*mut c_void],
    ) -> Result<()>;
    /// Updates `e` to the node parameters of `g`, which must have the same topology;
    /// [`Error::GraphUpdateRefused`](crate::Error::GraphUpdateRefused) when it cannot (`e`
    /// is then unchanged).
    ///
    /// # Safety
    /// Both are live; as [`graph_add_node`](Self::graph_add_node) for `g`'s nodes.
    unsafe fn graph_exec_update(&self, e: GraphExecHandle, g: GraphHandle) -> Result<()>;

    // --- several devices -------------------------------------------------------------------
    /// This backend as `Any`, so that another context of the same kind can read it (peer
    /// access, peer copies).
    fn as_any(&self) -> &dyn core::any::Any;
    /// Whether this context's work can access `peer`'s memory directly (both of one kind:
    /// CUDA contexts of two devices, or simulated devices).
    fn can_access_peer(&self, peer: &dyn Backend) -> Result<bool>;
    /// Lets this context's work access `peer`'s memory (the caller checked
    /// [`can_access_peer`](Self::can_access_peer)); enabling twice is not an error.
    fn enable_peer_access(&self, peer: &dyn Backend) -> Result<()>;
    /// Enqueues on `s` (a stream of this context) a copy of `bytes > 0` bytes from `src`, memory
    /// of `src_owner`, to `dst`, memory of `dst_owner` (one of them is this context).
    ///
    /// # Safety
    /// Both ranges are live allocations of their owners, not overlapping, ordered on `s`
    /// after conflicting work, and not accessed by anything else until the copy completes.
    unsafe fn memcpy_peer(
        &self,
        dst: u64,
        dst_owner: &dyn Backend,
        src: u64,
        src_owner: &dyn Backend,
        bytes: usize,
        s: StreamHandle,
    ) -> Result<()>;

    /// Takes (reads and clears) the failure recorded in a module's foreign-call record,
    /// waiting for `s` first. A record still being written is left alone (`None`).
    fn take_foreign_failure(
        &self,
        record: &FfiRecord,
        s: StreamHandle,
    ) -> Result<Option<ForeignFailure>>;
}

/// The name of the last kernel launched (in a context or on a stream), stored without
/// allocation or locking: a pointer to an interned, leaked `&'static str`.
#[derive(Debug, Default)]
pub(crate) struct LastLaunch(AtomicPtr<&'static str>);

impl LastLaunch {
    #[inline(always)]
    pub(crate) fn set(&self, name: &'static &'static str) {
        let p = name as *const &'static str as *mut &'static str;
        // The same kernel again (a loop) writes nothing: threads launching on one context
        // keep the record's line shared.
        if self.0.load(Ordering::Relaxed) != p {
            self.0.store(p, Ordering::Relaxed);
        }
    }

    pub(crate) fn copy_from(&self, other: &LastLaunch) {
        self.0
            .store(other.0.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> Option<&'static str> {
        let p = self.0.load(Ordering::Relaxed);
        // SAFETY: only `set` stores non-null pointers, and they come from `intern`, which leaks
        // them: they are valid for 'static.
        (!p.is_null()).then(|| unsafe { *p })
    }
}

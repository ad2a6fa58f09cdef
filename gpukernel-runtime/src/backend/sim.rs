//! The simulator backend: device memory is host memory, every operation runs to completion
//! before it returns (so streams and events need no ordering), and a launch runs the kernel's
//! Rust body on host threads (`crate::sim`).

use core::ffi::c_void;
use std::alloc::Layout;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use super::{
    Backend, ConditionalKind, CopyEnd, EventHandle, FfiRecord, ForeignFailure, FunctionHandle,
    FunctionInfo, GraphExecHandle, GraphHandle, GraphNode, HostFn, Image, LastLaunch, LaunchDesc,
    Limits, LoadedModule, ModuleHandle, NodeHandle, RawAlloc, StreamHandle,
};
use crate::driver::DeviceAttr;
use crate::error::{Error, Result};
use crate::format::ImageKind;
use gpukernel_device::SimEntry;

/// The simulator's device name.
pub(crate) const DEVICE_NAME: &str = "gpukernel CPU simulator";

/// The simulator's device attributes: an sm_90 device with one multiprocessor per host core.
pub(crate) fn device_attribute(attr: DeviceAttr) -> u32 {
    use DeviceAttr::*;
    match attr {
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR => 9,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR => 0,
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT => std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK => LIMITS.max_threads_per_block,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X => LIMITS.max_block[0],
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y => LIMITS.max_block[1],
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z => LIMITS.max_block[2],
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X => LIMITS.max_grid[0],
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y => LIMITS.max_grid[1],
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z => LIMITS.max_grid[2],
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK => 48 * 1024,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN => LIMITS.max_shared_optin,
        CU_DEVICE_ATTRIBUTE_WARP_SIZE => 32,
        CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH => 1,
        CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH => 1,
        _ => 0,
    }
}

/// The simulator's "global memory": the host's (`MemTotal` of /proc/meminfo; 0 if unknown).
pub(crate) fn device_total_memory() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<usize>().ok())
        })
        .map(|kb| kb.saturating_mul(1024))
        .unwrap_or(0)
}

/// A simulator module: the signature fingerprints of its kernels, read from its PTX (the
/// module's handle points at it).
#[derive(Debug)]
struct SimModule {
    signatures: Vec<(String, Vec<u8>)>,
    /// Each kernel's static shared memory, from the PTX's `.shared` declarations it reaches
    /// (the `shared_array!` statics), as `ptxas` would count it.
    static_shared: Vec<(String, u32)>,
    /// Each kernel's most threads per block by its `.maxntid` / `.reqntid` directives
    /// (launch bounds), which the driver's `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` reports.
    max_threads: Vec<(String, u32)>,
}

/// The shared memory a block may use without opting in (`cuFuncSetAttribute`), static and
/// dynamic together: 48 KiB on every architecture.
const SHARED_WITHOUT_OPT_IN: u32 = 48 * 1024;

/// The environment variable that sets how many devices the simulator offers.
pub(crate) const SIM_DEVICES_ENV: &str = "GPUKERNEL_SIM_DEVICES";

/// The most simulated devices (a typo such as `GPUKERNEL_SIM_DEVICES=20000` is an error, not
/// twenty thousand contexts).
const MAX_SIM_DEVICES: usize = 64;

/// How many devices the simulator offers: `GPUKERNEL_SIM_DEVICES` (1 to 64), 1 when unset.
pub(crate) fn device_count() -> Result<usize> {
    parse_device_count(std::env::var(SIM_DEVICES_ENV).ok().as_deref())
}

fn parse_device_count(value: Option<&str>) -> Result<usize> {
    match value.map(str::trim) {
        None | Some("") => Ok(1),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_SIM_DEVICES).contains(&n) => Ok(n),
            _ => Err(Error::InvalidEnvVar {
                variable: SIM_DEVICES_ENV,
                value: v.to_owned(),
                accepted: "a number of devices from 1 to 64",
            }),
        },
    }
}

/// `the simulator` for device 0 (what single-device messages always said), `the simulator's
/// device N` for the others.
pub(crate) fn label(index: usize) -> String {
    if index == 0 {
        LABEL.to_owned()
    } else {
        format!("{LABEL}'s device {index}")
    }
}

/// The context of one simulated device.
#[derive(Debug)]
pub(crate) struct SimBackend {
    label: String,
    last_launch: LastLaunch,
    /// The context's foreign-call failure word.
    failure_word: crate::foreign::FailureWord,
    /// The streams being captured: (stream, graph, its last node), as addresses.
    captures: Mutex<Vec<SimCapture>>,
}

impl Default for SimBackend {
    fn default() -> Self {
        SimBackend::new(0)
    }
}

impl SimBackend {
    /// The context of simulated device `index`.
    pub(crate) fn new(index: usize) -> SimBackend {
        SimBackend {
            label: label(index),
            last_launch: LastLaunch::default(),
            failure_word: crate::foreign::FailureWord::on_host(),
            captures: Mutex::new(Vec::new()),
        }
    }
}

/// A capture in progress: the stream, the graph its work goes to and the node added last.
#[derive(Debug, Clone, Copy)]
struct SimCapture {
    stream: usize,
    graph: usize,
    tail: Option<usize>,
}

/// The limits the simulator enforces (those of an sm_90 device).
const LIMITS: Limits = Limits {
    max_threads_per_block: 1024,
    max_block: [1024, 1024, 64],
    max_grid: [i32::MAX as u32, 65535, 65535],
    max_shared_optin: 227 * 1024,
};

/// A simulator event: the host time it was recorded at, and whether it times.
#[derive(Debug)]
struct SimEvent {
    recorded: Mutex<Option<Instant>>,
    timing: bool,
}

/// # Safety
/// `e` came from [`SimBackend::event_create`] and was not destroyed.
unsafe fn sim_event<'a>(e: EventHandle) -> &'a SimEvent {
    // SAFETY: `event_create` made the handle from a leaked `Box<SimEvent>` that lives until
    // `event_destroy` (caller).
    unsafe { &*e.0.cast::<SimEvent>() }
}

fn layout(bytes: usize, align: usize, operation: &'static str) -> Result<Layout> {
    Layout::from_size_align(bytes, align).map_err(|_| Error::SizeOverflow {
        operation,
        count: bytes,
        elem_size: 1,
    })
}

/// Zeroed host memory of `bytes > 0` bytes; a failed allocation is an error, never an abort.
fn alloc_zeroed(bytes: usize, align: usize, operation: &'static str) -> Result<*mut u8> {
    let layout = layout(bytes, align, operation)?;
    // SAFETY: `layout` has a non-zero size (callers handle `bytes == 0`).
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return Err(Error::OutOfMemory {
            operation,
            bytes,
            place: LABEL.to_owned(),
        });
    }
    Ok(p)
}

const LABEL: &str = "the simulator";

/// A node of a simulated graph: what to do when it runs.
#[derive(Debug, Clone)]
enum SimNode {
    Kernel {
        name: &'static &'static str,
        entry: Option<SimEntry>,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        attributes: crate::launch::LaunchAttributes,
        /// Pointers to the ABI values, owned by the graph's owner (see `GraphNode::Kernel`).
        params: Vec<*mut c_void>,
        /// The module's foreign-call record (the graph's owner holds the module).
        ffi: Option<*const FfiRecord>,
    },
    Copy {
        dst: CopyEnd,
        src: CopyEnd,
        bytes: usize,
    },
    Memset {
        dst: u64,
        value: u8,
        bytes: usize,
    },
    Host {
        f: HostFn,
        data: *mut c_void,
    },
    Empty,
    /// Records the event (its owner keeps it live while the graph may run).
    EventRecord {
        event: EventHandle,
    },
    /// Waits for the event: nothing to do, simulated work is synchronous.
    EventWait,
    /// A child graph node: its copy of the child graph, owned by the graph it is in.
    Child {
        body: *const SimGraph,
    },
    /// A conditional node: its condition's cell and its body, both owned by the graph it is in.
    Conditional {
        kind: ConditionalKind,
        cell: *const SimCond,
        body: *const SimGraph,
    },
}

/// A conditional handle's cell: the handle is its exposed address (see
/// `gpukernel_device::graph::ConditionalHandle`), valid while its graph is.
#[derive(Debug)]
struct SimCond {
    value: core::sync::atomic::AtomicU32,
    default: u32,
}

impl SimNode {
    fn kernel(desc: &LaunchDesc<'_>, params: &[*mut c_void]) -> SimNode {
        SimNode::Kernel {
            name: desc.name,
            entry: desc.sim_entry,
            grid: desc.grid,
            block: desc.block,
            shared: desc.shared_mem_bytes,
            attributes: desc.attributes,
            params: params.to_vec(),
            ffi: desc.ffi.map(core::ptr::from_ref),
        }
    }
}

/// A simulated graph: its nodes and each node's dependencies (indices), in the order added.
#[derive(Debug, Default)]
struct SimGraph {
    nodes: Mutex<Vec<(SimNode, Vec<usize>)>>,
    /// The conditional handles made for it, and its conditional nodes' bodies. Boxed: their
    /// addresses are handles and node pointers, stable while the vectors grow.
    #[allow(clippy::vec_box, reason = "the boxes' addresses must not move")]
    conds: Mutex<Vec<Box<SimCond>>>,
    #[allow(clippy::vec_box, reason = "the boxes' addresses must not move")]
    bodies: Mutex<Vec<Box<SimGraph>>>,
}

impl SimGraph {
    /// A copy for a child graph node (as `cuGraphAddChildGraphNode` clones it): its nodes and
    /// edges, its child nodes' graphs copied in turn. A conditional node is refused (CUDA
    /// refuses it in a child graph too).
    fn deep_copy(&self) -> Result<Box<SimGraph>> {
        let copy = Box::<SimGraph>::default();
        let nodes = self.nodes.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut out = Vec::with_capacity(nodes.len());
        for (node, deps) in nodes {
            let node = match node {
                SimNode::Child { body } => {
                    // SAFETY: the body is owned by `self.bodies`, live while `self` is.
                    let b = unsafe { &*body }.deep_copy()?;
                    let ptr = core::ptr::from_ref::<SimGraph>(&b);
                    copy.bodies
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(b);
                    SimNode::Child { body: ptr }
                }
                SimNode::Conditional { .. } => {
                    return Err(Error::Unsupported {
                        operation: "a child graph node",
                        backend: "simulator",
                        hint: Some("a child graph cannot hold a conditional node"),
                    });
                }
                n => n,
            };
            out.push((node, deps));
        }
        *copy.nodes.lock().unwrap_or_else(|p| p.into_inner()) = out;
        Ok(copy)
    }

    /// Its handles' cells and those of its bodies, recursively.
    fn all_conds(&self, out: &mut Vec<*const SimCond>) {
        let conds = self.conds.lock().unwrap_or_else(|p| p.into_inner());
        out.extend(conds.iter().map(|c| core::ptr::from_ref::<SimCond>(c)));
        for b in self.bodies.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            b.all_conds(out);
        }
    }
}

/// A simulated instantiation: a copy of the nodes and an order that respects every edge.
#[derive(Debug)]
struct SimExec {
    nodes: Mutex<Vec<SimNode>>,
    order: Vec<usize>,
    /// Each node's dependencies as instantiated (an update must keep them, as CUDA's does).
    deps: Vec<Vec<usize>>,
    /// Every conditional handle's cell, set to its default at each launch.
    conds: Vec<*const SimCond>,
}

/// A topological order of `deps` (node `i` after each of `deps[i]`), or `None` on a cycle.
fn topological_order(deps: &[Vec<usize>]) -> Option<Vec<usize>> {
    let n = deps.len();
    let mut indegree: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut users = vec![Vec::new(); n];
    for (i, d) in deps.iter().enumerate() {
        for &j in d {
            users[j].push(i);
        }
    }
    let mut ready: Vec<usize> = (0..n).rev().filter(|&i| indegree[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop() {
        order.push(i);
        for &u in users[i].iter().rev() {
            indegree[u] -= 1;
            if indegree[u] == 0 {
                ready.push(u);
            }
        }
    }
    (order.len() == n).then_some(order)
}

/// # Safety
/// `g` came from [`SimBackend::graph_create`] and was not destroyed.
unsafe fn sim_graph<'a>(g: GraphHandle) -> &'a SimGraph {
    // SAFETY: made from a leaked Box that lives until `graph_destroy` (caller).
    unsafe { &*g.0.cast::<SimGraph>() }
}

/// # Safety
/// `e` came from [`SimBackend::graph_instantiate`] and was not destroyed.
unsafe fn sim_exec<'a>(e: GraphExecHandle) -> &'a SimExec {
    // SAFETY: as above.
    unsafe { &*e.0.cast::<SimExec>() }
}

fn node_index(n: NodeHandle) -> usize {
    n.0.addr() - 1
}

impl SimBackend {
    /// Adds `node` to the capture of `s` after its last node and returns `true`, or returns
    /// `false` when `s` is not capturing (the operation runs now).
    ///
    /// # Safety
    /// As `Backend::graph_add_node`, for the capture's graph.
    unsafe fn captured(&self, s: StreamHandle, node: GraphNode<'_, '_>) -> Result<bool> {
        let mut captures = self.captures.lock().unwrap_or_else(|p| p.into_inner());
        let Some(c) = captures.iter_mut().find(|c| c.stream == s.0.addr()) else {
            return Ok(false);
        };
        let deps: Vec<NodeHandle> = c
            .tail
            .map(|t| NodeHandle(core::ptr::without_provenance_mut(t)))
            .into_iter()
            .collect();
        let g = GraphHandle(core::ptr::with_exposed_provenance_mut(c.graph));
        // SAFETY: the capture's graph lives until its capture ends; the node is the caller's.
        let n = unsafe { self.graph_add_node(g, &deps, node) }?;
        c.tail = Some(n.0.addr());
        Ok(true)
    }
}

/// Every sharing operation is refused on the simulator (see `backend/share.rs`).
impl super::ShareBackend for SimBackend {}

impl Backend for SimBackend {
    fn is_simulator(&self) -> bool {
        true
    }

    fn label(&self) -> &str {
        &self.label
    }

    fn limits(&self) -> Limits {
        LIMITS
    }

    fn last_launch(&self) -> &LastLaunch {
        &self.last_launch
    }

    fn failure_word(&self) -> &crate::foreign::FailureWord {
        &self.failure_word
    }

    fn bind(&self) -> Result<()> {
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn stream_priority_range(&self) -> Result<(i32, i32)> {
        Ok((0, 0))
    }

    fn default_stream(&self) -> StreamHandle {
        // Streams need no state here (work is synchronous), only an identity: the default
        // stream is 1, created ones take odd numbers from 3 (never a valid pointer).
        StreamHandle(core::ptr::without_provenance_mut(1))
    }

    fn stream_create(&self, _priority: i32) -> Result<StreamHandle> {
        static NEXT: AtomicUsize = AtomicUsize::new(3);
        let id = NEXT.fetch_add(2, Ordering::Relaxed);
        Ok(StreamHandle(core::ptr::without_provenance_mut(id)))
    }

    unsafe fn stream_destroy(&self, _s: StreamHandle) {}

    fn stream_synchronize(&self, _s: StreamHandle, _suspect: Option<&'static str>) -> Result<()> {
        Ok(())
    }

    fn stream_query(&self, _s: StreamHandle, _suspect: Option<&'static str>) -> Result<bool> {
        Ok(true)
    }

    fn stream_priority(&self, _s: StreamHandle) -> Result<i32> {
        Ok(0)
    }

    fn stream_wait_stream(&self, _waiter: StreamHandle, _other: StreamHandle) -> Result<()> {
        Ok(())
    }

    fn stream_wait_event(&self, _s: StreamHandle, _e: EventHandle) -> Result<()> {
        Ok(())
    }

    fn event_create(&self, timing: bool, _blocking_sync: bool) -> Result<EventHandle> {
        let e = Box::new(SimEvent {
            recorded: Mutex::new(None),
            timing,
        });
        Ok(EventHandle(Box::into_raw(e).cast()))
    }

    fn event_record(&self, e: EventHandle, _s: StreamHandle) -> Result<()> {
        // SAFETY: the event's owner holds it live.
        let e = unsafe { sim_event(e) };
        *e.recorded.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        Ok(())
    }

    fn event_synchronize(&self, _e: EventHandle, _suspect: Option<&'static str>) -> Result<()> {
        Ok(())
    }

    fn event_query(&self, _e: EventHandle, _suspect: Option<&'static str>) -> Result<bool> {
        Ok(true)
    }

    fn event_elapsed(&self, start: EventHandle, end: EventHandle) -> Result<f32> {
        // SAFETY: both owners hold their events live.
        let (s, e) = unsafe { (sim_event(start), sim_event(end)) };
        if !s.timing || !e.timing {
            return Err(Error::Unsupported {
                operation: "Event::elapsed_ms on an event created without timing",
                backend: "simulator",
                hint: Some("create the events with Context::new_event"),
            });
        }
        let s = *s.recorded.lock().unwrap_or_else(|p| p.into_inner());
        let e = *e.recorded.lock().unwrap_or_else(|p| p.into_inner());
        match (s, e) {
            (Some(s), Some(e)) => Ok(e.saturating_duration_since(s).as_secs_f64() as f32 * 1000.0),
            _ => Err(Error::EventNotRecorded {
                operation: "Event::elapsed_ms",
            }),
        }
    }

    unsafe fn event_destroy(&self, e: EventHandle) {
        // SAFETY: made by `event_create` from a Box; given up by the caller.
        drop(unsafe { Box::from_raw(e.0.cast::<SimEvent>()) });
    }

    fn alloc(&self, bytes: usize, align: usize, _s: StreamHandle) -> Result<RawAlloc> {
        let p = alloc_zeroed(bytes, align, "alloc")?;
        Ok(RawAlloc {
            ptr: p as u64,
            bytes,
            align,
            pooled: false,
        })
    }

    unsafe fn free(&self, a: RawAlloc, _home: StreamHandle) -> Result<()> {
        let layout = layout(a.bytes, a.align, "free")?;
        // SAFETY: allocated with this layout by `alloc`; simulator work is synchronous, so
        // nothing uses it any more.
        unsafe { std::alloc::dealloc(a.ptr as *mut u8, layout) };
        Ok(())
    }

    fn host_alloc(&self, bytes: usize, align: usize) -> Result<*mut u8> {
        alloc_zeroed(bytes, align, "alloc_pinned")
    }

    unsafe fn host_free(&self, p: *mut u8, bytes: usize, align: usize) {
        if let Ok(layout) = layout(bytes, align, "free") {
            // SAFETY: allocated with this layout by `host_alloc` (caller).
            unsafe { std::alloc::dealloc(p, layout) };
        }
    }

    unsafe fn memcpy_htod(
        &self,
        dst: u64,
        src: *const u8,
        bytes: usize,
        s: StreamHandle,
    ) -> Result<()> {
        let node = GraphNode::Copy {
            dst: CopyEnd::Device(dst),
            src: CopyEnd::Host(src.cast_mut().cast()),
            bytes,
        };
        // SAFETY: the caller keeps both ends valid while the capture's graph may run.
        if unsafe { self.captured(s, node) }? {
            return Ok(());
        }
        // SAFETY: simulator device memory is host memory; the ranges are valid and distinct
        // (caller).
        unsafe { core::ptr::copy_nonoverlapping(src, dst as *mut u8, bytes) };
        Ok(())
    }

    unsafe fn memcpy_dtoh(
        &self,
        dst: *mut u8,
        src: u64,
        bytes: usize,
        s: StreamHandle,
    ) -> Result<()> {
        let node = GraphNode::Copy {
            dst: CopyEnd::Host(dst.cast()),
            src: CopyEnd::Device(src),
            bytes,
        };
        // SAFETY: as above.
        if unsafe { self.captured(s, node) }? {
            return Ok(());
        }
        // SAFETY: as above.
        unsafe { core::ptr::copy_nonoverlapping(src as *const u8, dst, bytes) };
        Ok(())
    }

    unsafe fn memcpy_dtod(&self, dst: u64, src: u64, bytes: usize, s: StreamHandle) -> Result<()> {
        let node = GraphNode::Copy {
            dst: CopyEnd::Device(dst),
            src: CopyEnd::Device(src),
            bytes,
        };
        // SAFETY: as above.
        if unsafe { self.captured(s, node) }? {
            return Ok(());
        }
        // SAFETY: as above.
        unsafe { core::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    }

    unsafe fn memset_d8(&self, dst: u64, value: u8, bytes: usize, s: StreamHandle) -> Result<()> {
        // SAFETY: as above.
        if unsafe { self.captured(s, GraphNode::Memset { dst, value, bytes }) }? {
            return Ok(());
        }
        // SAFETY: a live, exclusively used host allocation of `bytes` bytes (caller).
        unsafe { core::ptr::write_bytes(dst as *mut u8, value, bytes) };
        Ok(())
    }

    fn module_load(&self, image: Image<'_>) -> Result<LoadedModule> {
        // A fatbin (a kernels crate's `FATBIN`: SASS plus PTX) is read through its PTX entry,
        // which names the kernels and holds their signatures.
        let text = match image.kind {
            ImageKind::Ptx => String::from_utf8_lossy(image.bytes).into_owned(),
            ImageKind::Fatbin => fatbin_ptx(image.bytes).ok_or(Error::Unsupported {
                operation: "loading a fatbin without a readable PTX entry",
                backend: "simulator",
                hint: Some(
                    "load the kernels' PTX (or a kernels crate's FATBIN, which holds it): the \
                     simulator runs their Rust bodies",
                ),
            })?,
            _ => {
                return Err(Error::Unsupported {
                    operation: "loading a cubin",
                    backend: "simulator",
                    hint: Some("load the kernels' PTX: the simulator runs their Rust bodies"),
                });
            }
        };
        // `.extern .func` declarations are no error here: the simulator runs the kernels'
        // Rust bodies, whose foreign calls were resolved when the host crate was built.
        let ptx = crate::format::ptx::Ptx::parse(&text);
        let mut names = ptx.entries();
        let signatures = names
            .iter()
            .filter_map(|k| {
                let symbol = gpukernel_device::signature_symbol(k);
                // A global that does not parse is kept as no bytes: the lookup refuses it.
                let bytes = ptx
                    .global_bytes(&symbol)
                    .or_else(|| ptx.has_global(&symbol).then(Vec::new))?;
                Some((k.clone(), bytes))
            })
            .collect();
        let static_shared = names
            .iter()
            .map(|k| {
                let bytes = ptx.static_shared_bytes(k).unwrap_or(0);
                (k.clone(), u32::try_from(bytes).unwrap_or(u32::MAX))
            })
            .collect();
        let max_threads = names
            .iter()
            .filter_map(|k| {
                let n = ptx.entry_max_threads(k)?;
                Some((k.clone(), u32::try_from(n).unwrap_or(u32::MAX)))
            })
            .collect();
        let handle = ModuleHandle(
            Box::into_raw(Box::new(SimModule {
                signatures,
                static_shared,
                max_threads,
            }))
            .cast(),
        );
        names.sort();
        names.dedup();
        Ok(LoadedModule {
            handle,
            names,
            // Every simulator module has a foreign-call record, kept on the host.
            ffi_record: Some(0),
        })
    }

    unsafe fn module_unload(&self, m: ModuleHandle) {
        // SAFETY: made by `module_load` from a Box; given up by the caller.
        drop(unsafe { Box::from_raw(m.0.cast::<SimModule>()) });
    }

    fn kernel_signature(&self, m: ModuleHandle, kernel: &str) -> Result<Option<Vec<u8>>> {
        // SAFETY: the module's owner holds it loaded.
        let module = unsafe { &*m.0.cast::<SimModule>() };
        Ok(module
            .signatures
            .iter()
            .find(|(k, _)| k == kernel)
            .map(|(_, v)| v.clone()))
    }

    fn function(
        &self,
        m: ModuleHandle,
        names: &[String],
        name: &str,
    ) -> Result<Option<FunctionInfo>> {
        // SAFETY: the module's owner holds it loaded.
        let module = unsafe { &*m.0.cast::<SimModule>() };
        let static_shared_bytes = module
            .static_shared
            .iter()
            .find(|(k, _)| k == name)
            .map_or(0, |&(_, bytes)| bytes);
        // Launch bounds lower the limit as the driver's function attribute does (a launch of
        // more threads fails there).
        let max_threads_per_block = module
            .max_threads
            .iter()
            .find(|(k, _)| k == name)
            .map_or(LIMITS.max_threads_per_block, |&(_, n)| {
                n.min(LIMITS.max_threads_per_block)
            });
        Ok(names.iter().any(|n| n == name).then_some(FunctionInfo {
            handle: FunctionHandle::NULL,
            max_threads_per_block,
            static_shared_bytes,
            // As the driver's default `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`: what
            // is left of 48 KiB after the static arrays, until the kernel opts in to more.
            max_dynamic_shared_bytes: SHARED_WITHOUT_OPT_IN.saturating_sub(static_shared_bytes),
            num_registers: 0,
        }))
    }

    fn function_param_sizes(&self, _f: FunctionHandle) -> Result<Option<Vec<usize>>> {
        Ok(None)
    }

    fn module_global(&self, _m: ModuleHandle, _name: &str) -> Result<Option<(u64, usize)>> {
        Err(Error::Unsupported {
            operation: "Module::global",
            backend: "simulator",
            hint: None,
        })
    }

    fn optimal_block_size(&self, _f: FunctionHandle, _dynamic_shared_bytes: u32) -> Result<u32> {
        Ok(256)
    }

    fn set_max_dynamic_shared_bytes(&self, _f: FunctionHandle, _bytes: u32) -> Result<()> {
        Ok(())
    }

    fn max_cluster_size(
        &self,
        _f: FunctionHandle,
        _grid: [u32; 3],
        _block: [u32; 3],
        _shared_mem_bytes: u32,
    ) -> Result<u32> {
        // The portable cluster size of compute capability 9.0.
        Ok(8)
    }

    fn max_active_blocks_per_sm(
        &self,
        _f: FunctionHandle,
        threads: u32,
        _shared_mem_bytes: u32,
    ) -> Result<u32> {
        // As a Hopper multiprocessor without register or shared-memory pressure: 2048 threads,
        // at most 32 blocks.
        Ok((2048 / threads.max(1)).clamp(1, 32))
    }

    fn cooperative_multiprocessors(&self) -> Result<u32> {
        // Each block of a cooperative launch is an OS thread: 8 × 32 blocks at most.
        Ok((crate::sim::MAX_COOPERATIVE_BLOCKS / 32) as u32)
    }

    unsafe fn encode_tensor_map(&self, m: &crate::driver::TiledMap) -> Result<[u64; 16]> {
        let elem_bytes = crate::tensor_map::element_bytes(m.data_type);
        let map = gpukernel_device::tma::SimTensorMap {
            magic: gpukernel_device::tma::SimTensorMap::MAGIC,
            base: m.base,
            rank: m.rank,
            elem_bytes,
            dims: m.dims,
            strides: m.strides,
            boxes: m.boxes,
            swizzle: m.swizzle,
            reserved: [0; 2],
        };
        // SAFETY: 128 bytes of plain data, read as 16 words.
        Ok(unsafe { core::mem::transmute::<gpukernel_device::tma::SimTensorMap, [u64; 16]>(map) })
    }

    unsafe fn launch(
        &self,
        desc: &LaunchDesc<'_>,
        params: &mut [*mut c_void],
        stream_last: &LastLaunch,
    ) -> Result<()> {
        let Some(entry) = desc.sim_entry else {
            return Err(Error::Unsupported {
                operation: "an untyped launch",
                backend: "simulator",
                hint: Some(
                    "launch a #[kernel] with Stream::launch: the simulator runs its Rust body",
                ),
            });
        };
        // SAFETY: a capture keeps the parameter values for its graph's lifetime (caller).
        if unsafe { self.captured(desc.stream, GraphNode::Kernel { desc, params }) }? {
            return Ok(());
        }
        stream_last.set(desc.name);
        self.last_launch.set(desc.name);
        let launch = crate::sim::SimLaunch {
            kernel: desc.name,
            entry,
            grid: desc.grid,
            block: desc.block,
            dynamic_shared_bytes: desc.shared_mem_bytes,
            params,
            cluster: desc.attributes.cluster.map_or([1, 1, 1], |c| c.to_array()),
            cooperative: desc.attributes.cooperative,
            explicit_cluster: desc.attributes.cluster.is_some(),
        };
        let result = crate::sim::launch(&launch);
        // The launch ran to completion on this thread, which holds its first foreign-call
        // failure and their count now: it goes to the module's record (counted into this
        // stream's pending one, if any), naming this launch's kernel and stream, and sets
        // the context's failure word, which every later observation point reads.
        if let Some((function, status, thread, count)) = crate::sim::take_foreign_failure()
            && let Some(record) = desc.ffi
        {
            let mut slot = record.host.lock().unwrap_or_else(|p| p.into_inner());
            let stream = Some(desc.stream.0.addr());
            match slot.iter_mut().find(|f| f.stream == stream) {
                // Counted into this stream's pending first failure.
                Some(first) => first.count = first.count.saturating_add(count),
                None => slot.push(ForeignFailure {
                    function,
                    status,
                    thread,
                    kernel: Some((*desc.name).to_owned()),
                    stream,
                    count,
                    detailed: true,
                }),
            }
            drop(slot);
            self.failure_word.set();
        }
        result.map_err(|e| Error::SimulatorFault {
            kernel: e.kernel.to_owned(),
            block: e.block,
            thread: e.thread,
            message: e.message,
        })
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }

    fn can_access_peer(&self, peer: &dyn Backend) -> Result<bool> {
        // Simulated devices share the host's memory: each can reach the others'.
        Ok(peer.as_any().is::<SimBackend>())
    }

    fn enable_peer_access(&self, _peer: &dyn Backend) -> Result<()> {
        Ok(())
    }

    unsafe fn memcpy_peer(
        &self,
        dst: u64,
        _dst_owner: &dyn Backend,
        src: u64,
        _src_owner: &dyn Backend,
        bytes: usize,
        s: StreamHandle,
    ) -> Result<()> {
        // SAFETY: simulated device memory is host memory of one process, whichever device
        // owns it; forwarded from the caller.
        unsafe { self.memcpy_dtod(dst, src, bytes, s) }
    }

    fn take_foreign_failure(
        &self,
        record: &FfiRecord,
        _s: StreamHandle,
    ) -> Result<Option<ForeignFailure>> {
        let mut slot = record.host.lock().unwrap_or_else(|p| p.into_inner());
        Ok((!slot.is_empty()).then(|| slot.remove(0)))
    }

    fn stream_begin_capture(&self, s: StreamHandle) -> Result<()> {
        let mut captures = self.captures.lock().unwrap_or_else(|p| p.into_inner());
        if captures.iter().any(|c| c.stream == s.0.addr()) {
            return Err(Error::StreamCapturing {
                operation: "Stream::capture",
            });
        }
        let graph = self.graph_create()?;
        captures.push(SimCapture {
            stream: s.0.addr(),
            graph: graph.0.addr(),
            tail: None,
        });
        Ok(())
    }

    unsafe fn stream_end_capture(&self, s: StreamHandle) -> Result<GraphHandle> {
        let mut captures = self.captures.lock().unwrap_or_else(|p| p.into_inner());
        let i = captures
            .iter()
            .position(|c| c.stream == s.0.addr())
            .ok_or(Error::Unsupported {
                operation: "ending a capture",
                backend: "simulator",
                hint: Some("the stream is not capturing"),
            })?;
        let c = captures.swap_remove(i);
        Ok(GraphHandle(core::ptr::with_exposed_provenance_mut(c.graph)))
    }

    unsafe fn stream_capture_node(
        &self,
        s: StreamHandle,
        node: GraphNode<'_, '_>,
    ) -> Result<NodeHandle> {
        // SAFETY: forwarded from the caller.
        if !unsafe { self.captured(s, node) }? {
            return Err(Error::Unsupported {
                operation: "adding a node to a capture",
                backend: "simulator",
                hint: Some("the stream is not capturing"),
            });
        }
        // SAFETY: as above.
        unsafe { self.stream_capture_tail(s) }?.ok_or(Error::Unsupported {
            operation: "adding a node to a capture",
            backend: "simulator",
            hint: Some("the capture recorded no node"),
        })
    }

    unsafe fn stream_capture_tail(&self, s: StreamHandle) -> Result<Option<NodeHandle>> {
        let captures = self.captures.lock().unwrap_or_else(|p| p.into_inner());
        Ok(captures
            .iter()
            .find(|c| c.stream == s.0.addr())
            .and_then(|c| c.tail)
            .map(|t| NodeHandle(core::ptr::without_provenance_mut(t))))
    }

    fn graph_create(&self) -> Result<GraphHandle> {
        let g = Box::into_raw(Box::<SimGraph>::default());
        // Exposed: a capture keeps the graph as an address (`stream_end_capture`).
        let _ = g.expose_provenance();
        Ok(GraphHandle(g.cast()))
    }

    unsafe fn graph_destroy(&self, g: GraphHandle) {
        // SAFETY: made by `graph_create` from a Box; given up by the caller.
        drop(unsafe { Box::from_raw(g.0.cast::<SimGraph>()) });
    }

    unsafe fn graph_conditional_handle(&self, g: GraphHandle, default: u32) -> Result<u64> {
        let cell = Box::new(SimCond {
            value: core::sync::atomic::AtomicU32::new(default),
            default,
        });
        // Exposed: kernels reach the cell through the handle's integer value.
        let addr = core::ptr::from_ref::<SimCond>(&cell).expose_provenance();
        // SAFETY: the caller's graph is live; the cell lives as long as it.
        unsafe { sim_graph(g) }
            .conds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(cell);
        Ok(addr as u64)
    }

    unsafe fn graph_add_node(
        &self,
        g: GraphHandle,
        deps: &[NodeHandle],
        node: GraphNode<'_, '_>,
    ) -> Result<NodeHandle> {
        let node = match node {
            GraphNode::Kernel { desc, params } => SimNode::kernel(desc, params),
            GraphNode::Copy { dst, src, bytes } => SimNode::Copy { dst, src, bytes },
            GraphNode::Memset { dst, value, bytes } => SimNode::Memset { dst, value, bytes },
            GraphNode::Host { f, data } => SimNode::Host { f, data },
            GraphNode::Empty => SimNode::Empty,
            GraphNode::EventRecord { event } => SimNode::EventRecord { event },
            GraphNode::EventWait { .. } => SimNode::EventWait,
            GraphNode::Child { graph } => {
                // SAFETY: the caller's child graph is live.
                let b = unsafe { sim_graph(graph) }.deep_copy()?;
                let ptr = core::ptr::from_ref::<SimGraph>(&b);
                // SAFETY: the caller's graph is live; the copy lives as long as it.
                unsafe { sim_graph(g) }
                    .bodies
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(b);
                SimNode::Child { body: ptr }
            }
            GraphNode::Conditional { handle, kind, body } => {
                let b = Box::<SimGraph>::default();
                let ptr = core::ptr::from_ref::<SimGraph>(&b);
                // SAFETY: the caller's graph is live; the body lives as long as it.
                unsafe { sim_graph(g) }
                    .bodies
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(b);
                *body = GraphHandle(ptr.cast_mut().cast());
                SimNode::Conditional {
                    kind,
                    cell: core::ptr::with_exposed_provenance(handle as usize),
                    body: ptr,
                }
            }
        };
        // SAFETY: the caller's graph is live.
        let mut nodes = unsafe { sim_graph(g) }
            .nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        nodes.push((node, deps.iter().map(|&d| node_index(d)).collect()));
        Ok(NodeHandle(core::ptr::without_provenance_mut(nodes.len())))
    }

    unsafe fn graph_add_dependency(
        &self,
        g: GraphHandle,
        from: NodeHandle,
        to: NodeHandle,
    ) -> Result<()> {
        // SAFETY: the caller's graph is live.
        let mut nodes = unsafe { sim_graph(g) }
            .nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        nodes[node_index(to)].1.push(node_index(from));
        Ok(())
    }

    unsafe fn graph_add_programmatic_dependency(
        &self,
        g: GraphHandle,
        from: NodeHandle,
        to: NodeHandle,
    ) -> Result<()> {
        // The simulator runs `to` after `from` completes: one of the orders a programmatic
        // edge allows (`grid::wait_dependencies` then returns at once).
        // SAFETY: forwarded from the caller.
        unsafe { self.graph_add_dependency(g, from, to) }
    }

    unsafe fn graph_instantiate(&self, g: GraphHandle) -> Result<GraphExecHandle> {
        // SAFETY: the caller's graph is live.
        let nodes = unsafe { sim_graph(g) }
            .nodes
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let deps: Vec<Vec<usize>> = nodes.iter().map(|(_, d)| d.clone()).collect();
        let order = topological_order(&deps).ok_or(Error::GraphCycle {
            graph: String::new(),
            nodes: Vec::new(),
        })?;
        let mut conds = Vec::new();
        // SAFETY: as above.
        unsafe { sim_graph(g) }.all_conds(&mut conds);
        let exec = SimExec {
            nodes: Mutex::new(nodes.iter().map(|(n, _)| n.clone()).collect()),
            order,
            deps,
            conds,
        };
        Ok(GraphExecHandle(Box::into_raw(Box::new(exec)).cast()))
    }

    unsafe fn graph_exec_destroy(&self, e: GraphExecHandle) {
        // SAFETY: made by `graph_instantiate` from a Box; given up by the caller.
        drop(unsafe { Box::from_raw(e.0.cast::<SimExec>()) });
    }

    unsafe fn graph_launch(
        &self,
        e: GraphExecHandle,
        s: StreamHandle,
        name: &'static &'static str,
        stream_last: &LastLaunch,
    ) -> Result<()> {
        // SAFETY: the caller's instantiation is live.
        let exec = unsafe { sim_exec(e) };
        let nodes = exec.nodes.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for &c in &exec.conds {
            // SAFETY: the cells belong to the graph the caller keeps alive with `e`.
            let c = unsafe { &*c };
            c.value
                .store(c.default, core::sync::atomic::Ordering::Release);
        }
        for &i in &exec.order {
            // SAFETY: every node's memory is valid and ordered (caller).
            let r = unsafe { self.run_node(&nodes[i], s, stream_last) };
            if let Err(e) = r {
                return Err(match e {
                    Error::SimulatorFault {
                        kernel,
                        block,
                        thread,
                        message,
                    } => Error::SimulatorFault {
                        kernel: format!("{kernel} (node #{i} of {})", *name),
                        block,
                        thread,
                        message,
                    },
                    e => e,
                });
            }
        }
        stream_last.set(name);
        self.last_launch.set(name);
        Ok(())
    }

    unsafe fn graph_exec_set_kernel(
        &self,
        e: GraphExecHandle,
        node: NodeHandle,
        desc: &LaunchDesc<'_>,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        // SAFETY: the caller's instantiation is live.
        let exec = unsafe { sim_exec(e) };
        exec.nodes.lock().unwrap_or_else(|p| p.into_inner())[node_index(node)] =
            SimNode::kernel(desc, params);
        Ok(())
    }

    unsafe fn graph_exec_update(&self, e: GraphExecHandle, g: GraphHandle) -> Result<()> {
        // SAFETY: both are live (caller).
        let (exec, graph) = unsafe { (sim_exec(e), sim_graph(g)) };
        let source = graph.nodes.lock().unwrap_or_else(|p| p.into_inner());
        let mut nodes = exec.nodes.lock().unwrap_or_else(|p| p.into_inner());
        // The same rules as CUDA's for what the simulator models: the same number of nodes,
        // each of the same kind, kernels of the same function, the same edges.
        let deps: Vec<Vec<usize>> = source.iter().map(|(_, d)| d.clone()).collect();
        let refuse = |reason: &str| {
            Err(Error::GraphUpdateRefused {
                graph: String::new(),
                reason: reason.to_owned(),
            })
        };
        // The same edges, not only an order they allow: a graph with an edge more or less has
        // another topology for CUDA, even when one topological order fits both.
        let same_edges = deps.len() == exec.deps.len()
            && deps.iter().zip(&exec.deps).all(|(a, b)| {
                let (mut a, mut b) = (a.clone(), b.clone());
                a.sort_unstable();
                b.sort_unstable();
                a == b
            });
        if source.len() != nodes.len() || !same_edges {
            return refuse("the topology changed");
        }
        for ((new, _), old) in source.iter().zip(nodes.iter()) {
            if let Some(reason) = update_refusal(new, old) {
                return refuse(reason);
            }
        }
        *nodes = source.iter().map(|(n, _)| n.clone()).collect();
        Ok(())
    }
}

/// Why `old` cannot be updated to `new` (CUDA's rules for what the simulator models: the
/// same kind, kernels of the same function, child graphs of the same shape), or `None`.
fn update_refusal(new: &SimNode, old: &SimNode) -> Option<&'static str> {
    match (new, old) {
        (SimNode::Kernel { name: a, .. }, SimNode::Kernel { name: b, .. }) if a != b => {
            Some("a kernel node's function changed")
        }
        (SimNode::Child { body: a }, SimNode::Child { body: b }) => {
            // SAFETY: both copies are owned by graphs the caller keeps live.
            let (a, b) = unsafe { (&**a, &**b) };
            let a = a.nodes.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let b = b.nodes.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if a.len() != b.len() || a.iter().zip(&b).any(|((_, x), (_, y))| x != y) {
                return Some("a child graph's topology changed");
            }
            a.iter()
                .zip(&b)
                .find_map(|((x, _), (y, _))| update_refusal(x, y))
        }
        (a, b) if core::mem::discriminant(a) != core::mem::discriminant(b) => {
            Some("a node's type changed")
        }
        _ => None,
    }
}

impl SimBackend {
    /// Runs one node of a graph, synchronously.
    ///
    /// # Safety
    /// As `Backend::graph_launch`.
    unsafe fn run_node(&self, node: &SimNode, s: StreamHandle, last: &LastLaunch) -> Result<()> {
        match node {
            SimNode::Kernel {
                name,
                entry,
                grid,
                block,
                shared,
                attributes,
                params,
                ffi,
            } => {
                let desc = LaunchDesc {
                    attributes: *attributes,
                    function: FunctionHandle::NULL,
                    name,
                    sim_entry: *entry,
                    grid: *grid,
                    block: *block,
                    shared_mem_bytes: *shared,
                    stream: s,
                    // SAFETY: the graph's owner holds the module, so its record is live.
                    ffi: ffi.map(|r| unsafe { &*r }),
                };
                let mut params = params.clone();
                // SAFETY: the parameters point at values the graph's owner keeps (caller).
                unsafe { self.launch(&desc, &mut params, last) }
            }
            // SAFETY: the ends are valid for `bytes` bytes and do not overlap (caller).
            SimNode::Copy { dst, src, bytes } => unsafe {
                let src = match *src {
                    CopyEnd::Host(p) => p.cast_const(),
                    CopyEnd::Device(d) => d as *const u8,
                };
                let dst = match *dst {
                    CopyEnd::Host(p) => p,
                    CopyEnd::Device(d) => d as *mut u8,
                };
                core::ptr::copy_nonoverlapping(src, dst, *bytes);
                Ok(())
            },
            // SAFETY: `dst` is `bytes` bytes of live, exclusively used memory (caller).
            SimNode::Memset { dst, value, bytes } => unsafe {
                core::ptr::write_bytes(*dst as *mut u8, *value, *bytes);
                Ok(())
            },
            SimNode::Host { f, data } => {
                // SAFETY: sound to call (caller).
                unsafe { f(*data) };
                Ok(())
            }
            SimNode::Empty | SimNode::EventWait => Ok(()),
            SimNode::EventRecord { event } => self.event_record(*event, s),
            SimNode::Child { body } => {
                // SAFETY: the copy belongs to the graph the caller keeps alive; as
                // `graph_launch` for its nodes.
                unsafe { self.run_graph(&**body, s, last) }
            }
            SimNode::Conditional { kind, cell, body } => {
                // SAFETY: the cell and the body belong to the graph the caller keeps alive.
                let (cell, body) = unsafe { (&**cell, &**body) };
                let test = || cell.value.load(core::sync::atomic::Ordering::Acquire) != 0;
                match kind {
                    ConditionalKind::If if test() => {
                        // SAFETY: as `graph_launch`, for the body's nodes.
                        unsafe { self.run_graph(body, s, last) }
                    }
                    ConditionalKind::If => Ok(()),
                    ConditionalKind::While => {
                        while test() {
                            // SAFETY: as above.
                            unsafe { self.run_graph(body, s, last) }?;
                        }
                        Ok(())
                    }
                }
            }
        }
    }

    /// Runs a conditional node's body or a child graph once, in dependency order.
    ///
    /// # Safety
    /// As `Backend::graph_launch`.
    unsafe fn run_graph(&self, g: &SimGraph, s: StreamHandle, last: &LastLaunch) -> Result<()> {
        let nodes = g.nodes.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let deps: Vec<Vec<usize>> = nodes.iter().map(|(_, d)| d.clone()).collect();
        let order = topological_order(&deps).ok_or(Error::GraphCycle {
            graph: String::new(),
            nodes: Vec::new(),
        })?;
        for i in order {
            // SAFETY: forwarded from the caller.
            unsafe { self.run_node(&nodes[i].0, s, last) }?;
        }
        Ok(())
    }
}

// SAFETY: the raw pointers of a simulated graph are addresses the graph's owner keeps valid
// (see `GraphNode`); the node lists are behind mutexes.
unsafe impl Send for SimGraph {}
// SAFETY: as above.
unsafe impl Sync for SimGraph {}
// SAFETY: as above.
unsafe impl Send for SimExec {}
// SAFETY: as above.
unsafe impl Sync for SimExec {}

/// The text of a fatbin's PTX entry (the last one, when there are several).
fn fatbin_ptx(bytes: &[u8]) -> Option<String> {
    let fatbin = crate::format::fatbin::Fatbin::read(bytes).ok()?;
    fatbin
        .images()
        .filter_map(|i| match i {
            Some(crate::format::fatbin::Image::Ptx(text)) => Some(text),
            _ => None,
        })
        .last()
}

#[cfg(test)]
mod tests {
    use super::topological_order;

    #[test]
    fn the_number_of_simulated_devices_is_checked() {
        use super::parse_device_count as count;
        assert_eq!(count(None).unwrap(), 1);
        assert_eq!(count(Some("")).unwrap(), 1);
        assert_eq!(count(Some(" 8 ")).unwrap(), 8);
        assert_eq!(count(Some("64")).unwrap(), 64);
        for bad in ["0", "65", "two", "-1"] {
            let e = count(Some(bad)).unwrap_err().to_string();
            assert!(
                e.contains("GPUKERNEL_SIM_DEVICES") && e.contains("1 to 64"),
                "{e}"
            );
        }
        assert_eq!(super::label(0), "the simulator");
        assert_eq!(super::label(3), "the simulator's device 3");
    }

    #[test]
    fn topological_order_respects_edges_and_finds_cycles() {
        let order = topological_order(&[vec![], vec![0], vec![0], vec![1, 2]]).unwrap();
        let pos = |i| order.iter().position(|&x| x == i).unwrap();
        assert!(pos(0) < pos(1) && pos(0) < pos(2) && pos(1) < pos(3) && pos(2) < pos(3));
        assert_eq!(topological_order(&[vec![1], vec![0]]), None);
        assert_eq!(topological_order(&[]), Some(vec![]));
    }
}

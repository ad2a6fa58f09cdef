//! CUDA graphs: a set of kernel launches, copies, memsets and host calls with dependencies
//! between them, built once ([`Graph`]), instantiated ([`GraphExec`]) and launched many times
//! on a stream at the cost of one launch.
//!
//! # Soundness
//! - **Lifetimes.** A `Graph<'a>` and every `GraphExec<'a>` made from it borrow the memory
//!   their nodes use for `'a`: kernel arguments and copy ends must outlive `'a` (`A: 'a`), so
//!   a buffer cannot be dropped, moved or written by the host while a graph that uses it can
//!   still run. To use one buffer in several nodes, register it once:
//!   [`Graph::buffer`] (read by the nodes) or [`Graph::buffer_mut`] (read and written), which
//!   borrow it for `'a` and return a `Copy` handle the nodes take.
//! - **Order inside a graph.** Nodes that use overlapping bytes of one allocation, one of them
//!   writing, are ordered in the order they were added (an edge is added for them, as a stream
//!   would order them); other nodes run concurrently unless given explicit dependencies.
//! - **Order with other work.** [`GraphExec::launch`] orders the launch on its stream after
//!   the pending conflicting work on every allocation the graph uses, and later work after it
//!   (the buffers' stream trackers), exactly as a kernel launch does.
//! - **Host nodes** run `Send + 'static` closures owned by the graph and dropped with the last
//!   `Graph`/`GraphExec` that holds them, after the launches that may call them are done.
//! - **Dropping** a `GraphExec` waits for the streams it was launched on, so nothing borrowed
//!   for `'a` is released while a launch may use it.
//!
//! Kernel arguments are typed and checked exactly as for [`Stream::launch`]: an `unsafe fn`
//! kernel needs [`Graph::add_kernel_unchecked`].
//!
//! A buffer a graph uses cannot be dropped while the graph exists:
//!
//! ```compile_fail
//! # fn f(ctx: &gpukernel_runtime::Context) -> gpukernel_runtime::Result<()> {
//! let mut y = ctx.alloc_zeros::<f32>(16)?;
//! let graph = ctx.new_graph("g")?;
//! let yb = graph.buffer_mut(&mut y);
//! graph.add_memset_zeros(&[], yb)?;
//! drop(y); // error: `y` is borrowed by the graph
//! graph.instantiate()?;
//! # Ok(()) }
//! ```
//!
//! nor read by the host while an instantiation exists:
//!
//! ```compile_fail
//! # fn f(ctx: &gpukernel_runtime::Context) -> gpukernel_runtime::Result<()> {
//! let mut y = ctx.alloc_zeros::<f32>(16)?;
//! let mut host = vec![0.0f32; 16];
//! let graph = ctx.new_graph("g")?;
//! let yb = graph.buffer_mut(&mut y);
//! graph.add_memcpy_dtoh(&[], &mut host, yb)?;
//! let exec = graph.instantiate()?;
//! drop(graph);
//! println!("{}", host[0]); // error: `host` is borrowed by the instantiation
//! exec.launch(&ctx.default_stream())?;
//! # Ok(()) }
//! ```

#[cfg(test)]
mod tests;

use core::ffi::c_void;
use core::marker::PhantomData;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use gpukernel_device::{AnyBitPattern, DeviceCopy, Kernel, SafeKernel, SimEntry};

use crate::backend::{
    CopyEnd, FunctionInfo, GraphExecHandle, GraphHandle, GraphNode, LaunchDesc, NodeHandle,
};
use crate::context::{Context, ContextInner, intern};
use crate::error::{Error, Result};
use crate::launch::{LaunchArgs, LaunchConfig, MAX_KERNEL_PARAMS, Safe};
use crate::memory::tracker::{Access, Tracker};
use crate::memory::{DeviceBuffer, DeviceSlice, RawParts};
use crate::module::{ModuleInner, TypedKernel};
use crate::stream::Stream;

// ---------------------------------------------------------------------------------------------
// Memory uses
// ---------------------------------------------------------------------------------------------

/// One node's use of bytes of an allocation; the tracker is valid for the graph's `'a`.
#[derive(Clone, Copy)]
struct Use {
    tracker: *const Tracker,
    span: (u64, u64),
    access: Access,
}

impl Use {
    fn writes(&self) -> bool {
        self.access != Access::Read
    }

    fn overlaps(&self, other: &Use) -> bool {
        core::ptr::eq(self.tracker, other.tracker)
            && self.span.0 < other.span.1
            && other.span.0 < self.span.1
    }
}

/// The memory uses of a node being added (for [`KernelArg::record`](crate::KernelArg)).
#[doc(hidden)]
#[allow(
    missing_debug_implementations,
    reason = "hidden plumbing of the argument traits"
)]
pub struct NodeUses<'g> {
    ctx: &'g Arc<ContextInner>,
    uses: Vec<Use>,
}

impl NodeUses<'_> {
    /// Checks the context and records a use of `p`'s memory.
    pub(crate) fn record(
        &mut self,
        operation: &'static str,
        what: &'static str,
        p: RawParts<'_>,
    ) -> Result<()> {
        if !Arc::ptr_eq(self.ctx, p.ctx) {
            return Err(crate::context::mismatch(operation, what, self.ctx, p.ctx));
        }
        let bytes = (p.len * p.elem) as u64;
        let span = match p.access {
            Access::Exclusive => (0, u64::MAX),
            _ => (p.ptr, p.ptr + bytes.max(1)),
        };
        self.uses.push(Use {
            tracker: p.tracker,
            span,
            access: p.access,
        });
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Registered buffers
// ---------------------------------------------------------------------------------------------

/// A buffer read by a graph's nodes for its lifetime `'a` ([`Graph::buffer`]); `Copy`, so
/// several nodes can take it.
pub struct GraphBuffer<'a, T: DeviceCopy> {
    ptr: u64,
    len: usize,
    ctx: &'a Arc<ContextInner>,
    tracker: &'a Tracker,
    _t: PhantomData<&'a [T]>,
}

/// A buffer read and written by a graph's nodes for its lifetime `'a`
/// ([`Graph::buffer_mut`]); `Copy`, so several nodes can take it (nodes that conflict on it
/// are ordered).
pub struct GraphBufferMut<'a, T: DeviceCopy> {
    ptr: u64,
    len: usize,
    ctx: &'a Arc<ContextInner>,
    tracker: &'a Tracker,
    _t: PhantomData<&'a mut [T]>,
}

macro_rules! graph_buffer_common {
    ($ty:ident) => {
        impl<T: DeviceCopy> Clone for $ty<'_, T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T: DeviceCopy> Copy for $ty<'_, T> {}
        impl<T: DeviceCopy> fmt::Debug for $ty<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("ptr", &format_args!("{:#x}", self.ptr))
                    .field("len", &self.len)
                    .finish()
            }
        }
        // SAFETY: as `DeviceBuffer`: an address and shared references to synchronized data.
        unsafe impl<T: DeviceCopy> Send for $ty<'_, T> {}
        // SAFETY: as above.
        unsafe impl<T: DeviceCopy> Sync for $ty<'_, T> {}
        impl<'a, T: DeviceCopy> $ty<'a, T> {
            /// Number of elements.
            pub fn len(&self) -> usize {
                self.len
            }
            /// Whether there are no elements.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }
            #[doc(hidden)]
            pub fn raw_parts(&self) -> RawParts<'a> {
                RawParts {
                    ptr: self.ptr,
                    len: self.len,
                    ctx: self.ctx,
                    tracker: self.tracker,
                    elem: size_of::<T>(),
                    access: Access::Read,
                }
            }
        }
    };
}
graph_buffer_common!(GraphBuffer);
graph_buffer_common!(GraphBufferMut);

impl<'a, T: DeviceCopy> GraphBufferMut<'a, T> {
    #[doc(hidden)]
    pub fn raw_parts_mut(&mut self) -> RawParts<'a> {
        RawParts {
            access: Access::Write,
            ..self.raw_parts()
        }
    }

    /// The same buffer, for nodes that only read it.
    pub fn read(self) -> GraphBuffer<'a, T> {
        GraphBuffer {
            ptr: self.ptr,
            len: self.len,
            ctx: self.ctx,
            tracker: self.tracker,
            _t: PhantomData,
        }
    }
}

impl<'a, T: DeviceCopy> From<GraphBufferMut<'a, T>> for GraphBuffer<'a, T> {
    fn from(b: GraphBufferMut<'a, T>) -> Self {
        b.read()
    }
}

// ---------------------------------------------------------------------------------------------
// Nodes and the graph's state
// ---------------------------------------------------------------------------------------------

/// A node of a [`Graph`]: what `add_*` returns and dependencies name. `Copy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    graph: u64,
    index: usize,
}

impl Node {
    /// The node's index: the order it was added in, from 0.
    pub fn index(&self) -> usize {
        self.index
    }
}

/// A kernel node's function: its module is held so the function stays loaded.
struct KernelInfo {
    module: Arc<ModuleInner>,
    info: FunctionInfo,
    name: &'static &'static str,
    sim_entry: Option<SimEntry>,
}

struct NodeState {
    handle: NodeHandle,
    deps: Vec<usize>,
    uses: Vec<Use>,
    kernel: Option<Arc<KernelInfo>>,
}

/// A value the backend may read for the graph's lifetime (kernel arguments, host closures);
/// never accessed through the box.
trait Kept {}
impl<T: ?Sized> Kept for T {}

struct KeptBox<'a>(
    #[allow(dead_code, reason = "kept alive, read by the backend")] Box<dyn Kept + 'a>,
);
// SAFETY: the box is never accessed from Rust after it is made (only dropped); the backend
// reads the plain ABI values it holds, and host closures are `Send` and called under their own
// mutex.
unsafe impl Send for KeptBox<'_> {}
// SAFETY: as above.
unsafe impl Sync for KeptBox<'_> {}

#[derive(Default)]
struct State<'a> {
    nodes: Vec<NodeState>,
    /// Per allocation: the byte ranges used by nodes not yet ordered before a later writer
    /// (the frontier that a new conflicting node depends on).
    frontier: Vec<Use>,
    frontier_node: Vec<usize>,
    kept: Vec<KeptBox<'a>>,
}

struct GraphInner<'a> {
    ctx: Arc<ContextInner>,
    handle: GraphHandle,
    id: u64,
    name: String,
    state: Mutex<State<'a>>,
}

impl Drop for GraphInner<'_> {
    fn drop(&mut self) {
        // SAFETY: the last owner of the graph; instantiations are independent of it (the ones
        // reading its kept values hold this `Arc`).
        unsafe { self.ctx.backend.graph_destroy(self.handle) };
    }
}

impl<'a> GraphInner<'a> {
    fn lock(&self) -> MutexGuard<'_, State<'a>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A CUDA graph being built: nodes and the dependencies between them. See the [module
/// documentation](self) for what `'a` borrows and how nodes are ordered.
///
/// ```no_run
/// # use gpukernel_runtime::{Context, Graph, LaunchConfig, TypedKernel};
/// # fn f<K: gpukernel_runtime::SafeKernel<Params = (f32, &'static [f32], gpukernel_device::DisjointSlice<'static, f32>)>>(ctx: &Context, saxpy: &TypedKernel<K>) -> gpukernel_runtime::Result<()> {
/// let host_x = vec![1.0f32; 1024];
/// let mut host_y = vec![0.0f32; 1024];
/// let mut x = ctx.alloc_zeros::<f32>(1024)?;
/// let mut y = ctx.alloc_zeros::<f32>(1024)?;
/// {
///     let graph = ctx.new_graph("saxpy")?;
///     let (xb, yb) = (graph.buffer_mut(&mut x), graph.buffer_mut(&mut y));
///     let up = graph.add_memcpy_htod(&[], xb, &host_x)?;
///     let k = graph.add_kernel(&[up], saxpy, LaunchConfig::for_elements(1024)?, (2.0f32, xb, yb))?;
///     graph.add_memcpy_dtoh(&[k], &mut host_y, yb)?;
///     let exec = graph.instantiate()?;
///     exec.launch(&ctx.default_stream())?;
///     ctx.default_stream().synchronize()?;
/// } // the graph and its instantiation are gone: `host_y` and the buffers are free again
/// assert!(host_y.iter().all(|&v| v == 2.0));
/// # Ok(()) }
/// ```
pub struct Graph<'a> {
    inner: Arc<GraphInner<'a>>,
    /// Invariant in `'a`: borrows are added through `&self`.
    _a: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("name", &self.inner.name)
            .field("nodes", &self.inner.lock().nodes.len())
            .finish()
    }
}

static NEXT_GRAPH: AtomicU64 = AtomicU64::new(1);

impl Context {
    /// A new, empty graph named `name` (for error messages and fault reports).
    pub fn new_graph<'a>(&self, name: &str) -> Result<Graph<'a>> {
        let handle = self.inner.backend.graph_create()?;
        Ok(Graph {
            inner: Arc::new(GraphInner {
                ctx: self.inner.clone(),
                handle,
                id: NEXT_GRAPH.fetch_add(1, Ordering::Relaxed),
                name: name.to_owned(),
                state: Mutex::new(State::default()),
            }),
            _a: PhantomData,
        })
    }
}

/// The `extern "C"` function host nodes call: runs the closure, never unwinding into the
/// driver.
unsafe extern "C" fn call_host(data: *mut c_void) {
    // SAFETY: `data` is the `HostClosure` the graph keeps until its last owner is gone, which
    // is after every launch that can call this (see `GraphExec`'s drop).
    let closure = unsafe { &*data.cast::<HostClosure>() };
    let run = std::panic::AssertUnwindSafe(|| {
        let mut f = closure.0.lock().unwrap_or_else(|p| p.into_inner());
        f();
    });
    if std::panic::catch_unwind(run).is_err() {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"gpukernel-runtime: a graph host node panicked (ignored)\n",
        );
    }
}

type HostClosure = (Mutex<Box<dyn FnMut() + Send>>,);

impl<'a> Graph<'a> {
    /// The graph's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The number of nodes.
    pub fn len(&self) -> usize {
        self.inner.lock().nodes.len()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw `CUgraph` (meaningless on the simulator).
    pub fn raw(&self) -> cudarc::driver::sys::CUgraph {
        if self.inner.ctx.backend.is_simulator() {
            return core::ptr::null_mut();
        }
        self.inner.handle.0.cast()
    }

    /// Registers a buffer that nodes read, borrowing it for the graph's lifetime.
    pub fn buffer<T: DeviceCopy>(&self, b: &'a DeviceBuffer<T>) -> GraphBuffer<'a, T> {
        let p = b.raw_parts();
        GraphBuffer {
            ptr: p.ptr,
            len: p.len,
            ctx: p.ctx,
            tracker: p.tracker,
            _t: PhantomData,
        }
    }

    /// Registers a buffer that nodes read and write, borrowing it exclusively for the graph's
    /// lifetime.
    pub fn buffer_mut<T: DeviceCopy>(&self, b: &'a mut DeviceBuffer<T>) -> GraphBufferMut<'a, T> {
        let p = b.raw_parts();
        GraphBufferMut {
            ptr: p.ptr,
            len: p.len,
            ctx: p.ctx,
            tracker: p.tracker,
            _t: PhantomData,
        }
    }

    fn check_deps(&self, operation: &'static str, deps: &[Node]) -> Result<Vec<usize>> {
        let n = self.inner.lock().nodes.len();
        deps.iter()
            .map(|d| {
                if d.graph != self.inner.id || d.index >= n {
                    Err(Error::ForeignGraphNode {
                        operation,
                        node: d.index,
                        owner: owner_name(d.graph),
                        graph: self.inner.name.clone(),
                    })
                } else {
                    Ok(d.index)
                }
            })
            .collect()
    }

    /// Adds a node: its explicit dependencies, plus the earlier nodes its memory uses conflict
    /// with; `kept` is stored for the graph's lifetime.
    ///
    /// # Safety
    /// As `Backend::graph_add_node`: the node's memory is `uses` (valid for `'a`) or `kept`.
    unsafe fn add(
        &self,
        operation: &'static str,
        deps: &[Node],
        uses: Vec<Use>,
        node: GraphNode<'_, '_>,
        kernel: Option<Arc<KernelInfo>>,
        kept: Option<KeptBox<'a>>,
    ) -> Result<Node> {
        let mut deps = self.check_deps(operation, deps)?;
        let mut st = self.inner.lock();
        let index = st.nodes.len();
        for u in &uses {
            for (f, &n) in st.frontier.iter().zip(&st.frontier_node) {
                if f.overlaps(u) && (f.writes() || u.writes()) && !deps.contains(&n) {
                    deps.push(n);
                }
            }
        }
        let handles: Vec<NodeHandle> = deps.iter().map(|&d| st.nodes[d].handle).collect();
        // SAFETY: forwarded from the caller; `deps` are nodes of this graph.
        let handle = unsafe {
            self.inner
                .ctx
                .backend
                .graph_add_node(self.inner.handle, &handles, node)
        }?;
        for u in &uses {
            if u.writes() {
                // Uses inside the written range are ordered before this node now.
                let mut i = 0;
                while i < st.frontier.len() {
                    let f = st.frontier[i];
                    if core::ptr::eq(f.tracker, u.tracker)
                        && u.span.0 <= f.span.0
                        && f.span.1 <= u.span.1
                    {
                        st.frontier.swap_remove(i);
                        st.frontier_node.swap_remove(i);
                    } else {
                        i += 1;
                    }
                }
            }
            st.frontier.push(*u);
            st.frontier_node.push(index);
        }
        st.nodes.push(NodeState {
            handle,
            deps,
            uses,
            kernel,
        });
        st.kept.extend(kept);
        Ok(Node {
            graph: self.inner.id,
            index,
        })
    }

    /// Adds a kernel node after `deps`, with arguments typed and checked as for
    /// [`Stream::launch`]. The arguments must outlive the graph (`A: 'a`).
    pub fn add_kernel<K: SafeKernel, A: LaunchArgs<K::Params, Safety = Safe> + 'a>(
        &self,
        deps: &[Node],
        kernel: &TypedKernel<K>,
        config: LaunchConfig,
        args: A,
    ) -> Result<Node> {
        // SAFETY: as `Stream::launch`: a safe kernel with safe arguments.
        unsafe { self.add_kernel_unchecked(deps, kernel, config, args) }
    }

    /// As [`add_kernel`](Self::add_kernel), also for `unsafe fn` kernels.
    ///
    /// # Safety
    /// As [`Stream::launch_unchecked`], for every launch of the graph.
    pub unsafe fn add_kernel_unchecked<K: Kernel, A: LaunchArgs<K::Params> + 'a>(
        &self,
        deps: &[Node],
        kernel: &TypedKernel<K>,
        config: LaunchConfig,
        args: A,
    ) -> Result<Node> {
        const OP: &str = "Graph::add_kernel";
        let f = &kernel.function;
        if !Arc::ptr_eq(&f.module.ctx, &self.inner.ctx) {
            return Err(crate::context::mismatch(
                OP,
                "the kernel",
                &self.inner.ctx,
                &f.module.ctx,
            ));
        }
        config.validate(f)?;
        let mut uses = NodeUses {
            ctx: &self.inner.ctx,
            uses: Vec::new(),
        };
        let abi = args.record(&mut uses)?;
        let info = Arc::new(KernelInfo {
            module: f.module.clone(),
            info: f.info,
            name: f.name,
            sim_entry: Some(K::SIM_ENTRY),
        });
        let (kept, mut params) = pack::<K, A>(abi);
        let desc = desc_of(&info, &config);
        // SAFETY: `params` point into `kept`, stored for the graph's lifetime, holding exactly
        // the ABI values of `K::Params`; the memory they reach is `uses`, borrowed for `'a`.
        unsafe {
            self.add(
                OP,
                deps,
                uses.uses,
                GraphNode::Kernel {
                    desc: &desc,
                    params: &mut params,
                },
                Some(info.clone()),
                Some(kept),
            )
        }
    }

    /// Adds a host-to-device copy of `src` (read at each launch) into `dst`.
    pub fn add_memcpy_htod<T: DeviceCopy>(
        &self,
        deps: &[Node],
        dst: GraphBufferMut<'a, T>,
        src: &'a [T],
    ) -> Result<Node> {
        const OP: &str = "Graph::add_memcpy_htod";
        check_len(OP, dst.len, src.len())?;
        let mut dst = dst;
        let uses = self.uses_of(OP, &[dst.raw_parts_mut()])?;
        let node = copy_node(
            CopyEnd::Device(dst.ptr),
            CopyEnd::Host(src.as_ptr().cast_mut().cast()),
            size_of_val(src),
        );
        // SAFETY: `src` is borrowed for `'a` (read only, by the copy); `dst` is in `uses`.
        unsafe { self.add(OP, deps, uses, node, None, None) }
    }

    /// Adds a device-to-host copy of `src` into `dst` (written at each launch; the host can
    /// read it once the graph and its instantiations are gone).
    pub fn add_memcpy_dtoh<T: DeviceCopy>(
        &self,
        deps: &[Node],
        dst: &'a mut [T],
        src: impl Into<GraphBuffer<'a, T>>,
    ) -> Result<Node> {
        const OP: &str = "Graph::add_memcpy_dtoh";
        let src = src.into();
        check_len(OP, dst.len(), src.len)?;
        let uses = self.uses_of(OP, &[src.raw_parts()])?;
        let node = copy_node(
            CopyEnd::Host(dst.as_mut_ptr().cast()),
            CopyEnd::Device(src.ptr),
            size_of_val(dst),
        );
        // SAFETY: `dst` is exclusively borrowed for `'a`; `src` is in `uses`.
        unsafe { self.add(OP, deps, uses, node, None, None) }
    }

    /// Adds a device-to-device copy.
    pub fn add_memcpy_dtod<T: DeviceCopy>(
        &self,
        deps: &[Node],
        dst: GraphBufferMut<'a, T>,
        src: impl Into<GraphBuffer<'a, T>>,
    ) -> Result<Node> {
        const OP: &str = "Graph::add_memcpy_dtod";
        let src = src.into();
        check_len(OP, dst.len, src.len)?;
        if core::ptr::eq(src.tracker, dst.tracker)
            && src.ptr < dst.ptr + size_of::<T>() as u64 * dst.len as u64
            && dst.ptr < src.ptr + size_of::<T>() as u64 * src.len as u64
        {
            return Err(Error::OutOfBounds {
                operation: OP,
                start: 0,
                end: dst.len,
                len: dst.len,
            });
        }
        let mut dst = dst;
        let uses = self.uses_of(OP, &[dst.raw_parts_mut(), src.raw_parts()])?;
        let node = copy_node(
            CopyEnd::Device(dst.ptr),
            CopyEnd::Device(src.ptr),
            dst.len * size_of::<T>(),
        );
        // SAFETY: both ends are in `uses`, disjoint (checked).
        unsafe { self.add(OP, deps, uses, node, None, None) }
    }

    /// Adds a node setting every byte of `dst` to `value` (element types where any byte
    /// pattern is a value).
    pub fn add_memset_d8<T: AnyBitPattern>(
        &self,
        deps: &[Node],
        dst: GraphBufferMut<'a, T>,
        value: u8,
    ) -> Result<Node> {
        self.memset(deps, dst, value)
    }

    /// Adds a node zeroing `dst`.
    pub fn add_memset_zeros<T: DeviceCopy>(
        &self,
        deps: &[Node],
        dst: GraphBufferMut<'a, T>,
    ) -> Result<Node> {
        self.memset(deps, dst, 0)
    }

    fn memset<T: DeviceCopy>(
        &self,
        deps: &[Node],
        dst: GraphBufferMut<'a, T>,
        value: u8,
    ) -> Result<Node> {
        const OP: &str = "Graph::add_memset";
        let mut dst = dst;
        let uses = self.uses_of(OP, &[dst.raw_parts_mut()])?;
        let bytes = dst.len * size_of::<T>();
        let node = if bytes == 0 {
            GraphNode::Empty
        } else {
            GraphNode::Memset {
                dst: dst.ptr,
                value,
                bytes,
            }
        };
        // SAFETY: `dst` is in `uses`.
        unsafe { self.add(OP, deps, uses, node, None, None) }
    }

    /// Adds a node calling `f` on a host thread once its dependencies are done. `f` is owned
    /// by the graph and dropped with the last `Graph`/`GraphExec` holding it. A panic in `f`
    /// is caught and reported on stderr (it cannot unwind into the driver).
    pub fn add_host(&self, deps: &[Node], f: impl FnMut() + Send + 'static) -> Result<Node> {
        let closure: Box<HostClosure> = Box::new((Mutex::new(Box::new(f)),));
        let data = core::ptr::from_ref::<HostClosure>(&closure)
            .cast_mut()
            .cast();
        let node = GraphNode::Host { f: call_host, data };
        // SAFETY: `data` points into `closure`, kept for the graph's lifetime; `call_host` is
        // sound to call from any thread (the closure is `Send`, behind a mutex).
        unsafe {
            self.add(
                "Graph::add_host",
                deps,
                Vec::new(),
                node,
                None,
                Some(KeptBox(closure)),
            )
        }
    }

    /// Adds an empty node: a join point for dependencies.
    pub fn add_empty(&self, deps: &[Node]) -> Result<Node> {
        // SAFETY: an empty node reaches no memory.
        unsafe {
            self.add(
                "Graph::add_empty",
                deps,
                Vec::new(),
                GraphNode::Empty,
                None,
                None,
            )
        }
    }

    /// Makes `to` run after `from`. A cycle is reported by
    /// [`instantiate`](Self::instantiate) ([`Error::GraphCycle`]).
    pub fn add_dependency(&self, from: Node, to: Node) -> Result<()> {
        let d = self.check_deps("Graph::add_dependency", &[from, to])?;
        let mut st = self.inner.lock();
        if st.nodes[d[1]].deps.contains(&d[0]) {
            return Ok(());
        }
        let (f, t) = (st.nodes[d[0]].handle, st.nodes[d[1]].handle);
        // SAFETY: both nodes belong to this live graph (checked).
        unsafe {
            self.inner
                .ctx
                .backend
                .graph_add_dependency(self.inner.handle, f, t)
        }?;
        st.nodes[d[1]].deps.push(d[0]);
        Ok(())
    }

    fn uses_of(&self, operation: &'static str, parts: &[RawParts<'_>]) -> Result<Vec<Use>> {
        let mut uses = NodeUses {
            ctx: &self.inner.ctx,
            uses: Vec::new(),
        };
        for p in parts {
            uses.record(operation, "a buffer", *p)?;
        }
        Ok(uses.uses)
    }

    /// Instantiates the graph ([`Error::GraphCycle`] when its dependencies form a cycle). The
    /// graph can still be changed afterwards; the instantiation keeps what it was.
    pub fn instantiate(&self) -> Result<GraphExec<'a>> {
        let st = self.inner.lock();
        let deps: Vec<&[usize]> = st.nodes.iter().map(|n| n.deps.as_slice()).collect();
        if let Some(nodes) = find_cycle(&deps) {
            return Err(Error::GraphCycle {
                graph: self.inner.name.clone(),
                nodes,
            });
        }
        // SAFETY: the graph is live and acyclic.
        let handle = unsafe { self.inner.ctx.backend.graph_instantiate(self.inner.handle) }
            .map_err(|e| self.named(e))?;
        let nodes = st
            .nodes
            .iter()
            .map(|n| ExecNode {
                handle: n.handle,
                uses: n.uses.clone(),
                kernel: n.kernel.clone(),
                kept: None,
            })
            .collect();
        drop(st);
        Ok(GraphExec {
            graph: self.inner.clone(),
            handle,
            state: Mutex::new(ExecState {
                nodes,
                label: None,
                launched_on: Vec::new(),
            }),
        })
    }

    fn named(&self, e: Error) -> Error {
        name_error(e, &self.inner.name)
    }
}

fn name_error(e: Error, name: &str) -> Error {
    match e {
        Error::GraphCycle { nodes, .. } => Error::GraphCycle {
            graph: name.to_owned(),
            nodes,
        },
        Error::GraphUpdateRefused { reason, .. } => Error::GraphUpdateRefused {
            graph: name.to_owned(),
            reason,
        },
        e => e,
    }
}

fn owner_name(id: u64) -> String {
    format!("#{id}")
}

fn check_len(operation: &'static str, destination: usize, source_len: usize) -> Result<()> {
    if destination == source_len {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            operation,
            destination,
            source_len,
        })
    }
}

fn copy_node(dst: CopyEnd, src: CopyEnd, bytes: usize) -> GraphNode<'static, 'static> {
    if bytes == 0 {
        GraphNode::Empty
    } else {
        GraphNode::Copy { dst, src, bytes }
    }
}

fn desc_of<'k>(info: &'k KernelInfo, config: &LaunchConfig) -> LaunchDesc<'k> {
    LaunchDesc {
        function: info.info.handle,
        name: info.name,
        sim_entry: info.sim_entry,
        grid: config.grid.to_array(),
        block: config.block.to_array(),
        shared_mem_bytes: config.shared_mem_bytes,
        stream: crate::backend::StreamHandle::NULL,
        ffi: info.module.ffi.as_ref().map(|t| &t.record),
    }
}

/// Boxes the ABI values (so their addresses are stable) and points a parameter array at them.
fn pack<'a, K: Kernel, A: LaunchArgs<K::Params> + 'a>(
    abi: A::Abi,
) -> (KeptBox<'a>, Vec<*mut c_void>)
where
    A::Abi: 'a,
{
    let mut abi = Box::new(abi);
    let mut params = [core::ptr::null_mut::<c_void>(); MAX_KERNEL_PARAMS];
    let n = A::fill(&mut abi, &mut params);
    (KeptBox(abi), params[..n].to_vec())
}

/// A cycle in the graph `deps` (node `i` depends on each of `deps[i]`), as node indices in
/// dependency order, or `None`.
fn find_cycle(deps: &[&[usize]]) -> Option<Vec<usize>> {
    // Iterative depth-first search: 0 unvisited, 1 on the stack, 2 done.
    let n = deps.len();
    let mut mark = vec![0u8; n];
    for root in 0..n {
        if mark[root] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        mark[root] = 1;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&d) = deps[v].get(*next) {
                *next += 1;
                match mark[d] {
                    0 => {
                        mark[d] = 1;
                        stack.push((d, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|&(x, _)| x == d).unwrap_or(0);
                        let mut cycle: Vec<usize> = stack[from..].iter().map(|&(x, _)| x).collect();
                        cycle.reverse();
                        return Some(cycle);
                    }
                    _ => {}
                }
            } else {
                mark[v] = 2;
                stack.pop();
            }
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Instantiated graphs
// ---------------------------------------------------------------------------------------------

struct ExecNode<'a> {
    handle: NodeHandle,
    uses: Vec<Use>,
    kernel: Option<Arc<KernelInfo>>,
    /// Arguments given by [`GraphExec::set_kernel_args`], replacing the graph's.
    kept: Option<KeptBox<'a>>,
}

struct ExecState<'a> {
    nodes: Vec<ExecNode<'a>>,
    label: Option<&'static &'static str>,
    /// The streams launched on since the last wait (for `Drop` and `update`).
    launched_on: Vec<Stream>,
}

/// An instantiated graph (`cuGraphExec`): launch it on a stream any number of times. It
/// borrows what its graph borrows (`'a`); dropping it waits for its launches.
pub struct GraphExec<'a> {
    graph: Arc<GraphInner<'a>>,
    handle: GraphExecHandle,
    state: Mutex<ExecState<'a>>,
}

impl fmt::Debug for GraphExec<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphExec")
            .field("graph", &self.graph.name)
            .finish()
    }
}

// SAFETY: the handle is a driver object usable from any thread (or the simulator's own,
// behind mutexes); the uses' trackers are `Sync` and live for `'a`.
unsafe impl Send for GraphExec<'_> {}
// SAFETY: as above; mutable state is behind the mutex.
unsafe impl Sync for GraphExec<'_> {}
// SAFETY: the graph handle is a driver object usable from any thread (or the simulator's
// own, behind a mutex); the state is behind a mutex, its trackers are `Sync` and live for `'a`.
unsafe impl Send for GraphInner<'_> {}
// SAFETY: as above.
unsafe impl Sync for GraphInner<'_> {}
// SAFETY: a function handle may be used from any thread; the rest is immutable or `Sync`.
unsafe impl Send for KernelInfo {}
// SAFETY: as above.
unsafe impl Sync for KernelInfo {}

impl<'a> GraphExec<'a> {
    fn lock(&self) -> MutexGuard<'_, ExecState<'a>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The name of the graph it was instantiated from.
    pub fn name(&self) -> &str {
        &self.graph.name
    }

    /// The raw `CUgraphExec` (meaningless on the simulator).
    pub fn raw(&self) -> cudarc::driver::sys::CUgraphExec {
        if self.graph.ctx.backend.is_simulator() {
            return core::ptr::null_mut();
        }
        self.handle.0.cast()
    }

    /// Launches the graph on `stream` (`cuGraphLaunch`), ordered after the pending conflicting
    /// work on every allocation it uses (and later work after it), as a kernel launch is. A
    /// kernel fault is reported by the next synchronizing call naming the graph and its kernel
    /// nodes; a failed foreign call of one of its kernels, wherever the stream's work is
    /// observed. On the simulator the graph runs before this returns.
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        crate::context::check_same(
            "GraphExec::launch",
            "the stream",
            &self.graph.ctx,
            stream.ctx(),
        )?;
        let mut st = self.lock();
        for n in &st.nodes {
            for u in &n.uses {
                // SAFETY: the tracker belongs to an allocation borrowed for `'a`.
                unsafe { &*u.tracker }.use_on(stream, u.span, u.access)?;
            }
        }
        for k in st.nodes.iter().filter_map(|n| n.kernel.as_ref()) {
            k.module.launched.store(true, Ordering::Relaxed);
            if let Some(t) = &k.module.ffi {
                t.note_launch(&k.module.ctx, k.name, stream.handle());
            }
        }
        let label = match st.label {
            Some(l) => l,
            None => {
                let mut kernels: Vec<&str> = Vec::new();
                for k in st.nodes.iter().filter_map(|n| n.kernel.as_ref()) {
                    if !kernels.contains(k.name) {
                        kernels.push(k.name);
                    }
                }
                let l = intern(&format!(
                    "graph `{}` (kernel nodes: {})",
                    self.graph.name,
                    if kernels.is_empty() {
                        "none".to_owned()
                    } else {
                        kernels.join(", ")
                    }
                ));
                st.label = Some(l);
                l
            }
        };
        if !st.launched_on.iter().any(|s| s.same_as(stream)) {
            st.launched_on.push(stream.clone());
        }
        // SAFETY: every node's memory is borrowed for `'a` or kept by the graph, and ordered
        // on `stream` above; the driver orders launches of one instantiation.
        unsafe {
            self.graph.ctx.backend.graph_launch(
                self.handle,
                stream.handle(),
                label,
                &stream.state().last_launch,
            )
        }
    }

    /// Replaces the arguments and configuration of kernel node `node` for the next launches
    /// (`cuGraphExecKernelNodeSetParams`): the same kernel, arguments checked as for
    /// [`Stream::launch`]. The graph itself is unchanged.
    pub fn set_kernel_args<K: SafeKernel, A: LaunchArgs<K::Params, Safety = Safe> + 'a>(
        &self,
        node: Node,
        kernel: &TypedKernel<K>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        // SAFETY: as `Stream::launch`.
        unsafe { self.set_kernel_args_unchecked(node, kernel, config, args) }
    }

    /// As [`set_kernel_args`](Self::set_kernel_args), also for `unsafe fn` kernels.
    ///
    /// # Safety
    /// As [`Stream::launch_unchecked`], for every later launch.
    pub unsafe fn set_kernel_args_unchecked<K: Kernel, A: LaunchArgs<K::Params> + 'a>(
        &self,
        node: Node,
        kernel: &TypedKernel<K>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        const OP: &str = "GraphExec::set_kernel_args";
        let mut st = self.lock();
        if node.graph != self.graph.id || node.index >= st.nodes.len() {
            return Err(Error::ForeignGraphNode {
                operation: OP,
                node: node.index,
                owner: owner_name(node.graph),
                graph: self.graph.name.clone(),
            });
        }
        let f = &kernel.function;
        let same = st.nodes[node.index]
            .kernel
            .as_ref()
            .is_some_and(|k| Arc::ptr_eq(&k.module, &f.module) && k.name == f.name);
        if !same {
            return Err(Error::WrongGraphNode {
                operation: OP,
                node: node.index,
                graph: self.graph.name.clone(),
                expected: "a kernel node of this kernel",
            });
        }
        config.validate(f)?;
        let mut uses = NodeUses {
            ctx: &self.graph.ctx,
            uses: Vec::new(),
        };
        let abi = args.record(&mut uses)?;
        let info = st.nodes[node.index].kernel.clone();
        let Some(info) = info else {
            unreachable!("checked above")
        };
        let (kept, mut params) = pack::<K, A>(abi);
        let desc = desc_of(&info, &config);
        // The simulator reads the replaced values at launch: wait for pending launches before
        // dropping the old ones.
        self.wait_launches(&mut st)?;
        // SAFETY: as in `Graph::add_kernel_unchecked`; `node` is a kernel node of this
        // function in the graph this came from.
        unsafe {
            self.graph.ctx.backend.graph_exec_set_kernel(
                self.handle,
                st.nodes[node.index].handle,
                &desc,
                &mut params,
            )
        }?;
        let n = &mut st.nodes[node.index];
        n.uses = uses.uses;
        n.kept = Some(kept);
        Ok(())
    }

    /// Updates this instantiation to the node parameters of `graph`, which must have the
    /// same nodes and edges (`cuGraphExecUpdate`): [`Error::GraphUpdateRefused`] otherwise,
    /// and this instantiation is unchanged. Waits for this instantiation's pending launches
    /// first.
    pub fn update(&mut self, graph: &Graph<'a>) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let gst = graph.inner.lock();
        if gst.nodes.len() != st.nodes.len() {
            return Err(Error::GraphUpdateRefused {
                graph: self.graph.name.clone(),
                reason: format!(
                    "the topology changed ({} nodes, was {})",
                    gst.nodes.len(),
                    st.nodes.len()
                ),
            });
        }
        let deps: Vec<&[usize]> = gst.nodes.iter().map(|n| n.deps.as_slice()).collect();
        if let Some(nodes) = find_cycle(&deps) {
            return Err(Error::GraphCycle {
                graph: graph.inner.name.clone(),
                nodes,
            });
        }
        self.wait_launches(&mut st)?;
        // SAFETY: both are live; the new nodes' memory is borrowed for `'a` or kept by
        // `graph`, which this instantiation holds from now on.
        unsafe {
            self.graph
                .ctx
                .backend
                .graph_exec_update(self.handle, graph.inner.handle)
        }
        .map_err(|e| name_error(e, &self.graph.name))?;
        st.nodes = gst
            .nodes
            .iter()
            .map(|n| ExecNode {
                handle: n.handle,
                uses: n.uses.clone(),
                kernel: n.kernel.clone(),
                kept: None,
            })
            .collect();
        st.label = None;
        drop(gst);
        drop(st);
        self.graph = graph.inner.clone();
        Ok(())
    }

    /// Waits for the streams this was launched on (what a launch may still use).
    fn wait_launches(&self, st: &mut ExecState<'a>) -> Result<()> {
        for s in &st.launched_on {
            s.wait_idle()?;
        }
        st.launched_on.clear();
        Ok(())
    }
}

impl Drop for GraphExec<'_> {
    fn drop(&mut self) {
        // What the launches use is borrowed for `'a` or kept by the graph: wait for them
        // before the borrows end. A failed wait (a faulted context) runs nothing more.
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for s in &st.launched_on {
            let _ = s.wait_idle();
        }
        // SAFETY: the last use of the handle; its launches are done.
        unsafe { self.graph.ctx.backend.graph_exec_destroy(self.handle) };
    }
}

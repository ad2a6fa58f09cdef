//! Building a graph: [`Graph`] and its nodes.

use super::*;

// ---------------------------------------------------------------------------------------------
// Nodes and the graph's state
// ---------------------------------------------------------------------------------------------

/// A node of a [`Graph`]: what `add_*` returns and dependencies name. `Copy`.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let mut a = ctx.alloc_zeros::<u8>(16)?;
/// let mut b = ctx.alloc_zeros::<u8>(16)?;
/// let graph = ctx.new_graph("two memsets")?;
/// let first: Node = graph.add_memset_d8(&[], graph.buffer_mut(&mut a), 1)?;
/// let second = graph.add_memset_d8(&[first], graph.buffer_mut(&mut b), 2)?; // after `first`
/// assert_eq!((first.index(), second.index()), (0, 1));
/// # use gpukernel_runtime::Node;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Node {
    pub(super) graph: u64,
    pub(super) index: usize,
}

impl Node {
    /// The node's index: the order it was added in, from 0.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let graph = ctx.new_graph("g")?;
    /// let n = graph.add_empty(&[])?;
    /// assert_eq!(n.index(), 0); // the first node added
    /// # Ok(()) }
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }
}

/// A kernel node's function: its module is held so the function stays loaded.
pub(super) struct KernelInfo {
    pub(super) module: Arc<ModuleInner>,
    pub(super) info: FunctionInfo,
    pub(super) name: &'static &'static str,
    pub(super) sim_entry: Option<SimEntry>,
    /// The launch attributes the node was built with (kept by the instantiation).
    pub(super) attributes: crate::launch::LaunchAttributes,
}

pub(super) struct NodeState {
    pub(super) handle: NodeHandle,
    pub(super) deps: Vec<usize>,
    /// The `deps` joined by a programmatic edge (kernel nodes the node's kernel may overlap
    /// until it calls `grid::wait_dependencies`): its start does not follow their completion,
    /// and its completion does not imply theirs.
    pub(super) programmatic: Vec<usize>,
    pub(super) uses: Vec<Use>,
    pub(super) kernel: Option<Arc<KernelInfo>>,
    /// The conditional handles the node sets (a conditional node: those its body sets).
    pub(super) conds: Vec<u64>,
    /// A conditional node's: the kernels of its body; a child node's: its child's.
    pub(super) body_kernels: Vec<Arc<KernelInfo>>,
    /// The events the node records (see `Recorded::events`).
    pub(super) events: Vec<*const Event>,
}

/// A value the backend may read for the graph's lifetime (kernel arguments, host closures);
/// never accessed through the box.
pub(super) trait Kept {}
impl<T: ?Sized> Kept for T {}

pub(super) struct KeptBox<'a>(
    #[allow(dead_code, reason = "kept alive, read by the backend")] pub(super) Box<dyn Kept + 'a>,
);
// SAFETY: the box is never accessed from Rust after it is made (only dropped); the backend
// reads the plain ABI values it holds, and host closures are `Send` and called under their own
// mutex.
unsafe impl Send for KeptBox<'_> {}
// SAFETY: as above.
unsafe impl Sync for KeptBox<'_> {}

#[derive(Default)]
pub(super) struct State<'a> {
    pub(super) nodes: Vec<NodeState>,
    /// Per allocation: the byte ranges used by nodes not yet ordered before a later writer
    /// (the frontier that a new conflicting node depends on).
    pub(super) frontier: Vec<Use>,
    pub(super) frontier_node: Vec<usize>,
    /// Shared: a child node keeps its child's values too.
    pub(super) kept: Vec<Arc<KeptBox<'a>>>,
    /// Why the graph cannot be a conditional body's child graph (it holds a node CUDA allows
    /// in no body), if it cannot.
    pub(super) body_refusal: Option<&'static str>,
    /// Whether conditional handles were made for it (CUDA refuses its conditional nodes in a
    /// child graph).
    pub(super) has_conditional: bool,
}

pub(super) struct GraphInner<'a> {
    pub(super) ctx: Arc<ContextInner>,
    pub(super) handle: GraphHandle,
    pub(super) id: u64,
    pub(super) name: String,
    pub(super) state: Mutex<State<'a>>,
    /// This graph's id, then (for a conditional node's body) the ids of the graphs it is
    /// inside, innermost first.
    pub(super) lineage: Vec<u64>,
    /// Whether this owns `handle` (a body graph belongs to its conditional node).
    pub(super) owned: bool,
}

impl Drop for GraphInner<'_> {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: the last owner of the graph; instantiations are independent of it (the
            // ones reading its kept values hold this `Arc`).
            unsafe { self.ctx.backend.graph_destroy(self.handle) };
        }
    }
}

impl<'a> GraphInner<'a> {
    /// A graph with no nodes yet, over `handle`.
    pub(super) fn new(
        ctx: Arc<ContextInner>,
        handle: GraphHandle,
        name: String,
        parents: &[u64],
        owned: bool,
    ) -> Self {
        let id = NEXT_GRAPH.fetch_add(1, Ordering::Relaxed);
        GraphInner {
            ctx,
            handle,
            id,
            name,
            state: Mutex::new(State::default()),
            lineage: core::iter::once(id)
                .chain(parents.iter().copied())
                .collect(),
            owned,
        }
    }
}

impl<'a> GraphInner<'a> {
    pub(super) fn lock(&self) -> MutexGuard<'_, State<'a>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A CUDA graph being built: nodes and the dependencies between them. `'a` is what the nodes
/// borrow: buffers and host slices they use must outlive the graph and every [`GraphExec`]
/// made from it. Nodes that use overlapping bytes of one allocation, one of them writing, run
/// in the order they were added; others run concurrently unless given dependencies.
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
    pub(super) inner: Arc<GraphInner<'a>>,
    /// Invariant in `'a`: borrows are added through `&self`.
    pub(super) _a: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("name", &self.inner.name)
            .field("nodes", &self.inner.lock().nodes.len())
            .finish()
    }
}

const HOST_IN_BODY: &str = "CUDA copies only device memory inside a conditional body; copy \
                            to or from the host before or after the conditional node";

pub(super) static NEXT_GRAPH: AtomicU64 = AtomicU64::new(1);

impl Context {
    /// A new, empty graph named `name` (for error messages and fault reports).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut out = ctx.alloc_zeros::<u32>(256)?;
    /// let iota = module.kernel(iota)?;
    /// let graph = ctx.new_graph("fill")?; // the name appears in errors and fault reports
    /// graph.add_kernel(&[], &iota, LaunchConfig::for_elements(256)?, (graph.buffer_mut(&mut out),))?;
    /// graph.instantiate()?.launch(&stream)?;
    /// # Ok(()) }
    /// ```
    pub fn new_graph<'a>(&self, name: &str) -> Result<Graph<'a>> {
        not_in_host_node("Context::new_graph")?;
        let handle = self.inner.backend.graph_create()?;
        Ok(Graph {
            inner: Arc::new(GraphInner::new(
                self.inner.clone(),
                handle,
                name.to_owned(),
                &[],
                true,
            )),
            _a: PhantomData,
        })
    }
}

thread_local! {
    /// Whether this thread is running a graph host node's closure (the driver's callback
    /// thread on CUDA, the launching thread on the simulator).
    static IN_HOST_NODE: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// Refuses `operation` when called from inside a graph host node: CUDA forbids CUDA calls in
/// host functions (the driver may refuse them, deadlock or run them), and the simulator runs
/// host nodes inline on the launching thread, where a call could wait for itself (a launch of
/// the graph being launched). The runtime's entry points that reach the backend call this
/// first (through [`Stream::not_capturing`] for stream work), so neither backend relies on
/// the driver noticing.
#[inline(always)]
pub(crate) fn not_in_host_node(operation: &'static str) -> Result<()> {
    if IN_HOST_NODE.with(core::cell::Cell::get) {
        Err(Error::CallInHostFunction { operation })
    } else {
        Ok(())
    }
}

/// Whether this thread is inside a graph host node (see [`not_in_host_node`]): drops, which
/// cannot return the error, check this to leak what they would free rather than call the
/// backend (or wait for the work that runs the host node) from there.
#[inline(always)]
pub(crate) fn in_host_node() -> bool {
    IN_HOST_NODE.with(core::cell::Cell::get)
}

/// The `extern "C"` function host nodes call: runs the closure with the thread marked as
/// inside a host node (see [`not_in_host_node`]), never unwinding into the driver.
pub(super) unsafe extern "C" fn call_host(data: *mut c_void) {
    /// Clears the mark when the closure returns or unwinds.
    struct Mark(bool);
    impl Drop for Mark {
        fn drop(&mut self) {
            IN_HOST_NODE.with(|m| m.set(self.0));
        }
    }
    // SAFETY: `data` is the `HostClosure` the graph keeps until its last owner is gone, which
    // is after every launch that can call this (see `GraphExec`'s drop).
    let closure = unsafe { &*data.cast::<HostClosure>() };
    let run = std::panic::AssertUnwindSafe(|| {
        let _mark = Mark(IN_HOST_NODE.with(|m| m.replace(true)));
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

pub(super) type HostClosure = (Mutex<Box<dyn FnMut() + Send>>,);

impl<'a> Graph<'a> {
    /// The graph's name.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert_eq!(ctx.new_graph("step")?.name(), "step");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The number of nodes.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let graph = ctx.new_graph("g")?;
    /// let a = graph.add_empty(&[])?;
    /// graph.add_empty(&[a])?;
    /// assert_eq!(graph.len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.inner.lock().nodes.len()
    }

    /// Whether the graph has no nodes.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let graph = ctx.new_graph("g")?;
    /// assert!(graph.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw `CUgraph` (meaningless on the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let graph = ctx.new_graph("g")?;
    /// let raw = graph.raw(); // a CUgraph, e.g. for cuGraphDebugDotPrint
    /// # Ok(()) }
    /// ```
    pub fn raw(&self) -> cudarc::driver::sys::CUgraph {
        if self.inner.ctx.backend.is_simulator() {
            return core::ptr::null_mut();
        }
        self.inner.handle.0.cast()
    }

    /// Registers a buffer that nodes read, borrowing it for the graph's lifetime.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let x = ctx.htod_copy(&[1.0f32; 64])?;
    /// let mut y = ctx.alloc_zeros::<f32>(64)?;
    /// let graph = ctx.new_graph("saxpy")?;
    /// let (xb, yb) = (graph.buffer(&x), graph.buffer_mut(&mut y)); // `x` is only read
    /// let cfg = LaunchConfig::for_elements(64)?;
    /// graph.add_kernel(&[], &module.kernel(saxpy)?, cfg, (2.0f32, xb, yb))?;
    /// # Ok(()) }
    /// ```
    pub fn buffer<T: DeviceCopy>(&self, b: &'a DeviceBuffer<T>) -> GraphBuffer<'a, T> {
        GraphBuffer::of(b)
    }

    /// Registers a buffer that nodes read and write, borrowing it exclusively for the graph's
    /// lifetime.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut out = ctx.alloc_zeros::<u32>(64)?;
    /// let graph = ctx.new_graph("zero then fill")?;
    /// let ob = graph.buffer_mut(&mut out); // `Copy`: several nodes take it, ordered by their uses
    /// let zero = graph.add_memset_zeros(&[], ob)?;
    /// graph.add_kernel(&[zero], &module.kernel(iota)?, LaunchConfig::for_elements(64)?, (ob,))?;
    /// # Ok(()) }
    /// ```
    pub fn buffer_mut<T: DeviceCopy>(&self, b: &'a mut DeviceBuffer<T>) -> GraphBufferMut<'a, T> {
        GraphBufferMut::of(b)
    }

    /// Refuses an operation a conditional node's body cannot hold.
    /// Otherwise notes that the graph holds such a node (it cannot be the child graph of a
    /// node in a body).
    pub(super) fn not_in_body(&self, operation: &'static str, reason: &'static str) -> Result<()> {
        if self.inner.owned {
            self.inner.lock().body_refusal.get_or_insert(reason);
            Ok(())
        } else {
            Err(Error::ConditionalBody {
                operation,
                graph: self.inner.name.clone(),
                reason,
            })
        }
    }

    pub(super) fn check_deps(&self, operation: &'static str, deps: &[Node]) -> Result<Vec<usize>> {
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
    pub(super) unsafe fn add(
        &self,
        operation: &'static str,
        deps: &[Node],
        rec: Recorded,
        node: GraphNode<'_, '_>,
        kernel: Option<Arc<KernelInfo>>,
        kept: Option<KeptBox<'a>>,
    ) -> Result<Node> {
        // SAFETY: forwarded from the caller.
        unsafe { self.add_node(operation, deps, rec, node, kernel, kept, false) }
    }

    /// [`add`](Self::add); with `programmatic`, the kernel nodes among `deps` are joined by
    /// programmatic edges instead (the node is a kernel launched with
    /// `LaunchConfig::programmatic_dependent`, whose contract covers its conflicts with them).
    ///
    /// # Safety
    /// As [`add`](Self::add).
    #[allow(
        clippy::too_many_arguments,
        reason = "add's arguments and the edge kind"
    )]
    pub(super) unsafe fn add_node(
        &self,
        operation: &'static str,
        deps: &[Node],
        rec: Recorded,
        node: GraphNode<'_, '_>,
        kernel: Option<Arc<KernelInfo>>,
        kept: Option<KeptBox<'a>>,
        programmatic: bool,
    ) -> Result<Node> {
        not_in_host_node(operation)?;
        let mut deps = self.check_deps(operation, deps)?;
        let mut st = self.inner.lock();
        let index = st.nodes.len();
        let prog: Vec<usize> = if programmatic {
            let mut p: Vec<usize> = deps
                .iter()
                .copied()
                .filter(|&d| st.nodes[d].kernel.is_some())
                .collect();
            p.dedup();
            p
        } else {
            Vec::new()
        };
        conflicts(&st, &rec, &mut deps);
        let full: Vec<NodeHandle> = deps
            .iter()
            .filter(|d| !prog.contains(d))
            .map(|&d| st.nodes[d].handle)
            .collect();
        let backend = &self.inner.ctx.backend;
        // SAFETY: forwarded from the caller; `deps` are nodes of this graph.
        let handle = unsafe { backend.graph_add_node(self.inner.handle, &full, node) }?;
        let mut failed = None;
        let mut joined = Vec::with_capacity(prog.len());
        for &p in &prog {
            let from = st.nodes[p].handle;
            // SAFETY: both are kernel nodes of this live graph.
            match unsafe {
                backend.graph_add_programmatic_dependency(self.inner.handle, from, handle)
            } {
                Ok(()) => joined.push(p),
                Err(e) => {
                    // A full edge is always a valid order: the node is recorded with it, so
                    // that what it uses stays ordered, and the error is returned.
                    // SAFETY: as above.
                    unsafe { backend.graph_add_dependency(self.inner.handle, from, handle) }?;
                    failed.get_or_insert(e);
                }
            }
        }
        push_node(&mut st, handle, deps, joined, rec, kernel, kept);
        match failed {
            Some(e) => Err(e),
            None => Ok(Node {
                graph: self.inner.id,
                index,
            }),
        }
    }

    /// Adds a kernel node after `deps`, with arguments typed and checked as for
    /// [`Stream::launch`]. The arguments must outlive the graph (`A: 'a`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let x = ctx.htod_copy(&[1.0f32; 256])?;
    /// let mut y = ctx.alloc_zeros::<f32>(256)?;
    /// {
    ///     let graph = ctx.new_graph("saxpy twice")?;
    ///     let (xb, yb) = (graph.buffer(&x), graph.buffer_mut(&mut y));
    ///     let saxpy = module.kernel(saxpy)?;
    ///     let cfg = LaunchConfig::for_elements(256)?;
    ///     let first = graph.add_kernel(&[], &saxpy, cfg, (2.0f32, xb, yb))?;
    ///     graph.add_kernel(&[first], &saxpy, cfg, (2.0f32, xb, yb))?;
    ///     graph.instantiate()?.launch(&stream)?;
    /// }
    /// assert_eq!(y.to_host_vec()?[0], 4.0);
    /// # Ok(()) }
    /// ```
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
    ///
    /// # Example
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut data = ctx.htod_copy(&[1.0f32; 32])?;
    /// {
    ///     let graph = ctx.new_graph("scale")?;
    ///     let d = graph.buffer_mut(&mut data);
    ///     // SAFETY: `scale` is launched with one thread per element, at every launch of the graph.
    ///     let (scale, cfg) = (module.kernel(scale)?, LaunchConfig::for_elements(32)?);
    ///     unsafe { graph.add_kernel_unchecked(&[], &scale, cfg, (3.0f32, d))? };
    ///     graph.instantiate()?.launch(&stream)?;
    /// }
    /// assert_eq!(data.to_host_vec()?[31], 3.0);
    /// # Ok(()) }
    /// ```
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
        config.validate_typed(kernel)?;
        let mut uses = NodeUses::new(&self.inner.ctx, &self.inner.lineage);
        let abi = args.record(&mut uses, &mut Lent::new::<K>())?;
        crate::launch::args::check_same_len::<K, A>(&abi)?;
        let info = Arc::new(KernelInfo {
            module: f.module.clone(),
            info: f.info,
            name: f.name,
            sim_entry: Some(K::SIM_ENTRY),
            attributes: config.attributes,
        });
        let (kept, mut params) = pack::<K, A>(abi);
        let desc = desc_of(&info, &config);
        // SAFETY: `params` point into `kept`, stored for the graph's lifetime, holding exactly
        // the ABI values of `K::Params`; the memory they reach is `uses`, borrowed for `'a`.
        unsafe {
            self.add_node(
                OP,
                deps,
                uses.finish(),
                GraphNode::Kernel {
                    desc: &desc,
                    params: &mut params,
                },
                Some(info.clone()),
                Some(kept),
                config.attributes.programmatic_dependent,
            )
        }
    }

    /// Adds a host-to-device copy of `src` (read at each launch) into `dst`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let input = vec![7u32; 16];
    /// let mut dev = ctx.alloc_zeros::<u32>(16)?;
    /// {
    ///     let graph = ctx.new_graph("upload")?;
    ///     graph.add_memcpy_htod(&[], graph.buffer_mut(&mut dev), &input)?; // reads `input` at each launch
    ///     graph.instantiate()?.launch(&stream)?;
    /// }
    /// assert_eq!(dev.to_host_vec()?, input);
    /// # Ok(()) }
    /// ```
    pub fn add_memcpy_htod<T: DeviceCopy>(
        &self,
        deps: &[Node],
        dst: GraphBufferMut<'a, T>,
        src: &'a [T],
    ) -> Result<Node> {
        const OP: &str = "Graph::add_memcpy_htod";
        self.not_in_body(OP, HOST_IN_BODY)?;
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let dev = ctx.htod_copy(&[5u32; 8])?;
    /// let mut host = vec![0u32; 8];
    /// {
    ///     let graph = ctx.new_graph("download")?;
    ///     graph.add_memcpy_dtoh(&[], &mut host, graph.buffer(&dev))?;
    ///     graph.instantiate()?.launch(&stream)?;
    ///     stream.synchronize()?;
    /// } // `host` can be read once the graph is gone
    /// assert_eq!(host, [5; 8]);
    /// # Ok(()) }
    /// ```
    pub fn add_memcpy_dtoh<T: DeviceCopy>(
        &self,
        deps: &[Node],
        dst: &'a mut [T],
        src: impl Into<GraphBuffer<'a, T>>,
    ) -> Result<Node> {
        const OP: &str = "Graph::add_memcpy_dtoh";
        self.not_in_body(OP, HOST_IN_BODY)?;
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let src = ctx.htod_copy(&[1u32, 2, 3])?;
    /// let mut dst = ctx.alloc_zeros::<u32>(3)?;
    /// {
    ///     let graph = ctx.new_graph("copy")?;
    ///     graph.add_memcpy_dtod(&[], graph.buffer_mut(&mut dst), graph.buffer(&src))?;
    ///     graph.instantiate()?.launch(&stream)?;
    /// }
    /// assert_eq!(dst.to_host_vec()?, [1, 2, 3]);
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut flags = ctx.alloc_zeros::<u8>(4)?;
    /// {
    ///     let graph = ctx.new_graph("set")?;
    ///     graph.add_memset_d8(&[], graph.buffer_mut(&mut flags), 1)?;
    ///     graph.instantiate()?.launch(&stream)?;
    /// }
    /// assert_eq!(flags.to_host_vec()?, [1; 4]);
    /// # Ok(()) }
    /// ```
    pub fn add_memset_d8<T: AnyBitPattern>(
        &self,
        deps: &[Node],
        dst: GraphBufferMut<'a, T>,
        value: u8,
    ) -> Result<Node> {
        self.memset(deps, dst, value)
    }

    /// Adds a node zeroing `dst`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut acc = ctx.htod_copy(&[9.0f32; 4])?;
    /// {
    ///     let graph = ctx.new_graph("reset")?;
    ///     graph.add_memset_zeros(&[], graph.buffer_mut(&mut acc))?;
    ///     graph.instantiate()?.launch(&stream)?;
    /// }
    /// assert_eq!(acc.to_host_vec()?, [0.0; 4]);
    /// # Ok(()) }
    /// ```
    pub fn add_memset_zeros<T: DeviceCopy>(
        &self,
        deps: &[Node],
        dst: GraphBufferMut<'a, T>,
    ) -> Result<Node> {
        self.memset(deps, dst, 0)
    }

    pub(super) fn memset<T: DeviceCopy>(
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
    /// is caught and reported on stderr (it cannot unwind into the driver). CUDA forbids CUDA
    /// calls in host functions: every runtime call `f` makes (a launch, a copy, a
    /// synchronization, a graph launch) returns [`Error::CallInHostFunction`] on both backends,
    /// doing nothing.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use std::sync::{Arc, atomic::{AtomicU32, Ordering}};
    /// let steps = Arc::new(AtomicU32::new(0));
    /// let graph = ctx.new_graph("count")?;
    /// let counter = steps.clone();
    /// graph.add_host(&[], move || { counter.fetch_add(1, Ordering::Relaxed); })?;
    /// let exec = graph.instantiate()?;
    /// exec.launch(&stream)?;
    /// exec.launch(&stream)?;
    /// stream.synchronize()?;
    /// assert_eq!(steps.load(Ordering::Relaxed), 2);
    /// # Ok(()) }
    /// ```
    pub fn add_host(&self, deps: &[Node], f: impl FnMut() + Send + 'static) -> Result<Node> {
        self.not_in_body(
            "Graph::add_host",
            "CUDA runs no host node inside a conditional body; add it after the conditional node",
        )?;
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
                Recorded::default(),
                node,
                None,
                Some(KeptBox(closure)),
            )
        }
    }

    /// Adds an empty node: a join point for dependencies.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let graph = ctx.new_graph("join")?;
    /// let (a, b) = (graph.add_empty(&[])?, graph.add_empty(&[])?);
    /// let joined = graph.add_empty(&[a, b])?; // one node to depend on instead of two
    /// graph.add_host(&[joined], || println!("a and b are done"))?;
    /// # Ok(()) }
    /// ```
    pub fn add_empty(&self, deps: &[Node]) -> Result<Node> {
        // SAFETY: an empty node reaches no memory.
        unsafe {
            self.add(
                "Graph::add_empty",
                deps,
                Recorded::default(),
                GraphNode::Empty,
                None,
                None,
            )
        }
    }

    /// Makes `to` run after `from`. A cycle is reported by
    /// [`instantiate`](Self::instantiate) ([`Error::GraphCycle`]).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let graph = ctx.new_graph("order")?;
    /// let (a, b) = (graph.add_empty(&[])?, graph.add_empty(&[])?);
    /// graph.add_dependency(a, b)?; // b after a
    /// graph.add_dependency(b, a)?;
    /// assert!(graph.instantiate().is_err()); // Error::GraphCycle
    /// # Ok(()) }
    /// ```
    pub fn add_dependency(&self, from: Node, to: Node) -> Result<()> {
        let d = self.check_deps("Graph::add_dependency", &[from, to])?;
        let mut st = self.inner.lock();
        if st.nodes[d[1]].programmatic.contains(&d[0]) {
            return Err(Error::Unsupported {
                operation: "a full edge between two nodes a programmatic edge already joins",
                backend: "graphs",
                hint: Some(
                    "add the dependent kernel node without LaunchConfig::programmatic_dependent if it must wait for the whole of the other",
                ),
            });
        }
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

    pub(super) fn uses_of(
        &self,
        operation: &'static str,
        parts: &[RawParts<'_>],
    ) -> Result<Recorded> {
        let mut uses = NodeUses::new(&self.inner.ctx, &self.inner.lineage);
        for p in parts {
            uses.record(operation, "a buffer", *p)?;
        }
        Ok(uses.finish())
    }

    /// Instantiates the graph ([`Error::GraphCycle`] when its dependencies form a cycle). The
    /// graph can still be changed afterwards; the instantiation keeps what it was.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut out = ctx.alloc_zeros::<u32>(128)?;
    /// let graph = ctx.new_graph("fill")?;
    /// let (iota, cfg) = (module.kernel(iota)?, LaunchConfig::for_elements(128)?);
    /// graph.add_kernel(&[], &iota, cfg, (graph.buffer_mut(&mut out),))?;
    /// let exec = graph.instantiate()?;
    /// for _ in 0..10 {
    ///     exec.launch(&stream)?; // replays cost one call each
    /// }
    /// # Ok(()) }
    /// ```
    pub fn instantiate(&self) -> Result<GraphExec<'a>> {
        not_in_host_node("Graph::instantiate")?;
        if !self.inner.owned {
            return Err(Error::ConditionalBody {
                operation: "Graph::instantiate",
                graph: self.inner.name.clone(),
                reason: "instantiate and launch the graph that holds the node",
            });
        }
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
        let nodes = st.nodes.iter().map(ExecNode::of).collect();
        drop(st);
        Ok(GraphExec {
            graph: self.inner.clone(),
            handle,
            state: Mutex::new(ExecState {
                nodes,
                flat: None,
                launched_on: Vec::new(),
            }),
        })
    }

    pub(super) fn named(&self, e: Error) -> Error {
        name_error(e, &self.inner.name)
    }
}

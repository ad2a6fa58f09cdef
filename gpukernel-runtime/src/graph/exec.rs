//! Instantiated graphs: [`GraphExec`], launched and updated.

use super::*;

// ---------------------------------------------------------------------------------------------
// Instantiated graphs
// ---------------------------------------------------------------------------------------------

pub(super) struct ExecNode<'a> {
    pub(super) handle: NodeHandle,
    /// The nodes it depends on, as instantiated (the graph's edges may change later; these
    /// cannot).
    pub(super) deps: Vec<usize>,
    /// The `deps` joined by programmatic edges.
    pub(super) programmatic: Vec<usize>,
    pub(super) uses: Vec<Use>,
    pub(super) kernel: Option<Arc<KernelInfo>>,
    pub(super) body_kernels: Vec<Arc<KernelInfo>>,
    pub(super) conds: Vec<u64>,
    pub(super) events: Vec<*const Event>,
    /// Arguments given by [`GraphExec::set_kernel_args`], replacing the graph's.
    pub(super) kept: Option<KeptBox<'a>>,
}

impl ExecNode<'_> {
    pub(super) fn of(n: &NodeState) -> Self {
        ExecNode {
            handle: n.handle,
            deps: n.deps.clone(),
            programmatic: n.programmatic.clone(),
            uses: n.uses.clone(),
            kernel: n.kernel.clone(),
            body_kernels: n.body_kernels.clone(),
            conds: n.conds.clone(),
            events: n.events.clone(),
            kept: None,
        }
    }
}

pub(super) struct ExecState<'a> {
    pub(super) nodes: Vec<ExecNode<'a>>,
    /// What a launch replays, made from `nodes` at the first launch after a change.
    pub(super) flat: Option<Flat>,
    /// The streams launched on since the last wait (for `Drop` and `update`).
    pub(super) launched_on: Vec<Stream>,
}

/// What a launch does besides `cuGraphLaunch`, flattened once: the memory uses of all nodes
/// merged per byte range (1000 nodes on two buffers replay two uses), each module of a
/// kernel node once, with the name a foreign-call failure of it will carry, and the label
/// fault reports name.
pub(super) struct Flat {
    uses: Vec<Use>,
    modules: Vec<(Arc<ModuleInner>, &'static &'static str)>,
    label: &'static &'static str,
    /// The events the graph's nodes record, each once.
    events: Vec<*const Event>,
}

impl Flat {
    fn of(graph: &str, nodes: &[ExecNode<'_>]) -> Flat {
        let mut uses: Vec<Use> = Vec::new();
        for u in nodes.iter().flat_map(|n| &n.uses) {
            match uses
                .iter_mut()
                .find(|f| core::ptr::eq(f.tracker, u.tracker) && f.span == u.span)
            {
                // The stronger access orders everything the weaker one would.
                Some(f) => f.access = f.access.max(u.access),
                None => uses.push(*u),
            }
        }
        let kernels: Vec<&Arc<KernelInfo>> = nodes
            .iter()
            .flat_map(|n| n.kernel.iter().chain(&n.body_kernels))
            .collect();
        let mut names: Vec<&str> = Vec::new();
        for k in &kernels {
            if !names.contains(k.name) {
                names.push(k.name);
            }
        }
        let label = intern(&format!(
            "graph `{graph}` (kernel nodes: {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ));
        let mut modules: Vec<(Arc<ModuleInner>, &'static &'static str)> = Vec::new();
        for k in &kernels {
            if modules.iter().any(|(m, _)| Arc::ptr_eq(m, &k.module)) {
                continue;
            }
            let mut of_module = kernels
                .iter()
                .filter(|o| Arc::ptr_eq(&o.module, &k.module))
                .map(|o| *o.name);
            let first = of_module.next().unwrap_or(*k.name);
            let name = if of_module.all(|n| n == first) {
                intern(&format!("{first} (kernel node of graph \"{graph}\")"))
            } else {
                label
            };
            modules.push((k.module.clone(), name));
        }
        let mut events: Vec<*const Event> = Vec::new();
        for &e in nodes.iter().flat_map(|n| &n.events) {
            if !events.contains(&e) {
                events.push(e);
            }
        }
        Flat {
            uses,
            modules,
            label,
            events,
        }
    }
}

/// An instantiated graph (`cuGraphExec`): launch it on a stream any number of times. It
/// borrows what its graph borrows (`'a`); dropping it waits for its launches.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::GraphExec;
/// let mut out = ctx.alloc_zeros::<u32>(64)?;
/// let graph = ctx.new_graph("fill")?;
/// let (iota, cfg) = (module.kernel(iota)?, LaunchConfig::for_elements(64)?);
/// graph.add_kernel(&[], &iota, cfg, (graph.buffer_mut(&mut out),))?;
/// let exec: GraphExec<'_> = graph.instantiate()?;
/// exec.launch(&stream)?;
/// stream.synchronize()?;
/// # Ok(()) }
/// ```
pub struct GraphExec<'a> {
    pub(super) graph: Arc<GraphInner<'a>>,
    pub(super) handle: GraphExecHandle,
    pub(super) state: Mutex<ExecState<'a>>,
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
// own, behind a mutex); the state is behind a mutex, its trackers and events are `Sync` and live
// for `'a`.
unsafe impl Send for GraphInner<'_> {}
// SAFETY: as above.
unsafe impl Sync for GraphInner<'_> {}
// SAFETY: a function handle may be used from any thread; the rest is immutable or `Sync`.
unsafe impl Send for KernelInfo {}
// SAFETY: as above.
unsafe impl Sync for KernelInfo {}

impl<'a> GraphExec<'a> {
    pub(super) fn lock(&self) -> MutexGuard<'_, ExecState<'a>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The name of the graph it was instantiated from.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let exec = ctx.new_graph("step")?.instantiate()?;
    /// assert_eq!(exec.name(), "step");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.graph.name
    }

    /// The raw `CUgraphExec` (meaningless on the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let exec = ctx.new_graph("g")?.instantiate()?;
    /// let raw = exec.raw(); // a CUgraphExec, for driver calls the runtime does not wrap
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut acc = ctx.alloc_zeros::<f32>(4)?;
    /// let ones = ctx.htod_copy(&[1.0f32; 4])?;
    /// {
    ///     let graph = ctx.new_graph("accumulate")?;
    ///     let (x, y) = (graph.buffer(&ones), graph.buffer_mut(&mut acc));
    ///     let (saxpy, cfg) = (module.kernel(saxpy)?, LaunchConfig::for_elements(4)?);
    ///     graph.add_kernel(&[], &saxpy, cfg, (1.0f32, x, y))?;
    ///     let exec = graph.instantiate()?;
    ///     for _ in 0..3 {
    ///         exec.launch(&stream)?;
    ///     }
    /// }
    /// assert_eq!(acc.to_host_vec()?, [3.0; 4]);
    /// # Ok(()) }
    /// ```
    pub fn launch(&self, stream: &Stream) -> Result<()> {
        let _range = crate::profile::nvtx_range!("graph {}", self.graph.name);
        // Before the lock: a host node of this graph launching it again would wait for itself.
        not_in_host_node("GraphExec::launch")?;
        crate::context::check_same(
            "GraphExec::launch",
            "the stream",
            &self.graph.ctx,
            stream.ctx(),
        )?;
        let mut st = self.lock();
        if st.flat.is_none() {
            st.flat = Some(Flat::of(&self.graph.name, &st.nodes));
        }
        if !st.launched_on.iter().any(|s| s.same_as(stream)) {
            st.launched_on.push(stream.clone());
        }
        let Some(flat) = &st.flat else {
            unreachable!("made above")
        };
        // In flight from the uses' ordering until the graph is launched.
        let stream = &stream.enqueuing();
        for u in &flat.uses {
            // SAFETY: the tracker belongs to an allocation borrowed for `'a`.
            unsafe { &*u.tracker }.use_on(stream, u.span, u.access)?;
        }
        for (m, name) in &flat.modules {
            m.launched.store(true, Ordering::Relaxed);
            if let Some(t) = &m.ffi {
                t.note_launch(&m.ctx, name, stream.handle());
            }
        }
        let label = flat.label;
        // SAFETY: every node's memory is borrowed for `'a` or kept by the graph, and ordered
        // on `stream` above; the driver orders launches of one instantiation.
        unsafe {
            self.graph.ctx.backend.graph_launch(
                self.handle,
                stream.handle(),
                label,
                &stream.state().last_launch,
            )
        }?;
        for &e in &flat.events {
            // SAFETY: the events of event record nodes are borrowed for `'a`.
            unsafe { &*e }.note_recorded(stream);
        }
        Ok(())
    }

    /// Replaces the arguments and configuration of kernel node `node` for the next launches
    /// (`cuGraphExecKernelNodeSetParams`): the same kernel, arguments checked as for
    /// [`Stream::launch`]. The graph itself is unchanged. An instantiation's edges cannot
    /// change, so new arguments that conflict with a node no edge orders against `node`
    /// (overlapping bytes of one allocation, one of them written) are refused
    /// ([`Error::UnorderedGraphUpdate`]) and the node keeps its arguments.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let ones = ctx.htod_copy(&[1.0f32; 4])?;
    /// let mut acc = ctx.alloc_zeros::<f32>(4)?;
    /// {
    ///     let graph = ctx.new_graph("axpy")?;
    ///     let (x, y) = (graph.buffer(&ones), graph.buffer_mut(&mut acc));
    ///     let saxpy = module.kernel(saxpy)?;
    ///     let cfg = LaunchConfig::for_elements(4)?;
    ///     let node = graph.add_kernel(&[], &saxpy, cfg, (1.0f32, x, y))?;
    ///     let exec = graph.instantiate()?;
    ///     exec.set_kernel_args(node, &saxpy, cfg, (10.0f32, x, y))?; // a = 10 from now on
    ///     exec.launch(&stream)?;
    /// }
    /// assert_eq!(acc.to_host_vec()?, [10.0; 4]);
    /// # Ok(()) }
    /// ```
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
    ///
    /// # Example
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut data = ctx.htod_copy(&[1.0f32; 4])?;
    /// {
    ///     let graph = ctx.new_graph("scale")?;
    ///     let d = graph.buffer_mut(&mut data);
    ///     let (scale, cfg) = (module.kernel(scale)?, LaunchConfig::for_elements(4)?);
    ///     // SAFETY (both): one thread per element, at every launch.
    ///     let node = unsafe { graph.add_kernel_unchecked(&[], &scale, cfg, (2.0f32, d))? };
    ///     let exec = graph.instantiate()?;
    ///     unsafe { exec.set_kernel_args_unchecked(node, &scale, cfg, (5.0f32, d))? };
    ///     exec.launch(&stream)?;
    /// }
    /// assert_eq!(data.to_host_vec()?, [5.0; 4]);
    /// # Ok(()) }
    /// ```
    pub unsafe fn set_kernel_args_unchecked<K: Kernel, A: LaunchArgs<K::Params> + 'a>(
        &self,
        node: Node,
        kernel: &TypedKernel<K>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        const OP: &str = "GraphExec::set_kernel_args";
        not_in_host_node(OP)?;
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
        config.validate_typed(kernel)?;
        if let Some(k) = &st.nodes[node.index].kernel
            && k.attributes != config.attributes
        {
            return Err(Error::GraphNodeAttributesChanged {
                operation: OP,
                node: node.index,
                kernel: (*k.name).to_string(),
                graph: self.graph.name.clone(),
                change: format!(
                    "the launch attributes {:?} differ from the node's {:?}",
                    config.attributes, k.attributes
                ),
            });
        }
        let mut uses = NodeUses::new(&self.graph.ctx, &self.graph.lineage);
        let abi = args.record(&mut uses, &mut Lent::new::<K>())?;
        crate::launch::args::check_same_len::<K, A>(&abi)?;
        if uses
            .conds
            .iter()
            .any(|c| !st.nodes[node.index].conds.contains(c))
        {
            return Err(Error::ConditionalHandleMisused {
                operation: OP,
                graph: self.graph.name.clone(),
                reason: "a node can only be given the conditional handles it took when the \
                         graph was built (the graph orders the nodes that set one handle)",
            });
        }
        unordered_conflict(&self.graph.name, &st.nodes, node.index, &uses.uses)?;
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
        st.flat = None;
        Ok(())
    }

    /// Updates this instantiation to the node parameters of `graph`, which must have the
    /// same nodes and edges (`cuGraphExecUpdate`): [`Error::GraphUpdateRefused`] otherwise,
    /// and this instantiation is unchanged. Waits for this instantiation's pending launches
    /// first.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let (mut a, mut b) = (ctx.alloc_zeros::<u8>(4)?, ctx.alloc_zeros::<u8>(4)?);
    /// {
    ///     let first = ctx.new_graph("set")?;
    ///     first.add_memset_d8(&[], first.buffer_mut(&mut a), 1)?;
    ///     let mut exec = first.instantiate()?;
    ///     let second = ctx.new_graph("set")?; // same shape, other parameters
    ///     second.add_memset_d8(&[], second.buffer_mut(&mut b), 2)?;
    ///     exec.update(&second)?; // cheaper than instantiating `second`
    ///     exec.launch(&stream)?;
    /// }
    /// assert_eq!(b.to_host_vec()?, [2; 4]);
    /// # Ok(()) }
    /// ```
    pub fn update(&mut self, graph: &Graph<'a>) -> Result<()> {
        not_in_host_node("GraphExec::update")?;
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
        // The instantiation keeps its edges (an update changes parameters only), and
        // `set_kernel_args` orders nodes by them: each node must have the same dependencies,
        // joined by edges of the same kind, whatever the backend would accept.
        let sorted = |d: &[usize]| {
            let mut d = d.to_vec();
            d.sort_unstable();
            d.dedup();
            d
        };
        if let Some(i) = gst.nodes.iter().zip(&st.nodes).position(|(new, old)| {
            sorted(&new.deps) != sorted(&old.deps)
                || sorted(&new.programmatic) != sorted(&old.programmatic)
        }) {
            return Err(Error::GraphUpdateRefused {
                graph: self.graph.name.clone(),
                reason: format!(
                    "the topology changed (node {i} has other dependencies, or edges of \
                     another kind: full or programmatic); instantiate the new graph instead"
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
        st.nodes = gst.nodes.iter().map(ExecNode::of).collect();
        st.flat = None;
        drop(gst);
        drop(st);
        self.graph = graph.inner.clone();
        Ok(())
    }

    /// Waits for the streams this was launched on (what a launch may still use).
    pub(super) fn wait_launches(&self, st: &mut ExecState<'a>) -> Result<()> {
        for s in &st.launched_on {
            s.wait_idle()?;
        }
        st.launched_on.clear();
        Ok(())
    }
}

/// Refuses new uses `uses` for node `node` of an instantiated graph when one conflicts with a
/// use of a node that no path of edges orders before or after it (overlapping bytes of one
/// allocation, one of them written): the graph ordered its nodes by the uses they were built
/// with, and an instantiation's edges cannot change (`cuGraphExecKernelNodeSetParams` changes
/// parameters only).
fn unordered_conflict(
    graph: &str,
    nodes: &[ExecNode<'_>],
    node: usize,
    uses: &[Use],
) -> Result<()> {
    let n = nodes.len();
    // Mark the nodes ordered with `node`. Before it: those that complete before it starts (a
    // path of edges whose last edge is a full one: a node starts after its full dependencies
    // complete and after its programmatic ones start) and its own programmatic dependencies
    // (their kernels' contract orders the two). After it: those that start after it completes
    // (a path whose first edge is a full one) and its own programmatic dependents.
    let mut ordered = vec![false; n];
    let mut seen = vec![false; n];
    let mut stack = vec![node];
    while let Some(v) = stack.pop() {
        for &d in &nodes[v].deps {
            if v == node || !nodes[v].programmatic.contains(&d) {
                ordered[d] = true;
            }
            if !seen[d] {
                seen[d] = true;
                stack.push(d);
            }
        }
    }
    let mut succ: Vec<Vec<(usize, bool)>> = vec![Vec::new(); n];
    for (v, x) in nodes.iter().enumerate() {
        for &d in &x.deps {
            succ[d].push((v, x.programmatic.contains(&d)));
        }
    }
    let mut stack = Vec::new();
    for &(s, programmatic) in &succ[node] {
        ordered[s] = true;
        if !programmatic {
            stack.push(s);
        }
    }
    let mut after = vec![false; n];
    while let Some(v) = stack.pop() {
        if after[v] {
            continue;
        }
        after[v] = true;
        ordered[v] = true;
        for &(s, _) in &succ[v] {
            stack.push(s);
        }
    }
    for (other, x) in nodes.iter().enumerate() {
        if other == node || ordered[other] {
            continue;
        }
        for u in uses {
            if let Some(o) = x
                .uses
                .iter()
                .find(|o| o.overlaps(u) && (o.writes() || u.writes()))
            {
                return Err(Error::UnorderedGraphUpdate {
                    graph: graph.to_owned(),
                    node,
                    other,
                    access: if u.writes() { "write" } else { "read" },
                    detail: format!(
                        "bytes {:#x}..{:#x} of an allocation that node #{other} {} at {:#x}..{:#x}",
                        u.span.0,
                        u.span.1,
                        if o.writes() { "writes" } else { "reads" },
                        o.span.0,
                        o.span.1
                    ),
                });
            }
        }
    }
    Ok(())
}

impl Drop for GraphExec<'_> {
    /// What the launches use is borrowed for `'a` or kept by the graph: the drop waits for
    /// them before the borrows end. A stream being captured cannot be waited for from the
    /// thread capturing it (its capture mode is thread-local, and the stream's own
    /// synchronization is refused during a capture), so then the context is synchronized from
    /// another thread, which the capture does not restrict. Where no wait is possible or one
    /// fails — inside a graph host node (no backend call is allowed there, and the launch
    /// running the host node may be one of this exec's), or a faulted context — the exec
    /// and everything it keeps (the graph: its host closures, kept buffers, staging memory)
    /// are leaked rather than destroyed or freed under a launch that may still use them.
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        let launched = core::mem::take(&mut st.launched_on);
        let waited = !crate::graph::in_host_node()
            && launched.iter().all(|s| {
                if s.is_capturing() {
                    let backend = &self.graph.ctx.backend;
                    std::thread::scope(|scope| {
                        scope
                            .spawn(|| backend.synchronize())
                            .join()
                            .is_ok_and(|r| r.is_ok())
                    })
                } else {
                    s.wait_idle().is_ok()
                }
            });
        if !waited {
            core::mem::forget(launched);
            core::mem::forget(self.graph.clone());
            return;
        }
        // SAFETY: the last use of the handle; its launches are done.
        unsafe { self.graph.ctx.backend.graph_exec_destroy(self.handle) };
    }
}

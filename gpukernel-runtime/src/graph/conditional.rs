//! Conditional nodes: `if` and `while` bodies whose condition a kernel node sets on the GPU,
//! so that a graph can branch or loop (an iterative solver until convergence, say) without a
//! round trip to the host.
//!
//! # Soundness
//! - A [`ConditionalHandle`] is made for one graph ([`Graph::conditional_handle`]) and can be
//!   passed only to kernel nodes of that graph or of conditional bodies inside it
//!   ([`Error::ConditionalHandleMisused`] otherwise, and for a stream launch or a capture,
//!   where CUDA would let the kernel write a handle of no running graph). The kernel parameter
//!   type `gpukernel_device::graph::ConditionalHandle` is not `DeviceCopy`, so no buffer holds
//!   one and kernels only see handles the runtime passed.
//! - Nodes that set one handle are ordered (an edge, as for a buffer they all write), so the
//!   safe device-side setter, which only the grid's first thread runs, never races.
//! - The body is built inside a closure that gets it as `&Graph<'a>`: it cannot outlive the
//!   call, borrows for the same `'a` as its graph, and what its nodes use (memory, handles,
//!   kernels) becomes the conditional node's use in the enclosing graph, which orders it
//!   against the other nodes and replays it at each launch like any node's.

use super::*;
use crate::backend::ConditionalKind;
use crate::launch::KernelArg;
use crate::launch::args::abi::Scalar;

/// The handle of a conditional node's condition ([`Graph::conditional_handle`]): pass it to
/// a kernel node for a `gpukernel_device::graph::ConditionalHandle` parameter, and to
/// [`Graph::add_if`] / [`Graph::add_while`]. `Copy`; valid only for its own graph.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let halve = ctx.load_module(halve_ptx().as_bytes())?.kernel(halve)?;
/// let mut x = ctx.alloc_zeros::<f32>(4)?;
/// let graph = ctx.new_graph("g")?;
/// let again = graph.conditional_handle(true)?;
/// // Not for a stream launch: no graph would read it.
/// let e = stream.launch(&halve, LaunchConfig::new(1, 4), (&mut x, again)).unwrap_err();
/// assert!(matches!(e, gpukernel_runtime::Error::ConditionalHandleMisused { .. }));
/// # Ok(()) }
/// ```
#[derive(Clone, Copy)]
pub struct ConditionalHandle {
    pub(super) raw: u64,
    pub(super) graph: u64,
    pub(super) graph_name: &'static &'static str,
    /// The context's address, for identity only.
    pub(super) ctx: usize,
}

impl fmt::Debug for ConditionalHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConditionalHandle")
            .field("graph", &self.graph_name)
            .field("raw", &format_args!("{:#x}", self.raw))
            .finish()
    }
}

// SAFETY: passes the raw handle by value; it reaches no memory. A plain stream launch is
// refused (no graph runs that could read it); for a node, `record_conditional` checks that the
// node is inside the handle's graph and records it, so the graph orders its setters.
unsafe impl KernelArg<gpukernel_device::graph::ConditionalHandle> for ConditionalHandle {
    type Safety = Safe;
    type Abi = Scalar<gpukernel_device::graph::ConditionalHandle>;
    fn lower(self, _stream: &crate::stream::Enqueuing<'_>, _lent: &mut Lent) -> Result<Self::Abi> {
        Err(Error::ConditionalHandleMisused {
            operation: "Stream::launch",
            graph: self.graph_name.to_string(),
            reason: "a conditional handle is set by kernel nodes of its graph, not by a stream \
                     launch; add the kernel to the graph with `Graph::add_kernel`",
        })
    }
    fn record(self, uses: &mut NodeUses<'_>, _lent: &mut Lent) -> Result<Self::Abi> {
        uses.record_conditional("Graph::add_kernel", &self)?;
        // SAFETY: a handle of the graph the node runs in (checked above).
        Ok(Scalar(unsafe {
            gpukernel_device::__private::conditional_handle_from_raw(self.raw)
        }))
    }
}

impl<'a> Graph<'a> {
    /// A new handle for a conditional node of this graph (`cuGraphConditionalHandleCreate`),
    /// set to `default` at the start of every launch; kernel nodes change it. See
    /// [`add_while`](Self::add_while) for a loop.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let halve = ctx.load_module(halve_ptx().as_bytes())?.kernel(halve)?;
    /// let mut x = ctx.htod_copy(&[40.0f32, 3.0, 0.5])?;
    /// {
    ///     let graph = ctx.new_graph("halve until at most 1")?;
    ///     let again = graph.conditional_handle(true)?;
    ///     let xb = graph.buffer_mut(&mut x);
    ///     graph.add_while(&[], again, |body| {
    ///         body.add_kernel(&[], &halve, LaunchConfig::new(1, 32), (xb, again))?;
    ///         Ok(())
    ///     })?;
    ///     graph.instantiate()?.launch(&stream)?; // six rounds, no host round trip
    ///     stream.synchronize()?;
    /// }
    /// assert_eq!(x.to_host_vec()?, [0.625, 0.046875, 0.0078125]);
    /// # Ok(()) }
    /// ```
    pub fn conditional_handle(&self, default: bool) -> Result<ConditionalHandle> {
        // SAFETY: the graph is live.
        let raw = unsafe {
            self.inner
                .ctx
                .backend
                .graph_conditional_handle(self.inner.handle, default as u32)
        }?;
        self.inner.lock().has_conditional = true;
        Ok(ConditionalHandle {
            raw,
            graph: self.inner.id,
            graph_name: intern(&self.inner.name),
            ctx: Arc::as_ptr(&self.inner.ctx).addr(),
        })
    }

    /// Adds an `if` node after `deps`: when it runs, its body runs once if `cond` is non-zero.
    /// `body` builds the body's nodes (it may take `cond` too, and nest conditional nodes). If
    /// `body` fails, the node is kept with the nodes built so far and the error returned.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let halve = ctx.load_module(halve_ptx().as_bytes())?.kernel(halve)?;
    /// let (mut x, mut y) = (ctx.htod_copy(&[4.0f32])?, ctx.alloc_zeros::<f32>(1)?);
    /// {
    ///     let graph = ctx.new_graph("branch")?;
    ///     let above = graph.conditional_handle(false)?;
    ///     let (xb, yb) = (graph.buffer_mut(&mut x), graph.buffer_mut(&mut y));
    ///     let h = graph.add_kernel(&[], &halve, LaunchConfig::new(1, 1), (xb, above))?;
    ///     // Runs only while x is still above 1 after the halving: 4 → 2 yes, 2 → 1 no.
    ///     graph.add_if(&[h], above, |body| body.add_memset_d8(&[], yb, 0x3f).map(drop))?;
    ///     let exec = graph.instantiate()?;
    ///     exec.launch(&stream)?;
    ///     exec.launch(&stream)?;
    ///     stream.synchronize()?;
    /// }
    /// assert_eq!(y.to_host_vec()?[0].to_bits(), 0x3f3f3f3f);
    /// # Ok(()) }
    /// ```
    pub fn add_if(
        &self,
        deps: &[Node],
        cond: ConditionalHandle,
        body: impl FnOnce(&Graph<'a>) -> Result<()>,
    ) -> Result<Node> {
        self.add_conditional("Graph::add_if", deps, cond, ConditionalKind::If, body)
    }

    /// Adds a `while` node after `deps`: when it runs, its body runs again and again while
    /// `cond` is non-zero (tested before each run, so possibly never). A kernel of the body
    /// usually sets `cond` for the next test. As [`add_if`](Self::add_if) otherwise.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let halve = ctx.load_module(halve_ptx().as_bytes())?.kernel(halve)?;
    /// let mut x = ctx.htod_copy(&[40.0f32, 3.0, 0.5])?;
    /// {
    ///     let graph = ctx.new_graph("halve until at most 1")?;
    ///     let again = graph.conditional_handle(true)?;
    ///     let xb = graph.buffer_mut(&mut x);
    ///     graph.add_while(&[], again, |body| {
    ///         body.add_kernel(&[], &halve, LaunchConfig::new(1, 32), (xb, again))?;
    ///         Ok(())
    ///     })?;
    ///     graph.instantiate()?.launch(&stream)?; // six rounds, no host round trip
    ///     stream.synchronize()?;
    /// }
    /// assert_eq!(x.to_host_vec()?, [0.625, 0.046875, 0.0078125]);
    /// # Ok(()) }
    /// ```
    pub fn add_while(
        &self,
        deps: &[Node],
        cond: ConditionalHandle,
        body: impl FnOnce(&Graph<'a>) -> Result<()>,
    ) -> Result<Node> {
        self.add_conditional("Graph::add_while", deps, cond, ConditionalKind::While, body)
    }

    fn add_conditional(
        &self,
        operation: &'static str,
        deps: &[Node],
        cond: ConditionalHandle,
        kind: ConditionalKind,
        body: impl FnOnce(&Graph<'a>) -> Result<()>,
    ) -> Result<Node> {
        if cond.graph != self.inner.id {
            return Err(Error::ConditionalHandleMisused {
                operation,
                graph: cond.graph_name.to_string(),
                reason: "a conditional node must be in the graph its handle was made for",
            });
        }
        let mut deps = self.check_deps(operation, deps)?;
        let handles: Vec<NodeHandle> = {
            let st = self.inner.lock();
            deps.iter().map(|&d| st.nodes[d].handle).collect()
        };
        let mut body_handle = GraphHandle::NULL;
        // SAFETY: the graph is live, `handles` are its nodes, the handle was made for it
        // (checked); the body is empty.
        let node = unsafe {
            self.inner.ctx.backend.graph_add_node(
                self.inner.handle,
                &handles,
                GraphNode::Conditional {
                    handle: cond.raw,
                    kind,
                    body: &mut body_handle,
                },
            )
        }?;
        let label = match kind {
            ConditionalKind::If => "if",
            ConditionalKind::While => "while",
        };
        let graph = Graph {
            inner: Arc::new(GraphInner::new(
                self.inner.ctx.clone(),
                body_handle,
                format!("{} ({label} body)", self.inner.name),
                &self.inner.lineage,
                false,
            )),
            _a: PhantomData,
        };
        let built = body(&graph);
        // What the body's nodes do is the conditional node's, in this graph: whatever `body`
        // returned, the nodes it added are part of the graph now.
        let mut rec = Recorded::default();
        let kept = {
            let mut bst = graph.inner.lock();
            for n in bst.nodes.drain(..) {
                rec.uses.extend(n.uses);
                for c in n.conds {
                    if !rec.conds.contains(&c) {
                        rec.conds.push(c);
                    }
                }
                rec.body_kernels.extend(n.kernel);
                rec.body_kernels.extend(n.body_kernels);
                rec.events.extend(n.events);
            }
            core::mem::take(&mut bst.kept)
        };
        let mut st = self.inner.lock();
        let explicit = deps.len();
        conflicts(&st, &rec, &mut deps);
        for &d in &deps[explicit..] {
            // SAFETY: both nodes belong to this live graph.
            unsafe {
                self.inner.ctx.backend.graph_add_dependency(
                    self.inner.handle,
                    st.nodes[d].handle,
                    node,
                )
            }?;
        }
        let index = push_node(&mut st, node, deps, Vec::new(), rec, None, None);
        st.kept.extend(kept);
        built?;
        Ok(Node {
            graph: self.inner.id,
            index,
        })
    }
}

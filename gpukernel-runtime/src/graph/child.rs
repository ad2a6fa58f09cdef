//! Event record / wait nodes and child graph nodes.
//!
//! # Soundness
//! - An event node borrows its [`Event`] for the graph's `'a`: the event cannot be dropped
//!   while the graph or an instantiation of it may record or wait on it. Each launch notes
//!   the record on the launch's stream (as [`Event::record`] does), so a fault or a failed
//!   foreign call seen through the event names the graph.
//! - A child graph node runs a copy of the child taken when the node is added (CUDA clones
//!   it). The child borrows for the same `'a` as the parent (`Graph` is invariant in `'a`),
//!   so what its nodes use outlives the parent's instantiations exactly as the parent's own
//!   buffers do; the parent shares the child's kept values (kernel arguments, host closures)
//!   as they were then, so dropping or changing the child later changes nothing the parent
//!   runs. The child's memory uses become the child node's, which orders it against the
//!   parent's other nodes and replays them at each launch.

use super::*;

const EVENT_IN_BODY: &str = "CUDA runs no event record or wait node inside a conditional body; \
                             add it before or after the conditional node";

impl<'a> Graph<'a> {
    /// Adds a node recording `event` once `deps` are done (`cuGraphAddEventRecordNode`): at
    /// each launch the event marks the point after `deps`, for [`Event::synchronize`],
    /// [`Stream::wait_event`](crate::Stream::wait_event) or another graph's
    /// [`add_event_wait`](Self::add_event_wait). The event is borrowed for the graph's
    /// lifetime.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut out = ctx.alloc_zeros::<u32>(256)?;
    /// let filled = ctx.new_event()?;
    /// {
    ///     let graph = ctx.new_graph("fill, then mark")?;
    ///     let (iota, cfg) = (module.kernel(iota)?, LaunchConfig::for_elements(256)?);
    ///     let k = graph.add_kernel(&[], &iota, cfg, (graph.buffer_mut(&mut out),))?;
    ///     graph.add_event_record(&[k], &filled)?; // recorded after the kernel, at each launch
    ///     graph.instantiate()?.launch(&stream)?;
    ///     filled.synchronize()?; // the host waits for the kernel node only
    /// }
    /// assert_eq!(out.to_host_vec()?[255], 255);
    /// # Ok(()) }
    /// ```
    pub fn add_event_record(&self, deps: &[Node], event: &'a Event) -> Result<Node> {
        self.event_node("Graph::add_event_record", deps, event, true)
    }

    /// Adds a node that waits for the last record of `event` (`cuGraphAddEventWaitNode`):
    /// the nodes that depend on it start after the work the event marks, recorded on any
    /// stream or by another graph's [`add_event_record`](Self::add_event_record) node. The
    /// event is borrowed for the graph's lifetime.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use std::sync::{Arc, atomic::{AtomicU32, Ordering}};
    /// let (producer, consumer) = (ctx.new_stream()?, ctx.new_stream()?);
    /// let ready = ctx.new_event()?;
    /// let seen = Arc::new(AtomicU32::new(0));
    /// let graph = ctx.new_graph("consume")?;
    /// let wait = graph.add_event_wait(&[], &ready)?;
    /// let s = seen.clone();
    /// graph.add_host(&[wait], move || { s.fetch_add(1, Ordering::SeqCst); })?; // after `ready`
    /// let exec = graph.instantiate()?;
    /// let staged = producer.htod_copy(&[1.0f32; 1024])?;
    /// ready.record(&producer)?;
    /// exec.launch(&consumer)?; // runs its host node once the copy is done
    /// consumer.synchronize()?;
    /// assert_eq!(seen.load(Ordering::SeqCst), 1);
    /// # Ok(()) }
    /// ```
    pub fn add_event_wait(&self, deps: &[Node], event: &'a Event) -> Result<Node> {
        self.event_node("Graph::add_event_wait", deps, event, false)
    }

    fn event_node(
        &self,
        operation: &'static str,
        deps: &[Node],
        event: &'a Event,
        record: bool,
    ) -> Result<Node> {
        crate::context::check_same(operation, "the event", &self.inner.ctx, event.ctx())?;
        self.not_in_body(operation, EVENT_IN_BODY)?;
        let rec = Recorded {
            events: if record {
                vec![core::ptr::from_ref(event)]
            } else {
                Vec::new()
            },
            ..Recorded::default()
        };
        let node = if record {
            GraphNode::EventRecord {
                event: event.handle(),
            }
        } else {
            GraphNode::EventWait {
                event: event.handle(),
            }
        };
        // SAFETY: the node reaches no memory; the event is borrowed for `'a`.
        unsafe { self.add(operation, deps, rec, node, None, None) }
    }

    /// Adds a node running `child` once `deps` are done (`cuGraphAddChildGraphNode`): a copy
    /// of `child` as it is now (nodes added to `child` later are not in it). The child's
    /// nodes use memory borrowed for the same `'a`, so the node is ordered against the other
    /// nodes that conflict with any of them; its host closures and kernel arguments are kept
    /// by this graph too, so `child` can be dropped, changed or added again.
    ///
    /// Refused ([`Error::ChildGraphRefused`]): this graph itself, a graph of another context,
    /// a conditional node's body, a graph with conditional handles (CUDA allows no
    /// conditional node in a child graph). A child with a dependency cycle is
    /// [`Error::GraphCycle`]; inside a conditional body, a child holding a node a body cannot
    /// (host calls, host copies, event nodes) is [`Error::ConditionalBody`].
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let x = ctx.htod_copy(&[1.0f32; 64])?;
    /// let mut y = ctx.alloc_zeros::<f32>(64)?;
    /// {
    ///     let (saxpy, cfg) = (module.kernel(saxpy)?, LaunchConfig::for_elements(64)?);
    ///     let step = ctx.new_graph("step")?; // y += 2x, then y += x
    ///     let (xb, yb) = (step.buffer(&x), step.buffer_mut(&mut y));
    ///     let a = step.add_kernel(&[], &saxpy, cfg, (2.0f32, xb, yb))?;
    ///     step.add_kernel(&[a], &saxpy, cfg, (1.0f32, xb, yb))?;
    ///     let run = ctx.new_graph("two steps")?;
    ///     let first = run.add_child(&[], &step)?;
    ///     run.add_child(&[], &step)?; // after `first`: both write y
    ///     drop(step); // the parent keeps what its copies use
    ///     let exec = run.instantiate()?;
    ///     exec.launch(&stream)?;
    ///     exec.launch(&stream)?;
    /// }
    /// assert_eq!(y.to_host_vec()?, [12.0; 64]); // 2 launches × 2 steps × 3x
    /// # Ok(()) }
    /// ```
    pub fn add_child(&self, deps: &[Node], child: &Graph<'a>) -> Result<Node> {
        const OP: &str = "Graph::add_child";
        let refuse = |reason| {
            Err(Error::ChildGraphRefused {
                operation: OP,
                child: child.inner.name.clone(),
                graph: self.inner.name.clone(),
                reason,
            })
        };
        if Arc::ptr_eq(&self.inner, &child.inner) {
            return refuse("a graph cannot run itself as a child; add a copy made separately");
        }
        if !Arc::ptr_eq(&self.inner.ctx, &child.inner.ctx) {
            return refuse("the graphs belong to different contexts");
        }
        if !child.inner.owned {
            return refuse(
                "a conditional body belongs to its node; build the child as a graph of its own",
            );
        }
        let mut deps = self.check_deps(OP, deps)?;
        // Both locks, in a fixed order (two graphs adding each other from two threads never
        // wait on each other): the child cannot change between the snapshot of what its nodes
        // use and keep and the backend's copy of it.
        let (mut st, cst) = if self.inner.id < child.inner.id {
            let st = self.inner.lock();
            (st, child.inner.lock())
        } else {
            let cst = child.inner.lock();
            (self.inner.lock(), cst)
        };
        if cst.has_conditional {
            return refuse(
                "CUDA allows no conditional node in a child graph; add the conditional node to \
                 the parent",
            );
        }
        let child_deps: Vec<&[usize]> = cst.nodes.iter().map(|n| n.deps.as_slice()).collect();
        if let Some(nodes) = find_cycle(&child_deps) {
            return Err(Error::GraphCycle {
                graph: child.inner.name.clone(),
                nodes,
            });
        }
        if let (false, Some(reason)) = (self.inner.owned, cst.body_refusal) {
            return Err(Error::ConditionalBody {
                operation: OP,
                graph: self.inner.name.clone(),
                reason,
            });
        }
        let mut rec = Recorded::default();
        for n in &cst.nodes {
            for u in &n.uses {
                match rec
                    .uses
                    .iter_mut()
                    .find(|f| core::ptr::eq(f.tracker, u.tracker) && f.span == u.span)
                {
                    // The stronger access orders everything the weaker one would.
                    Some(f) => f.access = f.access.max(u.access),
                    None => rec.uses.push(*u),
                }
            }
            rec.body_kernels.extend(n.kernel.iter().cloned());
            rec.body_kernels.extend(n.body_kernels.iter().cloned());
            for &e in &n.events {
                if !rec.events.contains(&e) {
                    rec.events.push(e);
                }
            }
        }
        conflicts(&st, &rec, &mut deps);
        let handles: Vec<NodeHandle> = deps.iter().map(|&d| st.nodes[d].handle).collect();
        // SAFETY: both graphs are live and distinct, `handles` are nodes of this one; the
        // child has no conditional node (no handle was made for it) and no cycle; what its
        // nodes reach is `rec.uses` (borrowed for `'a`) or its kept values, which this graph
        // holds from now on.
        let handle = unsafe {
            self.inner.ctx.backend.graph_add_node(
                self.inner.handle,
                &handles,
                GraphNode::Child {
                    graph: child.inner.handle,
                },
            )
        }?;
        let kept = cst.kept.clone();
        drop(cst);
        let index = push_node(&mut st, handle, deps, Vec::new(), rec, None, None);
        st.kept.extend(kept);
        let node = Node {
            graph: self.inner.id,
            index,
        };
        Ok(node)
    }
}

//! What the nodes of a graph do with memory: byte ranges per allocation, and the buffer
//! handles nodes take.

use super::*;

// ---------------------------------------------------------------------------------------------
// Memory uses
// ---------------------------------------------------------------------------------------------

/// One node's use of bytes of an allocation; the tracker is valid for the graph's `'a`.
#[derive(Clone, Copy)]
pub(super) struct Use {
    pub(super) tracker: *const Tracker,
    pub(super) span: (u64, u64),
    pub(super) access: Access,
}

impl Use {
    pub(super) fn writes(&self) -> bool {
        self.access != Access::Read
    }

    pub(super) fn overlaps(&self, other: &Use) -> bool {
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
    pub(super) ctx: &'g Arc<ContextInner>,
    pub(super) uses: Vec<Use>,
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
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::GraphBuffer;
/// let x = ctx.htod_copy(&[1.0f32; 8])?;
/// let (mut y1, mut y2) = (ctx.alloc_zeros::<f32>(8)?, ctx.alloc_zeros::<f32>(8)?);
/// let graph = ctx.new_graph("two outputs")?;
/// let xb: GraphBuffer<'_, f32> = graph.buffer(&x); // read by both nodes, which may run concurrently
/// let (saxpy, cfg) = (module.kernel(saxpy)?, LaunchConfig::for_elements(8)?);
/// graph.add_kernel(&[], &saxpy, cfg, (1.0f32, xb, graph.buffer_mut(&mut y1)))?;
/// graph.add_kernel(&[], &saxpy, cfg, (2.0f32, xb, graph.buffer_mut(&mut y2)))?;
/// # Ok(()) }
/// ```
pub struct GraphBuffer<'a, T: DeviceCopy> {
    pub(super) ptr: u64,
    pub(super) len: usize,
    pub(super) ctx: &'a Arc<ContextInner>,
    pub(super) tracker: &'a Tracker,
    pub(super) _t: PhantomData<&'a [T]>,
}

/// A buffer read and written by a graph's nodes for its lifetime `'a`
/// ([`Graph::buffer_mut`]); `Copy`, so several nodes can take it (nodes that conflict on it
/// are ordered).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::GraphBufferMut;
/// let mut out = ctx.alloc_zeros::<u32>(8)?;
/// let graph = ctx.new_graph("fill")?;
/// let o: GraphBufferMut<'_, u32> = graph.buffer_mut(&mut out);
/// graph.add_memset_zeros(&[], o)?;
/// let (iota, cfg) = (module.kernel(iota)?, LaunchConfig::for_elements(8)?);
/// graph.add_kernel(&[], &iota, cfg, (o,))?; // ordered after the memset
/// # Ok(()) }
/// ```
pub struct GraphBufferMut<'a, T: DeviceCopy> {
    pub(super) ptr: u64,
    pub(super) len: usize,
    pub(super) ctx: &'a Arc<ContextInner>,
    pub(super) tracker: &'a Tracker,
    pub(super) _t: PhantomData<&'a mut [T]>,
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
            ///
            /// ```
            /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
            /// # fn main() -> gpukernel_runtime::Result<()> {
            /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
            /// let mut out = ctx.alloc_zeros::<u32>(8)?;
            /// let graph = ctx.new_graph("g")?;
            /// let o = graph.buffer_mut(&mut out);
            /// assert_eq!((o.len(), o.read().len()), (8, 8));
            /// # Ok(()) }
            /// ```
            pub fn len(&self) -> usize {
                self.len
            }
            /// Whether there are no elements.
            ///
            /// ```
            /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
            /// # fn main() -> gpukernel_runtime::Result<()> {
            /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
            /// let mut out = ctx.alloc_zeros::<u32>(0)?;
            /// let graph = ctx.new_graph("g")?;
            /// let o = graph.buffer_mut(&mut out);
            /// assert!(o.is_empty() && o.read().is_empty());
            /// # Ok(()) }
            /// ```
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
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut y = ctx.alloc_zeros::<f32>(8)?;
    /// let mut z = ctx.alloc_zeros::<f32>(8)?;
    /// let graph = ctx.new_graph("chain")?;
    /// let (yb, zb) = (graph.buffer_mut(&mut y), graph.buffer_mut(&mut z));
    /// let (saxpy, cfg) = (module.kernel(saxpy)?, LaunchConfig::for_elements(8)?);
    /// graph.add_memset_d8(&[], yb, 0)?;
    /// graph.add_kernel(&[], &saxpy, cfg, (2.0f32, yb.read(), zb))?; // reads y after the memset
    /// # Ok(()) }
    /// ```
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

impl<'a, T: DeviceCopy> GraphBuffer<'a, T> {
    /// The handle of a buffer that nodes read, borrowed for `'a`.
    pub(super) fn of(b: &'a DeviceBuffer<T>) -> Self {
        let p = b.raw_parts();
        GraphBuffer {
            ptr: p.ptr,
            len: p.len,
            ctx: p.ctx,
            tracker: p.tracker,
            _t: PhantomData,
        }
    }
}

impl<'a, T: DeviceCopy> GraphBufferMut<'a, T> {
    /// The handle of a buffer that nodes read and write, borrowed exclusively for `'a`.
    pub(super) fn of(b: &'a mut DeviceBuffer<T>) -> Self {
        let p = b.raw_parts();
        GraphBufferMut {
            ptr: p.ptr,
            len: p.len,
            ctx: p.ctx,
            tracker: p.tracker,
            _t: PhantomData,
        }
    }
}

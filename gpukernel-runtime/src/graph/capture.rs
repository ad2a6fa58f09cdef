//! Stream capture: ordinary stream work recorded into a [`Graph`].
//!
//! # Soundness
//! [`Stream::capture`] runs a closure with a [`Capture`]: its methods enqueue on the capturing
//! stream with the same argument types and checks as [`Stream::launch`], but require what they
//! use to outlive the graph (`A: 'a`), because the graph replays them later. The `Capture`
//! cannot leave the closure (it is borrowed for a lifetime the closure does not name).
//!
//! While the stream captures, everything else that would enqueue on it or observe it is
//! refused with [`Error::StreamCapturing`] before the driver is called, leaving the capture
//! intact: [`Stream::launch`] (its arguments are borrowed only for the call), copies and any
//! other stream-ordered use of a buffer (tracker waits would wait on events recorded outside
//! the capture, which CUDA refuses), [`Stream::synchronize`], [`Stream::query`], blocking
//! copies, allocations on it and the foreign-call record reads (a buffer whose home is the
//! capturing stream, dropped during the capture, is leaked rather than freed into the
//! capture). Captured work is not ordered against other
//! streams at capture time: it does not run then. Each node records its memory uses instead,
//! and [`GraphExec::launch`] orders the launch after the pending conflicting work of every
//! stream (a buffer written on another stream before the capture is read correctly by the
//! graph's launch), exactly as for a graph built node by node.
//!
//! On CUDA the capture is `cuStreamBeginCapture` in thread-local mode: the capturing
//! thread's own capture-unsafe calls fail (instead of silently escaping the capture, as in
//! relaxed mode), while other threads, which may use the same context for unrelated work,
//! are unaffected (as they would not be in global mode). The simulator records the
//! launches, copies and memsets of a capturing stream as nodes of its graph instead of
//! running them.

use super::*;

/// One captured operation, turned into a node of the graph once the capture ends.
struct Captured<'a> {
    handle: NodeHandle,
    uses: Vec<Use>,
    kernel: Option<Arc<KernelInfo>>,
    kept: Option<KeptBox<'a>>,
}

/// The capturing stream, as the closure of [`Stream::capture`] sees it: its methods record
/// work into the graph being captured. `'a` is the graph's lifetime.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let x = ctx.htod_copy(&[1.0f32; 64])?;
/// let mut y = ctx.alloc_zeros::<f32>(64)?;
/// {
///     let saxpy = module.kernel(saxpy)?;
///     let graph = stream.capture("saxpy", |c| {
///         let yb = c.buffer_mut(&mut y);
///         c.memset_zeros(yb)?;
///         c.launch(&saxpy, LaunchConfig::for_elements(64)?, (2.0f32, &x, yb))
///     })?;
///     graph.instantiate()?.launch(&stream)?;
/// }
/// assert_eq!(y.to_host_vec()?, [2.0; 64]);
/// # Ok(()) }
/// ```
pub struct Capture<'c, 'a> {
    stream: &'c Stream,
    nodes: Mutex<Vec<Captured<'a>>>,
    /// Invariant in `'a`, like [`Graph`].
    _a: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl fmt::Debug for Capture<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capture")
            .field("stream", self.stream)
            .field(
                "nodes",
                &self.nodes.lock().unwrap_or_else(|p| p.into_inner()).len(),
            )
            .finish()
    }
}

/// Ends a capture however the closure leaves (error or panic): the stream is usable again.
struct CaptureGuard<'s> {
    stream: &'s Stream,
    ended: bool,
}

impl CaptureGuard<'_> {
    fn end(&mut self) -> Result<GraphHandle> {
        self.ended = true;
        let s = self.stream;
        // SAFETY: the capture began on this thread (`Stream::capture`) and is still open.
        let r = unsafe { s.ctx().backend.stream_end_capture(s.handle()) };
        s.state().capturing.store(false, Ordering::Release);
        r
    }
}

impl Drop for CaptureGuard<'_> {
    fn drop(&mut self) {
        if !self.ended
            && let Ok(g) = self.end()
        {
            // SAFETY: the captured graph is ours and unused.
            unsafe { self.stream.ctx().backend.graph_destroy(g) };
        }
    }
}

impl Stream {
    /// Captures the work the closure enqueues through its [`Capture`] into a new graph named
    /// `name`, without running it. See the [capture module documentation](crate::Capture)
    /// for what is refused while capturing, and why.
    ///
    /// ```no_run
    /// # use gpukernel_runtime::{Context, LaunchConfig, TypedKernel};
    /// # fn f<K: gpukernel_runtime::SafeKernel<Params = (f32, &'static [f32], gpukernel_device::DisjointSlice<'static, f32>)>>(ctx: &Context, saxpy: &TypedKernel<K>) -> gpukernel_runtime::Result<()> {
    /// let x = ctx.alloc_zeros::<f32>(1024)?;
    /// let mut y = ctx.alloc_zeros::<f32>(1024)?;
    /// let stream = ctx.new_stream()?;
    /// let graph = stream.capture("saxpy x2", |s| {
    ///     let y = s.buffer_mut(&mut y);
    ///     s.launch(saxpy, LaunchConfig::for_elements(1024)?, (2.0f32, &x, y))?;
    ///     s.launch(saxpy, LaunchConfig::for_elements(1024)?, (2.0f32, &x, y))
    /// })?;
    /// let exec = graph.instantiate()?;
    /// exec.launch(&stream)?;
    /// stream.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub fn capture<'a>(
        &self,
        name: &str,
        f: impl for<'c> FnOnce(&Capture<'c, 'a>) -> Result<()>,
    ) -> Result<Graph<'a>> {
        const OP: &str = "Stream::capture";
        not_in_host_node(OP)?;
        if self
            .state()
            .capturing
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(Error::StreamCapturing { operation: OP });
        }
        if let Err(e) = self.ctx().backend.stream_begin_capture(self.handle()) {
            self.state().capturing.store(false, Ordering::Release);
            return Err(e);
        }
        let mut guard = CaptureGuard {
            stream: self,
            ended: false,
        };
        let cap = Capture {
            stream: self,
            nodes: Mutex::new(Vec::new()),
            _a: PhantomData,
        };
        let result = f(&cap);
        let handle = guard.end();
        let handle = match (result, handle) {
            (Ok(()), Ok(h)) => h,
            (Err(e), Ok(h)) => {
                // SAFETY: the captured graph is ours and unused.
                unsafe { self.ctx().backend.graph_destroy(h) };
                return Err(e);
            }
            (Err(e), Err(_)) | (Ok(()), Err(e)) => return Err(e),
        };
        let inner = GraphInner::new(self.ctx().clone(), handle, name.to_owned(), &[], true);
        {
            let mut st = inner.lock();
            st.body_refusal = Some(
                "a captured graph may hold nodes CUDA allows in no conditional body (host \
                 copies, work a library enqueued on the raw stream)",
            );
            let nodes = cap.nodes.into_inner().unwrap_or_else(|p| p.into_inner());
            let mut previous_kernel = false;
            for (i, n) in nodes.into_iter().enumerate() {
                let deps = if i == 0 { Vec::new() } else { vec![i - 1] };
                // A kernel captured with `programmatic_dependent` after a kernel: CUDA made
                // the edge between them programmatic.
                let is_kernel = n.kernel.is_some();
                let programmatic = if previous_kernel
                    && n.kernel
                        .as_ref()
                        .is_some_and(|k| k.attributes.programmatic_dependent)
                {
                    deps.clone()
                } else {
                    Vec::new()
                };
                previous_kernel = is_kernel;
                let rec = Recorded {
                    uses: n.uses,
                    ..Recorded::default()
                };
                push_node(&mut st, n.handle, deps, programmatic, rec, n.kernel, n.kept);
            }
        }
        Ok(Graph {
            inner: Arc::new(inner),
            _a: PhantomData,
        })
    }
}

impl<'a> Capture<'_, 'a> {
    /// The capturing stream's raw `CUstream` (null on the simulator), for libraries that
    /// enqueue on it directly; their work is captured too, but nothing orders or keeps what it
    /// uses.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let graph = stream.capture("library call", |c| {
    ///     let raw = c.raw_stream(); // hand to a library that enqueues on a CUstream
    ///     Ok(())
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn raw_stream(&self) -> cudarc::driver::sys::CUstream {
        self.stream.raw()
    }

    /// The number of operations captured so far.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut out = ctx.alloc_zeros::<u32>(8)?;
    /// let graph = stream.capture("zero", |c| {
    ///     c.memset_zeros(c.buffer_mut(&mut out))?;
    ///     assert_eq!(c.len(), 1);
    ///     Ok(())
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing was captured yet.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let graph = stream.capture("nothing", |c| {
    ///     assert!(c.is_empty());
    ///     Ok(())
    /// })?;
    /// assert!(graph.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Captured<'a>>> {
        self.nodes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a buffer the captured work reads, borrowing it for the graph's lifetime.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let x = ctx.htod_copy(&[1.0f32; 32])?;
    /// let mut y = ctx.alloc_zeros::<f32>(32)?;
    /// let saxpy = module.kernel(saxpy)?;
    /// let graph = stream.capture("saxpy", |c| {
    ///     let (xb, yb) = (c.buffer(&x), c.buffer_mut(&mut y));
    ///     c.launch(&saxpy, LaunchConfig::for_elements(32)?, (2.0f32, xb, yb))
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn buffer<T: DeviceCopy>(&self, b: &'a DeviceBuffer<T>) -> GraphBuffer<'a, T> {
        GraphBuffer::of(b)
    }

    /// Registers a buffer the captured work reads and writes, borrowing it exclusively for
    /// the graph's lifetime.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut out = ctx.alloc_zeros::<u32>(32)?;
    /// let iota = module.kernel(iota)?;
    /// let graph = stream.capture("fill", |c| {
    ///     let o = c.buffer_mut(&mut out); // borrowed by the graph until it is dropped
    ///     c.launch(&iota, LaunchConfig::for_elements(32)?, (o,))
    /// })?;
    /// graph.instantiate()?.launch(&stream)?;
    /// # Ok(()) }
    /// ```
    pub fn buffer_mut<T: DeviceCopy>(&self, b: &'a mut DeviceBuffer<T>) -> GraphBufferMut<'a, T> {
        GraphBufferMut::of(b)
    }

    /// Records the operation the backend just captured.
    fn push(
        &self,
        uses: Vec<Use>,
        kernel: Option<Arc<KernelInfo>>,
        kept: Option<KeptBox<'a>>,
    ) -> Result<()> {
        let s = self.stream;
        // SAFETY: the stream is capturing on this thread (`Stream::capture`).
        let tail = unsafe { s.ctx().backend.stream_capture_tail(s.handle()) }?;
        let Some(handle) = tail else {
            return Err(Error::Unsupported {
                operation: "Stream::capture",
                backend: if s.ctx().backend.is_simulator() {
                    "simulator"
                } else {
                    "CUDA device"
                },
                hint: Some("the captured operation added no node"),
            });
        };
        self.lock().push(Captured {
            handle,
            uses,
            kernel,
            kept,
        });
        Ok(())
    }

    /// Captures a kernel launch, typed and checked as [`Stream::launch`]; the arguments must
    /// outlive the graph (`A: 'a`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let x = ctx.htod_copy(&[1.0f32; 16])?;
    /// let mut y = ctx.alloc_zeros::<f32>(16)?;
    /// {
    ///     let saxpy = module.kernel(saxpy)?;
    ///     let graph = stream.capture("saxpy", |c| {
    ///         let yb = c.buffer_mut(&mut y);
    ///         c.launch(&saxpy, LaunchConfig::for_elements(16)?, (2.0f32, &x, yb))
    ///     })?;
    ///     graph.instantiate()?.launch(&stream)?; // the kernel runs here, not during the capture
    /// }
    /// assert_eq!(y.to_host_vec()?, [2.0; 16]);
    /// # Ok(()) }
    /// ```
    pub fn launch<K: SafeKernel, A: LaunchArgs<K::Params, Safety = Safe> + 'a>(
        &self,
        kernel: &TypedKernel<K>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        // SAFETY: as `Stream::launch`: a safe kernel with safe arguments.
        unsafe { self.launch_unchecked(kernel, config, args) }
    }

    /// As [`launch`](Self::launch), also for `unsafe fn` kernels.
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
    /// let mut data = ctx.htod_copy(&[1.0f32; 16])?;
    /// {
    ///     let scale = module.kernel(scale)?;
    ///     let graph = stream.capture("scale", |c| {
    ///         let d = c.buffer_mut(&mut data);
    ///         // SAFETY: one thread per element, at every launch of the graph.
    ///         unsafe { c.launch_unchecked(&scale, LaunchConfig::for_elements(16)?, (4.0f32, d)) }
    ///     })?;
    ///     graph.instantiate()?.launch(&stream)?;
    /// }
    /// assert_eq!(data.to_host_vec()?, [4.0; 16]);
    /// # Ok(()) }
    /// ```
    pub unsafe fn launch_unchecked<K: Kernel, A: LaunchArgs<K::Params> + 'a>(
        &self,
        kernel: &TypedKernel<K>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        const OP: &str = "Capture::launch";
        let s = self.stream;
        let f = &kernel.function;
        if !Arc::ptr_eq(&f.module.ctx, s.ctx()) {
            return Err(crate::context::mismatch(
                OP,
                "the kernel",
                s.ctx(),
                &f.module.ctx,
            ));
        }
        config.validate_typed(kernel)?;
        let mut uses = NodeUses::new(s.ctx(), &[]);
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
        let mut desc = desc_of(&info, &config);
        desc.stream = s.handle();
        // SAFETY: `params` point into `kept`, kept for the graph's lifetime (the simulator
        // reads them at each launch), holding exactly the ABI values of `K::Params`; the
        // memory they reach is `uses`, borrowed for `'a`.
        unsafe {
            s.ctx()
                .backend
                .launch(&desc, &mut params, &s.state().last_launch)
        }
        .map_err(|e| not_capturable(OP, e))?;
        self.push(uses.finish().uses, Some(info), Some(kept))
    }

    /// Captures a device-to-device copy.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let src = ctx.htod_copy(&[3u32; 8])?;
    /// let mut dst = ctx.alloc_zeros::<u32>(8)?;
    /// {
    ///     let graph = stream.capture("copy", |c| c.memcpy_dtod(c.buffer_mut(&mut dst), c.buffer(&src)))?;
    ///     graph.instantiate()?.launch(&stream)?;
    /// }
    /// assert_eq!(dst.to_host_vec()?, [3; 8]);
    /// # Ok(()) }
    /// ```
    pub fn memcpy_dtod<T: DeviceCopy>(
        &self,
        dst: GraphBufferMut<'a, T>,
        src: impl Into<GraphBuffer<'a, T>>,
    ) -> Result<()> {
        const OP: &str = "Capture::memcpy_dtod";
        let s = self.stream;
        let src = src.into();
        check_len(OP, dst.len, src.len)?;
        let bytes = dst.len * size_of::<T>();
        if core::ptr::eq(src.tracker, dst.tracker)
            && src.ptr < dst.ptr + bytes as u64
            && dst.ptr < src.ptr + bytes as u64
        {
            return Err(Error::OutOfBounds {
                operation: OP,
                start: 0,
                end: dst.len,
                len: dst.len,
            });
        }
        if bytes == 0 {
            return Ok(());
        }
        let mut dst = dst;
        let mut uses = NodeUses::new(s.ctx(), &[]);
        uses.record(OP, "the destination", dst.raw_parts_mut())?;
        uses.record(OP, "the source", src.raw_parts())?;
        // SAFETY: both ranges are inside allocations borrowed for `'a`, disjoint (checked).
        unsafe {
            s.ctx()
                .backend
                .memcpy_dtod(dst.ptr, src.ptr, bytes, s.handle())
        }
        .map_err(|e| not_capturable(OP, e))?;
        self.push(uses.finish().uses, None, None)
    }

    /// Captures a host-to-device copy of `src` (pageable or pinned host memory, read when the
    /// graph runs, not now) into `dst`. The copy is added to the capture's graph as a copy
    /// node (CUDA's stream capture refuses asynchronous copies from pageable memory), after
    /// the work captured so far and before what follows, like any captured operation. For
    /// pinned memory pass its slice (`PinnedHostBuffer::as_slice`), taken before the capture.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let saxpy = module.kernel(saxpy)?;
    /// let (input, mut output) = (vec![1.0f32; 64], vec![0.0f32; 64]);
    /// let (mut x, mut y) = (ctx.alloc_zeros::<f32>(64)?, ctx.alloc_zeros::<f32>(64)?);
    /// let s = ctx.new_stream()?;
    /// {
    ///     let graph = s.capture("up, saxpy, down", |c| {
    ///         let (xb, yb) = (c.buffer_mut(&mut x), c.buffer_mut(&mut y));
    ///         c.memcpy_htod(xb, &input)?;
    ///         c.launch(&saxpy, LaunchConfig::for_elements(64)?, (3.0f32, xb.read(), yb))?;
    ///         c.memcpy_dtoh(&mut output, yb)
    ///     })?;
    ///     graph.instantiate()?.launch(&s)?;
    ///     s.synchronize()?;
    /// }
    /// assert_eq!(output, vec![3.0f32; 64]);
    /// # Ok(()) }
    /// ```
    pub fn memcpy_htod<T: DeviceCopy>(
        &self,
        dst: GraphBufferMut<'a, T>,
        src: &'a [T],
    ) -> Result<()> {
        const OP: &str = "Capture::memcpy_htod";
        check_len(OP, dst.len, src.len())?;
        let mut dst = dst;
        let node = copy_node(
            CopyEnd::Device(dst.ptr),
            CopyEnd::Host(src.as_ptr().cast_mut().cast()),
            size_of_val(src),
        );
        self.host_copy(OP, dst.raw_parts_mut(), node)
    }

    /// Captures a device-to-host copy of `src` into `dst` (pageable or pinned host memory,
    /// written when the graph runs; the host reads it once the graph and its instantiations
    /// are gone). As [`memcpy_htod`](Self::memcpy_htod) otherwise.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let y = ctx.htod_copy(&[5u32; 8])?;
    /// let mut pinned = ctx.alloc_pinned::<u32>(8)?;
    /// let s = ctx.new_stream()?;
    /// {
    ///     let out = pinned.as_mut_slice()?;
    ///     let graph = s.capture("down", |c| c.memcpy_dtoh(out, c.buffer(&y)))?;
    ///     graph.instantiate()?.launch(&s)?;
    ///     s.synchronize()?;
    /// }
    /// assert_eq!(pinned.as_slice()?, &[5u32; 8]);
    /// # Ok(()) }
    /// ```
    pub fn memcpy_dtoh<T: DeviceCopy>(
        &self,
        dst: &'a mut [T],
        src: impl Into<GraphBuffer<'a, T>>,
    ) -> Result<()> {
        const OP: &str = "Capture::memcpy_dtoh";
        let src = src.into();
        check_len(OP, dst.len(), src.len)?;
        let node = copy_node(
            CopyEnd::Host(dst.as_mut_ptr().cast()),
            CopyEnd::Device(src.ptr),
            size_of_val(dst),
        );
        self.host_copy(OP, src.raw_parts(), node)
    }

    /// Adds a copy between host memory borrowed for `'a` and `device` to the capture.
    fn host_copy(
        &self,
        operation: &'static str,
        device: RawParts<'_>,
        node: GraphNode<'_, '_>,
    ) -> Result<()> {
        if matches!(node, GraphNode::Empty) {
            return Ok(());
        }
        let s = self.stream;
        let mut uses = NodeUses::new(s.ctx(), &[]);
        uses.record(operation, "the device buffer", device)?;
        // SAFETY: the stream captures on this thread; the host end is borrowed for `'a` (the
        // graph's lifetime), the device end is in `uses`.
        let handle = unsafe { s.ctx().backend.stream_capture_node(s.handle(), node) }
            .map_err(|e| not_capturable(operation, e))?;
        self.lock().push(Captured {
            handle,
            uses: uses.finish().uses,
            kernel: None,
            kept: None,
        });
        Ok(())
    }

    /// Captures setting every byte of `dst` to `value` (element types where any byte
    /// pattern is a value).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut mask = ctx.alloc_zeros::<u8>(8)?;
    /// {
    ///     let graph = stream.capture("set", |c| c.memset_d8(c.buffer_mut(&mut mask), 0xff))?;
    ///     graph.instantiate()?.launch(&stream)?;
    /// }
    /// assert_eq!(mask.to_host_vec()?, [0xff; 8]);
    /// # Ok(()) }
    /// ```
    pub fn memset_d8<T: AnyBitPattern>(&self, dst: GraphBufferMut<'a, T>, value: u8) -> Result<()> {
        self.memset(dst, value)
    }

    /// Captures zeroing `dst`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut acc = ctx.htod_copy(&[1.0f64; 8])?;
    /// {
    ///     let graph = stream.capture("reset", |c| c.memset_zeros(c.buffer_mut(&mut acc)))?;
    ///     graph.instantiate()?.launch(&stream)?;
    /// }
    /// assert_eq!(acc.to_host_vec()?, [0.0; 8]);
    /// # Ok(()) }
    /// ```
    pub fn memset_zeros<T: DeviceCopy>(&self, dst: GraphBufferMut<'a, T>) -> Result<()> {
        self.memset(dst, 0)
    }

    fn memset<T: DeviceCopy>(&self, dst: GraphBufferMut<'a, T>, value: u8) -> Result<()> {
        const OP: &str = "Capture::memset";
        let s = self.stream;
        let bytes = dst.len * size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        let mut dst = dst;
        let mut uses = NodeUses::new(s.ctx(), &[]);
        uses.record(OP, "the destination", dst.raw_parts_mut())?;
        // SAFETY: inside an allocation exclusively borrowed for `'a`.
        unsafe { s.ctx().backend.memset_d8(dst.ptr, value, bytes, s.handle()) }
            .map_err(|e| not_capturable(OP, e))?;
        self.push(uses.finish().uses, None, None)
    }
}

/// A driver error of a capture-unsafe operation as [`Error::NotCapturable`] (the capture is
/// then invalidated: ending it fails, and the stream is usable again); other errors pass.
fn not_capturable(operation: &'static str, e: Error) -> Error {
    match e {
        Error::Driver { error, .. } if (900..=908).contains(&error.code()) => {
            Error::NotCapturable {
                operation,
                reason: error.name(),
            }
        }
        e => e,
    }
}

/// Operations that a library (NCCL's collectives, say) adds to a capture: recorded like a
/// captured launch (one node of the captured graph, with its memory uses), so the graph is
/// ordered against the other nodes and against other streams' work at each launch.
impl<'a> Capture<'_, 'a> {
    /// The capturing stream.
    pub(crate) fn stream(&self) -> &Stream {
        self.stream
    }

    /// Captures what `enqueue` enqueues on the capturing stream (given its handle) as one
    /// operation using `uses` (memory borrowed for `'a`, checked as a launch's arguments).
    /// A library may leave several nodes at the capture's end: an empty node joins them, and
    /// stands for the whole operation in the captured graph.
    pub(crate) fn record_enqueued(
        &self,
        operation: &'static str,
        uses: Vec<(&'static str, RawParts<'a>)>,
        enqueue: impl FnOnce(crate::backend::StreamHandle) -> Result<()>,
    ) -> Result<()> {
        let s = self.stream;
        let mut rec = NodeUses::new(s.ctx(), &[]);
        for (what, p) in uses {
            rec.record(operation, what, p)?;
        }
        enqueue(s.handle()).map_err(|e| not_capturable(operation, e))?;
        // SAFETY: the stream captures on this thread (`Stream::capture`); an empty node
        // reaches no memory.
        let handle = unsafe {
            s.ctx()
                .backend
                .stream_capture_node(s.handle(), GraphNode::Empty)
        }
        .map_err(|e| not_capturable(operation, e))?;
        self.lock().push(Captured {
            handle,
            uses: rec.finish().uses,
            kernel: None,
            kept: None,
        });
        Ok(())
    }

    /// Captures a call of `f` on a host thread as one operation using `uses` (how the
    /// simulator replays an operation that has no kernel: its collectives). `f` is kept by
    /// the graph, like [`Graph::add_host`]'s closure; it must reach only memory in `uses`.
    pub(crate) fn record_host(
        &self,
        operation: &'static str,
        uses: Vec<(&'static str, RawParts<'a>)>,
        f: Box<dyn FnMut() + Send>,
    ) -> Result<()> {
        let s = self.stream;
        let mut rec = NodeUses::new(s.ctx(), &[]);
        for (what, p) in uses {
            rec.record(operation, what, p)?;
        }
        let closure: Box<HostClosure> = Box::new((Mutex::new(f),));
        let data = core::ptr::from_ref::<HostClosure>(&closure)
            .cast_mut()
            .cast();
        let node = GraphNode::Host { f: call_host, data };
        // SAFETY: the stream captures on this thread; `data` points into `closure`, kept for
        // the graph's lifetime; `call_host` is sound from any thread (the closure is `Send`,
        // behind a mutex); what `f` reaches is `uses`, borrowed for `'a`.
        let handle = unsafe { s.ctx().backend.stream_capture_node(s.handle(), node) }
            .map_err(|e| not_capturable(operation, e))?;
        self.lock().push(Captured {
            handle,
            uses: rec.finish().uses,
            kernel: None,
            kept: Some(KeptBox(closure)),
        });
        Ok(())
    }
}

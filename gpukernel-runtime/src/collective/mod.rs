//! Collectives across devices: all-reduce, broadcast, all-gather and reduce-scatter on
//! [`DeviceBuffer`](crate::DeviceBuffer)s and [`Stream`]s, through NCCL on GPUs (cargo
//! feature `nccl`: cudarc's bindings, `libnccl` loaded at run time) and through the
//! simulator's own implementation on simulated devices (`GPUKERNEL_SIM_DEVICES=N`), which
//! computes the same results, so multi-device code is tested without GPUs.
//!
//! A [`Communicator`] is one rank: a context, its rank and the number of ranks. Make the
//! communicators of the GPUs of one process together with [`Communicator::for_contexts`]
//! (`ncclCommInitAll`); across processes, each process makes its rank with
//! [`Communicator::init_rank`] from a [`UniqueId`] that rank 0 made and sent to the others
//! (see `ffi-examples/examples/nccl_two_process.rs`, a runnable two-process example).
//!
//! Every collective is stream-ordered like a kernel launch: its buffers' pending work on other
//! streams is waited for first, and later work that conflicts waits for it (the trackers).
//!
//! **One thread driving several ranks** must issue their operations inside one [`group`]
//! (`ncclGroupStart` / `ncclGroupEnd`): NCCL may otherwise wait forever for the ranks not yet
//! called. A group borrows the buffers until it ends, because NCCL enqueues the grouped work
//! only then. A thread (or process) per rank calls the [`Communicator`] methods directly.
//!
//! **Multicast off.** On machines shared by several jobs, run with `NCCL_NVLS_ENABLE=0`
//! (NVLink SHARP multicast can take the GPUs out of service); this library does not set NCCL's
//! environment for you: set it in the environment of every process (and child process).
//!
//! # Several processes, several hosts
//! A communicator spanning processes (on one host or several) is joined through a
//! [`UniqueId`]: the process of rank 0 makes it ([`UniqueId::new`], which also starts NCCL's
//! bootstrap listener in that process: keep it running until every rank joined), sends its
//! 128 bytes ([`UniqueId::as_bytes`], or [`UniqueId::to_hex`] for text channels) to every
//! other process through a channel of the application's own (a shared file, a socket, MPI, a
//! job scheduler's key-value store, a child's environment or pipe), and each process calls
//! [`Communicator::init_rank`] with the id ([`UniqueId::from_bytes`] / [`UniqueId::from_hex`]
//! on the receiving side), its rank and the number of ranks, usually on the one GPU it sees
//! (`CUDA_VISIBLE_DEVICES`). It is the same code path on one host and on several: the id
//! carries the address of rank 0's listener, so the hosts must reach each other over the
//! network NCCL uses (`NCCL_SOCKET_IFNAME` chooses the interface). `init_rank` returns once
//! every rank joined.
//!
//! ```no_run
//! # use gpukernel_runtime::{Device, collective::{Communicator, ReduceOp, UniqueId}};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::io::{Read, Write};
//! // Rank `rank` of `size`, one GPU per process (the one CUDA_VISIBLE_DEVICES shows);
//! // rank 0 writes the id to the channel, the others read it (here a shared file).
//! let (rank, size): (usize, usize) = (std::env::var("RANK")?.parse()?, std::env::var("WORLD_SIZE")?.parse()?);
//! let ctx = Device::get(0)?.primary_context()?;
//! let path = "/shared/job-42.ncclid";
//! let id = if rank == 0 {
//!     let id = UniqueId::new(&ctx)?;
//!     std::fs::File::create(path)?.write_all(id.as_bytes())?;
//!     id
//! } else {
//!     let mut bytes = [0u8; UniqueId::LEN];
//!     std::fs::File::open(path)?.read_exact(&mut bytes)?;
//!     UniqueId::from_bytes(bytes)
//! };
//! let comm = Communicator::init_rank(&ctx, &id, rank, size)?;
//! let mut grad = ctx.htod_copy(&vec![rank as f32; 1 << 20])?;
//! comm.all_reduce_in_place(&ctx.default_stream(), &mut grad, ReduceOp::Sum)?;
//! # Ok(()) }
//! ```
//!
//! `ffi-examples/examples/nccl_two_process.rs` runs this: by default rank 0 starts rank 1 as
//! a child process with the id in its environment; with `--one-gpu-each` a parent starts both
//! ranks, each seeing one GPU (`CUDA_VISIBLE_DEVICES=0` / `=1`), as separate hosts would, and
//! relays the id's bytes from rank 0's pipe to rank 1's.
//!
//! # Collectives in CUDA graphs
//! NCCL (2.9 and later, CUDA 11.3 and later) lets its operations be captured into a CUDA
//! graph: [`Communicator::capture_all_reduce`] and its siblings record a collective into a
//! [`Stream::capture`](crate::Stream::capture) of the rank's stream. Like a captured launch,
//! the operation is one node of the captured graph with its memory uses (the send buffer
//! read, the receive buffer written), so nodes added later are ordered after it and each
//! [`GraphExec::launch`](crate::GraphExec::launch) is ordered after the buffers' pending work
//! on other streams. NCCL's rules, which the types cannot check:
//! - whether an operation is captured is a collective property: **every rank** captures its
//!   part of it, each into **its own graph** (one graph per rank, on the rank's stream);
//! - launching such a graph is a collective operation of the ranks of that capture: every
//!   rank launches its graph, the same number of times, in the same order relative to its
//!   other collectives;
//! - with several GPUs in one process, give each rank its own thread for the capture and for
//!   the launches (NCCL: a graph launch may block until the other ranks launch theirs, so one
//!   thread launching the graphs of several ranks in turn can deadlock). The captures run in
//!   CUDA's thread-local capture mode, which NCCL requires for that; a captured collective is
//!   refused inside [`group`].
//!
//! CUDA's graph API has no NCCL node type: a collective enters a graph only through stream
//! capture. A captured graph is an ordinary [`Graph`](crate::Graph), so it can become a child
//! graph node of a graph built node by node ([`Graph::add_child`](crate::Graph::add_child),
//! with its memory uses), which is how a collective joins explicitly built graphs.
//!
//! On the simulator a captured collective is a host node of the graph that runs the
//! simulator's collective when the graph runs; the launch is synchronous, so each rank's
//! graph must be launched from its own thread (one thread launching them in turn would wait
//! for the next rank until the simulator's patience ends). Errors of a collective that runs
//! inside a graph come back through [`Communicator::async_error`], as NCCL's asynchronous
//! errors do.

mod group;
#[cfg(feature = "nccl")]
mod nccl;
mod sim;
mod types;
#[cfg(not(feature = "nccl"))]
mod nccl {
    //! Without the `nccl` feature: every GPU collective is an error saying so.
    use crate::error::{Error, Result};

    pub(super) fn unavailable<T>() -> Result<T> {
        Err(Error::NcclUnavailable {
            reason: "gpukernel-runtime was built without its `nccl` cargo feature".into(),
            hint: "enable it: `gpukernel-runtime = { features = [\"nccl\"] }`".into(),
        })
    }
}

use core::marker::PhantomData;
use std::fmt;
use std::sync::Arc;

use std::sync::Mutex;

use crate::backend::StreamHandle;
use crate::context::{Context, ContextInner, check_same};
use crate::error::{Error, Result};
use crate::graph::{Capture, GraphBuffer, GraphBufferMut};
use crate::memory::{DeviceSlice, DeviceSliceMut, RawParts};
use crate::stream::Stream;

pub use group::{Group, group};
pub use types::{CollectiveType, DataType, ReduceOp, UniqueId};

use group::IN_GROUP;

/// Which collective, with what it needs beyond the buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    AllReduce(ReduceOp),
    Broadcast { root: usize },
    AllGather,
    ReduceScatter(ReduceOp),
}

/// One rank's part of a collective, as the implementations see it: device addresses, NCCL's
/// `count` (all-reduce and broadcast: the elements; all-gather: the elements each rank sends;
/// reduce-scatter: the elements each rank receives) and the element type.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Op {
    pub kind: Kind,
    pub send: u64,
    pub recv: u64,
    pub count: usize,
    pub dtype: DataType,
}

/// A rank of a communicator in one implementation (NCCL, the simulator).
pub(crate) trait RawComm: Send + Sync {
    /// Which implementation (a group is opened once per implementation).
    fn implementation(&self) -> &'static str;
    /// Enqueues the rank's part of `op` on `s`; `grouped` when inside a [`Group`].
    ///
    /// # Safety
    /// The addresses are live memory of the sizes `op` implies, ordered on `s` after
    /// conflicting work, kept valid (borrowed) until the operation is enqueued (the group's
    /// end when `grouped`) and then until it completes (the trackers).
    unsafe fn enqueue(&self, op: &Op, s: StreamHandle, grouped: bool) -> Result<()>;
    /// Opens a group on the calling thread.
    fn group_start(&self) -> Result<()>;
    /// Closes it: the grouped operations are enqueued (NCCL) or complete (simulator).
    fn group_end(&self) -> Result<()>;
    /// The rank's part of `op` as a call a graph's host node makes at each launch, for an
    /// implementation whose operations a stream capture cannot record (the simulator); its
    /// failures go to `failures`. `None`: the operation is enqueued on the capturing stream.
    ///
    /// # Safety
    /// As [`enqueue`](Self::enqueue), for every call of the returned closure: the memory is
    /// live, and ordered, whenever the graph runs it.
    unsafe fn replayable(&self, _op: &Op, _failures: &Failures) -> Option<HostCall> {
        None
    }
    /// The first error of the rank's operations that ran asynchronously (NCCL's
    /// `ncclCommGetAsyncError`).
    fn async_error(&self) -> Result<()> {
        Ok(())
    }
}

/// A closure a graph's host node calls.
pub(crate) type HostCall = Box<dyn FnMut() + Send>;

/// Errors of collectives that ran inside graphs on the simulator, for
/// [`Communicator::async_error`].
pub(crate) type Failures = Arc<Mutex<Vec<Error>>>;

/// One rank of a communicator: a context, its rank, and the number of ranks. `Send` but not
/// `Sync`: NCCL forbids concurrent calls on one communicator. Dropping it destroys the
/// communicator once its work is done (`ncclCommDestroy` finalizes first).
///
/// ```
/// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// let ctx = Device::simulator().primary_context()?;
/// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
/// let (comm, s) = (&comms[0], ctx.default_stream());
/// assert_eq!((comm.rank(), comm.size()), (0, 1));
/// # Ok(()) }
/// ```
pub struct Communicator {
    ctx: Arc<ContextInner>,
    rank: usize,
    size: usize,
    raw: Box<dyn RawComm>,
    failures: Failures,
    _not_sync: PhantomData<core::cell::Cell<()>>,
}

impl fmt::Debug for Communicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Communicator")
            .field("device", &self.ctx.device)
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("implementation", &self.raw.implementation())
            .finish()
    }
}

fn invalid(operation: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidCollective {
        operation,
        reason: reason.into(),
    }
}

impl Communicator {
    /// One communicator per context, ranks in list order, for the devices of this process
    /// (`ncclCommInitAll` on GPUs). The contexts must be distinct devices of one backend.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx])?;
    /// assert_eq!(comms.len(), 1);
    /// # Ok(()) }
    /// ```
    pub fn for_contexts(contexts: &[Context]) -> Result<Vec<Communicator>> {
        const OP: &str = "Communicator::for_contexts";
        let Some(first) = contexts.first() else {
            return Err(invalid(OP, "no context given"));
        };
        for (i, c) in contexts.iter().enumerate() {
            if c.is_simulator() != first.is_simulator() {
                return Err(invalid(
                    OP,
                    format!(
                        "rank {i} is {} while rank 0 is {}",
                        c.inner.label(),
                        first.inner.label()
                    ),
                ));
            }
            if let Some(j) = contexts[..i]
                .iter()
                .position(|d| Arc::ptr_eq(&d.inner, &c.inner))
            {
                return Err(invalid(
                    OP,
                    format!(
                        "ranks {j} and {i} are both {}: one rank per device",
                        c.inner.label()
                    ),
                ));
            }
        }
        let raws: Vec<Box<dyn RawComm>> = if first.is_simulator() {
            sim::comm_init_all(contexts.len())
        } else {
            #[cfg(feature = "nccl")]
            {
                nccl::comm_init_all(contexts)?
            }
            #[cfg(not(feature = "nccl"))]
            {
                return nccl::unavailable();
            }
        };
        let size = contexts.len();
        Ok(contexts
            .iter()
            .zip(raws)
            .enumerate()
            .map(|(rank, (c, raw))| Communicator {
                ctx: c.inner.clone(),
                rank,
                size,
                raw,
                failures: Failures::default(),
                _not_sync: PhantomData,
            })
            .collect())
    }

    /// Rank `rank` of `size` of the communicator that `id` names, on `ctx`: every rank calls
    /// this (each in its own process or thread) with the same `id` and `size`; on GPUs it
    /// returns once all ranks have joined (`ncclCommInitRank`). On the simulator the ranks are
    /// threads of one process.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let id = UniqueId::new(&ctx)?; // rank 0 makes it and sends `id.to_hex()` to the others
    /// let comm = Communicator::init_rank(&ctx, &id, 0, 1)?;
    /// assert_eq!(comm.size(), 1);
    /// # Ok(()) }
    /// ```
    pub fn init_rank(
        ctx: &Context,
        id: &UniqueId,
        rank: usize,
        size: usize,
    ) -> Result<Communicator> {
        const OP: &str = "Communicator::init_rank";
        if size == 0 || rank >= size {
            return Err(invalid(OP, format!("rank {rank} of {size} ranks")));
        }
        if id.simulated != ctx.is_simulator() {
            return Err(invalid(
                OP,
                format!(
                    "the id was made for {} but the context is {}",
                    if id.simulated {
                        "the simulator"
                    } else {
                        "NCCL (GPUs)"
                    },
                    ctx.inner.label()
                ),
            ));
        }
        let raw: Box<dyn RawComm> = if ctx.is_simulator() {
            sim::comm_init_rank(id, rank, size)?
        } else {
            #[cfg(feature = "nccl")]
            {
                nccl::comm_init_rank(ctx, id, rank, size)?
            }
            #[cfg(not(feature = "nccl"))]
            {
                return nccl::unavailable();
            }
        };
        Ok(Communicator {
            ctx: ctx.inner.clone(),
            rank,
            size,
            raw,
            failures: Failures::default(),
            _not_sync: PhantomData,
        })
    }

    /// This rank.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// assert_eq!(comm.rank(), 0);
    /// # Ok(()) }
    /// ```
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// assert_eq!(comm.size(), 1);
    /// # Ok(()) }
    /// ```
    pub fn size(&self) -> usize {
        self.size
    }

    /// The rank's context.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// assert_eq!(comm.context().device(), ctx.device());
    /// # Ok(()) }
    /// ```
    pub fn context(&self) -> Context {
        Context {
            inner: self.ctx.clone(),
        }
    }

    /// `recv[i] = op over ranks of send[i]` on every rank (`ncclAllReduce`).
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let x = ctx.htod_copy(&[1.0f32, 2.0])?;
    /// let mut y = ctx.alloc_zeros::<f32>(2)?;
    /// comm.all_reduce(&s, &x, &mut y, ReduceOp::Sum)?;
    /// assert_eq!(y.to_host_vec()?, [1.0, 2.0]); // one rank: the sum is the input
    /// # Ok(()) }
    /// ```
    pub fn all_reduce<T: CollectiveType>(
        &self,
        stream: &Stream,
        send: &impl DeviceSlice<T>,
        recv: &mut impl DeviceSliceMut<T>,
        op: ReduceOp,
    ) -> Result<()> {
        self.issue::<T>(
            stream,
            Kind::AllReduce(op),
            Some(send.raw_parts()),
            recv.raw_parts_mut(),
            false,
        )
    }

    /// [`all_reduce`](Self::all_reduce) with the result written over the input.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let mut v = ctx.htod_copy(&[3i32, 4])?;
    /// comm.all_reduce_in_place(&s, &mut v, ReduceOp::Max)?;
    /// assert_eq!(v.to_host_vec()?, [3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn all_reduce_in_place<T: CollectiveType>(
        &self,
        stream: &Stream,
        buf: &mut impl DeviceSliceMut<T>,
        op: ReduceOp,
    ) -> Result<()> {
        self.issue::<T>(
            stream,
            Kind::AllReduce(op),
            None,
            buf.raw_parts_mut(),
            false,
        )
    }

    /// Every rank's `recv` becomes `root`'s `send` (`ncclBroadcast`); `send` is read on the
    /// root only (other ranks may pass any buffer of the same length).
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let x = ctx.htod_copy(&[7u8; 4])?;
    /// let mut y = ctx.alloc_zeros::<u8>(4)?;
    /// comm.broadcast(&s, &x, &mut y, 0)?;
    /// assert_eq!(y.to_host_vec()?, [7; 4]);
    /// # Ok(()) }
    /// ```
    pub fn broadcast<T: CollectiveType>(
        &self,
        stream: &Stream,
        send: &impl DeviceSlice<T>,
        recv: &mut impl DeviceSliceMut<T>,
        root: usize,
    ) -> Result<()> {
        self.issue::<T>(
            stream,
            Kind::Broadcast { root },
            Some(send.raw_parts()),
            recv.raw_parts_mut(),
            false,
        )
    }

    /// [`broadcast`](Self::broadcast) in place: `buf` is the root's input and every other
    /// rank's output.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let mut v = ctx.htod_copy(&[1.5f64])?;
    /// comm.broadcast_in_place(&s, &mut v, 0)?;
    /// assert_eq!(v.to_host_vec()?, [1.5]);
    /// # Ok(()) }
    /// ```
    pub fn broadcast_in_place<T: CollectiveType>(
        &self,
        stream: &Stream,
        buf: &mut impl DeviceSliceMut<T>,
        root: usize,
    ) -> Result<()> {
        self.issue::<T>(
            stream,
            Kind::Broadcast { root },
            None,
            buf.raw_parts_mut(),
            false,
        )
    }

    /// `recv` (`size` times as long as `send`) becomes the ranks' `send`s in rank order
    /// (`ncclAllGather`).
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let x = ctx.htod_copy(&[1u32, 2])?;
    /// let mut all = ctx.alloc_zeros::<u32>(2 * comm.size())?;
    /// comm.all_gather(&s, &x, &mut all)?;
    /// assert_eq!(all.to_host_vec()?, [1, 2]);
    /// # Ok(()) }
    /// ```
    pub fn all_gather<T: CollectiveType>(
        &self,
        stream: &Stream,
        send: &impl DeviceSlice<T>,
        recv: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        self.issue::<T>(
            stream,
            Kind::AllGather,
            Some(send.raw_parts()),
            recv.raw_parts_mut(),
            false,
        )
    }

    /// `send` (`size` times as long as `recv`) is reduced over the ranks, and rank `r` gets
    /// block `r` of the result (`ncclReduceScatter`).
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let x = ctx.htod_copy(&[1i64, 2])?;
    /// let mut mine = ctx.alloc_zeros::<i64>(2 / comm.size())?;
    /// comm.reduce_scatter(&s, &x, &mut mine, ReduceOp::Sum)?;
    /// assert_eq!(mine.to_host_vec()?, [1, 2]);
    /// # Ok(()) }
    /// ```
    pub fn reduce_scatter<T: CollectiveType>(
        &self,
        stream: &Stream,
        send: &impl DeviceSlice<T>,
        recv: &mut impl DeviceSliceMut<T>,
        op: ReduceOp,
    ) -> Result<()> {
        self.issue::<T>(
            stream,
            Kind::ReduceScatter(op),
            Some(send.raw_parts()),
            recv.raw_parts_mut(),
            false,
        )
    }

    /// Captures [`all_reduce`](Self::all_reduce) into the graph `capture` records (the
    /// rank's stream must be the capturing one): the graph runs it at each launch. Every rank
    /// captures its part, each into its own graph, and every rank launches its graph; see
    /// [Collectives in CUDA graphs](self#collectives-in-cuda-graphs). The communicator is
    /// borrowed for the graph's lifetime.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{Communicator, ReduceOp}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let s = ctx.new_stream()?;
    /// let x = ctx.htod_copy(&[1.0f32, 2.0])?;
    /// let mut y = ctx.alloc_zeros::<f32>(2)?;
    /// {
    ///     let graph = s.capture("all-reduce", |c| {
    ///         comms[0].capture_all_reduce(c, c.buffer(&x), c.buffer_mut(&mut y), ReduceOp::Sum)
    ///     })?;
    ///     let exec = graph.instantiate()?;
    ///     for _ in 0..3 {
    ///         exec.launch(&s)?; // the all-reduce runs here, at each launch
    ///     }
    /// }
    /// comms[0].async_error()?;
    /// assert_eq!(y.to_host_vec()?, [1.0, 2.0]); // one rank: the sum is the input
    /// # Ok(()) }
    /// ```
    pub fn capture_all_reduce<'a, T: CollectiveType>(
        &'a self,
        capture: &Capture<'_, 'a>,
        send: impl Into<GraphBuffer<'a, T>>,
        recv: GraphBufferMut<'a, T>,
        op: ReduceOp,
    ) -> Result<()> {
        let mut recv = recv;
        self.issue_captured::<T>(
            capture,
            Kind::AllReduce(op),
            Some(send.into().raw_parts()),
            recv.raw_parts_mut(),
        )
    }

    /// [`capture_all_reduce`](Self::capture_all_reduce) with the result written over the
    /// input.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{Communicator, ReduceOp}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let s = ctx.new_stream()?;
    /// let mut v = ctx.htod_copy(&[3i32, 4])?;
    /// {
    ///     let graph = s.capture("max", |c| {
    ///         comms[0].capture_all_reduce_in_place(c, c.buffer_mut(&mut v), ReduceOp::Max)
    ///     })?;
    ///     graph.instantiate()?.launch(&s)?;
    /// }
    /// assert_eq!(v.to_host_vec()?, [3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn capture_all_reduce_in_place<'a, T: CollectiveType>(
        &'a self,
        capture: &Capture<'_, 'a>,
        buf: GraphBufferMut<'a, T>,
        op: ReduceOp,
    ) -> Result<()> {
        let mut buf = buf;
        self.issue_captured::<T>(capture, Kind::AllReduce(op), None, buf.raw_parts_mut())
    }

    /// Captures [`broadcast`](Self::broadcast) (as
    /// [`capture_all_reduce`](Self::capture_all_reduce)).
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{Communicator, ReduceOp}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let s = ctx.new_stream()?;
    /// let x = ctx.htod_copy(&[7u8; 4])?;
    /// let mut y = ctx.alloc_zeros::<u8>(4)?;
    /// {
    ///     let graph = s.capture("broadcast", |c| {
    ///         comms[0].capture_broadcast(c, c.buffer(&x), c.buffer_mut(&mut y), 0)
    ///     })?;
    ///     graph.instantiate()?.launch(&s)?;
    /// }
    /// assert_eq!(y.to_host_vec()?, [7; 4]);
    /// # Ok(()) }
    /// ```
    pub fn capture_broadcast<'a, T: CollectiveType>(
        &'a self,
        capture: &Capture<'_, 'a>,
        send: impl Into<GraphBuffer<'a, T>>,
        recv: GraphBufferMut<'a, T>,
        root: usize,
    ) -> Result<()> {
        let mut recv = recv;
        self.issue_captured::<T>(
            capture,
            Kind::Broadcast { root },
            Some(send.into().raw_parts()),
            recv.raw_parts_mut(),
        )
    }

    /// Captures [`all_gather`](Self::all_gather) (as
    /// [`capture_all_reduce`](Self::capture_all_reduce)).
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{Communicator, ReduceOp}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let s = ctx.new_stream()?;
    /// let x = ctx.htod_copy(&[1u32, 2])?;
    /// let mut all = ctx.alloc_zeros::<u32>(2 * comms[0].size())?;
    /// {
    ///     let graph = s.capture("gather", |c| {
    ///         comms[0].capture_all_gather(c, c.buffer(&x), c.buffer_mut(&mut all))
    ///     })?;
    ///     graph.instantiate()?.launch(&s)?;
    /// }
    /// assert_eq!(all.to_host_vec()?, [1, 2]);
    /// # Ok(()) }
    /// ```
    pub fn capture_all_gather<'a, T: CollectiveType>(
        &'a self,
        capture: &Capture<'_, 'a>,
        send: impl Into<GraphBuffer<'a, T>>,
        recv: GraphBufferMut<'a, T>,
    ) -> Result<()> {
        let mut recv = recv;
        self.issue_captured::<T>(
            capture,
            Kind::AllGather,
            Some(send.into().raw_parts()),
            recv.raw_parts_mut(),
        )
    }

    /// Captures [`reduce_scatter`](Self::reduce_scatter) (as
    /// [`capture_all_reduce`](Self::capture_all_reduce)).
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{Communicator, ReduceOp}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let s = ctx.new_stream()?;
    /// let x = ctx.htod_copy(&[1i64, 2])?;
    /// let mut mine = ctx.alloc_zeros::<i64>(2)?;
    /// {
    ///     let graph = s.capture("scatter", |c| {
    ///         comms[0].capture_reduce_scatter(c, c.buffer(&x), c.buffer_mut(&mut mine), ReduceOp::Sum)
    ///     })?;
    ///     graph.instantiate()?.launch(&s)?;
    /// }
    /// assert_eq!(mine.to_host_vec()?, [1, 2]);
    /// # Ok(()) }
    /// ```
    pub fn capture_reduce_scatter<'a, T: CollectiveType>(
        &'a self,
        capture: &Capture<'_, 'a>,
        send: impl Into<GraphBuffer<'a, T>>,
        recv: GraphBufferMut<'a, T>,
        op: ReduceOp,
    ) -> Result<()> {
        let mut recv = recv;
        self.issue_captured::<T>(
            capture,
            Kind::ReduceScatter(op),
            Some(send.into().raw_parts()),
            recv.raw_parts_mut(),
        )
    }

    /// The first error of this rank's collectives that ran asynchronously: NCCL's
    /// `ncclCommGetAsyncError` on GPUs; on the simulator, the failures of collectives that
    /// ran inside graphs (a rank that never launched its graph, ranks that disagree), each
    /// reported once.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{Communicator, ReduceOp}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let s = ctx.new_stream()?;
    /// let mut v = ctx.htod_copy(&[1.0f32])?;
    /// comms[0].all_reduce_in_place(&s, &mut v, ReduceOp::Sum)?;
    /// comms[0].async_error()?; // nothing failed
    /// # Ok(()) }
    /// ```
    pub fn async_error(&self) -> Result<()> {
        let first = {
            let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
            (!f.is_empty()).then(|| f.remove(0))
        };
        match first {
            Some(e) => Err(e),
            None => self.raw.async_error(),
        }
    }

    /// Checks an operation and records it into `capture` (see
    /// [`capture_all_reduce`](Self::capture_all_reduce)).
    fn issue_captured<'a, T: CollectiveType>(
        &'a self,
        capture: &Capture<'_, 'a>,
        kind: Kind,
        send: Option<RawParts<'a>>,
        recv: RawParts<'a>,
    ) -> Result<()> {
        let name = captured_operation_name(kind);
        if IN_GROUP.with(|g| g.get()) {
            return Err(invalid(
                name,
                "a collective cannot be captured inside `collective::group`: capture each \
                 rank's graph on its own thread (NCCL's rule for graphs of several GPUs)",
            ));
        }
        let stream = capture.stream();
        check_same(name, "the capturing stream", &self.ctx, stream.ctx())?;
        let (send_len, send_ptr) = send
            .as_ref()
            .map_or((recv.len, recv.ptr), |p| (p.len, p.ptr));
        let count = self.count(name, kind, send_len, recv.len)?;
        if count == 0 {
            return Ok(());
        }
        let op = Op {
            kind,
            send: send_ptr,
            recv: recv.ptr,
            count,
            dtype: T::DATA_TYPE,
        };
        let mut uses = Vec::with_capacity(2);
        if let Some(p) = send {
            uses.push(("the send buffer", p));
        }
        uses.push(("the receive buffer", recv));
        // SAFETY: both buffers are borrowed for the graph's lifetime `'a` (the graph handles),
        // their lengths match `count` (checked above); the graph's launches order them after
        // the buffers' pending work (the recorded uses) and keep them until done.
        match unsafe { self.raw.replayable(&op, &self.failures) } {
            Some(call) => capture.record_host(name, uses, call),
            None => capture.record_enqueued(name, uses, |s| {
                self.context().bind_to_thread()?;
                // SAFETY: as above; the stream is the rank's capturing stream, so NCCL records
                // the operation into the graph instead of running it.
                unsafe { self.raw.enqueue(&op, s, false) }
            }),
        }
    }

    /// Checks an operation, orders it after its buffers' pending work, and enqueues it.
    fn issue<T: CollectiveType>(
        &self,
        stream: &Stream,
        kind: Kind,
        send: Option<RawParts<'_>>,
        recv: RawParts<'_>,
        grouped: bool,
    ) -> Result<()> {
        let name = operation_name(kind);
        if !grouped && IN_GROUP.with(|g| g.get()) {
            // NCCL would defer it to the group's end, after the buffer's borrow ended.
            return Err(invalid(
                name,
                "called directly inside `collective::group`: issue it through the group (`g`)",
            ));
        }
        check_same(name, "the stream", &self.ctx, stream.ctx())?;
        let (send_len, send_ptr) = send.map_or((recv.len, recv.ptr), |p| (p.len, p.ptr));
        let count = self.count(name, kind, send_len, recv.len)?;
        // In flight until enqueued (a group's operation: until the group ends, which its
        // `Group` marks).
        let stream = &stream.enqueuing();
        if let Some(p) = send {
            p.track(name, "the send buffer", stream)?;
        }
        recv.track(name, "the receive buffer", stream)?;
        if count == 0 {
            return Ok(());
        }
        let op = Op {
            kind,
            send: send_ptr,
            recv: recv.ptr,
            count,
            dtype: T::DATA_TYPE,
        };
        // SAFETY: both buffers are live allocations (borrowed by the caller, or by the group
        // until it ends), their lengths match `count` (checked above), and the trackers
        // ordered `stream` after their pending conflicting work and keep them alive until
        // the stream's work is done.
        unsafe { self.raw.enqueue(&op, stream.handle(), grouped) }
    }

    /// NCCL's count for `kind` given the lengths, or the mismatch.
    fn count(&self, name: &'static str, kind: Kind, send: usize, recv: usize) -> Result<usize> {
        let n = self.size;
        match kind {
            Kind::AllReduce(_) | Kind::Broadcast { .. } if send != recv => {
                Err(Error::LengthMismatch {
                    operation: name,
                    destination: recv,
                    source_len: send,
                })
            }
            Kind::Broadcast { root } if root >= n => {
                Err(invalid(name, format!("root {root} is not a rank of {n}")))
            }
            Kind::AllReduce(_) | Kind::Broadcast { .. } => Ok(send),
            Kind::AllGather if send.checked_mul(n) != Some(recv) => Err(invalid(
                name,
                format!(
                    "the receive buffer holds {recv} elements; {n} ranks × {send} sent need {}",
                    send.saturating_mul(n)
                ),
            )),
            Kind::AllGather => Ok(send),
            Kind::ReduceScatter(_) if recv.checked_mul(n) != Some(send) => Err(invalid(
                name,
                format!(
                    "the send buffer holds {send} elements; {n} ranks × {recv} received need {}",
                    recv.saturating_mul(n)
                ),
            )),
            Kind::ReduceScatter(_) => Ok(recv),
        }
    }
}

fn captured_operation_name(kind: Kind) -> &'static str {
    match kind {
        Kind::AllReduce(_) => "Communicator::capture_all_reduce",
        Kind::Broadcast { .. } => "Communicator::capture_broadcast",
        Kind::AllGather => "Communicator::capture_all_gather",
        Kind::ReduceScatter(_) => "Communicator::capture_reduce_scatter",
    }
}

fn operation_name(kind: Kind) -> &'static str {
    match kind {
        Kind::AllReduce(_) => "Communicator::all_reduce",
        Kind::Broadcast { .. } => "Communicator::broadcast",
        Kind::AllGather => "Communicator::all_gather",
        Kind::ReduceScatter(_) => "Communicator::reduce_scatter",
    }
}

/// NCCL's version as `(major, minor, patch)`, loading the library (see the `nccl` feature).
///
/// ```
/// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// // An error naming what is missing when NCCL cannot be loaded (or the `nccl` feature is off).
/// match collective::nccl_version() {
///     Ok((major, minor, patch)) => println!("NCCL {major}.{minor}.{patch}"),
///     Err(e) => println!("{e}"),
/// }
/// # Ok(()) }
/// ```
pub fn nccl_version() -> Result<(u32, u32, u32)> {
    #[cfg(feature = "nccl")]
    {
        nccl::version()
    }
    #[cfg(not(feature = "nccl"))]
    {
        nccl::unavailable()
    }
}

/// A new NCCL unique id (for [`UniqueId::new`] on a GPU).
fn nccl_unique_id() -> Result<UniqueId> {
    #[cfg(feature = "nccl")]
    {
        nccl::unique_id()
    }
    #[cfg(not(feature = "nccl"))]
    {
        nccl::unavailable()
    }
}

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

use crate::backend::StreamHandle;
use crate::context::{Context, ContextInner, check_same};
use crate::error::{Error, Result};
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
}

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

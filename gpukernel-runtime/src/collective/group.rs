//! [`group`]: one thread issuing the operations of several ranks as one unit.

use core::marker::PhantomData;
use std::fmt;

use super::{CollectiveType, Communicator, Kind, ReduceOp, invalid};
use crate::error::Result;
use crate::memory::{DeviceSlice, DeviceSliceMut};
use crate::stream::Stream;

/// Runs `f` with a [`Group`]: the operations of several ranks that one thread issues as one
/// unit (`ncclGroupStart` … `ncclGroupEnd`), required when one thread drives several ranks.
/// NCCL enqueues the grouped work when the group ends, after `f` returns (or panics), so the
/// buffers the operations take are borrowed until then: they must outlive the call. Returns
/// `f`'s error, else the first error of ending the group.
///
/// ```no_run
/// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp}};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// let ctxs: Vec<_> = Device::all()?.iter().map(|d| d.primary_context()).collect::<Result<_, _>>()?;
/// let comms = Communicator::for_contexts(&ctxs)?;
/// let mut bufs = ctxs.iter().map(|c| c.htod_copy(&[1.0f32; 1024])).collect::<Result<Vec<_>, _>>()?;
/// let streams: Vec<_> = ctxs.iter().map(|c| c.default_stream()).collect();
/// collective::group(|g| {
///     for ((comm, s), buf) in comms.iter().zip(&streams).zip(bufs.iter_mut()) {
///         g.all_reduce_in_place(comm, s, buf, ReduceOp::Sum)?;
///     }
///     Ok(())
/// })?;
/// assert_eq!(bufs[0].to_host_vec()?[0], ctxs.len() as f32);
/// # Ok(()) }
/// ```
pub fn group<'a, R>(f: impl FnOnce(&mut Group<'a>) -> Result<R>) -> Result<R> {
    struct Ender<'a>(Group<'a>);
    impl Drop for Ender<'_> {
        fn drop(&mut self) {
            // On unwinding only: the normal path ended the group already.
            let _ = self.0.close();
            IN_GROUP.with(|g| g.set(false));
        }
    }
    // NCCL defers every operation of a thread with a group open to the outermost group's end:
    // an inner group, or a direct call inside, would let a buffer go before its operation
    // runs. Neither is allowed.
    if IN_GROUP.with(|g| g.replace(true)) {
        return Err(invalid(
            "collective::group",
            "groups do not nest: issue every operation through the open group",
        ));
    }
    let mut g = Ender(Group {
        opened: Vec::new(),
        in_flight: Vec::new(),
        _thread: PhantomData,
    });
    let r = f(&mut g.0);
    let ended = g.0.close();
    IN_GROUP.with(|g| g.set(false));
    let r = r?;
    ended.map(|()| r)
}

thread_local! {
    /// Whether this thread is inside [`group`].
    pub(super) static IN_GROUP: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

/// The operations issued inside [`group`]: the [`Communicator`] methods with the
/// communicator as first argument, the buffers borrowed until the group ends. Not `Send`: a
/// group belongs to its thread.
///
/// ```
/// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// let ctx = Device::simulator().primary_context()?;
/// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
/// let (comm, s) = (&comms[0], ctx.default_stream());
/// let x = ctx.htod_copy(&[1.0f32, 2.0])?;
/// let mut y = ctx.alloc_zeros::<f32>(2)?;
/// collective::group(|g| g.all_reduce(comm, &s, &x, &mut y, ReduceOp::Sum))?;
/// assert_eq!(y.to_host_vec()?, [1.0, 2.0]);
/// # Ok(()) }
/// ```
pub struct Group<'a> {
    /// One communicator per implementation whose group was opened, to close it.
    opened: Vec<&'a Communicator>,
    /// The streams of the operations issued: marked in flight until the group ends (their
    /// memory uses are ordered when issued, the work enqueued at the end; see
    /// `memory/tracker.rs`).
    in_flight: Vec<crate::stream::InFlight>,
    _thread: PhantomData<*const ()>,
}

impl fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Group")
            .field("opened", &self.opened.len())
            .finish()
    }
}

impl<'a> Group<'a> {
    /// Opens `comm`'s implementation's group if not yet open, and marks `stream` in flight
    /// until the group ends.
    fn open(&mut self, comm: &'a Communicator, stream: &Stream) -> Result<()> {
        self.in_flight.push(stream.in_flight());
        let imp = comm.raw.implementation();
        if !self.opened.iter().any(|c| c.raw.implementation() == imp) {
            comm.raw.group_start()?;
            self.opened.push(comm);
        }
        Ok(())
    }

    /// [`Communicator::all_reduce`] of `comm`'s rank, in the group.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let x = ctx.htod_copy(&[1.0f32, 2.0])?;
    /// let mut y = ctx.alloc_zeros::<f32>(2)?;
    /// collective::group(|g| g.all_reduce(comm, &s, &x, &mut y, ReduceOp::Sum))?;
    /// assert_eq!(y.to_host_vec()?, [1.0, 2.0]);
    /// # Ok(()) }
    /// ```
    pub fn all_reduce<T: CollectiveType>(
        &mut self,
        comm: &'a Communicator,
        stream: &Stream,
        send: &'a impl DeviceSlice<T>,
        recv: &'a mut impl DeviceSliceMut<T>,
        op: ReduceOp,
    ) -> Result<()> {
        self.open(comm, stream)?;
        comm.issue::<T>(
            stream,
            Kind::AllReduce(op),
            Some(send.raw_parts()),
            recv.raw_parts_mut(),
            true,
        )
    }

    /// [`Communicator::all_reduce_in_place`], in the group.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let x = ctx.htod_copy(&[1.0f32, 2.0])?;
    /// let mut y = ctx.alloc_zeros::<f32>(2)?;
    /// collective::group(|g| g.all_reduce_in_place(comm, &s, &mut y, ReduceOp::Sum))?;
    /// assert_eq!(y.to_host_vec()?, [0.0, 0.0]);
    /// # Ok(()) }
    /// ```
    pub fn all_reduce_in_place<T: CollectiveType>(
        &mut self,
        comm: &'a Communicator,
        stream: &Stream,
        buf: &'a mut impl DeviceSliceMut<T>,
        op: ReduceOp,
    ) -> Result<()> {
        self.open(comm, stream)?;
        comm.issue::<T>(stream, Kind::AllReduce(op), None, buf.raw_parts_mut(), true)
    }

    /// [`Communicator::broadcast`], in the group.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let x = ctx.htod_copy(&[1.0f32, 2.0])?;
    /// let mut y = ctx.alloc_zeros::<f32>(2)?;
    /// collective::group(|g| g.broadcast(comm, &s, &x, &mut y, 0))?;
    /// assert_eq!(y.to_host_vec()?, [1.0, 2.0]);
    /// # Ok(()) }
    /// ```
    pub fn broadcast<T: CollectiveType>(
        &mut self,
        comm: &'a Communicator,
        stream: &Stream,
        send: &'a impl DeviceSlice<T>,
        recv: &'a mut impl DeviceSliceMut<T>,
        root: usize,
    ) -> Result<()> {
        self.open(comm, stream)?;
        comm.issue::<T>(
            stream,
            Kind::Broadcast { root },
            Some(send.raw_parts()),
            recv.raw_parts_mut(),
            true,
        )
    }

    /// [`Communicator::broadcast_in_place`], in the group.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let x = ctx.htod_copy(&[1.0f32, 2.0])?;
    /// let mut y = ctx.alloc_zeros::<f32>(2)?;
    /// collective::group(|g| g.broadcast_in_place(comm, &s, &mut y, 0))?;
    /// assert_eq!(y.to_host_vec()?, [0.0, 0.0]);
    /// # Ok(()) }
    /// ```
    pub fn broadcast_in_place<T: CollectiveType>(
        &mut self,
        comm: &'a Communicator,
        stream: &Stream,
        buf: &'a mut impl DeviceSliceMut<T>,
        root: usize,
    ) -> Result<()> {
        self.open(comm, stream)?;
        comm.issue::<T>(
            stream,
            Kind::Broadcast { root },
            None,
            buf.raw_parts_mut(),
            true,
        )
    }

    /// [`Communicator::all_gather`], in the group.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let x = ctx.htod_copy(&[1.0f32, 2.0])?;
    /// let mut y = ctx.alloc_zeros::<f32>(2)?;
    /// collective::group(|g| g.all_gather(comm, &s, &x, &mut y))?;
    /// assert_eq!(y.to_host_vec()?, [1.0, 2.0]);
    /// # Ok(()) }
    /// ```
    pub fn all_gather<T: CollectiveType>(
        &mut self,
        comm: &'a Communicator,
        stream: &Stream,
        send: &'a impl DeviceSlice<T>,
        recv: &'a mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        self.open(comm, stream)?;
        comm.issue::<T>(
            stream,
            Kind::AllGather,
            Some(send.raw_parts()),
            recv.raw_parts_mut(),
            true,
        )
    }

    /// [`Communicator::reduce_scatter`], in the group.
    ///
    /// ```
    /// # use gpukernel_runtime::{Device, collective::{self, Communicator, ReduceOp, UniqueId, DataType, CollectiveType}};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = Device::simulator().primary_context()?;
    /// let comms = Communicator::for_contexts(&[ctx.clone()])?; // one rank
    /// let (comm, s) = (&comms[0], ctx.default_stream());
    /// let x = ctx.htod_copy(&[1.0f32, 2.0])?;
    /// let mut y = ctx.alloc_zeros::<f32>(2)?;
    /// collective::group(|g| g.reduce_scatter(comm, &s, &x, &mut y, ReduceOp::Sum))?;
    /// assert_eq!(y.to_host_vec()?, [1.0, 2.0]);
    /// # Ok(()) }
    /// ```
    pub fn reduce_scatter<T: CollectiveType>(
        &mut self,
        comm: &'a Communicator,
        stream: &Stream,
        send: &'a impl DeviceSlice<T>,
        recv: &'a mut impl DeviceSliceMut<T>,
        op: ReduceOp,
    ) -> Result<()> {
        self.open(comm, stream)?;
        comm.issue::<T>(
            stream,
            Kind::ReduceScatter(op),
            Some(send.raw_parts()),
            recv.raw_parts_mut(),
            true,
        )
    }

    /// Ends the group (each implementation opened, in reverse order): NCCL enqueues the
    /// grouped operations, the simulator completes them. Reports the first error.
    fn close(&mut self) -> Result<()> {
        let mut result = Ok(());
        while let Some(c) = self.opened.pop() {
            let r = c.raw.group_end();
            if result.is_ok() {
                result = r;
            }
        }
        // Enqueued now (or failed): no longer in flight.
        self.in_flight.clear();
        result
    }
}

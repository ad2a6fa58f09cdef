//! Typed device allocations ([`DeviceBuffer`]): allocation, foreign memory, views, and the
//! stream-ordered free.

use core::marker::PhantomData;
use core::ops::RangeBounds;
use std::fmt;
use std::sync::{Arc, Mutex};

use gpukernel_device::DeviceCopy;

use super::DEVICE_ALIGN;
use super::ptr::DevicePtr;
use super::tracker::Tracker;
use super::view::{DeviceView, DeviceViewMut, bounds, split};
use crate::backend::{RawAlloc, SharedAlloc};
use crate::context::{Context, ContextInner};
use crate::error::{Error, Result};
use crate::stream::Stream;

enum Alloc {
    /// Nothing allocated (zero bytes).
    Empty,
    /// The backend's allocation, freed by the backend in stream order on the home stream.
    Device(RawAlloc),
    /// Someone else's memory; the finalizer (which may be a no-op that drops an owner) runs
    /// once, after pending work is done.
    Foreign(Mutex<Option<Box<dyn FnOnce() + Send>>>),
    /// A shareable allocation (legacy IPC or VMM), or one opened from another process; freed
    /// or closed by the backend after a host wait for the work that used it.
    Shared(SharedAlloc),
}

/// A typed allocation of `len` elements in a context's device memory (`cuMemAllocAsync`).
///
/// # Dropping
/// One policy for every buffer, the runtime's allocations and foreign memory alike: memory is
/// released only after all the work that used it, on every stream, is done — a stream-ordered
/// `cuMemFreeAsync` after the other streams' work, or a host wait then `cuMemFree` or the
/// foreign finalizer. When that ordering or wait fails (a faulted context), the memory is
/// leaked (a foreign finalizer is not run, and what it owns is not dropped) rather than freed
/// while work might still use it. `Send + Sync`: shared references only read it (as
/// kernel inputs or copy sources); writes need `&mut`.
///
/// # Example
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let x = ctx.htod_copy(&[1.0f32, 2.0, 3.0])?; // host → device
/// let mut y = ctx.alloc_zeros::<f32>(3)?;
/// stream.launch(&module.kernel(saxpy)?, LaunchConfig::for_elements(3)?, (2.0f32, &x, &mut y))?;
/// assert_eq!(y.to_host_vec()?, [2.0, 4.0, 6.0]); // device → host, after the kernel
/// # Ok(()) }
/// ```
pub struct DeviceBuffer<T: DeviceCopy> {
    pub(super) ptr: u64,
    pub(super) len: usize,
    pub(crate) ctx: Arc<ContextInner>,
    pub(super) tracker: Tracker,
    alloc: Alloc,
    _t: PhantomData<T>,
}

// SAFETY: the buffer owns device memory (an address) and synchronized bookkeeping; `T` values
// only cross by copy, and `DeviceCopy` types hold no references.
unsafe impl<T: DeviceCopy> Send for DeviceBuffer<T> {}
// SAFETY: `&DeviceBuffer` only permits reads of the memory (copies out, kernel inputs) and the
// tracker is behind a Mutex.
unsafe impl<T: DeviceCopy> Sync for DeviceBuffer<T> {}

impl<T: DeviceCopy> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("len", &self.len)
            .field("device", &self.ctx.device)
            .finish()
    }
}
// ---------------------------------------------------------------------------------------------
// Buffers
// ---------------------------------------------------------------------------------------------

pub(super) fn byte_len<T>(operation: &'static str, len: usize) -> Result<usize> {
    len.checked_mul(size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(Error::SizeOverflow {
            operation,
            count: len,
            elem_size: size_of::<T>(),
        })
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Allocates `len` elements on `stream` without initialising them.
    ///
    /// # Safety
    /// The contents are unspecified bytes: write them (a kernel, a copy, a memset) before
    /// reading, unless every bit pattern is a valid `T`.
    pub(crate) unsafe fn alloc_on(stream: &Stream, len: usize) -> Result<Self> {
        stream.not_capturing("Stream::alloc")?;
        let bytes = byte_len::<T>("alloc", len)?;
        let ctx = stream.ctx().clone();
        let (ptr, alloc) = if bytes == 0 {
            // Never null, on either backend: a kernel rebuilds `&[T]` from (pointer, length),
            // and a slice of zero-sized elements may have a non-zero length.
            (align_for::<T>() as u64, Alloc::Empty)
        } else {
            let a = ctx
                .backend
                .alloc(bytes, align_for::<T>(), stream.handle())?;
            (a.ptr, Alloc::Device(a))
        };
        Ok(DeviceBuffer {
            ptr,
            len,
            ctx,
            tracker: Tracker::new(stream.clone()),
            alloc,
            _t: PhantomData,
        })
    }

    /// Wraps device memory that someone else allocated (another library, a graphics API) as a
    /// buffer of `len` elements; `finalizer` runs exactly once, when the buffer is dropped,
    /// after the work that used the buffer has completed. The Rust equivalent of a Numba
    /// `DeviceNDArray` over a foreign pointer with a finalizer.
    ///
    /// The memory is used on `ctx`'s default stream until a kernel or copy uses it elsewhere.
    /// On error (a null or misaligned pointer, a size overflow) the finalizer is dropped
    /// without being run, and the memory stays the caller's.
    ///
    /// # Safety
    /// `ptr` must be the address of `len * size_of::<T>()` bytes of device memory of `ctx`
    /// (a host address on the simulator), valid for reads and writes until the finalizer runs,
    /// holding valid `T`s (or written before being read), and not accessed by anyone else
    /// while the buffer exists (except through it).
    ///
    /// # Example
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::{DeviceBuffer, DevicePtr};
    /// // Memory from elsewhere; on the simulator device memory is host memory.
    /// let foreign: &'static mut [f32] = Box::leak(vec![0.0f32; 4].into_boxed_slice());
    /// let ptr = DevicePtr::<f32>::from_addr(foreign.as_mut_ptr() as u64);
    /// let addr = ptr.addr() as usize;
    /// // SAFETY: 4 valid f32s, used only through the buffer, freed by the finalizer.
    /// let buf = unsafe {
    ///     DeviceBuffer::from_raw_parts_with_finalizer(&ctx, ptr, 4, move || {
    ///         drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(addr as *mut f32, 4)))
    ///     })?
    /// };
    /// assert_eq!(buf.to_host_vec()?, [0.0; 4]);
    /// # Ok(()) }
    /// ```
    pub unsafe fn from_raw_parts_with_finalizer<F>(
        ctx: &Context,
        ptr: DevicePtr<T>,
        len: usize,
        finalizer: F,
    ) -> Result<Self>
    where
        F: FnOnce() + Send + 'static,
    {
        const OP: &str = "DeviceBuffer::from_raw_parts";
        byte_len::<T>(OP, len)?;
        let addr = ptr.addr();
        if addr == 0 && len > 0 {
            return Err(Error::InvalidPointer {
                operation: OP,
                ptr: 0,
                problem: "null".into(),
            });
        }
        if !addr.is_multiple_of(align_of::<T>() as u64) {
            return Err(Error::InvalidPointer {
                operation: OP,
                ptr: addr,
                problem: format!("not aligned for {}-byte-aligned elements", align_of::<T>()),
            });
        }
        Ok(DeviceBuffer {
            ptr: addr,
            len,
            ctx: ctx.inner.clone(),
            tracker: Tracker::new(ctx.default_stream()),
            alloc: Alloc::Foreign(Mutex::new(Some(Box::new(finalizer)))),
            _t: PhantomData,
        })
    }

    /// As [`from_raw_parts_with_finalizer`](Self::from_raw_parts_with_finalizer), with an
    /// owner that keeps the memory alive and is dropped exactly once, when the buffer is
    /// dropped and its pending work has completed.
    ///
    /// # Safety
    /// As [`from_raw_parts_with_finalizer`](Self::from_raw_parts_with_finalizer), with "until
    /// the finalizer runs" meaning "until `owner` is dropped".
    ///
    /// # Example
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::{DeviceBuffer, DevicePtr};
    /// // On the simulator device memory is host memory: lend a Vec, kept alive by the buffer.
    /// let mut owner = vec![1u32, 2, 3];
    /// let ptr = DevicePtr::<u32>::from_addr(owner.as_mut_ptr() as u64);
    /// // SAFETY: 3 valid u32s that live as long as `owner`, which the buffer now holds.
    /// let buf = unsafe { DeviceBuffer::from_raw_parts_with_owner(&ctx, ptr, 3, owner)? };
    /// assert_eq!(buf.to_host_vec()?, [1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub unsafe fn from_raw_parts_with_owner<O: Send + 'static>(
        ctx: &Context,
        ptr: DevicePtr<T>,
        len: usize,
        owner: O,
    ) -> Result<Self> {
        // SAFETY: forwarded from the caller.
        unsafe { Self::from_raw_parts_with_finalizer(ctx, ptr, len, move || drop(owner)) }
    }

    /// A buffer of `len` elements at byte `offset` of a shareable (or opened) allocation,
    /// which it frees or closes when dropped. The caller checked the range and alignment.
    pub(crate) fn from_shared(
        ctx: &Arc<ContextInner>,
        a: SharedAlloc,
        offset: usize,
        len: usize,
    ) -> Self {
        DeviceBuffer {
            ptr: a.ptr + offset as u64,
            len,
            ctx: ctx.clone(),
            tracker: Tracker::new(Stream::default_of(ctx.clone())),
            alloc: Alloc::Shared(a),
            _t: PhantomData,
        }
    }

    /// The shareable allocation behind this buffer, if it is one, with the buffer's byte
    /// offset in it.
    pub(crate) fn shared_alloc(&self) -> Option<(SharedAlloc, usize)> {
        match &self.alloc {
            Alloc::Shared(a) => Some((*a, (self.ptr - a.ptr) as usize)),
            _ => None,
        }
    }

    /// Whether the runtime allocated this buffer from the stream-ordered pool.
    pub(crate) fn is_pooled(&self) -> bool {
        matches!(&self.alloc, Alloc::Device(a) if a.pooled)
    }

    /// The raw device address (`CUdeviceptr`; a host address on the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let buf = ctx.alloc_zeros::<f32>(16)?;
    /// let addr: u64 = buf.as_raw(); // a CUdeviceptr, for a driver call the runtime does not wrap
    /// assert_eq!(addr, buf.device_ptr().addr());
    /// # Ok(()) }
    /// ```
    pub fn as_raw(&self) -> u64 {
        self.ptr
    }

    /// A shared view of `range` (`slice(2..10)`, `slice(..)`…); an error when out of bounds.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let buf = ctx.htod_copy(&[0, 1, 2, 3, 4, 5])?;
    /// assert_eq!(buf.slice(2..4)?.to_host_vec()?, [2, 3]);
    /// assert!(buf.slice(4..8).is_err()); // Error::OutOfBounds
    /// # Ok(()) }
    /// ```
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceView<'_, T>> {
        let (start, end) = bounds("DeviceBuffer::slice", &range, self.len)?;
        Ok(DeviceView {
            ptr: offset::<T>(self.ptr, start),
            len: end - start,
            ctx: &self.ctx,
            tracker: &self.tracker,
            _t: PhantomData,
        })
    }

    /// An exclusive view of `range`; an error when out of bounds.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut out = ctx.alloc_zeros::<u32>(8)?;
    /// let iota = module.kernel(iota)?;
    /// stream.launch(&iota, LaunchConfig::for_elements(4)?, (&mut out.slice_mut(4..)?,))?;
    /// assert_eq!(out.to_host_vec()?, [0, 0, 0, 0, 0, 1, 2, 3]);
    /// # Ok(()) }
    /// ```
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceViewMut<'_, T>> {
        let (start, end) = bounds("DeviceBuffer::slice_mut", &range, self.len)?;
        Ok(DeviceViewMut {
            ptr: offset::<T>(self.ptr, start),
            len: end - start,
            ctx: &self.ctx,
            tracker: &self.tracker,
            _t: PhantomData,
        })
    }

    /// Two exclusive views, `[0, mid)` and `[mid, len)`; an error when `mid > len`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut buf = ctx.alloc_zeros::<u32>(4)?;
    /// let (mut lo, mut hi) = buf.split_at_mut(2)?; // two disjoint outputs at once
    /// lo.copy_from_host(&[1, 2])?;
    /// hi.copy_from_host(&[3, 4])?;
    /// assert_eq!(buf.to_host_vec()?, [1, 2, 3, 4]);
    /// # Ok(()) }
    /// ```
    pub fn split_at_mut(
        &mut self,
        mid: usize,
    ) -> Result<(DeviceViewMut<'_, T>, DeviceViewMut<'_, T>)> {
        split(
            "DeviceBuffer::split_at_mut",
            self.ptr,
            self.len,
            &self.ctx,
            &self.tracker,
            mid,
        )
    }

    /// The stream that host-side operations on this buffer use: the stream of its last
    /// exclusive use (at first, the allocating one).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let other = ctx.new_stream()?;
    /// let mut buf = other.alloc_zeros::<f32>(4)?;
    /// assert!(buf.stream().same_as(&other)); // host reads of `buf` wait for `other`
    /// # Ok(()) }
    /// ```
    pub fn stream(&self) -> Stream {
        self.tracker.home()
    }
}

pub(super) fn align_for<T>() -> usize {
    align_of::<T>().max(DEVICE_ALIGN)
}

#[inline]
pub(super) fn offset<T>(ptr: u64, elems: usize) -> u64 {
    // Cannot overflow: `elems <= len` and `len * size_of::<T>()` was checked at allocation.
    ptr + (elems * size_of::<T>()) as u64
}

impl<T: DeviceCopy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        match &mut self.alloc {
            Alloc::Empty => {}
            Alloc::Device(a) => {
                // Every stream that used the buffer is ordered before `home`, where the free
                // is enqueued. On failure (a faulted context) the memory is leaked rather than
                // freed while work might still use it; so is a buffer dropped while its home
                // stream is being captured (a free there would join the capture).
                if let Ok(home) = self.tracker.join_for_drop() {
                    // SAFETY: allocated by this backend; nothing is enqueued after this.
                    let _ = unsafe { self.ctx.backend.free(*a, home.handle()) };
                }
            }
            Alloc::Shared(a) => {
                // As foreign memory: only once every stream that used it is idle, else leaked.
                if self.tracker.wait_all().is_ok() {
                    // SAFETY: the backend made it; no pending work uses it (waited above).
                    let _ = unsafe { self.ctx.backend.free_shareable(*a) };
                }
            }
            Alloc::Foreign(f) => {
                // The same policy as the runtime's own memory: the finalizer (which may free
                // the memory) runs only once every stream that used the buffer is idle. If
                // that wait fails (a faulted context), the finalizer and what it captured are
                // leaked, never run while work might still use the memory.
                let f = f.get_mut().unwrap_or_else(|p| p.into_inner()).take();
                if self.tracker.wait_all().is_err() {
                    core::mem::forget(f);
                    return;
                }
                if let Some(f) = f
                    && std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err()
                {
                    // Not `eprintln!`: it panics when stderr is closed, and a panic in `drop`
                    // during unwinding aborts.
                    let _ = std::io::Write::write_all(
                        &mut std::io::stderr(),
                        b"gpukernel-runtime: a DeviceBuffer finalizer panicked (ignored)\n",
                    );
                }
            }
        }
    }
}

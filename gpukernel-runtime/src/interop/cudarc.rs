//! Zero-copy conversions between gpukernel and [cudarc](https://docs.rs/cudarc) (feature
//! `cudarc-interop`), so a cudarc program can adopt gpukernel kernel by kernel.
//!
//! | from | to | how |
//! |---|---|---|
//! | `&CudaSlice<T>` | a read-only [`DeviceBuffer<T>`] | [`Context::borrow_cudarc`] |
//! | `&mut CudaSlice<T>` | a writable buffer | [`Context::borrow_cudarc_mut`] |
//! | `&DeviceBuffer<T>` | a `CudaView<T>` | [`DeviceBuffer::as_cudarc`] |
//! | `&mut DeviceBuffer<T>` | a `CudaViewMut<T>` | [`DeviceBuffer::as_cudarc_mut`] |
//! | `Arc<CudaStream>` | a [`Stream`] | [`Stream::from_cudarc`] |
//! | [`Stream`] | an `Arc<CudaStream>` | [`Stream::to_cudarc`] (unsafe: cudarc cannot keep ours alive) |
//! | [`Context`] | an `Arc<CudaContext>` | [`Context::to_cudarc`] (the same primary context) |
//!
//! Ordering: a borrowed cudarc slice is used on our side after the cudarc stream's work so
//! far (our streams wait for it), and cudarc's later work waits for ours (the borrow's drop
//! waits for every stream that used it, then records cudarc's read event). Our buffer seen as a
//! cudarc view is ordered after our pending work on the buffer; the view's use is recorded as
//! a use on the cudarc stream, which the buffer's free waits for.
//!
//! The simulator has no cudarc: every conversion is [`Error::NotOnSimulator`].

use std::fmt;
use std::sync::Arc;

use ::cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr as _, SyncOnDrop,
};
use gpukernel_device::DeviceCopy;

use crate::backend::StreamHandle;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::ipc::not_on_simulator;
use crate::memory::{DeviceBuffer, DevicePtr, DeviceSlice, DeviceSliceMut, DeviceViewMut};
use crate::stream::Stream;

fn mismatch(operation: &'static str, problem: String) -> Error {
    Error::InteropMismatch { operation, problem }
}

fn same_context(operation: &'static str, ctx: &Context, theirs: &CudaContext) -> Result<()> {
    let ours = ctx.inner.backend.raw_context();
    if theirs.cu_ctx().cast() != ours {
        return Err(mismatch(
            operation,
            format!(
                "the cudarc context ({:p}, device {}) is not this context ({ours:p}, {}): use \
                 the device's primary context on both sides (CudaContext::new / \
                 Context::to_cudarc)",
                theirs.cu_ctx(),
                theirs.ordinal(),
                ctx.inner.label()
            ),
        ));
    }
    Ok(())
}

impl Context {
    /// cudarc's handle of this same context (the device's primary context,
    /// `CudaContext::new(ordinal)`), checked to be the same `CUcontext`.
    pub fn to_cudarc(&self) -> Result<Arc<CudaContext>> {
        const OP: &str = "Context::to_cudarc";
        not_on_simulator(&self.inner, OP)?;
        let ordinal = self.device().ordinal().unwrap_or(0);
        let cx = CudaContext::new(ordinal).map_err(|e| mismatch(OP, format!("cudarc: {e:?}")))?;
        same_context(OP, self, &cx)?;
        Ok(cx)
    }

    /// Borrows a cudarc slice as a read-only buffer of this context, without a copy. Our work
    /// on it runs after the cudarc stream's work so far; dropping the borrow waits for ours.
    pub fn borrow_cudarc<'a, T: DeviceCopy>(
        &self,
        slice: &'a CudaSlice<T>,
    ) -> Result<CudarcBorrow<'a, T>> {
        self.borrow_impl("Context::borrow_cudarc", slice)
    }

    /// Borrows a cudarc slice as a writable buffer ([`CudarcBorrowMut::view_mut`]).
    pub fn borrow_cudarc_mut<'a, T: DeviceCopy>(
        &self,
        slice: &'a mut CudaSlice<T>,
    ) -> Result<CudarcBorrowMut<'a, T>> {
        let b = self.borrow_impl("Context::borrow_cudarc_mut", &*slice)?;
        Ok(CudarcBorrowMut { inner: b })
    }

    fn borrow_impl<'a, T: DeviceCopy>(
        &self,
        operation: &'static str,
        slice: &'a CudaSlice<T>,
    ) -> Result<CudarcBorrow<'a, T>> {
        not_on_simulator(&self.inner, operation)?;
        same_context(operation, self, slice.context())?;
        let theirs = Stream::from_cudarc(self, slice.stream().clone())?;
        // cudarc waits for the slice's last write on its stream; our default stream (where the
        // buffer is first used) waits for that stream.
        let (ptr, sync) = slice.device_ptr(slice.stream());
        self.default_stream().wait_stream(&theirs)?;
        // SAFETY: `ptr` is `slice.len()` elements of device memory of this context (checked
        // above), borrowed for 'a (shared: cudarc cannot write it meanwhile, and
        // `CudarcBorrow` hands out no mutable access); the finalizer does nothing (the
        // memory stays cudarc's), and runs after our work on it.
        let buf = unsafe {
            DeviceBuffer::from_raw_parts_with_finalizer(
                self,
                DevicePtr::from_addr(ptr),
                slice.len(),
                || {},
            )
        }?;
        Ok(CudarcBorrow { buf, _sync: sync })
    }
}

/// A cudarc slice borrowed as a read-only [`DeviceBuffer`] (`&*borrow` is a kernel input).
pub struct CudarcBorrow<'a, T: DeviceCopy> {
    // Field order: the buffer (whose drop waits for our work) before cudarc's read record.
    buf: DeviceBuffer<T>,
    _sync: SyncOnDrop<'a>,
}

impl<T: DeviceCopy> fmt::Debug for CudarcBorrow<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CudarcBorrow").field(&self.buf).finish()
    }
}

impl<T: DeviceCopy> core::ops::Deref for CudarcBorrow<'_, T> {
    type Target = DeviceBuffer<T>;
    fn deref(&self) -> &DeviceBuffer<T> {
        &self.buf
    }
}

/// A cudarc slice borrowed mutably: read it through `&*borrow`, write it through
/// [`view_mut`](Self::view_mut).
pub struct CudarcBorrowMut<'a, T: DeviceCopy> {
    inner: CudarcBorrow<'a, T>,
}

impl<T: DeviceCopy> fmt::Debug for CudarcBorrowMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CudarcBorrowMut")
            .field(&self.inner.buf)
            .finish()
    }
}

impl<T: DeviceCopy> core::ops::Deref for CudarcBorrowMut<'_, T> {
    type Target = DeviceBuffer<T>;
    fn deref(&self) -> &DeviceBuffer<T> {
        &self.inner.buf
    }
}

impl<T: DeviceCopy> CudarcBorrowMut<'_, T> {
    /// The whole slice as an exclusive view: a kernel output or copy destination.
    pub fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        let len = self.inner.buf.len();
        self.inner
            .buf
            .slice_mut(..len)
            .expect("the full range is always in bounds")
    }
}

/// One of our buffers seen by cudarc: a `CudaSlice` that is never freed by cudarc (it is
/// leaked back on drop). Only views of it are handed out, so it cannot be swapped with an
/// owning slice.
pub struct AsCudarc<'a, T> {
    slice: core::mem::ManuallyDrop<CudaSlice<T>>,
    _borrow: core::marker::PhantomData<&'a mut [T]>,
}

impl<T> fmt::Debug for AsCudarc<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsCudarc")
            .field("len", &self.slice.len())
            .finish()
    }
}

impl<T> AsCudarc<'_, T> {
    /// A read-only cudarc view (a cudarc kernel input, a copy source).
    pub fn view(&self) -> CudaView<'_, T> {
        self.slice.as_view()
    }
}

impl<T> Drop for AsCudarc<'_, T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; `leak` returns the pointer without freeing it (after
        // making the stream wait for cudarc's own events of the slice).
        let s = unsafe { core::mem::ManuallyDrop::take(&mut self.slice) };
        let _ = s.leak();
    }
}

/// [`AsCudarc`] for writing: hands out `CudaViewMut`s.
pub struct AsCudarcMut<'a, T> {
    inner: AsCudarc<'a, T>,
}

impl<T> fmt::Debug for AsCudarcMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AsCudarcMut").field(&self.inner).finish()
    }
}

impl<T> AsCudarcMut<'_, T> {
    /// A read-only cudarc view.
    pub fn view(&self) -> CudaView<'_, T> {
        self.inner.view()
    }

    /// A writable cudarc view (a cudarc kernel output, a copy destination).
    pub fn view_mut(&mut self) -> CudaViewMut<'_, T> {
        self.inner.slice.as_view_mut()
    }
}

fn wrap<'a, T: DeviceCopy>(
    operation: &'static str,
    p: crate::memory::RawParts<'_>,
    stream: &Arc<CudaStream>,
) -> Result<AsCudarc<'a, T>> {
    let ctx = Context {
        inner: p.ctx.clone(),
    };
    not_on_simulator(&ctx.inner, operation)?;
    same_context(operation, &ctx, stream.context())?;
    // cudarc's stream runs after our pending conflicting work on the buffer, and the buffer's
    // free waits for it (the use is recorded on the tracker).
    let ours = Stream::from_cudarc(&ctx, stream.clone())?;
    p.track(operation, "the buffer", &ours)?;
    // SAFETY: `p.ptr` holds `p.len` valid `T`s of this context for the borrow `'a` the caller
    // ties to the returned value; the slice is leaked (never freed) on drop.
    let slice = unsafe { stream.upgrade_device_ptr::<T>(p.ptr, p.len) };
    Ok(AsCudarc {
        slice: core::mem::ManuallyDrop::new(slice),
        _borrow: core::marker::PhantomData,
    })
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// This buffer as a cudarc slice on `stream`, read-only ([`AsCudarc::view`]), without a
    /// copy; cudarc's work on `stream` is ordered after ours on the buffer.
    pub fn as_cudarc(&self, stream: &Arc<CudaStream>) -> Result<AsCudarc<'_, T>> {
        wrap(
            "DeviceBuffer::as_cudarc",
            DeviceSlice::raw_parts(self),
            stream,
        )
    }

    /// This buffer as a writable cudarc slice on `stream` ([`AsCudarcMut::view_mut`]).
    pub fn as_cudarc_mut(&mut self, stream: &Arc<CudaStream>) -> Result<AsCudarcMut<'_, T>> {
        let p = DeviceSliceMut::raw_parts_mut(self);
        Ok(AsCudarcMut {
            inner: wrap("DeviceBuffer::as_cudarc_mut", p, stream)?,
        })
    }
}

impl Stream {
    /// A cudarc stream as ours: work enqueued on either runs in one order. The `Arc` is kept
    /// (with the last clone of the returned stream), so cudarc does not destroy it meanwhile.
    pub fn from_cudarc(ctx: &Context, stream: Arc<CudaStream>) -> Result<Stream> {
        const OP: &str = "Stream::from_cudarc";
        not_on_simulator(&ctx.inner, OP)?;
        same_context(OP, ctx, stream.context())?;
        let handle = StreamHandle(stream.cu_stream().cast());
        // SAFETY: a live stream of this context (checked), kept alive by the owner we store.
        Ok(unsafe { Stream::borrowed(ctx.inner.clone(), handle, Box::new(stream)) })
    }

    /// This stream as a cudarc stream of `cx` (which must be this context: [`Context::to_cudarc`]).
    ///
    /// # Safety
    /// cudarc cannot hold our stream alive: keep a clone of this `Stream` while the returned
    /// cudarc stream (or anything cudarc made with it) is used.
    pub unsafe fn to_cudarc(&self, cx: &Arc<CudaContext>) -> Result<Arc<CudaStream>> {
        const OP: &str = "Stream::to_cudarc";
        let ctx = self.context();
        not_on_simulator(&ctx.inner, OP)?;
        same_context(OP, &ctx, cx)?;
        // SAFETY: a live stream of this context; the caller keeps it alive.
        Ok(unsafe { cx.wrap_borrowed_stream(self.raw()) })
    }
}

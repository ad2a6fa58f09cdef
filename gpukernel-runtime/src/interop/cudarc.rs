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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
    /// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
    /// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
    /// # fn main() -> Result<(), E> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// let cx = ctx.to_cudarc()?; // the same primary context, as cudarc sees it
    /// assert_eq!(Some(cx.ordinal()), ctx.device().ordinal());
    /// let x = cx.default_stream().clone_htod(&[1.0f32; 1024])?; // a slice our kernels can borrow
    /// let x_ours = ctx.borrow_cudarc(&x)?;
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
    /// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
    /// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
    /// # fn main() -> Result<(), E> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
    /// let cs = ctx.to_cudarc()?.default_stream();
    /// let x = cs.clone_htod(&[1.0f32; 1024])?; // cudarc's slice
    /// let mut y = stream.htod_copy(&[2.0f32; 1024])?;
    /// let xb = ctx.borrow_cudarc(&x)?; // after cudarc's copy, without one of ours
    /// let cfg = LaunchConfig::for_elements(1024)?;
    /// stream.launch(&module.kernel(saxpy)?, cfg, (3.0f32, &*xb, &mut y))?;
    /// drop(xb); // cudarc's later work on `x` waits for the kernel
    /// # Ok(()) }
    /// ```
    pub fn borrow_cudarc<'a, T: DeviceCopy>(
        &self,
        slice: &'a CudaSlice<T>,
    ) -> Result<CudarcBorrow<'a, T>> {
        self.borrow_impl("Context::borrow_cudarc", slice)
    }

    /// Borrows a cudarc slice as a writable buffer ([`CudarcBorrowMut::view_mut`]).
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
    /// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
    /// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
    /// # fn main() -> Result<(), E> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
    /// let cs = ctx.to_cudarc()?.default_stream();
    /// let mut out = cs.alloc_zeros::<u32>(1024)?;
    /// let mut ob = ctx.borrow_cudarc_mut(&mut out)?;
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1024)?, (ob.view_mut(),))?;
    /// drop(ob); // ends the borrow: cudarc's reads below wait for the kernel
    /// assert_eq!(cs.clone_dtoh(&out)?[7], 7);
    /// # Ok(()) }
    /// ```
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
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
/// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
/// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
/// # fn main() -> Result<(), E> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// let x = ctx.to_cudarc()?.default_stream().clone_htod(&[1u32, 2, 3])?;
/// let xb = ctx.borrow_cudarc(&x)?; // a `DeviceBuffer<u32>` through `Deref`
/// assert_eq!(xb.len(), 3);
/// assert_eq!(xb.to_host_vec()?, [1, 2, 3]);
/// # Ok(()) }
/// ```
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
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
/// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
/// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
/// # fn main() -> Result<(), E> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// let mut x = ctx.to_cudarc()?.default_stream().alloc_zeros::<u32>(3)?;
/// let mut xb = ctx.borrow_cudarc_mut(&mut x)?;
/// stream.memcpy_htod(&mut xb.view_mut(), &[4, 5, 6])?; // written through the view
/// assert_eq!(xb.to_host_vec()?, [4, 5, 6]); // read through `Deref`
/// # Ok(()) }
/// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
    /// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
    /// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
    /// # fn main() -> Result<(), E> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
    /// let mut out = ctx.to_cudarc()?.default_stream().alloc_zeros::<u32>(1024)?;
    /// let mut ob = ctx.borrow_cudarc_mut(&mut out)?;
    /// // A kernel output: `iota` takes a `DisjointSlice<u32>`.
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1024)?, (ob.view_mut(),))?;
    /// # Ok(()) }
    /// ```
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
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
/// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
/// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
/// # fn main() -> Result<(), E> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// let buf = stream.htod_copy(&[1u32, 2, 3])?;
/// let cs = ctx.to_cudarc()?.new_stream()?;
/// let seen = buf.as_cudarc(&cs)?; // borrows `buf`; cudarc never frees it
/// assert_eq!(cs.clone_dtoh(&seen.view())?, [1, 2, 3]);
/// # Ok(()) }
/// ```
pub struct AsCudarc<'a, T> {
    slice: core::mem::ManuallyDrop<CudaSlice<T>>,
    /// cudarc's stream, marked in flight while cudarc may enqueue work on the buffer (see
    /// `memory/tracker.rs`): the use was recorded when this was made.
    _in_flight: crate::stream::InFlight,
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
    /// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
    /// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
    /// # fn main() -> Result<(), E> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// let buf = stream.htod_copy(&[1.0f32; 1024])?;
    /// let cs = ctx.to_cudarc()?.default_stream();
    /// let mut copy = cs.alloc_zeros::<f32>(1024)?;
    /// cs.memcpy_dtod(&buf.as_cudarc(&cs)?.view(), &mut copy)?; // a copy source for cudarc
    /// # Ok(()) }
    /// ```
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
///
/// ```no_run
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
/// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
/// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
/// # fn main() -> Result<(), E> {
/// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
/// let mut buf = stream.alloc_zeros::<u32>(3)?;
/// let cs = ctx.to_cudarc()?.new_stream()?;
/// let mut seen = buf.as_cudarc_mut(&cs)?;
/// cs.memcpy_htod(&[7u32, 8, 9], &mut seen.view_mut())?; // cudarc writes our buffer
/// drop(seen);
/// assert_eq!(buf.to_host_vec()?, [7, 8, 9]); // after cudarc's copy
/// # Ok(()) }
/// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
    /// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
    /// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
    /// # fn main() -> Result<(), E> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// let mut buf = stream.htod_copy(&[1u32, 2, 3])?;
    /// let cs = ctx.to_cudarc()?.default_stream();
    /// let seen = buf.as_cudarc_mut(&cs)?;
    /// assert_eq!(cs.clone_dtoh(&seen.view())?, [1, 2, 3]); // read-only use of a writable borrow
    /// # Ok(()) }
    /// ```
    pub fn view(&self) -> CudaView<'_, T> {
        self.inner.view()
    }

    /// A writable cudarc view (a cudarc kernel output, a copy destination).
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
    /// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
    /// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
    /// # fn main() -> Result<(), E> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// let mut buf = stream.htod_copy(&[1u32, 2, 3])?;
    /// let cs = ctx.to_cudarc()?.default_stream();
    /// let mut seen = buf.as_cudarc_mut(&cs)?;
    /// cs.memset_zeros(&mut seen.view_mut())?; // a cudarc operation's output
    /// # Ok(()) }
    /// ```
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
    // cudarc enqueues its work while the borrow lasts: the stream stays in flight until then.
    let in_flight = ours.in_flight();
    p.track(operation, "the buffer", &ours.enqueuing())?;
    // SAFETY: `p.ptr` holds `p.len` valid `T`s of this context for the borrow `'a` the caller
    // ties to the returned value; the slice is leaked (never freed) on drop.
    let slice = unsafe { stream.upgrade_device_ptr::<T>(p.ptr, p.len) };
    Ok(AsCudarc {
        slice: core::mem::ManuallyDrop::new(slice),
        _in_flight: in_flight,
        _borrow: core::marker::PhantomData,
    })
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// This buffer as a cudarc slice on `stream`, read-only ([`AsCudarc::view`]), without a
    /// copy; cudarc's work on `stream` is ordered after ours on the buffer.
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
    /// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
    /// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
    /// # fn main() -> Result<(), E> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
    /// let mut out = stream.alloc_zeros::<u32>(1024)?;
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1024)?, (&mut out,))?;
    /// let cs = ctx.to_cudarc()?.new_stream()?;
    /// let host = cs.clone_dtoh(&out.as_cudarc(&cs)?.view())?; // waits for `iota` on the GPU
    /// assert_eq!(host[9], 9);
    /// # Ok(()) }
    /// ```
    pub fn as_cudarc(&self, stream: &Arc<CudaStream>) -> Result<AsCudarc<'_, T>> {
        wrap(
            "DeviceBuffer::as_cudarc",
            DeviceSlice::raw_parts(self),
            stream,
        )
    }

    /// This buffer as a writable cudarc slice on `stream` ([`AsCudarcMut::view_mut`]).
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
    /// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
    /// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
    /// # fn main() -> Result<(), E> {
    /// # let ctx = Device::get(0)?.primary_context()?; let stream = ctx.default_stream();
    /// let mut buf = stream.alloc_zeros::<f32>(1024)?;
    /// let cs = ctx.to_cudarc()?.new_stream()?;
    /// cs.memcpy_htod(&[1.0f32; 1024], &mut buf.as_cudarc_mut(&cs)?.view_mut())?;
    /// let host = buf.to_host_vec()?; // ordered after cudarc's copy
    /// assert!(host.iter().all(|&v| v == 1.0));
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
    /// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
    /// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
    /// # fn main() -> Result<(), E> {
    /// # let ctx = Device::get(0)?.primary_context()?;
    /// # let module = ctx.load_module(kernels_ptx().as_bytes())?;
    /// let cs = ctx.to_cudarc()?.new_stream()?; // a cudarc program's stream
    /// let stream = Stream::from_cudarc(&ctx, cs.clone())?; // one queue, two handles
    /// let mut out = stream.alloc_zeros::<u32>(1024)?;
    /// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(1024)?, (&mut out,))?;
    /// cs.synchronize()?; // cudarc's wait covers our kernel
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # #[derive(Debug)] struct E(String); // our errors and cudarc's, for `?`
    /// # impl From<gpukernel_runtime::Error> for E { fn from(e: gpukernel_runtime::Error) -> E { E(e.to_string()) } }
    /// # impl From<cudarc::driver::DriverError> for E { fn from(e: cudarc::driver::DriverError) -> E { E(format!("{e:?}")) } }
    /// # fn main() -> Result<(), E> {
    /// # let ctx = Device::get(0)?.primary_context()?;
    /// let ours = ctx.new_stream()?;
    /// let cx = ctx.to_cudarc()?;
    /// // SAFETY: `ours` is declared first, so it outlives `cs` and `x`.
    /// let cs = unsafe { ours.to_cudarc(&cx)? };
    /// let x = cs.clone_htod(&[1.0f32; 1024])?; // cudarc's copy, queued on our stream
    /// ours.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub unsafe fn to_cudarc(&self, cx: &Arc<CudaContext>) -> Result<Arc<CudaStream>> {
        const OP: &str = "Stream::to_cudarc";
        let ctx = self.context();
        not_on_simulator(&ctx.inner, OP)?;
        same_context(OP, &ctx, cx)?;
        // SAFETY: a live stream of this context; the caller keeps it alive.
        Ok(unsafe { cx.wrap_borrowed_stream(self.raw()) })
    }
}

//! Raw device addresses.

use core::marker::PhantomData;
use std::fmt;

/// A raw device address of `T`s: what a kernel's `*const T` / `*mut T` parameter receives.
///
/// Holding one does not keep the memory alive nor order work on it: a kernel that dereferences
/// a raw pointer does so in its own `unsafe` code.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::DevicePtr;
/// let buf = ctx.alloc_zeros::<f32>(4)?;
/// let p: DevicePtr<f32> = buf.device_ptr(); // for a kernel's `*const f32` parameter
/// assert!(!p.is_null());
/// # Ok(()) }
/// ```
pub struct DevicePtr<T> {
    addr: u64,
    _t: PhantomData<*mut T>,
}

impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtr<T> {}
impl<T> PartialEq for DevicePtr<T> {
    fn eq(&self, other: &Self) -> bool {
        self.addr == other.addr
    }
}
impl<T> Eq for DevicePtr<T> {}
impl<T> fmt::Debug for DevicePtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DevicePtr({:#x})", self.addr)
    }
}
// SAFETY: a device address is a number; it gives no access by itself.
unsafe impl<T> Send for DevicePtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for DevicePtr<T> {}

impl<T> DevicePtr<T> {
    /// A device pointer from an address (`CUdeviceptr`; a host address on the simulator).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DevicePtr;
    /// let buf = ctx.alloc_zeros::<f32>(4)?;
    /// let p = DevicePtr::<f32>::from_addr(buf.as_raw()); // e.g. an address from another library
    /// assert_eq!(p, buf.device_ptr());
    /// # Ok(()) }
    /// ```
    pub fn from_addr(addr: u64) -> Self {
        DevicePtr {
            addr,
            _t: PhantomData,
        }
    }

    /// The null pointer.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DevicePtr;
    /// assert!(DevicePtr::<u8>::null().is_null());
    /// # Ok(()) }
    /// ```
    pub fn null() -> Self {
        Self::from_addr(0)
    }

    /// The address.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let buf = ctx.alloc_zeros::<u32>(4)?;
    /// assert_eq!(buf.slice(1..)?.device_ptr().addr() - buf.device_ptr().addr(), 4);
    /// # Ok(()) }
    /// ```
    pub fn addr(self) -> u64 {
        self.addr
    }

    /// Whether it is null.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::DevicePtr;
    /// assert!(DevicePtr::<u8>::from_addr(0).is_null());
    /// assert!(!ctx.alloc_zeros::<u8>(1)?.device_ptr().is_null());
    /// # Ok(()) }
    /// ```
    pub fn is_null(self) -> bool {
        self.addr == 0
    }
}

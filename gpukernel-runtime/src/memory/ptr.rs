//! Raw device addresses.

use core::marker::PhantomData;
use std::fmt;

/// A raw device address of `T`s: what a kernel's `*const T` / `*mut T` parameter receives.
///
/// Holding one does not keep the memory alive nor order work on it: a kernel that dereferences
/// a raw pointer does so in its own `unsafe` code.
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
    pub fn from_addr(addr: u64) -> Self {
        DevicePtr {
            addr,
            _t: PhantomData,
        }
    }

    /// The null pointer.
    pub fn null() -> Self {
        Self::from_addr(0)
    }

    /// The address.
    pub fn addr(self) -> u64 {
        self.addr
    }

    /// Whether it is null.
    pub fn is_null(self) -> bool {
        self.addr == 0
    }
}

//! Devices and primary contexts.

use core::ffi::{c_char, c_int};
use std::ffi::CStr;

use cudarc::driver::sys;

use super::{CUcontext, CUdevice, check, init};
use crate::error::{Error, Result};

// ----------------------------------------------------------------------------------------------
// Devices
// ----------------------------------------------------------------------------------------------

pub(crate) fn device_count() -> Result<usize> {
    match init() {
        // cuInit reports CUDA_ERROR_NO_DEVICE (100) when the driver is installed but no device
        // is visible: that is zero devices, not a missing driver.
        Err(Error::DriverUnavailable { error: Some(e), .. }) if e.code == 100 => return Ok(0),
        r => r?,
    }
    let mut n: c_int = 0;
    // SAFETY: init succeeded; `n` is a valid out-pointer.
    check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) })?;
    Ok(n.max(0) as usize)
}

pub(crate) fn device_get(ordinal: usize) -> Result<CUdevice> {
    init()?;
    let mut dev: CUdevice = 0;
    let ord = c_int::try_from(ordinal).unwrap_or(c_int::MAX);
    // SAFETY: init succeeded; `dev` is a valid out-pointer.
    check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, ord) })?;
    Ok(dev)
}

/// # Safety
/// `dev` must come from [`device_get`].
pub(crate) unsafe fn device_name(dev: CUdevice) -> Result<String> {
    let mut buf = [0 as c_char; 256];
    // SAFETY: the buffer holds 256 chars and we pass its length; `dev` is valid (caller).
    check("cuDeviceGetName", unsafe {
        sys::cuDeviceGetName(buf.as_mut_ptr(), 256, dev)
    })?;
    // SAFETY: the driver wrote a NUL-terminated string into the buffer (it truncates to fit).
    let s = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Ok(s.to_string_lossy().into_owned())
}

/// # Safety
/// `dev` must come from [`device_get`].
pub(crate) unsafe fn device_attribute(dev: CUdevice, attr: sys::CUdevice_attribute) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: valid out-pointer; `dev` is valid (caller).
    check("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut v, attr, dev)
    })?;
    Ok(v)
}

/// # Safety
/// `dev` must come from [`device_get`].
pub(crate) unsafe fn device_total_mem(dev: CUdevice) -> Result<usize> {
    let mut v: usize = 0;
    // SAFETY: valid out-pointer; `dev` is valid (caller).
    check("cuDeviceTotalMem", unsafe {
        sys::cuDeviceTotalMem_v2(&mut v, dev)
    })?;
    Ok(v)
}

// ----------------------------------------------------------------------------------------------
// Contexts
// ----------------------------------------------------------------------------------------------

/// # Safety
/// `dev` must come from [`device_get`]. The context is retained until the process exits (the
/// runtime never releases primary contexts).
pub(crate) unsafe fn primary_ctx_retain(dev: CUdevice) -> Result<CUcontext> {
    let mut ctx: CUcontext = core::ptr::null_mut();
    // SAFETY: valid out-pointer; `dev` is valid (caller).
    check("cuDevicePrimaryCtxRetain", unsafe {
        sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
    })?;
    Ok(ctx)
}

/// Makes `ctx` current on this thread unless it already is.
///
/// # Safety
/// `ctx` must be a live context.
#[inline]
pub(crate) unsafe fn ctx_bind(ctx: CUcontext) -> Result<()> {
    let mut cur: CUcontext = core::ptr::null_mut();
    // SAFETY: valid out-pointer.
    check("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut cur) })?;
    if cur != ctx {
        // SAFETY: `ctx` is live (caller).
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })?;
    }
    Ok(())
}

/// Synchronizes the current context. Returns the raw result so the caller can classify faults.
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn ctx_synchronize() -> sys::CUresult {
    // SAFETY: a context is current (caller).
    unsafe { sys::cuCtxSynchronize() }
}

/// `(least, greatest)` stream priorities of the current context (greatest is numerically lowest).
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn ctx_stream_priority_range() -> Result<(i32, i32)> {
    let (mut least, mut greatest): (c_int, c_int) = (0, 0);
    // SAFETY: valid out-pointers; a context is current (caller).
    check("cuCtxGetStreamPriorityRange", unsafe {
        sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest)
    })?;
    Ok((least, greatest))
}

/// Whether `dev` can access memory of `peer` directly (`cuDeviceCanAccessPeer`).
///
/// # Safety
/// Both must come from [`device_get`].
pub(crate) unsafe fn device_can_access_peer(dev: CUdevice, peer: CUdevice) -> Result<bool> {
    let mut can: i32 = 0;
    // SAFETY: valid out-pointer; devices valid (caller).
    check("cuDeviceCanAccessPeer", unsafe {
        sys::cuDeviceCanAccessPeer(&mut can, dev, peer)
    })?;
    Ok(can != 0)
}

/// Enables access from the current context to `peer`'s memory (`cuCtxEnablePeerAccess`);
/// already enabled is success.
///
/// # Safety
/// A context must be current; `peer` must be a live context.
pub(crate) unsafe fn ctx_enable_peer_access(peer: CUcontext) -> Result<()> {
    // SAFETY: forwarded from the caller; flags must be 0.
    let r = unsafe { sys::cuCtxEnablePeerAccess(peer, 0) };
    if r == sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
        return Ok(());
    }
    check("cuCtxEnablePeerAccess", r)
}

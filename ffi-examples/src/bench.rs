//! What the benchmark binaries (`src/bin/bench_*`) share: the median, one event-timed run, and
//! the raw `cuLaunchKernel` they compare typed launches against.

use core::ffi::c_void;

use cudarc::driver::sys;
use gpukernel_runtime::{Event, Function, LaunchConfig, Stream};

/// The error type of the benchmark binaries.
pub type BoxError = Box<dyn std::error::Error>;

/// The median of `v` (the upper one for an even count).
///
/// ```
/// assert_eq!(ffi_examples::bench::median(vec![3.0, 1.0, 2.0]), 2.0);
/// ```
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Event-timed milliseconds of the work `f` puts on `stream`.
pub fn timed(
    stream: &Stream,
    start: &Event,
    end: &Event,
    f: impl FnOnce() -> Result<(), BoxError>,
) -> Result<f64, BoxError> {
    start.record(stream)?;
    f()?;
    end.record(stream)?;
    Ok(start.elapsed_ms(end)? as f64)
}

/// Raw `cuLaunchKernel` of `f`, the reference a typed launch is measured against.
///
/// # Safety
/// `params` must match the kernel's parameters (null for none) and point at live values.
pub unsafe fn raw_launch(
    f: &Function,
    stream: &Stream,
    cfg: LaunchConfig,
    params: *mut *mut c_void,
) -> Result<(), BoxError> {
    // SAFETY: the function and stream are live and of the current context (bound by the
    // caller's runtime calls on this thread); `params` is the caller's responsibility.
    let r = unsafe {
        sys::cuLaunchKernel(
            f.raw(),
            cfg.grid.x,
            cfg.grid.y,
            cfg.grid.z,
            cfg.block.x,
            cfg.block.y,
            cfg.block.z,
            cfg.shared_mem_bytes,
            stream.raw(),
            params,
            core::ptr::null_mut(),
        )
    };
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("cuLaunchKernel: {r:?}").into())
    }
}

//! The host runtime of gpukernel: devices, contexts, memory, streams, events, modules, typed
//! kernel launches, the run-time linker, and a CPU simulator that runs the same kernels when no
//! GPU is present.
//!
//! Names follow the CUDA driver API: a [`Device`] has a primary [`Context`]; a [`Context`]
//! allocates [`DeviceBuffer`]s, creates [`Stream`]s and [`Event`]s and loads [`Module`]s; a
//! [`Stream`] launches kernels. Every type works on both backends: a CUDA device (through
//! cudarc, with `libcuda` loaded at run time) or the simulator ([`Device::simulator`]).
//! [`Device::default_device`] picks one from the environment variable `GPUKERNEL_BACKEND`
//! (`cuda`, `sim` or `auto`).
//!
//! # Example
//!
//! A typed launch: the argument tuple is checked at compile time against the kernel's
//! parameters (`saxpy(a: f32, x: &[f32], y: DisjointSlice<f32>)` here).
//!
//! ```no_run
//! use gpukernel_runtime::{Context, Device, LaunchConfig};
//! # use gpukernel_device::{DisjointSlice, Kernel};
//! # #[allow(non_camel_case_types)]
//! # #[derive(Clone, Copy)]
//! # struct saxpy;
//! # // SAFETY: documentation stand-in for a `#[kernel]` marker type.
//! # unsafe impl Kernel for saxpy {
//! #     const NAME: &'static str = "saxpy";
//! #     type Params = (f32, &'static [f32], DisjointSlice<'static, f32>);
//! #     const SIGNATURE: u64 = 0;
//! #     const SIM_ENTRY: gpukernel_device::SimEntry = { unsafe fn e(_: *const *mut core::ffi::c_void) {} e };
//! # }
//! # // SAFETY: as above.
//! # unsafe impl gpukernel_device::SafeKernel for saxpy {}
//! # const PTX: &str = "";
//! fn main() -> gpukernel_runtime::Result<()> {
//!     let ctx: Context = Device::default_device()?.primary_context()?;
//!     let module = ctx.load_module(PTX.as_bytes())?;
//!     let kernel = module.kernel(saxpy)?; // looks the CUfunction up once
//!
//!     let n = 1 << 20;
//!     let x = ctx.htod_copy(&vec![1.0f32; n])?;
//!     let mut y = ctx.htod_copy(&vec![2.0f32; n])?;
//!     let stream = ctx.default_stream();
//!     stream.launch(&kernel, LaunchConfig::for_elements(n)?, (3.0f32, &x, &mut y))?;
//!     let host = y.to_host_vec()?; // waits for the kernel; a fault is reported here
//!     assert!(host.iter().all(|&v| v == 5.0));
//!     Ok(())
//! }
//! ```
//!
//! # Several devices
//!
//! Each device has its own context; [`Device::all`] lists them (CUDA devices, or the
//! simulator's `GPUKERNEL_SIM_DEVICES` devices). [`Context::enable_peer_access`] lets a
//! context's kernels use another device's buffers; `copy_from_device` copies between devices
//! (directly with peer access, through host memory without);
//! [`Linker::link_and_load_on`](link::Linker::link_and_load_on) links once and loads on every
//! device; [`collective`] runs NCCL's collectives (cargo feature `nccl`) on buffers and
//! streams, and the simulator's twins of them.
//!
//! # Soundness of asynchronous work
//!
//! A kernel runs after [`Stream::launch`] returns, while the borrows of its arguments have
//! ended. Buffers are therefore *stream-ordered*: each remembers the streams that used it; use
//! from another stream makes that stream wait on an event first (nothing is done when it is the
//! same stream, so single-stream code pays nothing); host reads wait for the pending work; and
//! dropping a buffer frees it in stream order (`cuMemFreeAsync`) or after synchronizing.
#![warn(missing_docs)]

mod backend;
pub mod collective;
mod context;
mod device;
mod driver;
mod error;
mod event;
pub mod external;
mod foreign;
mod format;
mod graph;
pub mod interop;
pub mod ipc;
mod launch;
pub mod link;
mod memory;
mod module;
mod module_hooks;
pub mod profile;
mod sim;
mod stream;
mod tensor_map;

pub use context::Context;
pub use device::{Backend, Device, DeviceProperties};
pub use error::{CudaError, Error, Result, SignatureMismatch};
pub use event::Event;
pub use format::ImageKind;
/// The kernel-parameter types of TMA descriptors and grid barriers, for host code.
pub use gpukernel_device::{grid::GridBarrier, tma::TensorMap};
pub use graph::{Capture, ConditionalHandle, Graph, GraphBuffer, GraphBufferMut, GraphExec, Node};
pub use launch::{
    DEFAULT_BLOCK, Dim3, KernelArg, LaunchArgs, LaunchAttributes, LaunchConfig, MAX_KERNEL_PARAMS,
    RequiresLaunchUnchecked, Safe, SafetyLevel,
};
pub use memory::{
    DeviceBuffer, DevicePtr, DeviceSlice, DeviceSliceMut, DeviceView, DeviceView2D,
    DeviceView2DMut, DeviceView3DMut, DeviceViewMut, PinnedHostBuffer,
};
pub use module::{Function, Module, TypedKernel};
pub use module_hooks::{ModuleView, TeardownFailure};
pub use stream::Stream;
pub use tensor_map::{GridBarrierWord, Swizzle, TensorMap2D, TensorMapNd, TmaElement};

pub use gpukernel_device::{
    AnyBitPattern, DeviceCopy, DisjointSlice, DisjointSlice2D, DisjointSlice3D, IntoKernel, Kernel,
    LaunchDims, SafeKernel, Slice2D,
};

/// The vector types of kernel and foreign-function parameters (`f32x4`, `u32x4`, … CUDA's
/// `float4`, `uint4`, …), for the host code that fills their buffers: the same types as
/// `gpukernel_device::vector`'s.
pub use gpukernel_device::vector;

/// The half-precision types of kernel and foreign-function parameters (`f16`, `bf16`,
/// `f16x2`, `bf16x2`), for host code: the same types as `gpukernel_device::half`'s.
pub use gpukernel_device::half;

/// The parsers of untrusted bytes, for the fuzz targets in `fuzz/`. Not public API: hidden,
/// unstable, and may change in any release.
#[doc(hidden)]
pub use format::fuzz as __fuzz;

/// The traits whose methods the everyday operations use: `use gpukernel_runtime::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Context, DeviceBuffer, DeviceSlice, DeviceSliceMut, LaunchConfig, Stream, TypedKernel,
    };
}

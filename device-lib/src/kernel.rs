//! The host-side face of a `#[kernel]`: what the runtime needs for a typed launch.

use core::ffi::c_void;

/// The simulator's entry point of one kernel: runs the kernel body for the current simulated
/// thread. `params` is the same array of pointers to ABI values that `cuLaunchKernel` takes.
pub type SimEntry = unsafe fn(params: *const *mut c_void);

/// A kernel compiled by `#[kernel]`.
///
/// On the host, `#[kernel] pub fn saxpy(..)` expands to a unit struct `saxpy` that implements
/// this trait; the runtime launches it by value: `stream.launch(saxpy, cfg, (a, &x, &mut y))`.
///
/// # ABI
/// Parameters lower in order, each to one or more PTX `.param`s:
/// * scalars and `DeviceCopy` structs: one parameter, by value;
/// * `&[T]`, `&mut [T]` and [`DisjointSlice<T>`](crate::DisjointSlice): two parameters, the
///   data pointer (`u64`) then the length in elements (`u64`);
/// * `*const T` / `*mut T`: one `u64` parameter.
///
/// # Safety
/// Implemented only by `#[kernel]`: [`NAME`](Kernel::NAME) is the PTX entry's name,
/// [`Params`](Kernel::Params) lists the parameters' types in order, and
/// [`SIM_ENTRY`](Kernel::SIM_ENTRY) reads the parameter array in the ABI above.
pub unsafe trait Kernel: Copy + Send + Sync + 'static {
    /// The PTX `.entry` name (the Rust function's name, unmangled).
    const NAME: &'static str;
    /// The kernel's parameter types in order, as a tuple, with `'static` standing for every
    /// lifetime, e.g. `(f32, &'static [f32], DisjointSlice<'static, f32>)`.
    type Params;
    /// Runs the body for one simulated thread.
    const SIM_ENTRY: SimEntry;
}

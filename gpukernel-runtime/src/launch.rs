//! Launch configurations and typed kernel launches.
//!
//! A typed launch packs the arguments' ABI values (see the "Kernel ABI" contract: scalars and
//! `DeviceCopy` structs by value, slices as a `u64` pointer then a `u64` length, raw pointers
//! as one `u64`) into a tuple on the stack, points a fixed array of [`MAX_KERNEL_PARAMS`]
//! pointers at them, and calls `cuLaunchKernel` (or the simulator) with it: no allocation, no
//! lookup, a few comparisons for validation and one uncontended lock per buffer argument for
//! stream ordering.

use core::ffi::c_void;
use std::sync::Arc;

use gpukernel_device::{DeviceCopy, DisjointSlice, Kernel, SafeKernel};

use crate::error::{Error, Result};
use crate::memory::{
    DeviceBuffer, DevicePtr, DeviceSlice, DeviceSliceMut, DeviceView, DeviceViewMut,
};
use crate::module::{Function, TypedKernel};
use crate::stream::Stream;
use crate::{driver, sim};

/// The most ABI parameters a typed launch passes (12 arguments of up to two parameters each).
pub const MAX_KERNEL_PARAMS: usize = 24;

/// Grid or block dimensions, x y z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// x
    pub x: u32,
    /// y
    pub y: u32,
    /// z
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    /// As an array.
    pub const fn to_array(self) -> [u32; 3] {
        [self.x, self.y, self.z]
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3::new(x, 1, 1)
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3::new(x, y, 1)
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3::new(x, y, z)
    }
}
impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Self {
        Dim3::new(x, y, z)
    }
}

/// How to launch a kernel: blocks per grid, threads per block, dynamic shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks per grid.
    pub grid: Dim3,
    /// Threads per block.
    pub block: Dim3,
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

/// Threads per block of [`LaunchConfig::for_elements`].
pub const DEFAULT_BLOCK: u32 = 256;

/// The largest `grid.x` of any CUDA device.
const MAX_GRID_X: u64 = i32::MAX as u64;

impl LaunchConfig {
    /// `grid` blocks of `block` threads, no dynamic shared memory.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_mem_bytes: 0,
        }
    }

    /// The same configuration with `bytes` of dynamic shared memory per block.
    pub fn with_shared_mem_bytes(self, bytes: u32) -> Self {
        LaunchConfig {
            shared_mem_bytes: bytes,
            ..self
        }
    }

    /// One thread per element: blocks of 256 threads, enough blocks to cover `n` elements.
    /// An error when `n` is 0 or needs more blocks than a grid can have.
    pub fn for_elements(n: usize) -> Result<Self> {
        Self::for_elements_with_block(n, DEFAULT_BLOCK)
    }

    /// One thread per element with blocks of `block` threads.
    pub fn for_elements_with_block(n: usize, block: u32) -> Result<Self> {
        let err = |dimension, value: u64, max| Error::InvalidLaunchConfig {
            kernel: "LaunchConfig::for_elements".to_owned(),
            dimension,
            value,
            min: 1,
            max,
        };
        if block == 0 {
            return Err(err("block.x", 0, 1024));
        }
        let max_elements = MAX_GRID_X.saturating_mul(block as u64);
        if n == 0 || n as u64 > max_elements {
            return Err(err("elements", n as u64, max_elements));
        }
        let grid = (n as u64).div_ceil(block as u64) as u32;
        Ok(LaunchConfig::new(grid, block))
    }

    /// One thread per element with the block size that maximises the kernel's occupancy
    /// ([`Function::optimal_block_size`]).
    pub fn for_elements_optimal(n: usize, function: &Function) -> Result<Self> {
        Self::for_elements_with_block(n, function.optimal_block_size(0)?)
    }

    /// Checks the configuration against the device's and the kernel's limits.
    #[inline]
    pub(crate) fn validate(&self, f: &Function) -> Result<()> {
        let l = &f.module.ctx.limits;
        let g = self.grid.to_array();
        let b = self.block.to_array();
        let threads = b[0] as u64 * b[1] as u64 * b[2] as u64;
        let max_threads = f.max_threads_per_block.min(l.max_threads_per_block) as u64;
        let max_shared = f
            .max_dynamic_shared_bytes
            .load(std::sync::atomic::Ordering::Relaxed);
        let ok = (0..3)
            .all(|i| g[i] >= 1 && g[i] <= l.max_grid[i] && b[i] >= 1 && b[i] <= l.max_block[i])
            && threads <= max_threads
            && self.shared_mem_bytes <= max_shared
            && grid_threads(g, threads).is_some();
        if ok {
            Ok(())
        } else {
            Err(self.invalid(f, max_threads, max_shared))
        }
    }

    #[cold]
    #[inline(never)]
    fn invalid(&self, f: &Function, max_threads: u64, max_shared: u32) -> Error {
        let l = &f.module.ctx.limits;
        let err = |dimension, value: u64, min, max| Error::InvalidLaunchConfig {
            kernel: f.name().to_owned(),
            dimension,
            value,
            min,
            max,
        };
        const GRID: [&str; 3] = ["grid.x", "grid.y", "grid.z"];
        const BLOCK: [&str; 3] = ["block.x", "block.y", "block.z"];
        let g = self.grid.to_array();
        let b = self.block.to_array();
        for i in 0..3 {
            if g[i] == 0 || g[i] > l.max_grid[i] {
                return err(GRID[i], g[i] as u64, 1, l.max_grid[i] as u64);
            }
            if b[i] == 0 || b[i] > l.max_block[i] {
                return err(BLOCK[i], b[i] as u64, 1, l.max_block[i] as u64);
            }
        }
        let threads = b[0] as u64 * b[1] as u64 * b[2] as u64;
        if threads > max_threads {
            return err("threads per block", threads, 1, max_threads);
        }
        if grid_threads(g, threads).is_none() {
            // `ThreadIndex` (what makes `DisjointSlice` writes disjoint) is a linear `usize`:
            // more threads than that would give two threads the same index.
            let blocks = g[0] as u128 * g[1] as u128 * g[2] as u128;
            return err(
                "threads in the grid",
                u64::try_from(blocks * threads as u128).unwrap_or(u64::MAX),
                1,
                u64::MAX,
            );
        }
        err(
            "shared_mem_bytes",
            self.shared_mem_bytes as u64,
            0,
            max_shared as u64,
        )
    }
}

/// The number of threads of a grid, if it fits a `u64` (the width of a `ThreadIndex`).
#[inline(always)]
fn grid_threads(grid: [u32; 3], threads_per_block: u64) -> Option<u64> {
    (grid[0] as u64)
        .checked_mul(grid[1] as u64)?
        .checked_mul(grid[2] as u64)?
        .checked_mul(threads_per_block)
}

#[doc(hidden)]
pub mod abi {
    //! The ABI values a kernel argument lowers to (see the crate's "Kernel ABI" contract).
    use core::ffi::c_void;

    /// One or more ABI parameter values that can be pointed at from the parameter array.
    ///
    /// # Safety
    /// `push` must write exactly one pointer per ABI parameter, each to a field of `self` of
    /// the parameter's exact type and size.
    pub unsafe trait Abi {
        /// Appends pointers to the values at `out[*n..]`, advancing `*n`.
        fn push(&mut self, out: &mut [*mut c_void], n: &mut usize);
    }

    /// A scalar or `DeviceCopy` struct, by value.
    #[repr(transparent)]
    #[derive(Debug, Clone, Copy)]
    pub struct Scalar<T>(pub T);

    // SAFETY: one parameter, pointing at the value itself.
    unsafe impl<T> Abi for Scalar<T> {
        #[inline(always)]
        fn push(&mut self, out: &mut [*mut c_void], n: &mut usize) {
            out[*n] = (&raw mut self.0).cast();
            *n += 1;
        }
    }

    /// A slice: the data pointer (`u64`), then the length in elements (`u64`).
    #[derive(Debug, Clone, Copy)]
    pub struct Slice {
        /// Device address of the first element.
        pub ptr: u64,
        /// Number of elements.
        pub len: u64,
    }

    // SAFETY: two parameters, each pointing at a u64 field.
    unsafe impl Abi for Slice {
        #[inline(always)]
        fn push(&mut self, out: &mut [*mut c_void], n: &mut usize) {
            out[*n] = (&raw mut self.ptr).cast();
            out[*n + 1] = (&raw mut self.len).cast();
            *n += 2;
        }
    }
}

use abi::{Abi, Scalar, Slice};

/// A host value that can be passed for a kernel parameter of type `P` (a type of the kernel's
/// [`Kernel::Params`]).
///
/// | kernel parameter `P` | host argument |
/// |---|---|
/// | scalar or `DeviceCopy` struct `T` | a `T` |
/// | `&[T]` | `&DeviceBuffer<T>`, `&mut DeviceBuffer<T>`, `DeviceView<T>`, `&DeviceView<T>`, `&DeviceViewMut<T>` |
/// | `DisjointSlice<T>` (and `&mut [T]`, unsafe launches only) | `&mut DeviceBuffer<T>`, `&mut DeviceViewMut<T>`, `DeviceViewMut<T>` |
/// | `*const T` | `DevicePtr<T>`, `&DeviceBuffer<T>`, `&DeviceView<T>` |
/// | `*mut T` | `DevicePtr<T>`, `&mut DeviceBuffer<T>`, `&mut DeviceViewMut<T>` |
///
/// # Safety
/// `lower` must produce the ABI values of `P` (see [`Kernel`]'s ABI), pointing only at memory
/// that stays valid, with the access `P` allows, until the launched work completes on the
/// stream given to `lower`, which must order that work after pending conflicting work.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a kernel parameter of type `{P}`",
    label = "wrong argument for a `{P}` parameter",
    note = "pass a `T` for a scalar `T`, `&DeviceBuffer<T>` for `&[T]`, `&mut DeviceBuffer<T>` for `DisjointSlice<T>`, `DevicePtr<T>` for a raw pointer"
)]
pub unsafe trait KernelArg<P> {
    /// [`Safe`], or [`RequiresLaunchUnchecked`] for `&mut [T]` parameters.
    type Safety: SafetyLevel;
    #[doc(hidden)]
    type Abi: Abi;
    /// Orders the launch on `stream` after pending conflicting work on the argument's memory
    /// and returns its ABI values.
    #[doc(hidden)]
    fn lower(self, stream: &Stream) -> Result<Self::Abi>;
}

/// An argument tuple for a kernel whose parameter tuple is `P`, checked at compile time.
///
/// # Safety
/// As [`KernelArg`], for every element; `fill` writes one pointer per ABI parameter, in order.
#[diagnostic::on_unimplemented(
    message = "the arguments `{Self}` do not match the kernel's parameters `{P}`",
    label = "checked against the kernel's parameter types",
    note = "pass one argument per kernel parameter, in order: a `T` for a scalar `T`, `&DeviceBuffer<T>` for `&[T]`, `&mut DeviceBuffer<T>` for `DisjointSlice<T>`"
)]
pub unsafe trait LaunchArgs<P> {
    /// [`Safe`] when every argument is.
    type Safety: SafetyLevel;
    #[doc(hidden)]
    type Abi;
    #[doc(hidden)]
    fn lower(self, stream: &Stream) -> Result<Self::Abi>;
    #[doc(hidden)]
    fn fill(abi: &mut Self::Abi, out: &mut [*mut c_void; MAX_KERNEL_PARAMS]) -> usize;
}

/// Whether passing an argument can race by itself: [`Safe`], or [`RequiresLaunchUnchecked`]
/// (an `&mut [T]` parameter, which only `unsafe fn` kernels take). [`Stream::launch`] accepts
/// argument tuples whose combined level is [`Safe`].
pub trait SafetyLevel {
    /// The level of two arguments together.
    type And<B: SafetyLevel>: SafetyLevel;
}

/// See [`SafetyLevel`]: the launch cannot race by itself.
#[derive(Debug)]
pub enum Safe {}

/// See [`SafetyLevel`]: the kernel takes `&mut [T]`; launch it with
/// `unsafe { stream.launch_unchecked(..) }`.
#[derive(Debug)]
pub enum RequiresLaunchUnchecked {}

impl SafetyLevel for Safe {
    type And<B: SafetyLevel> = B;
}
impl SafetyLevel for RequiresLaunchUnchecked {
    type And<B: SafetyLevel> = RequiresLaunchUnchecked;
}

// --- scalars and structs ---------------------------------------------------------------------

// SAFETY: a `DeviceCopy` value is its own ABI value; it reaches no memory.
unsafe impl<T: DeviceCopy> KernelArg<T> for T {
    type Safety = Safe;
    type Abi = Scalar<T>;
    #[inline(always)]
    fn lower(self, _stream: &Stream) -> Result<Scalar<T>> {
        Ok(Scalar(self))
    }
}

// --- slices ----------------------------------------------------------------------------------

macro_rules! slice_arg {
    // host type => kernel parameter, how to get its `RawParts`, ABI kind, safe or not.
    ($([$($gen:tt)*] $ty:ty => $p:ty, $method:ident, $kind:ident, $safety:ty;)*) => { $(
        // SAFETY: lowers to the memory's pointer (and length); the borrow (shared for `&[T]`
        // and `*const T`, exclusive otherwise) ends after the launch, but `track` makes the
        // allocation's tracker order all later conflicting work and the free after it.
        unsafe impl<$($gen)*> KernelArg<$p> for $ty {
            type Safety = $safety;
            type Abi = slice_arg!(@abi $kind);
            #[inline(always)]
            fn lower(self, stream: &Stream) -> Result<Self::Abi> {
                #[allow(unused_mut)]
                let mut this = self;
                let p = this.$method();
                p.track("Stream::launch", "a buffer argument", stream)?;
                Ok(slice_arg!(@lower p, $kind))
            }
        }
    )* };
    (@abi slice) => { Slice };
    (@abi ptr) => { Scalar<u64> };
    (@lower $p:ident, slice) => { Slice { ptr: $p.ptr, len: $p.len as u64 } };
    (@lower $p:ident, ptr) => { Scalar($p.ptr) };
}

slice_arg! {
    ['b, T: DeviceCopy] &'b DeviceBuffer<T> => &'static [T], raw_parts, slice, Safe;
    ['b, T: DeviceCopy] &'b mut DeviceBuffer<T> => &'static [T], raw_parts, slice, Safe;
    ['v, T: DeviceCopy] DeviceView<'v, T> => &'static [T], raw_parts, slice, Safe;
    ['b, 'v, T: DeviceCopy] &'b DeviceView<'v, T> => &'static [T], raw_parts, slice, Safe;
    ['b, 'v, T: DeviceCopy] &'b DeviceViewMut<'v, T> => &'static [T], raw_parts, slice, Safe;

    ['b, T: DeviceCopy] &'b mut DeviceBuffer<T> => DisjointSlice<'static, T>, raw_parts_mut, slice, Safe;
    ['b, 'v, T: DeviceCopy] &'b mut DeviceViewMut<'v, T> => DisjointSlice<'static, T>, raw_parts_mut, slice, Safe;
    ['v, T: DeviceCopy] DeviceViewMut<'v, T> => DisjointSlice<'static, T>, raw_parts_mut, slice, Safe;

    ['b, T: DeviceCopy] &'b mut DeviceBuffer<T> => &'static mut [T], raw_parts_mut, slice, RequiresLaunchUnchecked;
    ['b, 'v, T: DeviceCopy] &'b mut DeviceViewMut<'v, T> => &'static mut [T], raw_parts_mut, slice, RequiresLaunchUnchecked;
    ['v, T: DeviceCopy] DeviceViewMut<'v, T> => &'static mut [T], raw_parts_mut, slice, RequiresLaunchUnchecked;

    ['b, T: DeviceCopy] &'b DeviceBuffer<T> => *const T, raw_parts, ptr, Safe;
    ['b, 'v, T: DeviceCopy] &'b DeviceView<'v, T> => *const T, raw_parts, ptr, Safe;
    ['b, T: DeviceCopy] &'b mut DeviceBuffer<T> => *mut T, raw_parts_mut, ptr, Safe;
    ['b, 'v, T: DeviceCopy] &'b mut DeviceViewMut<'v, T> => *mut T, raw_parts_mut, ptr, Safe;
}

// --- raw pointers ----------------------------------------------------------------------------

// SAFETY: lowers to one u64 address; the kernel dereferences it in its own unsafe code.
unsafe impl<T> KernelArg<*const T> for DevicePtr<T> {
    type Safety = Safe;
    type Abi = Scalar<u64>;
    #[inline(always)]
    fn lower(self, _stream: &Stream) -> Result<Scalar<u64>> {
        Ok(Scalar(self.addr()))
    }
}
// SAFETY: as above.
unsafe impl<T> KernelArg<*mut T> for DevicePtr<T> {
    type Safety = Safe;
    type Abi = Scalar<u64>;
    #[inline(always)]
    fn lower(self, _stream: &Stream) -> Result<Scalar<u64>> {
        Ok(Scalar(self.addr()))
    }
}

// --- tuples ----------------------------------------------------------------------------------

/// The combined [`SafetyLevel`] of a list of `(argument, parameter)` types.
macro_rules! all_safe {
    () => { Safe };
    ($A:ident $P:ident $(, $rA:ident $rP:ident)*) => {
        <<$A as KernelArg<$P>>::Safety as SafetyLevel>::And<all_safe!($($rA $rP),*)>
    };
}

macro_rules! tuple_args {
    ($($A:ident $P:ident $a:ident),*) => {
        // SAFETY: each element upholds `KernelArg`; `fill` pushes each element's values in order.
        unsafe impl<$($P, $A: KernelArg<$P>),*> LaunchArgs<($($P,)*)> for ($($A,)*) {
            type Safety = all_safe!($($A $P),*);
            type Abi = ($($A::Abi,)*);
            #[inline(always)]
            fn lower(self, stream: &Stream) -> Result<Self::Abi> {
                let _ = stream;
                let ($($a,)*) = self;
                Ok(($(KernelArg::<$P>::lower($a, stream)?,)*))
            }
            #[inline(always)]
            #[allow(unused_mut)]
            fn fill(abi: &mut Self::Abi, out: &mut [*mut c_void; MAX_KERNEL_PARAMS]) -> usize {
                let _ = &out;
                let mut n = 0;
                let ($($a,)*) = abi;
                $(Abi::push($a, out, &mut n);)*
                n
            }
        }
    };
}

tuple_args!();
tuple_args!(A0 P0 a0);
tuple_args!(A0 P0 a0, A1 P1 a1);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4, A5 P5 a5);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4, A5 P5 a5, A6 P6 a6);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4, A5 P5 a5, A6 P6 a6, A7 P7 a7);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4, A5 P5 a5, A6 P6 a6, A7 P7 a7, A8 P8 a8);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4, A5 P5 a5, A6 P6 a6, A7 P7 a7, A8 P8 a8, A9 P9 a9);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4, A5 P5 a5, A6 P6 a6, A7 P7 a7, A8 P8 a8, A9 P9 a9, A10 P10 a10);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4, A5 P5 a5, A6 P6 a6, A7 P7 a7, A8 P8 a8, A9 P9 a9, A10 P10 a10, A11 P11 a11);

// --- launching -------------------------------------------------------------------------------

impl Stream {
    /// Launches kernel `K` with typed arguments, checked at compile time against
    /// `K::Params` (see [`KernelArg`]). Asynchronous on CUDA: a fault of the kernel is reported
    /// by the next synchronizing call ([`Error::KernelFault`] naming this launch). On the
    /// simulator the grid runs before this returns, and a failure is returned here
    /// ([`Error::SimulatorFault`]).
    ///
    /// Only safe kernels ([`SafeKernel`]: `#[kernel]`s declared `fn`) launch here; an
    /// `unsafe fn` kernel has preconditions no argument type checks, so it needs
    /// `unsafe { stream.launch_unchecked(..) }`.
    ///
    /// The configuration is checked first (zero or too large dimensions, too many threads per
    /// block, too much shared memory: [`Error::InvalidLaunchConfig`] naming the kernel and the
    /// dimension).
    #[inline]
    pub fn launch<K: SafeKernel, A: LaunchArgs<K::Params, Safety = Safe>>(
        &self,
        kernel: &TypedKernel<K>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        // SAFETY: `K: SafeKernel` says the body is sound for any arguments of its parameter
        // types; `Safety = Safe` excludes `&mut [T]` parameters (only `unsafe fn` kernels take
        // them); everything else is upheld by `KernelArg`.
        unsafe { self.launch_unchecked(kernel, config, args) }
    }

    /// As [`launch`](Self::launch), also for kernels with `&mut [T]` parameters (`unsafe fn`
    /// kernels).
    ///
    /// # Safety
    /// The caller upholds the kernel's `# Safety` contract (for `&mut [T]`: no two threads
    /// access one element unless all accesses are reads).
    #[inline]
    pub unsafe fn launch_unchecked<K: Kernel, A: LaunchArgs<K::Params>>(
        &self,
        kernel: &TypedKernel<K>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        let f = &kernel.function;
        if !Arc::ptr_eq(&f.module.ctx, self.ctx()) {
            return Err(crate::context::mismatch(
                "Stream::launch",
                "the kernel",
                self.ctx(),
                &f.module.ctx,
            ));
        }
        config.validate(f)?;
        let mut abi = args.lower(self)?;
        let mut params = [core::ptr::null_mut::<c_void>(); MAX_KERNEL_PARAMS];
        let n = A::fill(&mut abi, &mut params);
        if self.is_sim() {
            return self.launch_sim(f, K::NAME, K::SIM_ENTRY, &config, &params[..n]);
        }
        // SAFETY: the parameter array points at `abi`, which lives until after the call and
        // holds exactly the ABI values of `K::Params` (`LaunchArgs`); `lower` ordered the
        // work after pending conflicting work.
        unsafe { self.launch_raw(f, &config, params.as_mut_ptr()) }
    }

    /// Launches a kernel from a module without type checking: `params` holds one pointer per
    /// ABI parameter of the kernel (see [`Kernel`]'s ABI), as for `cuLaunchKernel`. For PTX from
    /// elsewhere. Not supported on the simulator (it needs the kernel's Rust body).
    ///
    /// # Safety
    /// `params` must match the kernel's parameters exactly (count, order, types); every memory
    /// the kernel reaches through them must stay valid and unaliased as the kernel requires
    /// until it completes; nothing orders this launch after other streams' work on that memory.
    pub unsafe fn launch_untyped(
        &self,
        function: &Function,
        config: LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        if self.is_sim() {
            return Err(Error::Unsupported {
                operation: "an untyped launch",
                backend: "simulator",
                hint: Some(
                    "launch a #[kernel] with Stream::launch: the simulator runs its Rust body",
                ),
            });
        }
        if !Arc::ptr_eq(&function.module.ctx, self.ctx()) {
            return Err(crate::context::mismatch(
                "Stream::launch_untyped",
                "the function",
                self.ctx(),
                &function.module.ctx,
            ));
        }
        config.validate(function)?;
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_raw(function, &config, params.as_mut_ptr()) }
    }

    /// # Safety
    /// As `driver::launch_kernel`: `params` matches the function's parameters.
    #[inline(always)]
    unsafe fn launch_raw(
        &self,
        f: &Function,
        config: &LaunchConfig,
        params: *mut *mut c_void,
    ) -> Result<()> {
        let ctx = self.ctx();
        ctx.bind()?;
        // SAFETY: the function and stream are live and of the current context; `params` is
        // the caller's responsibility.
        let r = unsafe {
            driver::launch_kernel(
                f.raw,
                config.grid.to_array(),
                config.block.to_array(),
                config.shared_mem_bytes,
                self.raw(),
                params,
            )
        };
        if !driver::is_success(r) {
            return Err(launch_failed(f, config, r));
        }
        self.state().last_launch.set(f.name);
        ctx.last_launch.set(f.name);
        f.note_launch();
        Ok(())
    }

    fn launch_sim(
        &self,
        f: &Function,
        name: &'static str,
        entry: gpukernel_device::SimEntry,
        config: &LaunchConfig,
        params: &[*mut c_void],
    ) -> Result<()> {
        self.state().last_launch.set(f.name);
        self.ctx().last_launch.set(f.name);
        let launch = sim::SimLaunch {
            kernel: name,
            entry,
            grid: config.grid.to_array(),
            block: config.block.to_array(),
            dynamic_shared_bytes: config.shared_mem_bytes,
            params,
        };
        sim::launch(&launch).map_err(|e| Error::SimulatorFault {
            kernel: e.kernel.to_owned(),
            block: e.block,
            thread: e.thread,
            message: e.message,
        })
    }
}

#[cold]
#[inline(never)]
fn launch_failed(f: &Function, config: &LaunchConfig, r: driver::CuResult) -> Error {
    let error = driver::cuda_error(r);
    if error.is_kernel_fault() {
        // A sticky fault of an earlier kernel, reported by this call.
        return crate::stream::classify("cuLaunchKernel", error, f.module.ctx.last_launch.get());
    }
    Error::Driver {
        call: "cuLaunchKernel",
        error,
        context: Some(format!(
            "launching `{}` with grid {:?}, block {:?}, {} bytes of dynamic shared memory",
            f.name(),
            config.grid.to_array(),
            config.block.to_array(),
            config.shared_mem_bytes
        )),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! Simulator-backed tests of typed launches, with kernels written by hand the way
    //! `#[kernel]` expands them (a marker type implementing `Kernel` and a `SimEntry`).
    #![allow(non_camel_case_types)]

    use core::ffi::c_void;

    use gpukernel_device::{__private, DisjointSlice, Kernel, SimEntry, thread};

    use super::*;
    use crate::{Context, Device, Module};

    /// PTX declaring the test kernels (the simulator's module is the set of `.entry` names).
    pub(crate) const PTX: &str = "
        .version 7.8
        .target sm_90
        .address_size 64
        .visible .entry saxpy(.param .f32 a, .param .u64 x, .param .u64 xn, .param .u64 y, .param .u64 yn) { ret; }
        .visible .entry affine(.param .align 8 .b8 p[16], .param .u64 y, .param .u64 yn) { ret; }
        .visible .entry scale_in_place(.param .u64 x, .param .u64 xn, .param .f32 s) { ret; }
        .visible .entry out_of_bounds(.param .u64 x, .param .u64 xn) { ret; }
        .visible .entry fails_foreign(.param .u64 x, .param .u64 xn) { ret; }
        .visible .entry write_ptr(.param .u64 p) { ret; }
    ";

    /// Reads ABI parameter `i` as a `T`.
    unsafe fn arg<T: Copy>(p: *const *mut c_void, i: usize) -> T {
        // SAFETY: the caller names an existing parameter of type `T`.
        unsafe { (*p.add(i)).cast::<T>().read() }
    }

    #[derive(Clone, Copy)]
    pub(crate) struct saxpy;
    // SAFETY: NAME is the PTX entry above, Params its parameters, SIM_ENTRY reads them in ABI order.
    unsafe impl Kernel for saxpy {
        const NAME: &'static str = "saxpy";
        type Params = (f32, &'static [f32], DisjointSlice<'static, f32>);
        const SIM_ENTRY: SimEntry = saxpy_entry;
        const SIGNATURE: u64 = 0; // hand-written: its PTX has no fingerprint
    }
    // SAFETY: a safe kernel: sound for any arguments of its parameter types.
    unsafe impl SafeKernel for saxpy {}
    unsafe fn saxpy_entry(p: *const *mut c_void) {
        // SAFETY: the typed launch passes (f32, ptr, len, ptr, len) for live buffers.
        unsafe {
            let a: f32 = arg(p, 0);
            let x = __private::slice_from_raw(
                arg::<u64>(p, 1) as *const f32,
                arg::<u64>(p, 2) as usize,
            );
            let mut y = __private::disjoint_from_raw::<f32>(
                arg::<u64>(p, 3) as *mut f32,
                arg::<u64>(p, 4) as usize,
            );
            let i = thread::index();
            if let Some(yi) = y.get_mut(i) {
                *yi += a * x[i.get()];
            }
        }
    }

    #[repr(C)]
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub(crate) struct Affine {
        scale: f32,
        offset: f32,
        bias: f64,
    }
    // SAFETY: repr(C), plain numbers.
    unsafe impl DeviceCopy for Affine {}

    #[derive(Clone, Copy)]
    struct affine;
    // SAFETY: as for `saxpy`.
    unsafe impl Kernel for affine {
        const NAME: &'static str = "affine";
        type Params = (Affine, DisjointSlice<'static, f64>);
        const SIM_ENTRY: SimEntry = affine_entry;
        const SIGNATURE: u64 = 0; // hand-written: its PTX has no fingerprint
    }
    // SAFETY: a safe kernel: sound for any arguments of its parameter types.
    unsafe impl SafeKernel for affine {}
    unsafe fn affine_entry(p: *const *mut c_void) {
        // SAFETY: (Affine by value, ptr, len).
        unsafe {
            let a: Affine = arg(p, 0);
            let mut y = __private::disjoint_from_raw::<f64>(
                arg::<u64>(p, 1) as *mut f64,
                arg::<u64>(p, 2) as usize,
            );
            let i = thread::index();
            y.set(i, (a.scale * i.get() as f32 + a.offset) as f64 + a.bias);
        }
    }

    #[derive(Clone, Copy)]
    struct scale_in_place;
    // SAFETY: as for `saxpy`.
    unsafe impl Kernel for scale_in_place {
        const NAME: &'static str = "scale_in_place";
        type Params = (&'static mut [f32], f32);
        const SIM_ENTRY: SimEntry = scale_entry;
        const SIGNATURE: u64 = 0; // hand-written: its PTX has no fingerprint
    }
    unsafe fn scale_entry(p: *const *mut c_void) {
        // SAFETY: (ptr, len, f32); each thread touches a grid-stride set of indices.
        unsafe {
            let x = __private::slice_from_raw_mut(
                arg::<u64>(p, 0) as *mut f32,
                arg::<u64>(p, 1) as usize,
            );
            let s: f32 = arg(p, 2);
            let mut i = thread::global_index_x();
            while i < x.len() {
                x[i] *= s;
                i += thread::grid_stride_x();
            }
        }
    }

    #[derive(Clone, Copy)]
    struct out_of_bounds;
    // SAFETY: as for `saxpy`.
    unsafe impl Kernel for out_of_bounds {
        const NAME: &'static str = "out_of_bounds";
        type Params = (&'static [u32],);
        const SIM_ENTRY: SimEntry = oob_entry;
        const SIGNATURE: u64 = 0; // hand-written: its PTX has no fingerprint
    }
    // SAFETY: a safe kernel: sound for any arguments of its parameter types.
    unsafe impl SafeKernel for out_of_bounds {}
    unsafe fn oob_entry(p: *const *mut c_void) {
        // SAFETY: (ptr, len).
        let x = unsafe {
            __private::slice_from_raw(arg::<u64>(p, 0) as *const u32, arg::<u64>(p, 1) as usize)
        };
        let i = thread::index().get();
        std::hint::black_box(x[i + x.len()]);
    }

    #[derive(Clone, Copy)]
    struct fails_foreign;
    // SAFETY: as for `saxpy`.
    unsafe impl Kernel for fails_foreign {
        const NAME: &'static str = "fails_foreign";
        type Params = (&'static [u32],);
        const SIM_ENTRY: SimEntry = fails_foreign_entry;
        const SIGNATURE: u64 = 0; // hand-written: its PTX has no fingerprint
    }
    // SAFETY: a safe kernel: sound for any arguments of its parameter types.
    unsafe impl SafeKernel for fails_foreign {}
    unsafe fn fails_foreign_entry(_p: *const *mut c_void) {
        if thread::index().get() == 5 {
            gpukernel_device::ffi::report_foreign_failure("mul_f32_f32", 7);
        }
    }

    #[derive(Clone, Copy)]
    struct write_ptr;
    // SAFETY: as for `saxpy`.
    unsafe impl Kernel for write_ptr {
        const NAME: &'static str = "write_ptr";
        type Params = (*mut u32,);
        const SIM_ENTRY: SimEntry = write_ptr_entry;
        const SIGNATURE: u64 = 0; // hand-written: its PTX has no fingerprint
    }
    unsafe fn write_ptr_entry(p: *const *mut c_void) {
        // SAFETY: the test passes a pointer to at least one u32; only thread 0 writes.
        unsafe {
            if thread::index().get() == 0 {
                (arg::<u64>(p, 0) as *mut u32).write(42);
            }
        }
    }

    pub(crate) fn sim() -> (Context, Module) {
        let ctx = Device::simulator().primary_context().unwrap();
        let module = ctx.load_module(PTX.as_bytes()).unwrap();
        (ctx, module)
    }

    #[test]
    fn saxpy_on_the_simulator() {
        let (ctx, module) = sim();
        let k = module.kernel(saxpy).unwrap();
        let n = 1000;
        let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let dx = ctx.htod_copy(&x).unwrap();
        let mut dy = ctx.htod_copy(&vec![1.0f32; n]).unwrap();
        let s = ctx.new_stream().unwrap(); // own stream: the default one is shared by other tests
        s.launch(
            &k,
            LaunchConfig::for_elements(n).unwrap(),
            (2.0f32, &dx, &mut dy),
        )
        .unwrap();
        s.synchronize().unwrap();
        assert_eq!(s.last_launch(), Some("saxpy"));
        let y = dy.to_host_vec().unwrap();
        for (i, v) in y.iter().enumerate() {
            assert_eq!(*v, 2.0 * i as f32 + 1.0, "element {i}");
        }
    }

    #[test]
    fn launch_on_views_touches_only_the_view() {
        let (ctx, module) = sim();
        let k = module.kernel(saxpy).unwrap();
        let dx = ctx.htod_copy(&[1.0f32; 8]).unwrap();
        let mut dy = ctx.alloc_zeros::<f32>(8).unwrap();
        {
            let (_, mut hi) = dy.split_at_mut(4).unwrap();
            let xs = dx.slice(4..).unwrap();
            ctx.default_stream()
                .launch(
                    &k,
                    LaunchConfig::for_elements(4).unwrap(),
                    (3.0f32, xs, &mut hi),
                )
                .unwrap();
        }
        assert_eq!(
            dy.to_host_vec().unwrap(),
            [0.0, 0.0, 0.0, 0.0, 3.0, 3.0, 3.0, 3.0]
        );
    }

    #[test]
    fn struct_params_cross_by_value() {
        let (ctx, module) = sim();
        let k = module.kernel(affine).unwrap();
        let mut y = ctx.alloc_zeros::<f64>(10).unwrap();
        let p = Affine {
            scale: 2.0,
            offset: 0.5,
            bias: 100.0,
        };
        ctx.default_stream()
            .launch(&k, LaunchConfig::new(1, 10), (p, &mut y))
            .unwrap();
        let y = y.to_host_vec().unwrap();
        for (i, v) in y.iter().enumerate() {
            assert_eq!(*v, (2.0 * i as f32 + 0.5) as f64 + 100.0);
        }
    }

    #[test]
    fn unsafe_kernels_launch_unchecked() {
        let (ctx, module) = sim();
        let k = module.kernel(scale_in_place).unwrap();
        let mut x = ctx.htod_copy(&[1.0f32, 2.0, 3.0, 4.0, 5.0]).unwrap();
        // SAFETY: the kernel keeps threads on disjoint grid-stride indices.
        unsafe {
            ctx.default_stream()
                .launch_unchecked(&k, LaunchConfig::new(1, 2), (&mut x, 10.0f32))
        }
        .unwrap();
        assert_eq!(x.to_host_vec().unwrap(), [10.0, 20.0, 30.0, 40.0, 50.0]);
    }

    #[test]
    fn raw_pointer_params() {
        let (ctx, module) = sim();
        let k = module.kernel(write_ptr).unwrap();
        let mut b = ctx.alloc_zeros::<u32>(4).unwrap();
        let s = ctx.default_stream();
        // `write_ptr` stands for an `unsafe fn` kernel (it writes through its pointer).
        // SAFETY: the pointer is to a live buffer of 4 u32s that nothing else uses.
        unsafe { s.launch_unchecked(&k, LaunchConfig::new(1, 1), (b.device_ptr(),)) }.unwrap();
        assert_eq!(b.to_host_vec().unwrap(), [42, 0, 0, 0]);
        b.memset_zeros().unwrap();
        // SAFETY: as above.
        unsafe { s.launch_unchecked(&k, LaunchConfig::new(1, 1), (&mut b,)) }.unwrap();
        assert_eq!(b.to_host_vec().unwrap(), [42, 0, 0, 0]);
    }

    #[test]
    fn parameter_array_layout_follows_the_abi() {
        let (ctx, _) = sim();
        let s = ctx.default_stream();
        let x = ctx.htod_copy(&[1.0f32; 3]).unwrap();
        let mut y = ctx.alloc_zeros::<f32>(5).unwrap();
        let (xp, yp) = (x.as_raw(), y.as_raw());
        let p = Affine {
            scale: 1.5,
            offset: -2.0,
            bias: 8.0,
        };
        let args = (2.5f32, &x, &mut y, p, 7u8);
        let mut abi =
            LaunchArgs::<(f32, &'static [f32], DisjointSlice<'static, f32>, Affine, u8)>::lower(
                args, &s,
            )
            .unwrap();
        let mut out = [core::ptr::null_mut(); MAX_KERNEL_PARAMS];
        let n = <(f32, &DeviceBuffer<f32>, &mut DeviceBuffer<f32>, Affine, u8) as LaunchArgs<(
            f32,
            &'static [f32],
            DisjointSlice<'static, f32>,
            Affine,
            u8,
        )>>::fill(&mut abi, &mut out);
        assert_eq!(n, 7);
        assert!(out[7..].iter().all(|p| p.is_null()));
        // SAFETY: each pointer points into `abi`, at a value of the type the ABI says.
        unsafe {
            assert_eq!(*(out[0] as *const f32), 2.5);
            assert_eq!(*(out[1] as *const u64), xp);
            assert_eq!(*(out[2] as *const u64), 3);
            assert_eq!(*(out[3] as *const u64), yp);
            assert_eq!(*(out[4] as *const u64), 5);
            assert_eq!(*(out[5] as *const Affine), p);
            assert_eq!(*(out[6] as *const u8), 7);
        }
    }

    #[test]
    fn configs_are_validated_before_the_launch() {
        let (ctx, module) = sim();
        let k = module.kernel(saxpy).unwrap();
        let x = ctx.htod_copy(&[0.0f32; 4]).unwrap();
        let mut y = ctx.alloc_zeros::<f32>(4).unwrap();
        // Own stream: other tests launch on the shared default one, which `last_launch` reads.
        let s = ctx.new_stream().unwrap();
        let mut check = |cfg: LaunchConfig, dim: &str| {
            let e = s.launch(&k, cfg, (1.0f32, &x, &mut y)).unwrap_err();
            match &e {
                Error::InvalidLaunchConfig {
                    kernel, dimension, ..
                } => {
                    assert_eq!(kernel, "saxpy");
                    assert_eq!(*dimension, dim, "{e}");
                }
                other => panic!("unexpected error {other}"),
            }
        };
        check(LaunchConfig::new(0, 32), "grid.x");
        check(LaunchConfig::new((1, 70000), 32), "grid.y");
        check(LaunchConfig::new(1, (32, 0)), "block.y");
        check(LaunchConfig::new(1, 2048), "block.x");
        check(LaunchConfig::new(1, (64, 32)), "threads per block");
        check(LaunchConfig::new(1, (1, 1, 65)), "block.z");
        check(
            LaunchConfig::new(1, 32).with_shared_mem_bytes(1 << 20),
            "shared_mem_bytes",
        );
        // Every dimension within its limit, but more threads than a `ThreadIndex` can number.
        check(
            LaunchConfig::new((i32::MAX as u32, 65535, 65535), (32, 32)),
            "threads in the grid",
        );
        // Rejected configurations launch nothing.
        assert_eq!(s.last_launch(), None);
        let msg = s
            .launch(&k, LaunchConfig::new(1, 2048), (1.0f32, &x, &mut y))
            .unwrap_err()
            .to_string();
        assert_eq!(
            msg,
            "invalid launch configuration for `saxpy`: block.x = 2048, allowed 1..=1024"
        );
    }

    #[test]
    fn for_elements_covers_n_and_checks_it() {
        let c = LaunchConfig::for_elements(1000).unwrap();
        assert_eq!(
            (c.grid, c.block, c.shared_mem_bytes),
            (Dim3::new(4, 1, 1), Dim3::new(256, 1, 1), 0)
        );
        let c = LaunchConfig::for_elements_with_block(1025, 1024).unwrap();
        assert_eq!(c.grid.x, 2);
        assert!(
            LaunchConfig::for_elements(0)
                .unwrap_err()
                .to_string()
                .contains("elements = 0")
        );
        assert!(LaunchConfig::for_elements_with_block(10, 0).is_err());
        let too_many = (i32::MAX as usize) * 256 + 1;
        let e = LaunchConfig::for_elements(too_many).unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidLaunchConfig {
                    dimension: "elements",
                    ..
                }
            ),
            "{e}"
        );
        assert!(LaunchConfig::for_elements(too_many - 1).is_ok());
    }

    #[test]
    fn optimal_block_size_on_the_simulator() {
        let (_, module) = sim();
        let k = module.kernel(saxpy).unwrap();
        assert_eq!(k.optimal_block_size(0).unwrap(), 256);
        let c = LaunchConfig::for_elements_optimal(300, &k).unwrap();
        assert_eq!((c.grid.x, c.block.x), (2, 256));
    }

    #[test]
    fn wrong_kernel_name_lists_the_kernels() {
        let (_, module) = sim();
        let e = module.function("saxpi").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("no kernel `saxpi`"), "{msg}");
        assert!(
            msg.contains("`saxpy`") && msg.contains("`affine`") && msg.contains("`write_ptr`"),
            "{msg}"
        );
        assert_eq!(module.kernel_names().len(), 6);
    }

    #[test]
    fn untyped_launch_is_unsupported_on_the_simulator() {
        let (ctx, module) = sim();
        let f = module.function("saxpy").unwrap();
        // SAFETY: rejected before anything runs.
        let e = unsafe {
            ctx.default_stream()
                .launch_untyped(&f, LaunchConfig::new(1, 1), &mut [])
        }
        .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Unsupported {
                    backend: "simulator",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("untyped launch"), "{e}");
    }

    #[test]
    fn simulator_faults_name_the_kernel_and_thread() {
        let (ctx, module) = sim();
        let k = module.kernel(out_of_bounds).unwrap();
        let x = ctx.alloc_zeros::<u32>(4).unwrap();
        let e = ctx
            .default_stream()
            .launch(&k, LaunchConfig::new(1, 4), (&x,))
            .unwrap_err();
        match &e {
            Error::SimulatorFault {
                kernel, message, ..
            } => {
                assert_eq!(kernel, "out_of_bounds");
                assert!(message.contains("out of bounds"), "{message}");
            }
            other => panic!("unexpected {other}"),
        }
    }

    #[test]
    fn foreign_failures_surface_at_synchronize() {
        let (ctx, module) = sim();
        let k = module.kernel(fails_foreign).unwrap();
        let x = ctx.alloc_zeros::<u32>(4).unwrap();
        let s = ctx.new_stream().unwrap();
        s.launch(&k, LaunchConfig::new(1, 32), (&x,)).unwrap();
        let e = s.synchronize().unwrap_err();
        match &e {
            Error::ForeignCallFailed {
                function,
                status,
                thread,
                kernel,
            } => {
                assert_eq!(function, "mul_f32_f32");
                assert_eq!(*status, 7);
                assert_eq!(*thread, 5);
                assert_eq!(kernel.as_deref(), Some("fails_foreign"));
            }
            other => panic!("unexpected {other}"),
        }
        // Reported once, then cleared.
        s.synchronize().unwrap();
        ctx.synchronize().unwrap();
    }

    #[test]
    fn kernel_args_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Context>();
        check::<Stream>();
        check::<Module>();
        check::<Function>();
        check::<TypedKernel<saxpy>>();
        check::<DeviceBuffer<f32>>();
        check::<crate::Event>();
        check::<crate::PinnedHostBuffer<f32>>();
    }
}

//! Typed kernel arguments: what host value may be passed for which kernel parameter
//! ([`KernelArg`]), argument tuples ([`LaunchArgs`]), and the ABI values they lower to.

use core::mem::MaybeUninit;

use gpukernel_device::{
    DeviceCopy, DisjointSlice, DisjointSlice2D, DisjointSlice3D, Kernel, Slice2D,
};

use super::MAX_KERNEL_PARAMS;
use crate::error::Result;
use crate::graph::{GraphBuffer, GraphBufferMut, NodeUses};
use crate::memory::tracker::{Access, Tracker};
use crate::memory::{
    DeviceBuffer, DevicePtr, DeviceSlice, DeviceSliceMut, DeviceView, DeviceView2D,
    DeviceView2DMut, DeviceView3DMut, DeviceViewMut, RawParts,
};
use crate::stream::Enqueuing;

#[doc(hidden)]
pub mod abi {
    //! The ABI values a kernel argument lowers to (see the crate's "Kernel ABI" contract).
    use core::ffi::c_void;
    use core::mem::MaybeUninit;

    use super::MAX_KERNEL_PARAMS;

    /// A typed launch's parameter array, as `cuLaunchKernel` takes it: the first `n` of
    /// [`MAX_KERNEL_PARAMS`] slots are written, the rest never are (a launch writes as many
    /// pointers as its kernel has parameters, not the whole array).
    #[allow(
        missing_debug_implementations,
        reason = "hidden plumbing of the argument traits"
    )]
    pub struct ParamArray {
        slots: [MaybeUninit<*mut c_void>; MAX_KERNEL_PARAMS],
        n: usize,
    }

    impl ParamArray {
        /// Empty.
        #[inline(always)]
        pub(crate) fn new() -> ParamArray {
            ParamArray {
                slots: [const { MaybeUninit::uninit() }; MAX_KERNEL_PARAMS],
                n: 0,
            }
        }

        /// Appends one parameter's pointer.
        #[inline(always)]
        pub fn push(&mut self, p: *mut c_void) {
            // At most 16 arguments of at most 5 parameters each reach here: never past the end.
            self.slots[self.n].write(p);
            self.n += 1;
        }

        /// The pointers pushed, in order.
        #[inline(always)]
        pub(crate) fn as_mut_slice(&mut self) -> &mut [*mut c_void] {
            // SAFETY: `slots[..n]` were written by `push`; `MaybeUninit<T>` has `T`'s layout.
            unsafe { core::slice::from_raw_parts_mut(self.slots.as_mut_ptr().cast(), self.n) }
        }
    }

    /// One or more ABI parameter values that can be pointed at from the parameter array.
    ///
    /// # Safety
    /// `push` must push exactly one pointer per ABI parameter, each to a field of `self` of
    /// the parameter's exact type and size.
    pub unsafe trait Abi {
        /// Pushes pointers to the values onto `out`.
        fn push(&mut self, out: &mut ParamArray);

        /// The element count of a one-dimensional slice argument; `None` for anything else.
        #[inline(always)]
        fn len(&self) -> Option<u64> {
            None
        }
    }

    /// A scalar or `DeviceCopy` struct, by value.
    #[repr(transparent)]
    #[derive(Debug, Clone, Copy)]
    pub struct Scalar<T>(pub T);

    // SAFETY: one parameter, pointing at the value itself.
    unsafe impl<T> Abi for Scalar<T> {
        #[inline(always)]
        fn push(&mut self, out: &mut ParamArray) {
            out.push((&raw mut self.0).cast());
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
        fn push(&mut self, out: &mut ParamArray) {
            out.push((&raw mut self.ptr).cast());
            out.push((&raw mut self.len).cast());
        }

        #[inline(always)]
        fn len(&self) -> Option<u64> {
            Some(self.len)
        }
    }

    /// A 2D view: the data pointer, then `cols`, `rows`, `pitch` (each `u64`).
    #[derive(Debug, Clone, Copy)]
    pub struct Extents<const N: usize> {
        /// Device address of the first element.
        pub ptr: u64,
        /// The shape: `[cols, rows, pitch]` or `[cols, rows, depth, pitch]`.
        pub shape: [u64; N],
    }

    // SAFETY: `1 + N` parameters, each pointing at a u64 field.
    unsafe impl<const N: usize> Abi for Extents<N> {
        #[inline(always)]
        fn push(&mut self, out: &mut ParamArray) {
            out.push((&raw mut self.ptr).cast());
            for v in &mut self.shape {
                out.push((v as *mut u64).cast());
            }
        }
    }
}

use abi::{Abi, Extents, ParamArray, Scalar, Slice};

/// A host value that can be passed for a kernel parameter of type `P` (a type of the kernel's
/// [`Kernel::Params`](gpukernel_device::Kernel::Params)).
///
/// | kernel parameter `P` | host argument |
/// |---|---|
/// | scalar or `DeviceCopy` struct `T` | a `T` |
/// | `&[T]` | `&DeviceBuffer<T>`, `&mut DeviceBuffer<T>`, `DeviceView<T>`, `&DeviceView<T>`, `&DeviceViewMut<T>` |
/// | `DisjointSlice<T>` (and `&mut [T]`, unsafe launches only) | `&mut DeviceBuffer<T>`, `&mut DeviceViewMut<T>`, `DeviceViewMut<T>` |
/// | `DisjointSlice2D<T>` | `DeviceView2DMut<T>`, `&mut DeviceView2DMut<T>` (`buffer.view_2d_mut(cols, rows, pitch)?`) |
/// | `Slice2D<T>` (read-only) | `DeviceView2D<T>`, `&DeviceView2D<T>` (`buffer.view_2d(cols, rows, pitch)?`) |
/// | `DisjointSlice3D<T>` | `DeviceView3DMut<T>`, `&mut DeviceView3DMut<T>` (`buffer.view_3d_mut(cols, rows, depth, pitch)?`) |
/// | `*const T` | `DevicePtr<T>`, `&DeviceBuffer<T>`, `&DeviceView<T>` |
/// | `*mut T` | `DevicePtr<T>`, `&mut DeviceBuffer<T>`, `&mut DeviceViewMut<T>` |
///
/// # Safety
/// `lower` must produce the ABI values of `P` (see [`Kernel`](gpukernel_device::Kernel)'s ABI), pointing only at memory
/// that stays valid, with the access `P` allows, until the launched work completes on the
/// stream given to `lower`, which must order that work after pending conflicting work.
///
/// # Example
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let x = ctx.htod_copy(&[1.0f32; 8])?;
/// let mut y = ctx.alloc_zeros::<f32>(8)?;
/// let saxpy = module.kernel(saxpy)?;
/// // `saxpy(a: f32, x: &[f32], y: DisjointSlice<f32>)`: a value, something to read, something to write.
/// stream.launch(&saxpy, LaunchConfig::for_elements(8)?, (2.0f32, &x, &mut y))?;
/// // Views work the same: the second half again.
/// stream.launch(&saxpy, LaunchConfig::for_elements(4)?, (2.0f32, x.slice(4..)?, y.slice_mut(4..)?))?;
/// assert_eq!(y.to_host_vec()?, [2.0, 2.0, 2.0, 2.0, 4.0, 4.0, 4.0, 4.0]);
/// # Ok(()) }
/// ```
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
    /// Lends the argument's memory to the launch in `lent` (refused when it overlaps memory
    /// an earlier argument was lent, one of them writing), orders the launch on `stream` after
    /// pending conflicting work on it and returns its ABI values.
    #[doc(hidden)]
    fn lower(self, stream: &Enqueuing<'_>, lent: &mut Lent) -> Result<Self::Abi>;
    /// For a graph's kernel node: lends the memory in `lent` as `lower` does, records its use
    /// in `uses` (the graph orders it at each launch) instead of ordering it now, and returns
    /// its ABI values.
    #[doc(hidden)]
    fn record(self, uses: &mut NodeUses<'_>, lent: &mut Lent) -> Result<Self::Abi>;
}

/// An argument tuple for a kernel whose parameter tuple is `P`, checked at compile time.
///
/// # Safety
/// As [`KernelArg`], for every element; `fill` writes one pointer per ABI parameter, in order.
///
/// # Example
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let mut out = ctx.alloc_zeros::<u32>(4)?;
/// // `iota(out: DisjointSlice<u32>)`: a one-parameter kernel takes a 1-tuple.
/// stream.launch(&module.kernel(iota)?, LaunchConfig::for_elements(4)?, (&mut out,))?;
/// # Ok(()) }
/// ```
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
    fn lower(self, stream: &Enqueuing<'_>, lent: &mut Lent) -> Result<Self::Abi>;
    #[doc(hidden)]
    fn record(self, uses: &mut NodeUses<'_>, lent: &mut Lent) -> Result<Self::Abi>;
    #[doc(hidden)]
    fn fill(abi: &mut Self::Abi, out: &mut ParamArray);
    /// The element count of parameter `i` when it is a one-dimensional slice (for the
    /// `same_len` check); `None` when unknown, which fails that check.
    #[doc(hidden)]
    fn param_len(abi: &Self::Abi, i: usize) -> Option<u64> {
        let _ = (abi, i);
        None
    }
}

/// The lengths `#[kernel(same_len(..))]` declared equal ([`Kernel::SAME_LEN`]) are equal in
/// this launch's arguments: every typed launch path calls it, after lowering the arguments and
/// before launching, so the kernel body's assumption holds.
///
/// [`Kernel::SAME_LEN`]: gpukernel_device::Kernel::SAME_LEN
pub(crate) fn check_same_len<K: Kernel, A: LaunchArgs<K::Params>>(abi: &A::Abi) -> Result<()> {
    for group in K::SAME_LEN {
        let Some((&(first, i0), rest)) = group.split_first() else {
            continue;
        };
        let n0 = A::param_len(abi, i0);
        for &(name, i) in rest {
            let n = A::param_len(abi, i);
            if n0.is_none() || n != n0 {
                return Err(crate::Error::SameLenViolated {
                    kernel: K::NAME.to_owned(),
                    first: first.to_owned(),
                    first_len: n0,
                    other: name.to_owned(),
                    other_len: n,
                });
            }
        }
    }
    Ok(())
}

/// The most arguments a typed launch takes (the longest argument tuple).
pub(crate) const MAX_KERNEL_ARGS: usize = 16;

/// What one launch's arguments lend it: per argument that reaches memory, the allocation, the
/// byte range and whether the kernel may write it. Every typed path (stream launch, capture,
/// graph node, `set_kernel_args`) lowers its arguments through it, so one allocation's
/// overlapping bytes are never lent to one launch as written and as read or written again
/// ([`Error::AliasedArguments`](crate::Error::AliasedArguments)): a `&[T]` that changes under
/// the kernel, or two `DisjointSlice`s that give one thread two `&mut` to one element.
///
/// On the stack, no allocation: at most [`MAX_KERNEL_ARGS`] entries, each compared with the
/// earlier ones as it is added.
#[doc(hidden)]
#[allow(
    missing_debug_implementations,
    reason = "hidden plumbing of the argument traits"
)]
pub struct Lent {
    kernel: &'static str,
    same_len: &'static [&'static [(&'static str, usize)]],
    /// The position of the argument being lowered.
    pub(crate) arg: usize,
    n: usize,
    /// Whether one of `spans[..n]` may be written.
    writes: bool,
    /// `spans[..n]` are initialised.
    spans: [MaybeUninit<LentSpan>; MAX_KERNEL_ARGS],
}

#[derive(Clone, Copy)]
struct LentSpan {
    alloc: *const Tracker,
    start: u64,
    end: u64,
    writes: bool,
    arg: usize,
    param: &'static str,
}

impl Lent {
    /// Nothing lent yet, for a launch of `K`.
    #[inline(always)]
    pub(crate) fn new<K: Kernel>() -> Lent {
        Lent {
            kernel: K::NAME,
            same_len: K::SAME_LEN,
            arg: 0,
            n: 0,
            writes: false,
            spans: [const { MaybeUninit::uninit() }; MAX_KERNEL_ARGS],
        }
    }

    /// Lends `p`'s bytes to the current argument, a parameter of type `param`; refuses them
    /// when they overlap bytes of the same allocation lent to an earlier argument and either
    /// of the two may write them.
    #[inline(always)]
    pub(crate) fn add(&mut self, p: &RawParts<'_>, param: &'static str) -> Result<()> {
        let bytes = (p.len * p.elem) as u64;
        if bytes == 0 {
            return Ok(());
        }
        let span = LentSpan {
            alloc: p.tracker,
            start: p.ptr,
            end: p.ptr + bytes,
            writes: p.access != Access::Read,
            arg: self.arg,
            param,
        };
        // Two reads never conflict: a read after reads alone compares nothing.
        if span.writes || self.writes {
            for o in &self.spans[..self.n] {
                // SAFETY: `spans[..n]` are initialised.
                let o = unsafe { o.assume_init_ref() };
                if (o.writes || span.writes)
                    && core::ptr::eq(o.alloc, span.alloc)
                    && o.start < span.end
                    && span.start < o.end
                {
                    return Err(self.aliased(o, &span));
                }
            }
        }
        self.writes |= span.writes;
        // A tuple has at most `MAX_KERNEL_ARGS` elements, each lending at most once.
        if let Some(slot) = self.spans.get_mut(self.n) {
            slot.write(span);
            self.n += 1;
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn aliased(&self, first: &LentSpan, second: &LentSpan) -> crate::Error {
        let describe = |s: &LentSpan| {
            let name = self
                .same_len
                .iter()
                .flat_map(|g| g.iter())
                .find(|&&(_, i)| i == s.arg)
                .map(|&(name, _)| name);
            let ty = short_type_name(s.param);
            match name {
                Some(name) => format!("`{name}: {ty}` (argument {})", s.arg),
                None => format!("argument {} (`{ty}`)", s.arg),
            }
        };
        let what = |s: &LentSpan| if s.writes { "written" } else { "read" };
        crate::Error::AliasedArguments {
            kernel: self.kernel.to_owned(),
            first: describe(first),
            second: describe(second),
            detail: format!(
                "bytes {:#x}..{:#x} ({}) and {:#x}..{:#x} ({}) of one allocation overlap",
                first.start,
                first.end,
                what(first),
                second.start,
                second.end,
                what(second)
            ),
        }
    }
}

/// `core::any::type_name` without module paths and lifetimes:
/// `gpukernel_device::slice::DisjointSlice<'_, u32>` → `DisjointSlice<u32>`.
fn short_type_name(full: &str) -> String {
    let mut out = String::with_capacity(full.len());
    let mut word = String::new();
    let mut chars = full.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else if c == ':' && chars.peek() == Some(&':') {
            chars.next();
            word.clear();
        } else {
            out.push_str(&word);
            word.clear();
            out.push(c);
        }
    }
    out.push_str(&word);
    // Parameter types are written with `'static` for every lifetime (`Kernel::Params`).
    out.replace("'_, ", "")
        .replace("'static, ", "")
        .replace("&'static ", "&")
        .replace("&'_ ", "&")
}

/// Whether passing an argument can race by itself: [`Safe`], or [`RequiresLaunchUnchecked`]
/// (an `&mut [T]` parameter, which only `unsafe fn` kernels take).
/// [`Stream::launch`](crate::Stream::launch) accepts argument tuples whose combined level is
/// [`Safe`].
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::{LaunchArgs, Safe, SafetyLevel};
/// // Argument tuples for `saxpy` are `Safe`: `Stream::launch` takes them.
/// fn is_safe<A: LaunchArgs<P, Safety = Safe>, P>(_: &A) {}
/// let (x, mut y) = (ctx.alloc_zeros::<f32>(4)?, ctx.alloc_zeros::<f32>(4)?);
/// is_safe::<_, (f32, &[f32], gpukernel_runtime::DisjointSlice<f32>)>(&(1.0f32, &x, &mut y));
/// # Ok(()) }
/// ```
pub trait SafetyLevel {
    /// The level of two arguments together.
    type And<B: SafetyLevel>: SafetyLevel;
}

/// See [`SafetyLevel`]: the launch cannot race by itself.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::{LaunchArgs, Safe};
/// fn launchable<P, A: LaunchArgs<P, Safety = Safe>>(_: A) {}
/// let mut out = ctx.alloc_zeros::<u32>(4)?;
/// launchable::<(gpukernel_runtime::DisjointSlice<u32>,), _>((&mut out,));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub enum Safe {}

/// See [`SafetyLevel`]: the kernel takes `&mut [T]`; launch it with
/// `unsafe { stream.launch_unchecked(..) }`.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let mut data = ctx.htod_copy(&[1.0f32; 4])?;
/// let scale = module.kernel(scale)?; // takes `&mut [f32]`: its arguments are RequiresLaunchUnchecked
/// // stream.launch(&scale, ..) does not compile; the caller vouches for the kernel instead:
/// // SAFETY: one thread per element.
/// unsafe { stream.launch_unchecked(&scale, LaunchConfig::for_elements(4)?, (2.0f32, &mut data))? };
/// # Ok(()) }
/// ```
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
    fn lower(self, _stream: &Enqueuing<'_>, _lent: &mut Lent) -> Result<Scalar<T>> {
        Ok(Scalar(self))
    }
    #[inline(always)]
    fn record(self, _uses: &mut NodeUses<'_>, _lent: &mut Lent) -> Result<Scalar<T>> {
        Ok(Scalar(self))
    }
}

// --- slices ----------------------------------------------------------------------------------

/// The address a slice or view argument passes: never 0. Memory at address 0 is empty (an
/// allocation is never there), and the device code may then assume that every slice pointer
/// is not null (`DisjointSlice::get_mut`'s `Some` costs no compare); 256 is aligned for every
/// element type and never dereferenced, as nothing is in range.
#[inline(always)]
fn non_null(addr: u64) -> u64 {
    if addr == 0 { 256 } else { addr }
}

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
            fn lower(self, stream: &Enqueuing<'_>, lent: &mut Lent) -> Result<Self::Abi> {
                #[allow(unused_mut)]
                let mut this = self;
                let p = this.$method();
                lent.add(&p, core::any::type_name::<$p>())?;
                p.track_argument("a buffer argument", stream)?;
                Ok(slice_arg!(@lower p, $kind))
            }
            fn record(self, uses: &mut NodeUses<'_>, lent: &mut Lent) -> Result<Self::Abi> {
                #[allow(unused_mut)]
                let mut this = self;
                let p = this.$method();
                lent.add(&p, core::any::type_name::<$p>())?;
                uses.record("Graph::add_kernel", "a buffer argument", p)?;
                Ok(slice_arg!(@lower p, $kind))
            }
        }
    )* };
    (@abi slice) => { Slice };
    (@abi ptr) => { Scalar<u64> };
    (@lower $p:ident, slice) => { Slice { ptr: non_null($p.ptr), len: $p.len as u64 } };
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

    ['g, T: DeviceCopy] GraphBuffer<'g, T> => &'static [T], raw_parts, slice, Safe;
    ['g, T: DeviceCopy] GraphBuffer<'g, T> => *const T, raw_parts, ptr, Safe;
    ['g, T: DeviceCopy] GraphBufferMut<'g, T> => &'static [T], raw_parts, slice, Safe;
    ['g, T: DeviceCopy] GraphBufferMut<'g, T> => *const T, raw_parts, ptr, Safe;
    ['g, T: DeviceCopy] GraphBufferMut<'g, T> => DisjointSlice<'static, T>, raw_parts_mut, slice, Safe;
    ['g, T: DeviceCopy] GraphBufferMut<'g, T> => &'static mut [T], raw_parts_mut, slice, RequiresLaunchUnchecked;
    ['g, T: DeviceCopy] GraphBufferMut<'g, T> => *mut T, raw_parts_mut, ptr, Safe;
}

// --- 2D and 3D outputs -----------------------------------------------------------------------

macro_rules! shaped_arg {
    ($([$($gen:tt)*] $ty:ty => $p:ty, $n:literal;)*) => { $(
        // SAFETY: lowers to the view's pointer and the shape checked when the view was made
        // (so every element the kernel reaches is inside the view); the exclusive borrow ends
        // after the launch, and `track` orders later conflicting work after it.
        unsafe impl<$($gen)*> KernelArg<$p> for $ty {
            type Safety = Safe;
            type Abi = Extents<$n>;
            #[inline(always)]
            fn lower(self, stream: &Enqueuing<'_>, lent: &mut Lent) -> Result<Extents<$n>> {
                #[allow(unused_mut)]
                let mut this = self;
                let (p, shape) = this.parts();
                lent.add(&p, core::any::type_name::<$p>())?;
                p.track_argument("a 2D or 3D view argument", stream)?;
                Ok(Extents { ptr: non_null(p.ptr), shape })
            }
            fn record(self, uses: &mut NodeUses<'_>, lent: &mut Lent) -> Result<Extents<$n>> {
                #[allow(unused_mut)]
                let mut this = self;
                let (p, shape) = this.parts();
                lent.add(&p, core::any::type_name::<$p>())?;
                uses.record("Graph::add_kernel", "a 2D or 3D view argument", p)?;
                Ok(Extents { ptr: non_null(p.ptr), shape })
            }
        }
    )* };
}

shaped_arg! {
    ['v, T: DeviceCopy] DeviceView2DMut<'v, T> => DisjointSlice2D<'static, T>, 3;
    ['b, 'v, T: DeviceCopy] &'b mut DeviceView2DMut<'v, T> => DisjointSlice2D<'static, T>, 3;
    ['v, T: DeviceCopy] DeviceView3DMut<'v, T> => DisjointSlice3D<'static, T>, 4;
    ['b, 'v, T: DeviceCopy] &'b mut DeviceView3DMut<'v, T> => DisjointSlice3D<'static, T>, 4;
}

// SAFETY: lowers to the view's pointer and the shape checked when the view was made (every
// element the kernel reaches is inside the view); the shared borrow ends after the launch,
// and `track` orders later writers after it (a read: readers never wait for readers).
unsafe impl<'v, T: DeviceCopy> KernelArg<Slice2D<'static, T>> for DeviceView2D<'v, T> {
    type Safety = Safe;
    type Abi = Extents<3>;
    #[inline(always)]
    fn lower(self, stream: &Enqueuing<'_>, lent: &mut Lent) -> Result<Extents<3>> {
        let (p, shape) = self.parts();
        lent.add(&p, core::any::type_name::<Slice2D<'static, T>>())?;
        p.track_argument("a 2D view argument", stream)?;
        Ok(Extents {
            ptr: non_null(p.ptr),
            shape,
        })
    }
    fn record(self, uses: &mut NodeUses<'_>, lent: &mut Lent) -> Result<Extents<3>> {
        let (p, shape) = self.parts();
        lent.add(&p, core::any::type_name::<Slice2D<'static, T>>())?;
        uses.record("Graph::add_kernel", "a 2D view argument", p)?;
        Ok(Extents {
            ptr: non_null(p.ptr),
            shape,
        })
    }
}
// SAFETY: as above.
unsafe impl<'b, 'v, T: DeviceCopy> KernelArg<Slice2D<'static, T>> for &'b DeviceView2D<'v, T> {
    type Safety = Safe;
    type Abi = Extents<3>;
    #[inline(always)]
    fn lower(self, stream: &Enqueuing<'_>, lent: &mut Lent) -> Result<Extents<3>> {
        (*self).lower(stream, lent)
    }
    fn record(self, uses: &mut NodeUses<'_>, lent: &mut Lent) -> Result<Extents<3>> {
        (*self).record(uses, lent)
    }
}

// --- raw pointers ----------------------------------------------------------------------------

// SAFETY: lowers to one u64 address; the kernel dereferences it in its own unsafe code.
unsafe impl<T> KernelArg<*const T> for DevicePtr<T> {
    type Safety = Safe;
    type Abi = Scalar<u64>;
    #[inline(always)]
    fn lower(self, _stream: &Enqueuing<'_>, _lent: &mut Lent) -> Result<Scalar<u64>> {
        Ok(Scalar(self.addr()))
    }
    #[inline(always)]
    fn record(self, _uses: &mut NodeUses<'_>, _lent: &mut Lent) -> Result<Scalar<u64>> {
        Ok(Scalar(self.addr()))
    }
}
// SAFETY: as above.
unsafe impl<T> KernelArg<*mut T> for DevicePtr<T> {
    type Safety = Safe;
    type Abi = Scalar<u64>;
    #[inline(always)]
    fn lower(self, _stream: &Enqueuing<'_>, _lent: &mut Lent) -> Result<Scalar<u64>> {
        Ok(Scalar(self.addr()))
    }
    #[inline(always)]
    fn record(self, _uses: &mut NodeUses<'_>, _lent: &mut Lent) -> Result<Scalar<u64>> {
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
            #[allow(unused_assignments)]
            fn lower(self, stream: &Enqueuing<'_>, lent: &mut Lent) -> Result<Self::Abi> {
                let _ = (stream, &lent);
                let ($($a,)*) = self;
                Ok(($({
                    let abi = KernelArg::<$P>::lower($a, stream, lent)?;
                    lent.arg += 1;
                    abi
                },)*))
            }
            #[inline(always)]
            #[allow(unused_assignments)]
            fn record(self, uses: &mut NodeUses<'_>, lent: &mut Lent) -> Result<Self::Abi> {
                let _ = (&uses, &lent);
                let ($($a,)*) = self;
                Ok(($({
                    let abi = KernelArg::<$P>::record($a, uses, lent)?;
                    lent.arg += 1;
                    abi
                },)*))
            }
            #[inline(always)]
            #[allow(unused_mut, unused_variables, unused_assignments)]
            fn param_len(abi: &Self::Abi, i: usize) -> Option<u64> {
                let ($($a,)*) = abi;
                let mut k = 0usize;
                $(
                    if k == i {
                        return Abi::len($a);
                    }
                    k += 1;
                )*
                None
            }
            #[inline(always)]
            #[allow(unused_mut)]
            fn fill(abi: &mut Self::Abi, out: &mut ParamArray) {
                let _ = &out;
                let ($($a,)*) = abi;
                $(Abi::push($a, out);)*
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
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4, A5 P5 a5, A6 P6 a6, A7 P7 a7, A8 P8 a8, A9 P9 a9, A10 P10 a10, A11 P11 a11, A12 P12 a12);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4, A5 P5 a5, A6 P6 a6, A7 P7 a7, A8 P8 a8, A9 P9 a9, A10 P10 a10, A11 P11 a11, A12 P12 a12, A13 P13 a13);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4, A5 P5 a5, A6 P6 a6, A7 P7 a7, A8 P8 a8, A9 P9 a9, A10 P10 a10, A11 P11 a11, A12 P12 a12, A13 P13 a13, A14 P14 a14);
tuple_args!(A0 P0 a0, A1 P1 a1, A2 P2 a2, A3 P3 a3, A4 P4 a4, A5 P5 a5, A6 P6 a6, A7 P7 a7, A8 P8 a8, A9 P9 a9, A10 P10 a10, A11 P11 a11, A12 P12 a12, A13 P13 a13, A14 P14 a14, A15 P15 a15);

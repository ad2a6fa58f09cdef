//! The host-side face of a `#[kernel]`: what the runtime needs for a typed launch.

use core::ffi::c_void;

/// The simulator's entry point of one kernel: runs the kernel body for the current simulated
/// thread. `params` is the same array of pointers to ABI values that `cuLaunchKernel` takes.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{Kernel, thread};
/// #[kernel]
/// pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
///     let i = thread::index();
///     if let Some(yi) = y.get_mut(&i) { *yi += a * x[i.get()]; }
/// }
///
/// use gpukernel_device::SimEntry;
/// let entry: SimEntry = <saxpy as Kernel>::SIM_ENTRY; // what the simulator runs per thread
/// ```
pub type SimEntry = unsafe fn(params: *const *mut c_void);

/// A kernel compiled by `#[kernel]`.
///
/// On the host, `#[kernel] pub fn saxpy(..)` expands to a marker type `saxpy` (a braced
/// struct, so only the type namespace holds it) that implements this trait, and a function
/// `saxpy()` returning it; the runtime looks the kernel up with `module.kernel(saxpy)?` (see
/// [`IntoKernel`]) and launches it: `stream.launch(&k, cfg, (a, &x, &mut y))`.
///
/// # ABI
/// Parameters lower in order, each to one or more PTX `.param`s:
/// * scalars and `DeviceCopy` structs: one parameter, by value;
/// * `&[T]`, `&mut [T]` and [`DisjointSlice<T>`](crate::DisjointSlice): two parameters, the
///   data pointer (`u64`) then the length in elements (`u64`);
/// * [`DisjointSlice2D<T>`](crate::DisjointSlice2D) and [`Slice2D<T>`](crate::Slice2D):
///   four, the pointer then `cols`, `rows`, `pitch`; [`DisjointSlice3D<T>`](crate::DisjointSlice3D): five, the pointer then `cols`,
///   `rows`, `depth`, `pitch` (each `u64`);
/// * `*const T` / `*mut T`: one `u64` parameter.
///
/// # Safety
/// Implemented only by `#[kernel]`: [`NAME`](Kernel::NAME) is the PTX entry's name,
/// [`Params`](Kernel::Params) lists the parameters' types in order,
/// [`SIM_ENTRY`](Kernel::SIM_ENTRY) reads the parameter array in the ABI above, and
/// [`SIGNATURE`](Kernel::SIGNATURE) is the value the device build exported for this kernel.
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{Kernel, thread};
/// #[kernel]
/// pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
///     let i = thread::index();
///     if let Some(yi) = y.get_mut(&i) { *yi += a * x[i.get()]; }
/// }
///
/// // On the host, `saxpy` is also a marker type describing the kernel for the runtime.
/// assert_eq!(<saxpy as Kernel>::NAME, "saxpy");
/// let params: Option<<saxpy as Kernel>::Params> = None; // (f32, &[f32], DisjointSlice<f32>)
/// assert_ne!(<saxpy as Kernel>::SIGNATURE, 0);
/// ```
pub unsafe trait Kernel: Copy + Send + Sync + 'static {
    /// The PTX `.entry` name (the Rust function's name, unmangled).
    const NAME: &'static str;
    /// The kernel's parameter types in order, as a tuple, with `'static` standing for every
    /// lifetime, e.g. `(f32, &'static [f32], DisjointSlice<'static, f32>)`. It implements
    /// [`ParamList`] for every `#[kernel]` (the runtime checks it against the loaded image).
    type Params;
    /// Runs the body for one simulated thread.
    const SIM_ENTRY: SimEntry;
    /// The kernel's signature fingerprint ([`kernel_fingerprint`](crate::signature::kernel_fingerprint)
    /// of [`PARAM_SIGNATURES`](Kernel::PARAM_SIGNATURES)): a hash that the compiler computes
    /// from the crate's name, the kernel's name, whether it is an `unsafe fn`, and each
    /// parameter's lowering, resolved type layout (size, alignment and kind of every scalar,
    /// recursively) and `same_len` group. The device build evaluates the same expression with
    /// the device's types and exports it in the global [`signature_symbol`]`(NAME)`, so that
    /// the runtime can tell the entry `#[kernel]` compiled from this very signature from a
    /// same-named entry compiled from other types (another crate's kernel, a type alias that
    /// resolves differently on the device, PTX from another version of gpukernel).
    const SIGNATURE: u64;
    /// Each parameter as the fingerprint sees it (name, type as written, lowering, layout,
    /// `same_len` group), in order: when [`SIGNATURE`](Kernel::SIGNATURE) differs from the
    /// module's, the runtime compares them with the per-parameter words of the global to name
    /// the parameter at fault. Empty for a hand-written implementation.
    const PARAM_SIGNATURES: &'static [crate::signature::ParamSignature] = &[];
    /// Groups of parameters that `#[kernel(same_len(a, b, ..))]` declares to have one length
    /// (each `(name, position)`; slices and one-dimensional `DisjointSlice`s). Every typed
    /// launch checks them on the host and refuses the launch otherwise, so the body may
    /// assume them (the macro tells the compiler, and per-element bounds checks of the others
    /// fold into one). Empty unless declared.
    const SAME_LEN: &'static [&'static [(&'static str, usize)]] = &[];
}

/// The prefix of the global that holds a kernel's [`Kernel::SIGNATURE`] in the device code:
/// the global is `__gpukernel_sig_<NAME>`.
pub const SIGNATURE_SYMBOL_PREFIX: &str = "__gpukernel_sig_";

/// The name of the global holding the signature fingerprint of the kernel whose entry is
/// `kernel_name`: `__gpukernel_sig_<kernel_name>`.
///
/// In the module it is an exported (`.visible .global`) array of `u64`s,
/// [`signature_words`](crate::signature::signature_words): the format's magic word,
/// [`Kernel::SIGNATURE`], the parameter count, then each parameter's fingerprint and summary.
/// A global of one `u64` holding [`Kernel::SIGNATURE`] is also accepted (hand-written PTX).
/// Kernels not compiled by `#[kernel]` (CUDA C `__global__` functions) have none.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::signature_symbol;
/// // The global the runtime reads to check that an entry is this very `#[kernel]`.
/// assert_eq!(signature_symbol("saxpy"), "__gpukernel_sig_saxpy");
/// ```
pub fn signature_symbol(kernel_name: &str) -> std::string::String {
    std::format!("{SIGNATURE_SYMBOL_PREFIX}{kernel_name}")
}

/// A kernel that no argument list accepted by the safe typed launch can make unsound.
///
/// `#[kernel]` implements it for every kernel declared `fn` and never for one declared
/// `unsafe fn`: an `unsafe fn` kernel has preconditions that no argument type checks (that a
/// raw pointer is valid, how threads share a `&mut [T]`), so the runtime's `Stream::launch`
/// requires this trait and such kernels go through `unsafe { stream.launch_unchecked(..) }`,
/// whose caller upholds the kernel's `# Safety` contract.
///
/// # Safety
/// The kernel's body must be sound for every argument tuple the safe launch accepts for
/// [`Kernel::Params`] (shared slices read-only, `DisjointSlice`s written at each thread's own
/// index, any address for a raw pointer parameter, any value for a scalar or `DeviceCopy`
/// parameter).
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{SafeKernel, thread};
/// #[kernel]
/// pub fn fill(v: u32, mut out: DisjointSlice<u32>) { out.set(thread::index(), v); }
/// /// # Safety
/// /// `data` must be valid for `n` elements.
/// #[kernel]
/// pub unsafe fn raw_fill(data: *mut u32, n: usize) { let _ = (data, n); }
/// fn safe<K: SafeKernel>(_: K) {}
/// safe(fill()); // launches with `stream.launch`; `raw_fill` only with `launch_unchecked`
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is an `unsafe fn` kernel: launch it with `unsafe {{ stream.launch_unchecked(..) }}` and uphold its `# Safety` contract",
    label = "`Stream::launch` launches safe kernels only",
    note = "an `unsafe fn` kernel has preconditions that no argument type checks (a raw pointer's validity, how threads share a `&mut [T]`)"
)]
pub unsafe trait SafeKernel: Kernel {}

/// What the runtime's `Module::kernel` accepts for kernel `K`: the kernel's name as
/// `#[kernel]` defines it on the host (a function returning the marker value, so that
/// `let saxpy = module.kernel(saxpy)?;` may rebind the name), or a marker value itself.
///
/// `M` only tells the two implementations apart ([`into_kernel::Constructor`] and
/// [`into_kernel::Value`]); it is always inferred.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{Kernel, thread};
/// #[kernel]
/// pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
///     let i = thread::index();
///     if let Some(yi) = y.get_mut(&i) { *yi += a * x[i.get()]; }
/// }
///
/// use gpukernel_device::IntoKernel;
/// fn name_of<K: Kernel, M>(k: impl IntoKernel<K, M>) -> &'static str {
///     let _ = k.into_kernel();
///     K::NAME
/// }
/// assert_eq!(name_of(saxpy), "saxpy"); // the function's name, as `module.kernel(saxpy)` takes it
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a `#[kernel]`",
    label = "expected the name of a `#[kernel]` function",
    note = "pass the kernel itself: `module.kernel(saxpy)` for `#[kernel] fn saxpy(..)`"
)]
pub trait IntoKernel<K: Kernel, M> {
    /// The kernel's marker value.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{Kernel, thread};
    /// #[kernel]
    /// pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    ///     let i = thread::index();
    ///     if let Some(yi) = y.get_mut(&i) { *yi += a * x[i.get()]; }
    /// }
    ///
    /// use gpukernel_device::IntoKernel;
    /// let marker: saxpy = IntoKernel::<saxpy, _>::into_kernel(saxpy); // from the function
    /// let same: saxpy = marker.into_kernel(); // or from the marker itself
    /// ```
    fn into_kernel(self) -> K;
}

/// The markers that keep [`IntoKernel`]'s two implementations apart.
pub mod into_kernel {
    /// [`IntoKernel`](super::IntoKernel) for a function returning the marker (what
    /// `#[kernel]` generates under the kernel's name).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{Kernel, thread};
    /// #[kernel]
    /// pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    ///     let i = thread::index();
    ///     if let Some(yi) = y.get_mut(&i) { *yi += a * x[i.get()]; }
    /// }
    ///
    /// use gpukernel_device::{IntoKernel, into_kernel::Constructor};
    /// // `saxpy` the function (returning the marker) converts through `Constructor`.
    /// let k: saxpy = IntoKernel::<saxpy, Constructor>::into_kernel(saxpy);
    /// ```
    #[derive(Debug)]
    pub enum Constructor {}
    /// [`IntoKernel`](super::IntoKernel) for the marker value itself.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{Kernel, thread};
    /// #[kernel]
    /// pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
    ///     let i = thread::index();
    ///     if let Some(yi) = y.get_mut(&i) { *yi += a * x[i.get()]; }
    /// }
    ///
    /// use gpukernel_device::{IntoKernel, into_kernel::Value};
    /// // A marker value converts through `Value`.
    /// let k: saxpy = IntoKernel::<saxpy, Value>::into_kernel(saxpy());
    /// ```
    #[derive(Debug)]
    pub enum Value {}
}

impl<K: Kernel> IntoKernel<K, into_kernel::Value> for K {
    #[inline(always)]
    fn into_kernel(self) -> K {
        self
    }
}

impl<K: Kernel, F: FnOnce() -> K> IntoKernel<K, into_kernel::Constructor> for F {
    #[inline(always)]
    fn into_kernel(self) -> K {
        self()
    }
}

/// How many dimensions a kernel's launch may have, from what its parameters need: a kernel
/// that takes a [`DisjointSlice`](crate::DisjointSlice) is written at the one-dimensional
/// [`ThreadIndex`](crate::ThreadIndex), which is unique only in a one-dimensional launch; one
/// that takes a [`DisjointSlice2D`](crate::DisjointSlice2D) needs a z extent of 1. The
/// runtime's typed launches check the configuration against it on the host, so the device
/// tests nothing.
///
/// ```
/// use gpukernel_device::{DisjointSlice, DisjointSlice2D, LaunchDims, ParamList};
/// type Saxpy = (f32, &'static [f32], DisjointSlice<'static, f32>);
/// assert_eq!(<Saxpy as ParamList>::LAUNCH_DIMS, LaunchDims::One);
/// type Image = (&'static [f32], DisjointSlice2D<'static, f32>);
/// assert_eq!(<Image as ParamList>::LAUNCH_DIMS, LaunchDims::Two);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LaunchDims {
    /// `grid.y`, `grid.z`, `block.y` and `block.z` must be 1.
    One,
    /// `grid.z` and `block.z` must be 1.
    Two,
    /// Any configuration.
    Three,
}

impl LaunchDims {
    /// The stricter of two requirements.
    ///
    /// ```
    /// use gpukernel_device::LaunchDims;
    /// assert_eq!(LaunchDims::Two.min(LaunchDims::One), LaunchDims::One);
    /// ```
    pub const fn min(self, other: LaunchDims) -> LaunchDims {
        if (self as u8) < (other as u8) {
            self
        } else {
            other
        }
    }

    /// The first grid or block dimension of `grid` / `block` (x, y, z) that breaks the
    /// requirement, as `("grid.y", value)`; `None` when the configuration is allowed.
    ///
    /// ```
    /// use gpukernel_device::LaunchDims;
    /// assert_eq!(LaunchDims::One.violation([8, 2, 1], [256, 1, 1]), Some(("grid.y", 2)));
    /// assert_eq!(LaunchDims::Two.violation([8, 2, 1], [16, 16, 1]), None);
    /// ```
    #[inline(always)]
    pub fn violation(self, grid: [u32; 3], block: [u32; 3]) -> Option<(&'static str, u32)> {
        let from = match self {
            LaunchDims::One => 1,
            LaunchDims::Two => 2,
            LaunchDims::Three => return None,
        };
        if (from..3).all(|i| grid[i] == 1 && block[i] == 1) {
            return None;
        }
        const NAMES: [[&str; 3]; 2] = [
            ["grid.x", "grid.y", "grid.z"],
            ["block.x", "block.y", "block.z"],
        ];
        (from..3).find_map(|i| {
            if grid[i] != 1 {
                Some((NAMES[0][i], grid[i]))
            } else if block[i] != 1 {
                Some((NAMES[1][i], block[i]))
            } else {
                None
            }
        })
    }
}

/// The `.param`s a kernel parameter type lowers to (see [`Kernel`]'s ABI), by size in bytes;
/// for a tuple, its elements' in order. The runtime compares them with what the loaded
/// image's entry declares before it hands out a typed kernel.
///
/// # Safety
/// [`SIZES`](ParamAbi::SIZES) must be exactly the lowering `#[kernel]` performs, and
/// [`LAUNCH_DIMS`](ParamAbi::LAUNCH_DIMS) at most what the type's safe accessors need.
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::ParamAbi;
/// assert_eq!(<f32 as ParamAbi>::SIZES, [4]);
/// assert_eq!(<&'static [f32] as ParamAbi>::SIZES, [8, 8]); // pointer, length
/// assert_eq!(<*mut u8 as ParamAbi>::SIZES, [8]);
/// ```
pub unsafe trait ParamAbi {
    /// The sizes of the `.param`s, in order.
    const SIZES: &'static [usize];
    /// The launches a kernel taking this parameter may have (see [`LaunchDims`]).
    const LAUNCH_DIMS: LaunchDims = LaunchDims::Three;
}

// SAFETY: scalars and `DeviceCopy` structs are one parameter of their own size.
unsafe impl<T: crate::DeviceCopy> ParamAbi for T {
    const SIZES: &'static [usize] = &[core::mem::size_of::<T>()];
}
// SAFETY: a conditional handle is one `u64` (`repr(transparent)`).
unsafe impl ParamAbi for crate::graph::ConditionalHandle {
    const SIZES: &'static [usize] = &[8];
}
// SAFETY: slices lower to a `u64` pointer and a `u64` length.
unsafe impl<T> ParamAbi for &'static [T] {
    const SIZES: &'static [usize] = &[8, 8];
}
// SAFETY: as above.
unsafe impl<T> ParamAbi for &'static mut [T] {
    const SIZES: &'static [usize] = &[8, 8];
}
// SAFETY: as above; written at the one-dimensional `ThreadIndex`.
unsafe impl<T> ParamAbi for crate::DisjointSlice<'static, T> {
    const SIZES: &'static [usize] = &[8, 8];
    const LAUNCH_DIMS: LaunchDims = LaunchDims::One;
}
// SAFETY: pointer, cols, rows, pitch; written at `ThreadIndex2D`, unique when z is 1.
unsafe impl<T> ParamAbi for crate::DisjointSlice2D<'static, T> {
    const SIZES: &'static [usize] = &[8, 8, 8, 8];
    const LAUNCH_DIMS: LaunchDims = LaunchDims::Two;
}
// SAFETY: pointer, cols, rows, pitch; read-only, so any launch.
unsafe impl<T> ParamAbi for crate::Slice2D<'static, T> {
    const SIZES: &'static [usize] = &[8, 8, 8, 8];
}
// SAFETY: pointer, cols, rows, depth, pitch; `ThreadIndex3D` is unique in any launch.
unsafe impl<T> ParamAbi for crate::DisjointSlice3D<'static, T> {
    const SIZES: &'static [usize] = &[8, 8, 8, 8, 8];
}
// SAFETY: raw pointers lower to one `u64`.
unsafe impl<T> ParamAbi for *const T {
    const SIZES: &'static [usize] = &[8];
}
// SAFETY: as above.
unsafe impl<T> ParamAbi for *mut T {
    const SIZES: &'static [usize] = &[8];
}

/// A kernel's parameter list (the tuple [`Kernel::Params`]): each element's `.param` sizes,
/// in order, and the launches the kernel may have.
///
/// # Safety
/// [`PARTS`](ParamList::PARTS) must hold the elements' [`ParamAbi::SIZES`] in order, and
/// [`LAUNCH_DIMS`](ParamList::LAUNCH_DIMS) the strictest of their [`ParamAbi::LAUNCH_DIMS`].
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{Kernel, thread};
/// #[kernel]
/// pub fn saxpy(a: f32, x: &[f32], mut y: DisjointSlice<f32>) {
///     let i = thread::index();
///     if let Some(yi) = y.get_mut(&i) { *yi += a * x[i.get()]; }
/// }
///
/// use gpukernel_device::ParamList;
/// // What the runtime compares with the loaded entry's `.param`s.
/// assert_eq!(<<saxpy as Kernel>::Params as ParamList>::PARTS, [&[4][..], &[8, 8], &[8, 8]]);
/// ```
pub unsafe trait ParamList {
    /// One entry per kernel parameter: the sizes of the `.param`s it lowers to.
    const PARTS: &'static [&'static [usize]];
    /// The launches the kernel may have: the strictest requirement of its parameters.
    const LAUNCH_DIMS: LaunchDims;
}

macro_rules! impl_param_list {
    ($($name:ident),*) => {
        // SAFETY: the elements' sizes, in order; the strictest launch requirement.
        unsafe impl<$($name: ParamAbi),*> ParamList for ($($name,)*) {
            const PARTS: &'static [&'static [usize]] = &[$($name::SIZES),*];
            const LAUNCH_DIMS: LaunchDims = LaunchDims::Three$(.min($name::LAUNCH_DIMS))*;
        }
    };
}
impl_param_list!();
impl_param_list!(A);
impl_param_list!(A, B);
impl_param_list!(A, B, C);
impl_param_list!(A, B, C, D);
impl_param_list!(A, B, C, D, E);
impl_param_list!(A, B, C, D, E, F);
impl_param_list!(A, B, C, D, E, F, G);
impl_param_list!(A, B, C, D, E, F, G, H);
impl_param_list!(A, B, C, D, E, F, G, H, I);
impl_param_list!(A, B, C, D, E, F, G, H, I, J);
impl_param_list!(A, B, C, D, E, F, G, H, I, J, K);
impl_param_list!(A, B, C, D, E, F, G, H, I, J, K, L);
impl_param_list!(A, B, C, D, E, F, G, H, I, J, K, L, M);
impl_param_list!(A, B, C, D, E, F, G, H, I, J, K, L, M, N);
impl_param_list!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O);
impl_param_list!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DisjointSlice;

    #[test]
    fn signature_symbols() {
        assert_eq!(signature_symbol("saxpy"), "__gpukernel_sig_saxpy");
        assert!(signature_symbol("k").starts_with(SIGNATURE_SYMBOL_PREFIX));
    }

    #[test]
    fn parameter_lists_lower_as_the_abi_says() {
        type Saxpy = (f32, &'static [f32], DisjointSlice<'static, f32>);
        assert_eq!(<Saxpy as ParamList>::PARTS, &[&[4][..], &[8, 8], &[8, 8]]);
        type Mixed = (i8, u16, bool, [f64; 3], *const u8, &'static mut [u32]);
        assert_eq!(
            <Mixed as ParamList>::PARTS,
            &[&[1][..], &[2], &[1], &[24], &[8], &[8, 8]]
        );
        assert!(<() as ParamList>::PARTS.is_empty());
    }

    #[test]
    fn disjoint_outputs_restrict_the_launch() {
        use crate::{DisjointSlice2D, DisjointSlice3D};
        type Saxpy = (f32, &'static [f32], DisjointSlice<'static, f32>);
        assert_eq!(<Saxpy as ParamList>::LAUNCH_DIMS, LaunchDims::One);
        type Plane = (
            &'static [f32],
            DisjointSlice2D<'static, f32>,
            DisjointSlice3D<'static, u8>,
        );
        assert_eq!(<Plane as ParamList>::LAUNCH_DIMS, LaunchDims::Two);
        type Both = (DisjointSlice2D<'static, f32>, DisjointSlice<'static, f32>);
        assert_eq!(<Both as ParamList>::LAUNCH_DIMS, LaunchDims::One);
        type Free = (DisjointSlice3D<'static, f32>, *mut u32, &'static mut [u8]);
        assert_eq!(<Free as ParamList>::LAUNCH_DIMS, LaunchDims::Three);
        assert_eq!(<() as ParamList>::LAUNCH_DIMS, LaunchDims::Three);
        assert_eq!(<Plane as ParamList>::PARTS[1], &[8, 8, 8, 8]);
        assert_eq!(<Free as ParamList>::PARTS[0], &[8, 8, 8, 8, 8]);
    }

    #[test]
    fn violations_name_the_first_offending_dimension() {
        let one = LaunchDims::One;
        assert_eq!(one.violation([40, 1, 1], [256, 1, 1]), None);
        assert_eq!(one.violation([40, 2, 1], [256, 1, 1]), Some(("grid.y", 2)));
        assert_eq!(
            one.violation([40, 1, 1], [16, 16, 1]),
            Some(("block.y", 16))
        );
        assert_eq!(one.violation([4, 1, 3], [16, 1, 1]), Some(("grid.z", 3)));
        let two = LaunchDims::Two;
        assert_eq!(two.violation([4, 9, 1], [16, 16, 1]), None);
        assert_eq!(two.violation([4, 9, 1], [16, 8, 2]), Some(("block.z", 2)));
        assert_eq!(LaunchDims::Three.violation([4, 9, 7], [4, 4, 4]), None);
    }
}

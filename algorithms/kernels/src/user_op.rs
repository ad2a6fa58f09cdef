//! The device-wide reduce and scans of a user's operator, instantiated in the user's own
//! kernels crate by [`device_algorithms!`](crate::device_algorithms).
//!
//! A kernel is compiled to PTX when its crate is built, for concrete types: a generic
//! `reduce::<MyOp>` cannot be instantiated from host code at run time, and this crate cannot
//! name a type of a crate that depends on it. So the algorithms' bodies are public generic
//! functions ([`ordered::ordered_reduce`](crate::ordered::ordered_reduce),
//! [`scan::scan_tile`](crate::scan::scan_tile)), and the macro, invoked in the crate that
//! defines the operator, writes the `#[kernel]` entries for its type and operator plus a
//! marker type implementing [`UserOp`], which `gpukernel-algorithms` takes on the host.

/// The kernels [`device_algorithms!`](crate::device_algorithms) instantiated for one element
/// type and operator (implemented by the marker type the macro declares; host only).
#[cfg(not(target_arch = "nvptx64"))]
pub trait UserOp: Copy + Send + Sync + 'static {
    /// The element type.
    type T: crate::Item;
    /// The in-order reduce, one launch (input, output, scratch).
    type Reduce: gpukernel_device::SafeKernel<
            Params = (
                &'static [Self::T],
                gpukernel_device::DisjointSlice<'static, Self::T>,
                gpukernel_device::DisjointSlice<'static, u64>,
            ),
        >;
    /// The inclusive scan.
    type ScanInclusive: gpukernel_device::Kernel<
            Params = (
                &'static [Self::T],
                gpukernel_device::DisjointSlice<'static, Self::T>,
                gpukernel_device::DisjointSlice<'static, u64>,
            ),
        >;
    /// The exclusive scan.
    type ScanExclusive: gpukernel_device::Kernel<
            Params = (
                &'static [Self::T],
                gpukernel_device::DisjointSlice<'static, Self::T>,
                gpukernel_device::DisjointSlice<'static, u64>,
            ),
        >;
    /// The three kernels' markers.
    fn kernels() -> (Self::Reduce, Self::ScanInclusive, Self::ScanExclusive);
}

#[doc(hidden)]
pub use gpukernel_device::kernel as __kernel;

/// Instantiates the device-wide in-order reduce and the inclusive and exclusive scans of a
/// user's associative operator (any [`Identity`](gpukernel_device::ops::Identity) of an
/// [`Item`](crate::Item) type; it need not be commutative) in the calling kernels crate, and
/// declares a marker type implementing [`UserOp`] that `gpukernel_algorithms::Algorithms`'s
/// `reduce_user`, `inclusive_scan_user` and `exclusive_scan_user` take.
///
/// The three kernel names are the caller's (PTX entry names are global: one set per
/// operator). The calling crate is a kernels crate (built by `nvptx-builder`) that depends on
/// `gpukernel-device` under that name and on `gpukernel-algorithms-kernels`.
///
/// ```ignore
/// use gpukernel_device::ops::{Identity, ReduceOp};
///
/// /// (first, last) of a sequence, packed in a u64: associative, not commutative.
/// #[derive(Clone, Copy)]
/// pub struct FirstLast;
/// impl ReduceOp<u64> for FirstLast { /* … */ }
/// impl Identity<u64> for FirstLast { /* … */ }
///
/// gpukernel_algorithms_kernels::device_algorithms! {
///     /// The algorithms of `FirstLast`.
///     pub struct FirstLastAlgorithms for u64, FirstLast;
///     reduce: first_last_reduce;
///     scan: first_last_inclusive, first_last_exclusive;
/// }
/// ```
#[macro_export]
macro_rules! device_algorithms {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident for $t:ty, $op:expr;
        reduce: $r:ident;
        scan: $si:ident, $se:ident;
    ) => {
        #[doc = concat!("The in-order reduce of `", stringify!($op), "`, one launch (see \
            `gpukernel_algorithms_kernels::ordered::ordered_reduce`).")]
        #[$crate::user_op::__kernel]
        pub fn $r(
            input: &[$t],
            out: ::gpukernel_device::DisjointSlice<$t>,
            scratch: ::gpukernel_device::DisjointSlice<u64>,
        ) {
            $crate::ordered::ordered_reduce::<$t, _>(input, out, scratch, $op);
        }
        #[doc = concat!("Inclusive scan of `", stringify!($op), "`.")]
        ///
        /// # Safety
        ///
        /// `status` holds the scan's status words, all zero when the launch starts and this
        /// launch's alone (as `gpukernel-algorithms` gives each call).
        #[$crate::user_op::__kernel]
        pub unsafe fn $si(
            input: &[$t],
            output: ::gpukernel_device::DisjointSlice<$t>,
            status: ::gpukernel_device::DisjointSlice<u64>,
        ) {
            $crate::scan::scan_tile::<
                $t, _, true,
                { $crate::SCAN_BLOCK }, { $crate::SCAN_VECS }, false,
                { $crate::SCAN_FIRST_NS }, { $crate::SCAN_POLL_NS },
            >(input, output, status, $op);
        }
        #[doc = concat!("Exclusive scan of `", stringify!($op), "`.")]
        ///
        /// # Safety
        ///
        /// `status` holds the scan's status words, all zero when the launch starts and this
        /// launch's alone (as `gpukernel-algorithms` gives each call).
        #[$crate::user_op::__kernel]
        pub unsafe fn $se(
            input: &[$t],
            output: ::gpukernel_device::DisjointSlice<$t>,
            status: ::gpukernel_device::DisjointSlice<u64>,
        ) {
            $crate::scan::scan_tile::<
                $t, _, false,
                { $crate::SCAN_BLOCK }, { $crate::SCAN_VECS }, false,
                { $crate::SCAN_FIRST_NS }, { $crate::SCAN_POLL_NS },
            >(input, output, status, $op);
        }
        $(#[$meta])*
        #[cfg(not(target_arch = "nvptx64"))]
        #[derive(Clone, Copy, Debug)]
        $vis struct $name;
        #[cfg(not(target_arch = "nvptx64"))]
        impl $crate::user_op::UserOp for $name {
            type T = $t;
            type Reduce = $r;
            type ScanInclusive = $si;
            type ScanExclusive = $se;
            fn kernels() -> ($r, $si, $se) {
                ($r(), $si(), $se())
            }
        }
    };
}

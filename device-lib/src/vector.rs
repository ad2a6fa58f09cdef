//! Vector types for wide loads and stores (CUDA's `float4`, `float2`, `int4`, `uint4`,
//! `double2`, `__half2`, `__nv_bfloat162`): each is aligned to its whole size, so one
//! `ld.global.v4.f32` / `st.global.v4.f32` (or `.v2`) moves it.
//!
//! Alignment is guaranteed by the type: a `&[f32x4]` or `DisjointSlice<f32x4>` kernel
//! parameter is a buffer of `f32x4` on the host (device allocations are 256-byte aligned and
//! views start at whole elements), and a plain `x[i]` or `out.set(&i, v)` is one vector
//! access. Scalar slices are split where their alignment allows, checked at run time:
//! [`split_aligned`] for inputs, [`DisjointSlice::split_vectors`](crate::DisjointSlice::split_vectors)
//! for outputs (each thread still reaches only its own vector and its own scalars).
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::thread;
//! use gpukernel_device::vector::f32x4;
//!
//! /// `out[i] = a * x[i]`, four floats per thread in one 16-byte load and one store.
//! #[kernel]
//! pub fn scale4(a: f32, x: &[f32x4], mut out: DisjointSlice<f32x4>) {
//!     let i = thread::index();
//!     if let Some(o) = out.get_mut(&i) {
//!         let v = x[i.get()];
//!         *o = f32x4([a * v.0[0], a * v.0[1], a * v.0[2], a * v.0[3]]);
//!     }
//! }
//! ```
#![allow(non_camel_case_types)]

pub use crate::half::{bf16x2, f16x2};

macro_rules! vectors {
    ($($(#[$m:meta])* $name:ident = [$elem:ty; $n:literal], align $a:literal;)*) => { $(
        $(#[$m])*
        #[doc = concat!("\n```\nuse gpukernel_device::vector::", stringify!($name), ";\nassert_eq!(core::mem::align_of::<", stringify!($name), ">(), ", stringify!($a), ");\nlet v = ", stringify!($name), "::from([1 as ", stringify!($elem), "; ", stringify!($n), "]);\nassert_eq!(<[", stringify!($elem), "; ", stringify!($n), "]>::from(v), [1 as ", stringify!($elem), "; ", stringify!($n), "]);\n```")]
        #[derive(Clone, Copy, Default, Debug, PartialEq)]
        #[repr(C, align($a))]
        pub struct $name(pub [$elem; $n]);

        // SAFETY: `#[repr(C)]` array of plain numbers, no padding (size == align); every bit
        // pattern is a value.
        unsafe impl crate::DeviceCopy for $name {
            const LAYOUT: crate::signature::TypeLayout = crate::signature::TypeLayout::array::<Self>(
                <$elem as crate::DeviceCopy>::LAYOUT,
                $n,
            );
        }
        // SAFETY: as above.
        unsafe impl crate::AnyBitPattern for $name {}
        impl sealed::Sealed for $name {}
        // SAFETY: `$n` lanes of `$elem`, laid out as `[$elem; $n]`.
        unsafe impl Vector for $name {
            type Elem = $elem;
            const LANES: usize = $n;
        }

        impl $name {
            /// Every lane set to `v`.
            #[doc = concat!("\n```\nuse gpukernel_device::vector::", stringify!($name), ";\nassert_eq!(", stringify!($name), "::splat(2 as ", stringify!($elem), ").0, [2 as ", stringify!($elem), "; ", stringify!($n), "]);\n```")]
            #[inline(always)]
            pub const fn splat(v: $elem) -> $name {
                $name([v; $n])
            }
        }

        impl From<[$elem; $n]> for $name {
            #[inline(always)]
            fn from(lanes: [$elem; $n]) -> $name {
                $name(lanes)
            }
        }

        impl From<$name> for [$elem; $n] {
            #[inline(always)]
            fn from(v: $name) -> [$elem; $n] {
                v.0
            }
        }

        const _: () = assert!(core::mem::size_of::<$name>() == $a);
    )* };
}

vectors! {
    /// Four `f32` in 16 bytes (`float4`).
    f32x4 = [f32; 4], align 16;
    /// Two `f32` in 8 bytes (`float2`).
    f32x2 = [f32; 2], align 8;
    /// Four `i32` in 16 bytes (`int4`).
    i32x4 = [i32; 4], align 16;
    /// Four `u32` in 16 bytes (`uint4`).
    u32x4 = [u32; 4], align 16;
    /// Two `f64` in 16 bytes (`double2`).
    f64x2 = [f64; 2], align 16;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::half::f16x2 {}
    impl Sealed for crate::half::bf16x2 {}
}

/// A vector of `LANES` values of `Elem`, laid out as `[Elem; LANES]` and aligned to its size.
///
/// ```
/// use gpukernel_device::vector::{Vector, f32x4};
/// assert_eq!(<f32x4 as Vector>::LANES, 4);
/// ```
///
/// # Safety
/// Sealed: implemented by this module for its types only; the layout above must hold.
pub unsafe trait Vector: crate::AnyBitPattern + sealed::Sealed {
    /// The lane type.
    type Elem: crate::AnyBitPattern;
    /// The number of lanes.
    const LANES: usize;
}

// SAFETY: two `f16` laid out as `[f16; 2]`, 4-byte aligned.
unsafe impl Vector for f16x2 {
    type Elem = crate::half::f16;
    const LANES: usize = 2;
}
// SAFETY: as above.
unsafe impl Vector for bf16x2 {
    type Elem = crate::half::bf16;
    const LANES: usize = 2;
}

/// `s` as its unaligned head, the longest run of whole `V` vectors that starts at a
/// `V`-aligned address, and the tail (like `slice::align_to`, safe because every bit pattern
/// of the lanes is a vector and the reads are shared). The alignment is checked at run time:
/// the head holds fewer than `V::LANES` elements.
///
/// ```
/// use gpukernel_device::vector::{f32x4, split_aligned};
///
/// let x = [1.0f32; 11];
/// let (head, body, tail) = split_aligned::<f32x4>(&x);
/// assert_eq!(head.len() + 4 * body.len() + tail.len(), 11);
/// assert!(head.len() < 4 && tail.len() < 4);
/// ```
#[inline(always)]
pub fn split_aligned<V: Vector>(s: &[V::Elem]) -> (&[V::Elem], &[V], &[V::Elem]) {
    // SAFETY: `V` is `[Elem; LANES]` with a larger alignment and any bit pattern valid, so
    // reading aligned runs of lanes as `V` is sound (`align_to` picks the aligned middle).
    unsafe { s.align_to::<V>() }
}

impl<'a, T: crate::AnyBitPattern> crate::DisjointSlice<'a, T> {
    /// The slice as its unaligned head, the longest run of whole `V` vectors at a `V`-aligned
    /// address, and the tail, each a disjoint output: thread `i` may write element `i` of
    /// each, which are three different places no other thread reaches (element `i` of the
    /// middle covers scalars `head + i * LANES ..` of the original, which no other thread's
    /// index maps to). The alignment is checked at run time.
    ///
    /// ```
    /// use gpukernel_device::prelude::*;
    /// use gpukernel_device::thread;
    /// use gpukernel_device::vector::f32x4;
    ///
    /// /// `out = value` with 16-byte stores where the alignment allows.
    /// #[kernel]
    /// pub fn fill4(value: f32, out: DisjointSlice<f32>) {
    ///     let (mut head, mut body, mut tail) = out.split_vectors::<f32x4>();
    ///     let i = thread::index();
    ///     body.set(&i, f32x4::splat(value));
    ///     head.set(&i, value);
    ///     tail.set(&i, value);
    /// }
    /// ```
    #[inline(always)]
    pub fn split_vectors<V: Vector<Elem = T>>(
        self,
    ) -> (
        crate::DisjointSlice<'a, T>,
        crate::DisjointSlice<'a, V>,
        crate::DisjointSlice<'a, T>,
    ) {
        let (ptr, len) = (self.as_mut_ptr(), self.len());
        let off = ptr.align_offset(core::mem::align_of::<V>());
        let (head, vectors) = if off <= len {
            (off, (len - off) / V::LANES)
        } else {
            (len, 0)
        };
        let tail = len - head - vectors * V::LANES;
        // SAFETY: the three ranges `[0, head)`, `[head, head + vectors * LANES)` and the rest
        // partition the original elements; the middle starts `V`-aligned. Each keeps the
        // original's disjointness (an index maps to one place in one part), and `self` is
        // consumed.
        unsafe {
            (
                crate::slice::disjoint_from_raw(ptr, head),
                crate::slice::disjoint_from_raw(ptr.add(head).cast::<V>(), vectors),
                crate::slice::disjoint_from_raw(ptr.add(head + vectors * V::LANES), tail),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_aligned_to_their_size() {
        assert_eq!(core::mem::align_of::<f32x4>(), 16);
        assert_eq!(core::mem::align_of::<f32x2>(), 8);
        assert_eq!(core::mem::align_of::<f16x2>(), 4);
        assert_eq!(core::mem::size_of::<bf16x2>(), 4);
    }

    #[test]
    fn splits_partition_the_slice() {
        let x: [f32; 19] = core::array::from_fn(|i| i as f32);
        for start in 0..4 {
            let s = &x[start..];
            let (head, body, tail) = split_aligned::<f32x4>(s);
            assert!(head.len() < 4 && tail.len() < 4);
            let joined: std::vec::Vec<f32> = head
                .iter()
                .copied()
                .chain(body.iter().flat_map(|v| v.0))
                .chain(tail.iter().copied())
                .collect();
            assert_eq!(joined, s);
            assert_eq!(body.as_ptr() as usize % 16, 0);
        }
        let mut y = [0.0f32; 19];
        for start in 0..4 {
            let out = &mut y[start..];
            let len = out.len();
            // SAFETY: a live slice, no other user.
            let d = unsafe { crate::slice::disjoint_from_raw(out.as_mut_ptr(), len) };
            let (h, b, t) = d.split_vectors::<f32x4>();
            assert_eq!(h.len() + 4 * b.len() + t.len(), len);
            assert_eq!(b.as_mut_ptr() as usize % 16, 0);
            assert_eq!(b.as_mut_ptr() as usize - out.as_ptr() as usize, 4 * h.len());
        }
    }
}

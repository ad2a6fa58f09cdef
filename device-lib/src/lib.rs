//! The device library of gpukernel: what a `#[kernel]` body calls.
//!
//! The same source compiles twice:
//! * for `nvptx64-nvidia-cuda` (by `nvptx-builder`), where every function lowers to a PTX
//!   special register read or instruction;
//! * for the host, where the same functions read the simulated thread's context, which the
//!   runtime's simulator installs.
//!
//! On the host this crate also carries what the runtime needs to launch a kernel with typed
//! arguments: the [`Kernel`] trait that `#[kernel]` implements for a marker type named after
//! the kernel, and [`DeviceCopy`] for values that may cross to the device by bit copy.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        stdarch_nvptx,
        asm_experimental_arch,
        link_llvm_intrinsics,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem
    )
)]
// `link_llvm_intrinsics` / `core_intrinsics` reach NVVM intrinsics (which LLVM knows are
// convergent, unlike inline asm) and the dynamic-shared-memory intrinsic; device builds only.
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![warn(missing_docs)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub use gpukernel_macros::{DeviceCopy, declare_device, gpu_print, gpu_println, kernel};

pub mod atomic;
pub mod block;
pub mod cluster;
mod copy;
pub mod ffi;
pub mod fp8;
pub mod graph;
pub mod grid;
pub mod half;
// The simulator's side of the host backend: the runtime's simulator installs each simulated
// thread's context and its hooks here, and foreign `.cu` code compiled for the host calls its
// `extern "C"` entry points through the compat header. Not a user API (kernels reach it only
// through the intrinsics of the other modules): hidden, and it may change in any release.
#[doc(hidden)]
#[cfg(not(target_arch = "nvptx64"))]
pub mod host;
#[cfg(not(target_arch = "nvptx64"))]
mod host_printf;
#[cfg(not(target_arch = "nvptx64"))]
mod kernel;
pub mod math;
pub mod mbarrier;
pub mod mma;
pub mod named_barrier;
pub mod ops;
pub mod print;
pub mod shared;
pub mod signature;
pub mod slice;
pub mod sync;
pub mod thread;
pub mod time;
pub mod tma;
pub mod vector;
pub mod warp;
pub mod wgmma;
pub mod wgmma_rs;

pub use copy::{AnyBitPattern, DeviceCopy};
#[cfg(not(target_arch = "nvptx64"))]
pub use kernel::{
    IntoKernel, Kernel, LaunchDims, ParamAbi, ParamList, SIGNATURE_SYMBOL_PREFIX, SafeKernel,
    SimEntry, into_kernel, signature_symbol,
};
pub use slice::{
    DisjointSlice, DisjointSlice2D, DisjointSlice3D, Slice2D, ThreadIndex, ThreadIndex2D,
    ThreadIndex3D,
};

/// Repeats `$body` with `$i` bound to each literal in turn (as `usize`): a full unroll that
/// LLVM's thresholds cannot decline. Fragment and accumulator arrays indexed by `$i` then stay
/// in registers; a rolled loop over them (or one LLVM declines to unroll) puts them in local
/// memory. nvcc's `#pragma unroll` for Rust kernels.
///
/// ```
/// use gpukernel_device::unroll;
/// let acc = [1.0f32, 2.0, 3.0, 4.0];
/// let mut sum = 0.0;
/// unroll!(i in [0, 1, 2, 3] {
///     sum += acc[i];
/// });
/// assert_eq!(sum, 10.0);
/// ```
#[macro_export]
macro_rules! unroll {
    ($i:ident in [$($n:literal),* $(,)?] $body:block) => { $( { let $i: usize = $n; $body } )* };
}

/// Everything a kernel file usually needs: `use gpukernel_device::prelude::*;`.
pub mod prelude {
    /// Method syntax for the math functions (`x.exp()`), in scope without its name.
    pub use crate::math::Float as _;
    pub use crate::{
        DeviceCopy, DisjointSlice, DisjointSlice2D, DisjointSlice3D, Slice2D, ThreadIndex,
        ThreadIndex2D, ThreadIndex3D, declare_device, kernel,
    };
}

/// Stops the kernel because index `i` is outside a slice of `len` elements: `trap` on the
/// GPU (the launch fails with an error at the next synchronization), a panic in the simulator
/// (which reports it as an error naming the kernel and the thread).
#[doc(hidden)]
#[cold]
#[inline(never)]
#[track_caller]
pub fn __trap_out_of_bounds(i: usize, len: usize) -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (i, len);
        // SAFETY: `trap` has no preconditions; it aborts the kernel.
        unsafe { core::arch::nvptx::trap() }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    panic!("index out of bounds: the len is {len} but the index is {i}")
}

/// Device builds abort the kernel on panic (the launch then fails at synchronization); host
/// builds use std's handler, which the simulator catches.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: `trap` has no preconditions; it aborts the kernel.
    unsafe { core::arch::nvptx::trap() }
}

/// Support code for what the macros expand to. Not a public API: it may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::DeviceCopy;
    pub use crate::ffi::{FfiErrorRecord, enter_kernel, report_foreign_failure};
    pub use crate::graph::conditional_handle_from_raw;
    #[cfg(not(target_arch = "nvptx64"))]
    pub use crate::kernel::{Kernel, SafeKernel, SimEntry};
    pub use crate::print::{self as printf, PrintArg};
    pub use crate::signature::{
        FieldLayout, Inside, ParamSignature, TypeLayout, kernel_fingerprint, signature_words,
    };
    pub use crate::slice::{
        disjoint_2d_from_raw, disjoint_3d_from_raw, disjoint_from_raw, slice_2d_from_raw,
    };
    /// Generated code names `core` items (`core::primitive::usize`, `core::mem::MaybeUninit`,
    /// the derives) through this re-export, never as `::core`.
    pub use core;

    /// Rebuilds a shared slice from the two ABI parameters a `&[T]` kernel parameter lowers to.
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `len` elements for `'a`, and nothing may write them
    /// during `'a` (the runtime's typed launch guarantees this for `&DeviceBuffer` arguments).
    /// `ptr` is not null and is aligned, even when `len` is 0 (the typed launch passes 256
    /// for memory at address 0).
    #[inline(always)]
    pub unsafe fn slice_from_raw<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
        // SAFETY: the caller's contract. Said so that `get`'s `Some` costs no compare.
        unsafe { core::hint::assert_unchecked(!ptr.is_null()) };
        // SAFETY: forwarded from the caller's contract.
        unsafe { core::slice::from_raw_parts(ptr, len) }
    }

    /// Rebuilds a mutable slice from its two ABI parameters (only `unsafe fn` kernels take
    /// `&mut [T]`).
    ///
    /// # Safety
    /// As [`slice_from_raw`], for writes too; the kernel's author promises that no two threads
    /// access one element unless all accesses are reads.
    #[inline(always)]
    pub unsafe fn slice_from_raw_mut<'a, T>(ptr: *mut T, len: usize) -> &'a mut [T] {
        // SAFETY: the caller's contract (see `slice_from_raw`).
        unsafe { core::hint::assert_unchecked(!ptr.is_null()) };
        // SAFETY: forwarded from the caller's contract.
        unsafe { core::slice::from_raw_parts_mut(ptr, len) }
    }

    /// `declare_device!`'s check that a type it writes into the record by its name (`f32` is
    /// `float`, `c_void` is `void`, `f16` is a half float) is the type of that name: a local
    /// type or alias named like one would otherwise be checked against the C type its name
    /// says while the call passes another.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is not `{T}`, the type its name says",
        label = "declare_device! writes this type into the foreign declaration's record by its name, as `{T}`",
        note = "the foreign definition is checked against the C type of `{T}` while the call passes `{Self}`: name the type by a name of its own (a local type or alias must not be named like a built-in type)"
    )]
    pub trait ForeignTypeNamed<T: ?Sized> {}
    impl<T: ?Sized> ForeignTypeNamed<T> for T {}
    /// Compiles only when `A` is `B` (see [`ForeignTypeNamed`]).
    pub const fn foreign_type_named<A: ?Sized + ForeignTypeNamed<B>, B: ?Sized>() {}

    /// `declare_device!`'s check that two types one declaration names by the same last path
    /// segment (`a::Pair`, `b::Pair`, `Wrap<f32>`, `Wrap<i32>`) are one type: the record names
    /// a struct by that segment, so it holds one layout for both.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` and `{T}` have one C name in the foreign declaration's record",
        label = "declare_device! names a struct by the last segment of its path, without generic arguments, and records one layout per name",
        note = "the definition's struct would be checked against the layout of `{T}` while the call passes `{Self}`: give the two types names of their own (`use a::Pair as PairA;`)"
    )]
    pub trait ForeignStructNamed<T: ?Sized> {}
    impl<T: ?Sized> ForeignStructNamed<T> for T {}
    /// Compiles only when `A` is `B` (see [`ForeignStructNamed`]).
    pub const fn foreign_struct_named<A: ?Sized + ForeignStructNamed<B>, B: ?Sized>() {}

    /// The half floats, by the paths `declare_device!`'s checks name them.
    pub use crate::half::{bf16, f16};

    /// Compile-time check that a by-value kernel parameter or foreign-call type is `DeviceCopy`.
    pub const fn assert_device_copy<T: crate::DeviceCopy>() {}

    /// A struct a `declare_device!` entry passes, as its record describes it: the Rust
    /// name, and `T`'s size, alignment and fields on the target being compiled.
    #[derive(Debug, Clone, Copy)]
    pub struct ForeignStruct {
        name: &'static str,
        size: usize,
        align: usize,
        fields: &'static [crate::signature::FieldLayout],
    }

    impl ForeignStruct {
        /// `T`, named `name` in the record (`struct name` in its C types).
        pub const fn of<T: crate::DeviceCopy>(name: &'static str) -> Self {
            ForeignStruct {
                name,
                size: T::LAYOUT.size,
                align: T::LAYOUT.align,
                fields: T::FIELDS,
            }
        }
    }

    /// Appends `s` at `*at` of `out` (counting only, past its end).
    const fn put(out: &mut [u8], at: &mut usize, s: &[u8]) {
        let mut i = 0;
        while i < s.len() {
            if *at < out.len() {
                out[*at] = s[i];
            }
            *at += 1;
            i += 1;
        }
    }

    /// Appends `v` in decimal.
    const fn put_number(out: &mut [u8], at: &mut usize, v: usize) {
        let mut digits = [0u8; 20];
        let (mut n, mut len) = (v, 0);
        loop {
            digits[len] = b'0' + (n % 10) as u8;
            len += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        while len > 0 {
            len -= 1;
            let d = [digits[len]];
            put(out, at, &d);
        }
    }

    /// A field's C member designator, innermost part last (`inner.a`, `v[0]`, `v[0].b`), as
    /// a chain of parts on the stack.
    struct Designator<'a> {
        part: &'a str,
        outer: Option<&'a Designator<'a>>,
    }

    /// Appends `d`'s parts, outermost first, joining names with `.` (an element's `[0]`
    /// follows its array directly).
    const fn put_designator(out: &mut [u8], at: &mut usize, d: &Designator<'_>) {
        if let Some(outer) = d.outer {
            put_designator(out, at, outer);
            if !matches!(d.part.as_bytes().first(), Some(b'[')) {
                put(out, at, b".");
            }
        }
        put(out, at, d.part.as_bytes());
    }

    /// Writes `field=struct:designator:offset:size:kind` for `part` (of `outer`, at `offset`
    /// in the struct), then, for a nested struct or an array, the lines of its fields or of
    /// its first element: the checks then compare their types too, not only the size.
    const fn put_field(
        out: &mut [u8],
        at: &mut usize,
        owner: &str,
        d: &Designator<'_>,
        offset: usize,
        layout: &crate::signature::TypeLayout,
        inside: &Inside,
    ) {
        put(out, at, b"field=");
        put(out, at, owner.as_bytes());
        put(out, at, b":");
        put_designator(out, at, d);
        put(out, at, b":");
        put_number(out, at, offset);
        put(out, at, b":");
        put_number(out, at, layout.size);
        put(out, at, b":");
        put_number(out, at, layout.kind as usize);
        put(out, at, b"\n");
        match inside {
            Inside::Nothing => {}
            Inside::Fields(fields) => put_fields(out, at, owner, Some(d), offset, fields),
            Inside::Elements {
                layout,
                inside,
                count,
            } => {
                if *count > 0 {
                    let element = Designator {
                        part: "[0]",
                        outer: Some(d),
                    };
                    put_field(out, at, owner, &element, offset, layout, inside);
                }
            }
        }
    }

    /// [`put_field`] for each of `fields` (of `outer`, at `base` in the struct).
    const fn put_fields(
        out: &mut [u8],
        at: &mut usize,
        owner: &str,
        outer: Option<&Designator<'_>>,
        base: usize,
        fields: &[crate::signature::FieldLayout],
    ) {
        let mut f = 0;
        while f < fields.len() {
            let field = &fields[f];
            let d = Designator {
                part: field.name,
                outer,
            };
            put_field(
                out,
                at,
                owner,
                &d,
                base + field.offset,
                &field.layout,
                &field.inside,
            );
            f += 1;
        }
    }

    /// Writes the record: `head`, then per struct `struct=name:size:align` and per field
    /// `field=struct:designator:offset:size:kind` (`signature::kind`'s number; the fields of
    /// nested structs and the first element of arrays follow their field, designated as C
    /// designates them: `inner.a`, `v[0]`); returns its length (the bytes past `out`'s end
    /// are counted, not written).
    const fn write_record(out: &mut [u8], head: &str, structs: &[ForeignStruct]) -> usize {
        let mut at = 0;
        put(out, &mut at, head.as_bytes());
        let mut k = 0;
        while k < structs.len() {
            let s = &structs[k];
            put(out, &mut at, b"struct=");
            put(out, &mut at, s.name.as_bytes());
            put(out, &mut at, b":");
            put_number(out, &mut at, s.size);
            put(out, &mut at, b":");
            put_number(out, &mut at, s.align);
            put(out, &mut at, b"\n");
            put_fields(out, &mut at, s.name, None, 0, s.fields);
            k += 1;
        }
        at
    }

    /// The length of the record [`foreign_record`] writes.
    pub const fn foreign_record_len(head: &str, structs: &[ForeignStruct]) -> usize {
        write_record(&mut [], head, structs)
    }

    /// `declare_device!`'s declaration record with the layouts of the structs it passes (the
    /// format is `gpukernel-ffi-check`'s `record` module's).
    ///
    /// ```
    /// use gpukernel_device::__private::{ForeignStruct, foreign_record, foreign_record_len};
    /// #[repr(C)]
    /// #[derive(Clone, Copy, gpukernel_device::DeviceCopy)]
    /// struct Pair { a: f32, b: u16 }
    /// const S: &[ForeignStruct] = &[ForeignStruct::of::<Pair>("Pair")];
    /// const N: usize = foreign_record_len("ret=void\n", S);
    /// let r: [u8; N] = foreign_record::<N>("ret=void\n", S);
    /// assert_eq!(
    ///     core::str::from_utf8(&r).unwrap(),
    ///     "ret=void\nstruct=Pair:8:4\nfield=Pair:a:0:4:3\nfield=Pair:b:4:2:1\n"
    /// );
    /// // Nested structs and arrays: their fields and first element follow, as C names them.
    /// #[repr(C)]
    /// #[derive(Clone, Copy, gpukernel_device::DeviceCopy)]
    /// struct Outer { p: [Pair; 2], v: [i32; 3] }
    /// const O: &[ForeignStruct] = &[ForeignStruct::of::<Outer>("Outer")];
    /// const M: usize = foreign_record_len("", O);
    /// let r: [u8; M] = foreign_record::<M>("", O);
    /// assert_eq!(
    ///     core::str::from_utf8(&r).unwrap(),
    ///     "struct=Outer:28:4\nfield=Outer:p:0:16:7\nfield=Outer:p[0]:0:8:8\n\
    ///      field=Outer:p[0].a:0:4:3\nfield=Outer:p[0].b:4:2:1\n\
    ///      field=Outer:v:16:12:7\nfield=Outer:v[0]:16:4:2\n"
    /// );
    /// ```
    pub const fn foreign_record<const N: usize>(head: &str, structs: &[ForeignStruct]) -> [u8; N] {
        let mut out = [0u8; N];
        write_record(&mut out, head, structs);
        out
    }
}

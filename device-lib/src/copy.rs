//! Values that may cross the host/device boundary by bit copy.

use crate::signature::{FieldLayout, Inside, TypeLayout, kind};

/// A type whose values may be copied bit for bit between host and device and passed by value
/// to a kernel or a foreign device function.
///
/// Implemented for the primitive numeric types, `bool`, `()` and arrays of such types (not
/// tuples: their layout is unspecified).
/// Derive it for your own `#[repr(C)]` structs of `DeviceCopy` fields (`#[derive(DeviceCopy)]`,
/// which checks the `repr` and lets kernel signature fingerprints see each field), or
/// implement it by hand.
///
/// # Safety
/// The type must be `Copy`, have a layout that is the same on the host and on nvptx64
/// (`#[repr(C)]` or `#[repr(transparent)]`, or a primitive), hold no references or host
/// pointers, every bit pattern the device may write into it must be a valid value when the
/// host reads it back (so `bool` buffers that a kernel writes must hold only 0 or 1), and the
/// all-zero bit pattern must be a valid value (zeroed allocations hand it out). A
/// [`LAYOUT`](DeviceCopy::LAYOUT) given by hand must describe the type as the target being
/// compiled lays it out (the default, its size and alignment, always does).
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{DeviceCopy, thread};
/// /// A kernel argument passed by value, laid out the same on the host and the GPU.
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// pub struct Affine { pub scale: f32, pub offset: f32 }
/// // SAFETY: #[repr(C)] of two f32s: no padding, no pointers, all-zero is a valid value.
/// unsafe impl DeviceCopy for Affine {}
///
/// /// The same, derived: the fields' types are part of every kernel signature that takes it.
/// #[repr(C)]
/// #[derive(Clone, Copy, DeviceCopy)]
/// pub struct Shift { pub by: f32, pub wrap: bool }
///
/// #[kernel]
/// pub fn apply(t: Affine, x: &[f32], mut y: DisjointSlice<f32>) {
///     let i = thread::index();
///     if let Some(yi) = y.get_mut(&i) { *yi = t.scale * x[i.get()] + t.offset; }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot cross to the device: it does not implement `DeviceCopy`",
    label = "not `DeviceCopy`",
    note = "for a `#[repr(C)]` struct of `DeviceCopy` fields, implement it: `unsafe impl DeviceCopy for {Self} {{}}`"
)]
pub unsafe trait DeviceCopy: Copy + 'static {
    /// The type's layout as kernel signature fingerprints see it (see
    /// [`signature`](crate::signature)): for a hand-written impl its size and alignment
    /// ([`TypeLayout::opaque`]); `#[derive(DeviceCopy)]` describes each field, so that a field
    /// whose type differs between the host and the device build (a `cfg`'d type alias) is
    /// caught even where the sizes agree.
    const LAYOUT: TypeLayout = TypeLayout::opaque::<Self>();

    /// The named fields, in declaration order, with their offsets and layouts
    /// (`#[derive(DeviceCopy)]` lists them; a hand-written impl lists none, so the foreign
    /// checks compare its size and alignment only). A list given by hand must describe the
    /// type as the target being compiled lays it out.
    const FIELDS: &'static [FieldLayout] = &[];

    /// What the type holds for the foreign-declaration checks: a derived struct's
    /// [`FIELDS`](DeviceCopy::FIELDS), an array's elements, or nothing (a scalar, or a
    /// hand-written impl, compared by size and alignment only). A value given by hand must
    /// describe the type as the target being compiled lays it out.
    const INSIDE: Inside = Inside::Nothing;
}

macro_rules! impl_device_copy {
    ($($kind:ident: $($t:ty),*;)*) => { $($(
        // SAFETY: primitive with the same layout on every target; all values plain data.
        unsafe impl DeviceCopy for $t {
            const LAYOUT: TypeLayout = TypeLayout::scalar::<$t>(kind::$kind);
        }
    )*)* };
}
impl_device_copy!(
    UNSIGNED: u8, u16, u32, u64, u128, usize;
    SIGNED: i8, i16, i32, i64, i128, isize;
    FLOAT: f32, f64;
    BOOL: bool;
    UNIT: ();
);

// SAFETY: an array of DeviceCopy has the element's layout repeated.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {
    const LAYOUT: TypeLayout = TypeLayout::array::<[T; N]>(T::LAYOUT, N);
    const INSIDE: Inside = Inside::Elements {
        layout: T::LAYOUT,
        inside: &T::INSIDE,
        count: N,
    };
}

/// A [`DeviceCopy`] type for which every bit pattern is a valid value: the integers, the
/// floats, and arrays of them. Byte fills with any value (`memset_d8`) and the views of a
/// block's dynamic shared memory ([`crate::shared::dynamic_shared`]) need it; `bool` and
/// structs with `bool` fields are not `AnyBitPattern`, so a safe fill cannot make an invalid
/// `bool` that the host then reads.
///
/// # Safety
/// Every bit pattern of the type's size must be a valid value, and it must have no padding.
///
/// # Example
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{AnyBitPattern, DeviceCopy};
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// pub struct Rgba { pub r: u8, pub g: u8, pub b: u8, pub a: u8 }
/// // SAFETY: four u8s: no padding, all-zero valid.
/// unsafe impl DeviceCopy for Rgba {}
/// // SAFETY: every 4-byte pattern is some color, so byte fills (`memset_d8`) are sound.
/// unsafe impl AnyBitPattern for Rgba {}
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has invalid bit patterns, so bytes written as another type could make an invalid value",
    label = "not every byte pattern is a `{Self}`",
    note = "byte fills (`memset_d8`) and `dynamic_shared` views take `AnyBitPattern` types: fill with `memset_zeros()` (all-zero is valid for every `DeviceCopy` type) or a kernel; view shared bytes as integers"
)]
pub unsafe trait AnyBitPattern: DeviceCopy {}

macro_rules! impl_any_bit_pattern {
    ($($t:ty),* $(,)?) => { $(
        // SAFETY: every bit pattern of a primitive integer or float is a valid value.
        unsafe impl AnyBitPattern for $t {}
    )* };
}
impl_any_bit_pattern!(
    u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64
);

// SAFETY: an array of such elements has no padding and any bit pattern is valid.
unsafe impl<T: AnyBitPattern, const N: usize> AnyBitPattern for [T; N] {}

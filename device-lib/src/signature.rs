//! Kernel signature fingerprints, computed by the compiler from the resolved types on each
//! target.
//!
//! A typed launch trusts that the loaded entry point was compiled from the very signature the
//! host sees. `#[kernel]` expands, on both targets, to the same constant expression over the
//! parameter types: each type's [`ParamSig`] (how it lowers and the [`TypeLayout`] of the
//! value, element or pointee: size, alignment and the kind of each scalar, recursively through
//! arrays and `#[derive(DeviceCopy)]` structs), each parameter's `same_len` group, whether the
//! kernel is an `unsafe fn`, the crate's and the kernel's names and [`FORMAT_VERSION`]. The
//! device build evaluates it with its own types and exports the result as the global
//! `__gpukernel_sig_<kernel>` ([`signature_words`]); the host build evaluates it with the
//! host's types as `Kernel::SIGNATURE` and `Kernel::PARAM_SIGNATURES`. A type alias that
//! resolves differently on the two targets, a `same_len` given to one target only (through
//! `cfg_attr`), or PTX from another version of this crate all give other values, and the
//! runtime's `Module::kernel` refuses the kernel, naming the parameter where it can.
//!
//! The hash is FNV-1a (64-bit), evaluated in `const fn`s: a consistency check, not a secret.
//!
//! ```
//! use gpukernel_device::signature::{ParamSig, TypeLayout};
//! // A host `f32` and a device `f64` behind one alias name never look alike.
//! assert_ne!(<&'static [f32] as ParamSig>::VALUE, <&'static [f64] as ParamSig>::VALUE);
//! // `u8` and `bool` have one size, not one kind.
//! assert_ne!(<u8 as ParamSig>::VALUE.digest, <bool as ParamSig>::VALUE.digest);
//! assert_eq!(<u32 as ParamSig>::VALUE, TypeLayout::scalar::<u32>(gpukernel_device::signature::kind::UNSIGNED));
//! ```

/// The version of the fingerprint's format, hashed first and exported as the second word of
/// every signature global: PTX compiled by a version of this crate with another format never
/// matches.
pub const FORMAT_VERSION: u64 = 2;

/// The first word of a signature global of this format (`"gksig"` and the version).
pub const SIGNATURE_MAGIC: u64 = 0x6769_736b_6700_0000 | FORMAT_VERSION;

/// The kinds a [`TypeLayout`] tells apart.
pub mod kind {
    /// An unsigned integer.
    pub const UNSIGNED: u8 = 1;
    /// A signed integer.
    pub const SIGNED: u8 = 2;
    /// An IEEE binary floating-point number (`f32`, `f64`, `f16`).
    pub const FLOAT: u8 = 3;
    /// `bool`.
    pub const BOOL: u8 = 4;
    /// `()`.
    pub const UNIT: u8 = 5;
    /// `bf16` (and pairs of it).
    pub const BFLOAT: u8 = 6;
    /// An array `[T; N]` (the digest holds `N` and the element's layout).
    pub const ARRAY: u8 = 7;
    /// A struct whose fields the layout describes (`#[derive(DeviceCopy)]`).
    pub const STRUCT: u8 = 8;
    /// A type known by its size and alignment only (a hand-written `DeviceCopy` impl, or the
    /// pointee of a raw pointer).
    pub const OPAQUE: u8 = 9;

    /// The kind's name, for messages.
    ///
    /// ```
    /// use gpukernel_device::signature::kind;
    /// assert_eq!(kind::name(kind::FLOAT), "float");
    /// assert_eq!(kind::name(200), "unknown");
    /// ```
    pub const fn name(kind: u8) -> &'static str {
        match kind {
            UNSIGNED => "unsigned integer",
            SIGNED => "signed integer",
            FLOAT => "float",
            BOOL => "bool",
            UNIT => "()",
            BFLOAT => "bfloat16",
            ARRAY => "array",
            STRUCT => "struct",
            OPAQUE => "opaque",
            _ => "unknown",
        }
    }
}

/// How a kernel parameter lowers to the kernel ABI (see `Kernel`'s ABI section).
pub mod lowering {
    /// A scalar or `DeviceCopy` value: one parameter.
    pub const BY_VALUE: u8 = 1;
    /// `&[T]`: pointer, length.
    pub const SLICE: u8 = 2;
    /// `&mut [T]`: pointer, length.
    pub const SLICE_MUT: u8 = 3;
    /// `DisjointSlice<T>`: pointer, length.
    pub const DISJOINT: u8 = 4;
    /// `DisjointSlice2D<T>`: pointer, cols, rows, pitch.
    pub const DISJOINT_2D: u8 = 5;
    /// `DisjointSlice3D<T>`: pointer, cols, rows, depth, pitch.
    pub const DISJOINT_3D: u8 = 6;
    /// `*const T`.
    pub const PTR_CONST: u8 = 7;
    /// `*mut T`.
    pub const PTR_MUT: u8 = 8;
    /// `graph::ConditionalHandle`.
    pub const CONDITIONAL: u8 = 9;
    /// `Slice2D<T>`: pointer, cols, rows, pitch (read-only).
    pub const SLICE_2D: u8 = 10;

    /// The lowering's name, for messages.
    ///
    /// ```
    /// use gpukernel_device::signature::lowering;
    /// assert_eq!(lowering::name(lowering::SLICE), "`&[T]`");
    /// ```
    pub const fn name(lowering: u8) -> &'static str {
        match lowering {
            BY_VALUE => "by value",
            SLICE => "`&[T]`",
            SLICE_MUT => "`&mut [T]`",
            DISJOINT => "`DisjointSlice<T>`",
            DISJOINT_2D => "`DisjointSlice2D<T>`",
            DISJOINT_3D => "`DisjointSlice3D<T>`",
            PTR_CONST => "`*const T`",
            PTR_MUT => "`*mut T`",
            CONDITIONAL => "`ConditionalHandle`",
            SLICE_2D => "`Slice2D<T>`",
            _ => "unknown",
        }
    }
}

/// 64-bit FNV-1a, usable in constants.
///
/// ```
/// use gpukernel_device::signature::Fnv64;
/// assert_eq!(Fnv64::new().bytes(b"a").finish(), 0xaf63_dc4c_8601_ec8c);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv64(u64);

impl Fnv64 {
    /// The empty hash.
    ///
    /// ```
    /// use gpukernel_device::signature::Fnv64;
    /// assert_eq!(Fnv64::new().finish(), 0xcbf2_9ce4_8422_2325);
    /// ```
    pub const fn new() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }

    /// Hashes `bytes`.
    ///
    /// ```
    /// use gpukernel_device::signature::Fnv64;
    /// assert_eq!(Fnv64::new().bytes(b"foobar").finish(), 0x8594_4171_f739_67e8);
    /// ```
    pub const fn bytes(self, bytes: &[u8]) -> Self {
        let mut h = self.0;
        let mut i = 0;
        while i < bytes.len() {
            h ^= bytes[i] as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
            i += 1;
        }
        Fnv64(h)
    }

    /// Hashes `v` as 8 little-endian bytes.
    ///
    /// ```
    /// use gpukernel_device::signature::Fnv64;
    /// assert_eq!(Fnv64::new().u64(1), Fnv64::new().bytes(&[1, 0, 0, 0, 0, 0, 0, 0]));
    /// ```
    pub const fn u64(self, v: u64) -> Self {
        self.bytes(&v.to_le_bytes())
    }

    /// Hashes `s` preceded by its length (so that two strings never run into each other).
    ///
    /// ```
    /// use gpukernel_device::signature::Fnv64;
    /// assert_ne!(Fnv64::new().str("ab").str("c"), Fnv64::new().str("a").str("bc"));
    /// ```
    pub const fn str(self, s: &str) -> Self {
        self.u64(s.len() as u64).bytes(s.as_bytes())
    }

    /// The hash value.
    ///
    /// ```
    /// use gpukernel_device::signature::Fnv64;
    /// assert_eq!(Fnv64::new().bytes(b"a").finish(), 0xaf63_dc4c_8601_ec8c);
    /// ```
    pub const fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fnv64 {
    /// The empty hash, as [`Fnv64::new`].
    ///
    /// ```
    /// use gpukernel_device::signature::Fnv64;
    /// assert_eq!(Fnv64::default(), Fnv64::new());
    /// ```
    fn default() -> Self {
        Fnv64::new()
    }
}

/// What a fingerprint knows of a type: its kind, size and alignment as the compiler lays it
/// out on the target being compiled, and a digest that also covers the inside of arrays and
/// `#[derive(DeviceCopy)]` structs (each field's offset and layout).
///
/// ```
/// use gpukernel_device::signature::{TypeLayout, kind};
/// let a = TypeLayout::scalar::<f32>(kind::FLOAT);
/// assert_eq!((a.size, a.align), (4, 4));
/// let arr = TypeLayout::array::<[f32; 3]>(a, 3);
/// assert_eq!(arr.size, 12);
/// assert_ne!(arr.digest, TypeLayout::array::<[u32; 3]>(TypeLayout::scalar::<u32>(kind::UNSIGNED), 3).digest);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeLayout {
    /// One of [`kind`]'s constants.
    pub kind: u8,
    /// `size_of`.
    pub size: usize,
    /// `align_of`.
    pub align: usize,
    /// The hash of all of the above and of the parts (elements, fields).
    pub digest: u64,
}

impl TypeLayout {
    const fn head(kind: u8, size: usize, align: usize) -> Fnv64 {
        Fnv64::new()
            .u64(kind as u64)
            .u64(size as u64)
            .u64(align as u64)
    }

    /// A primitive of `kind` ([`kind::UNSIGNED`], ...): `T`'s size and alignment.
    ///
    /// ```
    /// use gpukernel_device::signature::{TypeLayout, kind};
    /// let b = TypeLayout::scalar::<bool>(kind::BOOL);
    /// assert_eq!((b.kind, b.size, b.align), (kind::BOOL, 1, 1));
    /// assert_ne!(b.digest, TypeLayout::scalar::<u8>(kind::UNSIGNED).digest);
    /// ```
    pub const fn scalar<T>(kind: u8) -> Self {
        let (size, align) = (core::mem::size_of::<T>(), core::mem::align_of::<T>());
        TypeLayout {
            kind,
            size,
            align,
            digest: Self::head(kind, size, align).finish(),
        }
    }

    /// A type known by its size and alignment only ([`kind::OPAQUE`]).
    ///
    /// ```
    /// use gpukernel_device::signature::TypeLayout;
    /// assert_eq!(TypeLayout::opaque::<u64>().size, 8);
    /// // One size, another alignment.
    /// assert_ne!(TypeLayout::opaque::<u64>(), TypeLayout::opaque::<[u32; 2]>());
    /// ```
    pub const fn opaque<T>() -> Self {
        Self::scalar::<T>(kind::OPAQUE)
    }

    /// `T` = `[E; n]`, where `elem` is `E`'s layout.
    ///
    /// ```
    /// use gpukernel_device::signature::{TypeLayout, kind};
    /// let f = TypeLayout::scalar::<f32>(kind::FLOAT);
    /// assert_ne!(TypeLayout::array::<[f32; 2]>(f, 2).digest, TypeLayout::array::<[f32; 3]>(f, 3).digest);
    /// ```
    pub const fn array<T>(elem: TypeLayout, n: usize) -> Self {
        let (size, align) = (core::mem::size_of::<T>(), core::mem::align_of::<T>());
        TypeLayout {
            kind: kind::ARRAY,
            size,
            align,
            digest: Self::head(kind::ARRAY, size, align)
                .u64(n as u64)
                .u64(elem.digest)
                .finish(),
        }
    }

    /// A struct `T` of the given fields, each `(offset, layout)` in declaration order (what
    /// `#[derive(DeviceCopy)]` writes).
    ///
    /// ```
    /// use gpukernel_device::signature::{TypeLayout, kind};
    /// #[repr(C)]
    /// struct Pair { a: f32, b: u32 }
    /// let (f, u) = (TypeLayout::scalar::<f32>(kind::FLOAT), TypeLayout::scalar::<u32>(kind::UNSIGNED));
    /// let pair = TypeLayout::record::<Pair>(&[(0, f), (4, u)]);
    /// assert_eq!((pair.kind, pair.size), (kind::STRUCT, 8));
    /// assert_ne!(pair.digest, TypeLayout::record::<Pair>(&[(0, u), (4, f)]).digest);
    /// ```
    pub const fn record<T>(fields: &[(usize, TypeLayout)]) -> Self {
        let (size, align) = (core::mem::size_of::<T>(), core::mem::align_of::<T>());
        let mut h = Self::head(kind::STRUCT, size, align).u64(fields.len() as u64);
        let mut i = 0;
        while i < fields.len() {
            h = h.u64(fields[i].0 as u64).u64(fields[i].1.digest);
            i += 1;
        }
        TypeLayout {
            kind: kind::STRUCT,
            size,
            align,
            digest: h.finish(),
        }
    }

    /// [`record`](TypeLayout::record) of named fields (what `#[derive(DeviceCopy)]` writes:
    /// its `FIELDS`, so each field's type is named once); the same layout and digest.
    ///
    /// ```
    /// use gpukernel_device::signature::{FieldLayout, Inside, TypeLayout, kind};
    /// #[repr(C)]
    /// struct Pair { a: f32, b: u32 }
    /// let (f, u) = (TypeLayout::scalar::<f32>(kind::FLOAT), TypeLayout::scalar::<u32>(kind::UNSIGNED));
    /// let named = [
    ///     FieldLayout { name: "a", offset: 0, layout: f, inside: Inside::Nothing },
    ///     FieldLayout { name: "b", offset: 4, layout: u, inside: Inside::Nothing },
    /// ];
    /// assert_eq!(TypeLayout::record_fields::<Pair>(&named), TypeLayout::record::<Pair>(&[(0, f), (4, u)]));
    /// ```
    pub const fn record_fields<T>(fields: &[FieldLayout]) -> Self {
        let (size, align) = (core::mem::size_of::<T>(), core::mem::align_of::<T>());
        let mut h = Self::head(kind::STRUCT, size, align).u64(fields.len() as u64);
        let mut i = 0;
        while i < fields.len() {
            h = h.u64(fields[i].offset as u64).u64(fields[i].layout.digest);
            i += 1;
        }
        TypeLayout {
            kind: kind::STRUCT,
            size,
            align,
            digest: h.finish(),
        }
    }
}

/// One named field of a `#[derive(DeviceCopy)]` struct ([`DeviceCopy::FIELDS`]): its name,
/// offset and layout on the target being compiled. `declare_device!` records them for each
/// struct a foreign function takes, so that the linker and the build compare them with the C
/// struct of the definition (`sizeof`, `alignof`, each field's offset and type).
///
/// [`DeviceCopy::FIELDS`]: crate::DeviceCopy::FIELDS
///
/// ```
/// use gpukernel_device::DeviceCopy;
/// #[repr(C)]
/// #[derive(Clone, Copy, DeviceCopy)]
/// pub struct Pair { pub a: f32, pub b: u32 }
/// let fields = <Pair as DeviceCopy>::FIELDS;
/// assert_eq!((fields[1].name, fields[1].offset, fields[1].layout.size), ("b", 4, 4));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldLayout {
    /// The field's name (a tuple struct's are `"0"`, `"1"`, ...).
    pub name: &'static str,
    /// `offset_of!`.
    pub offset: usize,
    /// The field type's layout.
    pub layout: TypeLayout,
    /// What the field's type holds ([`DeviceCopy::INSIDE`]): the foreign checks follow it
    /// into nested structs and array elements, so that their types are compared too, not
    /// only their offsets and sizes.
    ///
    /// [`DeviceCopy::INSIDE`]: crate::DeviceCopy::INSIDE
    pub inside: Inside,
}

/// What a [`DeviceCopy`](crate::DeviceCopy) type holds, as far as the foreign-declaration
/// checks compare it with a C type ([`DeviceCopy::INSIDE`](crate::DeviceCopy::INSIDE)):
/// nothing more than its layout (a scalar, or a type of a hand-written impl), a struct's
/// named fields, or an array's elements.
///
/// ```
/// use gpukernel_device::DeviceCopy;
/// use gpukernel_device::signature::{Inside, kind};
/// #[repr(C)]
/// #[derive(Clone, Copy, DeviceCopy)]
/// pub struct Pair { pub a: f32, pub v: [u16; 2] }
/// let Inside::Fields(fields) = <Pair as DeviceCopy>::INSIDE else { unreachable!() };
/// let Inside::Elements { layout, count, .. } = fields[1].inside else { unreachable!() };
/// assert_eq!((layout.kind, layout.size, count), (kind::UNSIGNED, 2, 2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inside {
    /// Nothing the checks can name: a scalar, or a type known by its layout only.
    Nothing,
    /// A `#[derive(DeviceCopy)]` struct's fields ([`DeviceCopy::FIELDS`](crate::DeviceCopy::FIELDS)).
    Fields(&'static [FieldLayout]),
    /// An array `[E; count]`: `E`'s layout and what `E` holds.
    Elements {
        /// `E`'s layout.
        layout: TypeLayout,
        /// What `E` holds.
        inside: &'static Inside,
        /// The number of elements.
        count: usize,
    },
}

/// How a kernel parameter type enters the signature fingerprint: how it lowers to the ABI and
/// the layout of the value it carries (for slices and outputs, of one element; for raw
/// pointers, of the pointee).
///
/// Implemented for every `DeviceCopy` type (by value), `&[T]`, `&mut [T]`, the disjoint
/// outputs, raw pointers and `graph::ConditionalHandle`, with `'static` standing for every
/// lifetime (as in `Kernel::Params`).
///
/// # Safety
/// [`LOWERING`](ParamSig::LOWERING) must be the lowering `#[kernel]` performs for the type and
/// [`VALUE`](ParamSig::VALUE) the layout of what it carries on the target being compiled.
///
/// ```
/// use gpukernel_device::signature::{ParamSig, lowering};
/// use gpukernel_device::DisjointSlice;
/// assert_eq!(<DisjointSlice<'static, f32> as ParamSig>::LOWERING, lowering::DISJOINT);
/// assert_eq!(<DisjointSlice<'static, f32> as ParamSig>::VALUE.size, 4);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no kernel signature: it (or its element type) does not implement `DeviceCopy`",
    label = "cannot be fingerprinted",
    note = "kernel parameters are scalars and `DeviceCopy` structs by value, `&[T]`, `&mut [T]` and `DisjointSlice<T>` of `DeviceCopy` elements, and raw pointers"
)]
pub unsafe trait ParamSig {
    /// One of [`lowering`]'s constants.
    const LOWERING: u8;
    /// The layout of the value, element or pointee.
    const VALUE: TypeLayout;
}

// SAFETY: a `DeviceCopy` value is one parameter; its layout is its own.
unsafe impl<T: crate::DeviceCopy> ParamSig for T {
    const LOWERING: u8 = lowering::BY_VALUE;
    const VALUE: TypeLayout = T::LAYOUT;
}
// SAFETY: a conditional handle is one `u64`, recognised by name.
unsafe impl ParamSig for crate::graph::ConditionalHandle {
    const LOWERING: u8 = lowering::CONDITIONAL;
    const VALUE: TypeLayout = TypeLayout::opaque::<Self>();
}
// SAFETY: slices lower to pointer and length; the element's layout.
unsafe impl<T: crate::DeviceCopy> ParamSig for &'static [T] {
    const LOWERING: u8 = lowering::SLICE;
    const VALUE: TypeLayout = T::LAYOUT;
}
// SAFETY: as above.
unsafe impl<T: crate::DeviceCopy> ParamSig for &'static mut [T] {
    const LOWERING: u8 = lowering::SLICE_MUT;
    const VALUE: TypeLayout = T::LAYOUT;
}
// SAFETY: as above.
unsafe impl<T: crate::DeviceCopy> ParamSig for crate::DisjointSlice<'static, T> {
    const LOWERING: u8 = lowering::DISJOINT;
    const VALUE: TypeLayout = T::LAYOUT;
}
// SAFETY: as above.
unsafe impl<T: crate::DeviceCopy> ParamSig for crate::DisjointSlice2D<'static, T> {
    const LOWERING: u8 = lowering::DISJOINT_2D;
    const VALUE: TypeLayout = T::LAYOUT;
}
// SAFETY: as above.
unsafe impl<T: crate::DeviceCopy> ParamSig for crate::Slice2D<'static, T> {
    const LOWERING: u8 = lowering::SLICE_2D;
    const VALUE: TypeLayout = T::LAYOUT;
}
// SAFETY: as above.
unsafe impl<T: crate::DeviceCopy> ParamSig for crate::DisjointSlice3D<'static, T> {
    const LOWERING: u8 = lowering::DISJOINT_3D;
    const VALUE: TypeLayout = T::LAYOUT;
}
// SAFETY: one pointer; the pointee's size and alignment.
unsafe impl<T> ParamSig for *const T {
    const LOWERING: u8 = lowering::PTR_CONST;
    const VALUE: TypeLayout = TypeLayout::opaque::<T>();
}
// SAFETY: as above.
unsafe impl<T> ParamSig for *mut T {
    const LOWERING: u8 = lowering::PTR_MUT;
    const VALUE: TypeLayout = TypeLayout::opaque::<T>();
}

/// One kernel parameter as the fingerprint sees it.
///
/// ```
/// use gpukernel_device::signature::ParamSignature;
/// let x = ParamSignature::new::<&'static [f32]>("x", "&[f32]", 0);
/// let y = ParamSignature::new::<&'static [f64]>("x", "&[f32]", 0);
/// assert_ne!(x.fingerprint(0), y.fingerprint(0));
/// assert_ne!(x.fingerprint(0), ParamSignature::new::<&'static [f32]>("x", "&[f32]", 1).fingerprint(0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSignature {
    /// The parameter's name as written (not hashed: names do not change the ABI).
    pub name: &'static str,
    /// The type as written (not hashed), for messages.
    pub ty: &'static str,
    /// [`ParamSig::LOWERING`].
    pub lowering: u8,
    /// [`ParamSig::VALUE`].
    pub value: TypeLayout,
    /// 0, or 1 + the index of the `same_len` group the parameter belongs to.
    pub same_len: u8,
}

impl ParamSignature {
    /// Parameter `name` of type `T` (spelled `ty`), in `same_len` group `same_len` (0: none).
    ///
    /// ```
    /// use gpukernel_device::signature::{ParamSignature, lowering};
    /// let p = ParamSignature::new::<*mut u32>("out", "*mut u32", 0);
    /// assert_eq!((p.lowering, p.value.size), (lowering::PTR_MUT, 4));
    /// ```
    pub const fn new<T: ParamSig>(name: &'static str, ty: &'static str, same_len: u8) -> Self {
        ParamSignature {
            name,
            ty,
            lowering: T::LOWERING,
            value: T::VALUE,
            same_len,
        }
    }

    /// The parameter's fingerprint at position `index`.
    ///
    /// ```
    /// use gpukernel_device::signature::ParamSignature;
    /// let p = ParamSignature::new::<f32>("a", "f32", 0);
    /// // Names are not part of it; the type is.
    /// assert_eq!(p.fingerprint(0), ParamSignature::new::<f32>("b", "Real", 0).fingerprint(0));
    /// assert_ne!(p.fingerprint(0), ParamSignature::new::<f64>("a", "f32", 0).fingerprint(0));
    /// ```
    pub const fn fingerprint(&self, index: usize) -> u64 {
        Fnv64::new()
            .u64(FORMAT_VERSION)
            .u64(index as u64)
            .u64(self.lowering as u64)
            .u64(self.value.digest)
            .u64(self.same_len as u64)
            .finish()
    }

    /// What a message can say about the parameter without its name: the lowering, the kind,
    /// size and alignment of the value and the `same_len` group, packed in one word (bits
    /// 0-31 size, 32-39 log2 of the alignment, 40-47 kind, 48-55 lowering, 56-63 `same_len`).
    ///
    /// ```
    /// use gpukernel_device::signature::{ParamSignature, kind, lowering};
    /// let s = ParamSignature::new::<&'static [u16]>("x", "&[u16]", 1).summary();
    /// assert_eq!(s & 0xffff_ffff, 2); // size
    /// assert_eq!((s >> 40) & 0xff, kind::UNSIGNED as u64);
    /// assert_eq!((s >> 48) & 0xff, lowering::SLICE as u64);
    /// assert_eq!(s >> 56, 1); // same_len group
    /// ```
    pub const fn summary(&self) -> u64 {
        let size = if self.value.size > u32::MAX as usize {
            u32::MAX as u64
        } else {
            self.value.size as u64
        };
        size | ((self.value.align.trailing_zeros() as u64 & 0xff) << 32)
            | ((self.value.kind as u64) << 40)
            | ((self.lowering as u64) << 48)
            | ((self.same_len as u64) << 56)
    }
}

/// The fingerprint of a whole kernel: the format, the crate's and the kernel's names, its
/// safety and every parameter's fingerprint in order.
///
/// ```
/// use gpukernel_device::signature::{ParamSignature, kernel_fingerprint};
/// let p = [ParamSignature::new::<f32>("a", "f32", 0)];
/// let safe = kernel_fingerprint("k", "saxpy", false, &p);
/// assert_ne!(safe, kernel_fingerprint("k", "saxpy", true, &p));
/// assert_ne!(safe, kernel_fingerprint("k2", "saxpy", false, &p));
/// assert_ne!(safe, kernel_fingerprint("k", "saxpy", false, &[]));
/// ```
pub const fn kernel_fingerprint(
    krate: &str,
    kernel: &str,
    is_unsafe: bool,
    params: &[ParamSignature],
) -> u64 {
    let mut h = Fnv64::new()
        .u64(SIGNATURE_MAGIC)
        .str(krate)
        .str(kernel)
        .u64(is_unsafe as u64)
        .u64(params.len() as u64);
    let mut i = 0;
    while i < params.len() {
        h = h.u64(params[i].fingerprint(i));
        i += 1;
    }
    h.finish()
}

/// The words of a kernel's signature global, `N` = 3 + 2 × the parameter count:
/// [`SIGNATURE_MAGIC`], the [`kernel_fingerprint`], the parameter count, then for each
/// parameter its [`fingerprint`](ParamSignature::fingerprint) and
/// [`summary`](ParamSignature::summary).
///
/// ```
/// use gpukernel_device::signature::{ParamSignature, SIGNATURE_MAGIC, kernel_fingerprint, signature_words};
/// const P: [ParamSignature; 1] = [ParamSignature::new::<u32>("n", "u32", 0)];
/// const W: [u64; 5] = signature_words::<5>(kernel_fingerprint("k", "f", false, &P), &P);
/// assert_eq!(W[0], SIGNATURE_MAGIC);
/// assert_eq!(W[2], 1);
/// assert_eq!(W[3], P[0].fingerprint(0));
/// ```
pub const fn signature_words<const N: usize>(whole: u64, params: &[ParamSignature]) -> [u64; N] {
    assert!(N == 3 + 2 * params.len(), "N must be 3 + 2 * params.len()");
    let mut out = [0u64; N];
    out[0] = SIGNATURE_MAGIC;
    out[1] = whole;
    out[2] = params.len() as u64;
    let mut i = 0;
    while i < params.len() {
        out[3 + 2 * i] = params[i].fingerprint(i);
        out[4 + 2 * i] = params[i].summary();
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_values() {
        assert_eq!(Fnv64::new().finish(), 0xcbf2_9ce4_8422_2325);
        assert_eq!(Fnv64::new().bytes(b"a").finish(), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(
            Fnv64::new().bytes(b"foobar").finish(),
            0x8594_4171_f739_67e8
        );
    }

    #[test]
    fn scalars_differ_by_kind_size_and_alignment() {
        let all = [
            <u8 as ParamSig>::VALUE,
            <i8 as ParamSig>::VALUE,
            <bool as ParamSig>::VALUE,
            <u32 as ParamSig>::VALUE,
            <i32 as ParamSig>::VALUE,
            <f32 as ParamSig>::VALUE,
            <f64 as ParamSig>::VALUE,
            <u64 as ParamSig>::VALUE,
            <crate::half::f16 as ParamSig>::VALUE,
            <crate::half::bf16 as ParamSig>::VALUE,
            <[u8; 4] as ParamSig>::VALUE,
            <[i8; 4] as ParamSig>::VALUE,
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a.digest, b.digest, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn derived_structs_are_seen_field_by_field() {
        use crate::DeviceCopy;
        #[repr(C)]
        #[derive(Clone, Copy, DeviceCopy)]
        #[device_copy(crate = "crate")]
        struct WithByte {
            scale: f32,
            flag: u8,
        }
        #[repr(C)]
        #[derive(Clone, Copy, DeviceCopy)]
        #[device_copy(crate = "crate")]
        struct WithBool {
            scale: f32,
            flag: bool,
        }
        #[repr(C)]
        #[derive(Clone, Copy, DeviceCopy)]
        #[device_copy(crate = "crate")]
        struct Swapped {
            flag: u8,
            scale: f32,
        }
        let (a, b, c) = (WithByte::LAYOUT, WithBool::LAYOUT, Swapped::LAYOUT);
        assert_eq!((a.kind, a.size, a.align), (kind::STRUCT, 8, 4));
        assert_eq!((a.size, a.align), (b.size, b.align));
        assert_ne!(a.digest, b.digest);
        assert_ne!(a.digest, c.digest);
        // A hand-written impl is seen by its size and alignment only.
        #[derive(Clone, Copy)]
        struct ByHand(u64);
        // SAFETY: a plain `u64`.
        unsafe impl DeviceCopy for ByHand {}
        assert_eq!(ByHand::LAYOUT, TypeLayout::opaque::<u64>());
        let _ = (
            WithByte {
                scale: 0.0,
                flag: 0,
            }
            .scale,
            WithBool {
                scale: 0.0,
                flag: false,
            }
            .flag,
        );
        let _ = Swapped {
            flag: 0,
            scale: 0.0,
        }
        .flag;
        let _ = ByHand(0).0;
    }

    #[test]
    fn lowering_and_same_len_are_part_of_each_parameter() {
        let p = |s| ParamSignature::new::<&'static [f32]>("x", "", s).fingerprint(0);
        assert_ne!(p(0), p(1));
        let d = ParamSignature::new::<crate::DisjointSlice<'static, f32>>("x", "", 0);
        assert_ne!(p(0), d.fingerprint(0));
        let q = ParamSignature::new::<*const f32>("x", "", 0);
        let r = ParamSignature::new::<*mut f32>("x", "", 0);
        assert_ne!(q.fingerprint(0), r.fingerprint(0));
        // The position too.
        assert_ne!(q.fingerprint(0), q.fingerprint(1));
    }

    #[test]
    fn summaries_pack_the_fields() {
        let p = ParamSignature::new::<&'static [f64]>("x", "", 2);
        let s = p.summary();
        assert_eq!(s & 0xffff_ffff, 8);
        assert_eq!((s >> 32) & 0xff, 3);
        assert_eq!((s >> 40) & 0xff, u64::from(kind::FLOAT));
        assert_eq!((s >> 48) & 0xff, u64::from(lowering::SLICE));
        assert_eq!(s >> 56, 2);
    }
}

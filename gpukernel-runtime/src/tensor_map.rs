//! Hopper launch helpers that live in device memory: TMA descriptors (tensor maps) and grid
//! barriers for cooperative launches.
//!
//! A [`TensorMapNd`] describes a tensor of 1 to 5 dimensions held in a device buffer or view
//! ([`TensorMap2D`] for a row-major matrix), and the box (tile) that one `tma::load` /
//! `tma::store` of `gpukernel_device::tma` moves. The runtime checks the shape, strides, box
//! and swizzle against the hardware's rules before the driver sees them
//! (`cuTensorMapEncodeTiled` answers a bare `CUDA_ERROR_INVALID_VALUE`), encodes the map, and
//! keeps the 128 bytes in device memory (64-byte aligned); the kernel receives their address as
//! a `gpukernel_device::tma::TensorMap` parameter ([`TensorMapNd::param`]). The map borrows the
//! memory it describes for its lifetime `'a`, so the memory outlives every launch that can name
//! it through the map.

use std::marker::PhantomData;

use gpukernel_device::DeviceCopy;
use gpukernel_device::grid::GridBarrier;
use gpukernel_device::tma::TensorMap;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::memory::{DeviceBuffer, DeviceSlice};

/// An element type the tensor memory accelerator knows (`CUtensorMapDataType`).
///
/// Sealed: the copy engine moves `DATA_TYPE`'s size per element while [`TensorMapNd::strided`]
/// checks the extents with `size_of::<T>()`, so only the library's own element types (whose two
/// sizes agree) implement it. For another `#[repr(transparent)]` element type, build the map
/// over a view of the primitive it wraps.
///
/// ```
/// use gpukernel_runtime::TmaElement;
/// assert_eq!(<f32 as TmaElement>::DATA_TYPE, 7); // CU_TENSOR_MAP_DATA_TYPE_FLOAT32
/// ```
pub trait TmaElement: DeviceCopy + sealed::Sealed {
    /// The `CUtensorMapDataType` value.
    const DATA_TYPE: u32;
}

mod sealed {
    /// Keeps [`super::TmaElement`] to the types below.
    pub trait Sealed {}
}

macro_rules! tma_element {
    ($($t:ty => $v:expr),* $(,)?) => { $(
        impl sealed::Sealed for $t {}
        impl TmaElement for $t { const DATA_TYPE: u32 = $v; }
        const _: () = assert!(element_bytes($v) as usize == std::mem::size_of::<$t>());
    )* };
}
tma_element!(
    u8 => 0, i8 => 0, u16 => 1, i16 => 1, u32 => 2, i32 => 3, u64 => 4, i64 => 5,
    gpukernel_device::half::f16 => 6, f32 => 7, f64 => 8, gpukernel_device::half::bf16 => 9,
);

/// Waits for the context's work before memory named by address goes, leaving any foreign-call
/// failure pending: it belongs to the launch that made it, and the next observation point
/// (a synchronization, a copy to the host) reports it. Inside a graph host node it does not
/// wait (the node's own work would wait on itself); a fault stays sticky for the next check.
fn wait_without_claiming(ctx: &Context) {
    if crate::graph::in_host_node() {
        return;
    }
    let _ = ctx.inner.backend.synchronize();
}

/// Bytes per element of a `CUtensorMapDataType`.
pub(crate) const fn element_bytes(data_type: u32) -> u32 {
    match data_type {
        0 => 1,
        1 | 6 | 9 => 2,
        4 | 5 | 8 => 8,
        _ => 4,
    }
}

/// The shared-memory swizzle of a tensor map's box (`CUtensorMapSwizzle`): how the 16-byte
/// chunks of each row are permuted so that column accesses spread over the banks. A swizzled
/// box has rows of at most the span (32, 64 or 128 bytes), and its shared-memory destination
/// must be aligned to 256, 512 or 1024 bytes.
///
/// ```
/// use gpukernel_runtime::Swizzle;
/// assert_eq!(Swizzle::B128.span_bytes(), Some(128));
/// assert_eq!(Swizzle::None.span_bytes(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Swizzle {
    /// Rows as they are.
    #[default]
    None,
    /// 32-byte swizzle.
    B32,
    /// 64-byte swizzle.
    B64,
    /// 128-byte swizzle (the layout `wgmma` reads).
    B128,
}

impl Swizzle {
    /// The row span of the pattern in bytes, `None` without swizzle.
    ///
    /// ```
    /// use gpukernel_runtime::Swizzle;
    /// assert_eq!(Swizzle::B32.span_bytes(), Some(32));
    /// ```
    pub fn span_bytes(self) -> Option<u32> {
        match self {
            Swizzle::None => None,
            Swizzle::B32 => Some(32),
            Swizzle::B64 => Some(64),
            Swizzle::B128 => Some(128),
        }
    }

    fn code(self) -> u32 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 1,
            Swizzle::B64 => 2,
            Swizzle::B128 => 3,
        }
    }
}

/// The 128 bytes of an encoded map, aligned as the hardware reads them.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct MapBytes([u64; 16]);
// SAFETY: plain data, no padding (128 bytes, alignment 64).
unsafe impl DeviceCopy for MapBytes {}

/// A TMA descriptor of a 1- to 5-dimensional tensor of `T` in device memory, moved in boxes:
/// `shape`, `strides` (in elements) and `box_shape` are given outermost dimension first, as in
/// a row-major array (`[depth, rows, cols]`); the innermost dimension is contiguous (stride 1).
/// The kernel names a box by its first element's coordinates innermost first
/// (`tma::load(dst, map, [col, row, depth], bar)`), as the hardware does.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::{Swizzle, TensorMapNd};
/// // 4 images of 32 × 64 f32, moved 2 × 8 × 32 at a time.
/// let m = ctx.alloc_zeros::<f32>(4 * 32 * 64)?;
/// let map = TensorMapNd::contiguous(&ctx, &m, [4, 32, 64], [2, 8, 32], Swizzle::None)?;
/// assert_eq!(map.box_bytes(), 2 * 8 * 32 * 4);
/// let _param = map.param(); // a `gpukernel_device::tma::TensorMap` kernel argument
/// // The box's rows must be whole 16-byte chunks: 3 f32s are 12 bytes.
/// assert!(TensorMapNd::contiguous(&ctx, &m, [4, 32, 64], [1, 8, 3], Swizzle::None).is_err());
/// # Ok(()) }
/// ```
pub struct TensorMapNd<'a, T, const R: usize> {
    ctx: Context,
    words: DeviceBuffer<MapBytes>,
    shape: [u64; R],
    box_shape: [u32; R],
    _memory: PhantomData<&'a T>,
}

/// A TMA descriptor of a row-major 2D tensor: `rows × cols` elements, `pitch` elements from one
/// row to the next, moved in boxes of `box_rows × box_cols` ([`TensorMapNd::new`] with rank 2).
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::{Swizzle, TensorMap2D};
/// let m = ctx.alloc_zeros::<f32>(64 * 64)?;
/// let map = TensorMap2D::new(&ctx, &m, [64, 64], 64, [32, 32], Swizzle::None)?;
/// let _param = map.param(); // a `gpukernel_device::tma::TensorMap` kernel argument
/// // The box's rows must be whole 16-byte chunks: 3 f32s are 12 bytes.
/// assert!(TensorMap2D::new(&ctx, &m, [64, 64], 64, [8, 3], Swizzle::None).is_err());
/// # Ok(()) }
/// ```
pub type TensorMap2D<'a, T> = TensorMapNd<'a, T, 2>;

impl<T, const R: usize> std::fmt::Debug for TensorMapNd<'_, T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorMapNd")
            .field("shape", &self.shape)
            .field("box", &self.box_shape)
            .finish()
    }
}

impl<'a, T: TmaElement> TensorMapNd<'a, T, 2> {
    /// The map of `memory` seen as `[rows, cols]` elements with `pitch` elements between row
    /// starts, in boxes of `[box_rows, box_cols]` with `swizzle`: [`TensorMapNd::strided`] with
    /// strides `[pitch, 1]`, checked the same way.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::{Swizzle, TensorMap2D};
    /// use gpukernel_runtime::half::bf16;
    /// let a = ctx.alloc_zeros::<bf16>(128 * 64)?;
    /// // 64-element (128-byte) rows: the 128-byte swizzle `wgmma` reads.
    /// let map = TensorMap2D::new(&ctx, &a, [128, 64], 64, [64, 64], Swizzle::B128)?;
    /// assert_eq!(map.box_bytes(), 64 * 64 * 2);
    /// # Ok(()) }
    /// ```
    pub fn new(
        ctx: &Context,
        memory: &'a impl DeviceSlice<T>,
        shape: [u64; 2],
        pitch: u64,
        box_shape: [u32; 2],
        swizzle: Swizzle,
    ) -> Result<Self> {
        Self::strided(ctx, memory, shape, [pitch, 1], box_shape, swizzle)
    }
}

impl<'a, T: TmaElement, const R: usize> TensorMapNd<'a, T, R> {
    /// The map of `memory` as a dense row-major tensor of `shape` (strides the products of the
    /// inner extents), in boxes of `box_shape`: [`TensorMapNd::strided`].
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::{Swizzle, TensorMapNd};
    /// let m = ctx.alloc_zeros::<u16>(2 * 3 * 4 * 5 * 8)?;
    /// let map = TensorMapNd::contiguous(&ctx, &m, [2, 3, 4, 5, 8], [1, 2, 2, 5, 8], Swizzle::None)?;
    /// assert_eq!(map.shape(), [2, 3, 4, 5, 8]);
    /// # Ok(()) }
    /// ```
    pub fn contiguous(
        ctx: &Context,
        memory: &'a impl DeviceSlice<T>,
        shape: [u64; R],
        box_shape: [u32; R],
        swizzle: Swizzle,
    ) -> Result<Self> {
        let mut strides = [1u64; R];
        for d in (0..R.saturating_sub(1)).rev() {
            strides[d] = strides[d + 1].saturating_mul(shape[d + 1]);
        }
        Self::strided(ctx, memory, shape, strides, box_shape, swizzle)
    }

    /// The map of `memory` as a tensor of `shape` whose element `[i0, i1, …]` is at element
    /// `Σ i_d · strides[d]` of `memory`, in boxes of `box_shape` with `swizzle` (every array
    /// outermost dimension first; `R` from 1 to 5, checked when the program is built).
    ///
    /// Checked before the driver sees them (it answers a bare `CUDA_ERROR_INVALID_VALUE`),
    /// each refusal a [`Error::TensorMapInvalid`] naming the dimension: every extent from 1 to
    /// 2³²; the innermost stride 1; every other stride a multiple of 16 bytes below 2⁴⁰ and at
    /// least the span of the dimension inside it (`strides[d] ≥ shape[d+1] · strides[d+1]`: the
    /// dimensions nest, so no two elements share an address); the tensor inside `memory`,
    /// whose address is 16-byte aligned; each box side from 1 to 256, the innermost a multiple
    /// of 16 bytes and at most the swizzle's span when swizzled; the whole box within the
    /// shared memory a block of the device can have (a load lands all of it).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::{Error, Swizzle, TensorMapNd};
    /// // 3 planes of 10 × 12 f32 inside a 3 × 16 × 16 allocation.
    /// let m = ctx.alloc_zeros::<f32>(3 * 16 * 16)?;
    /// let map = TensorMapNd::strided(&ctx, &m, [3, 10, 12], [256, 16, 1], [1, 8, 4], Swizzle::None)?;
    /// assert_eq!(map.box_bytes(), 8 * 4 * 4);
    /// // Planes 8 rows apart overlap rows 8 and 9 of the previous plane.
    /// let e = TensorMapNd::strided(&ctx, &m, [3, 10, 12], [128, 16, 1], [1, 8, 4], Swizzle::None);
    /// assert!(matches!(e, Err(Error::TensorMapInvalid { .. })));
    /// # Ok(()) }
    /// ```
    pub fn strided(
        ctx: &Context,
        memory: &'a impl DeviceSlice<T>,
        shape: [u64; R],
        strides: [u64; R],
        box_shape: [u32; R],
        swizzle: Swizzle,
    ) -> Result<Self> {
        const { assert!(R >= 1 && R <= 5, "a tensor map has 1 to 5 dimensions") };
        let parts = memory.raw_parts();
        let elem = core::mem::size_of::<T>() as u64;
        let name = format!("{} elements of {}", parts.len, std::any::type_name::<T>());
        let fail = |problem: String| Error::TensorMapInvalid {
            buffer: name.clone(),
            problem,
        };
        if !std::sync::Arc::ptr_eq(parts.ctx, &ctx.inner) {
            return Err(fail(
                "the memory belongs to another context than the one given".to_owned(),
            ));
        }
        let inner = R - 1;
        for (d, &v) in shape.iter().enumerate() {
            if v == 0 || v > 1 << 32 {
                return Err(fail(format!(
                    "shape[{d}] = {v}: each extent must be 1 to 2^32"
                )));
            }
        }
        if strides[inner] != 1 {
            return Err(fail(format!(
                "strides[{inner}] = {}: the innermost dimension must be contiguous (stride 1; the copy engine reads it as one run)",
                strides[inner]
            )));
        }
        for d in 0..inner {
            let (s, bytes) = (strides[d], strides[d].saturating_mul(elem));
            if s == 0 || !bytes.is_multiple_of(16) || bytes >= 1 << 40 {
                return Err(fail(format!(
                    "strides[{d}] = {s} elements = {bytes} bytes: each stride but the innermost must be a nonzero multiple of 16 bytes below 2^40 (pad dimension {d}'s inner extent to a multiple of {} elements)",
                    (16 / elem).max(1)
                )));
            }
            let span = shape[d + 1].saturating_mul(strides[d + 1]);
            if s < span {
                let what = if d + 1 == inner {
                    format!("a row of shape[{inner}] = {} elements", shape[inner])
                } else {
                    format!("shape[{}] × strides[{}] = {span} elements", d + 1, d + 1)
                };
                return Err(fail(format!(
                    "strides[{d}] = {s} is shorter than {what}: the dimensions must nest (each stride at least the span of the dimension inside it), or elements would share addresses"
                )));
            }
        }
        let needed = shape.iter().zip(&strides).try_fold(1u64, |acc, (&n, &s)| {
            (n - 1).checked_mul(s).and_then(|v| v.checked_add(acc))
        });
        if needed.is_none_or(|n| n > parts.len as u64) {
            return Err(fail(format!(
                "a tensor of shape {shape:?} with strides {strides:?} spans {} elements: it does not fit the memory's {} elements",
                needed.map_or_else(|| "more than 2^64".to_owned(), |n| n.to_string()),
                parts.len
            )));
        }
        if !parts.ptr.is_multiple_of(16) {
            return Err(fail(format!(
                "its address {:#x} is not 16-byte aligned (a view starting mid-buffer must start on a 16-byte boundary)",
                parts.ptr
            )));
        }
        for (d, &v) in box_shape.iter().enumerate() {
            if !(1..=256).contains(&v) {
                return Err(fail(format!(
                    "box[{d}] = {v}: each box side must be 1 to 256"
                )));
            }
        }
        // A load lands the whole box in one block's shared memory (elements outside the
        // tensor as zeros): a larger box can never be moved, and its bytes (`box_bytes`, what
        // the loading thread expects on its barrier) would not fit a `u32`.
        let box_total = box_shape.iter().fold(elem, |acc, &v| acc * v as u64);
        let shared = ctx.inner.limits.max_shared_optin as u64;
        if box_total > shared {
            return Err(fail(format!(
                "a box of {box_shape:?} elements is {box_total} bytes, more than the {shared} bytes of shared memory a block of this device can have: no load can land it; use a smaller box"
            )));
        }
        let row_bytes = box_shape[inner] as u64 * elem;
        if !row_bytes.is_multiple_of(16) {
            return Err(fail(format!(
                "a box row is box[{inner}] = {} elements = {row_bytes} bytes: it must be a multiple of 16 bytes",
                box_shape[inner]
            )));
        }
        if let Some(span) = swizzle.span_bytes()
            && row_bytes > span as u64
        {
            return Err(fail(format!(
                "a box row is box[{inner}] = {} elements = {row_bytes} bytes, more than the {span}-byte swizzle span: use at most {} elements or a wider swizzle",
                box_shape[inner],
                span as u64 / elem
            )));
        }
        // The driver's order is innermost first; its strides are in bytes and omit the
        // innermost.
        let mut raw = crate::driver::TiledMap {
            data_type: T::DATA_TYPE,
            rank: R as u32,
            base: parts.ptr,
            dims: [1; 5],
            strides: [0; 4],
            boxes: [1; 5],
            swizzle: swizzle.code(),
        };
        for i in 0..R {
            let d = inner - i;
            raw.dims[i] = shape[d];
            raw.boxes[i] = box_shape[d];
            if i > 0 {
                raw.strides[i - 1] = strides[d] * elem;
            }
        }
        // SAFETY: the fields were checked above; the memory is borrowed for `'a`, which the
        // map (the only way to name it) cannot outlive.
        let words = unsafe { ctx.inner.backend.encode_tensor_map(&raw) }?;
        // Launches name the map by address only (no buffer argument orders them after the
        // copy): the map is in place before `strided` returns.
        let s = ctx.default_stream();
        let words = s.htod_copy(&[MapBytes(words)])?;
        // Without the foreign-call check: a failure of another launch stays pending for the
        // next observation of its results instead of being reported as this map's.
        s.wait_idle()?;
        Ok(TensorMapNd {
            ctx: ctx.clone(),
            words,
            shape,
            box_shape,
            _memory: PhantomData,
        })
    }

    /// The kernel argument: the device address of the encoded map.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::{Swizzle, TensorMap2D};
    /// let m = ctx.alloc_zeros::<u32>(32 * 32)?;
    /// let map = TensorMap2D::new(&ctx, &m, [32, 32], 32, [32, 32], Swizzle::None)?;
    /// assert_eq!(map.param().raw() % 64, 0);
    /// # Ok(()) }
    /// ```
    pub fn param(&self) -> TensorMap {
        TensorMap::from_raw(self.words.as_raw())
    }

    /// The tensor's extents, outermost first.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::{Swizzle, TensorMapNd};
    /// let m = ctx.alloc_zeros::<f32>(8 * 8)?;
    /// let map = TensorMapNd::contiguous(&ctx, &m, [2, 4, 8], [1, 4, 8], Swizzle::None)?;
    /// assert_eq!(map.shape(), [2, 4, 8]);
    /// # Ok(()) }
    /// ```
    pub fn shape(&self) -> [u64; R] {
        self.shape
    }

    /// The box's extents, outermost first.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::{Swizzle, TensorMapNd};
    /// let m = ctx.alloc_zeros::<f32>(8 * 8)?;
    /// let map = TensorMapNd::contiguous(&ctx, &m, [2, 4, 8], [1, 4, 8], Swizzle::None)?;
    /// assert_eq!(map.box_shape(), [1, 4, 8]);
    /// # Ok(()) }
    /// ```
    pub fn box_shape(&self) -> [u32; R] {
        self.box_shape
    }

    /// The bytes one box moves (what the loading thread expects on its `mbarrier`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::{Swizzle, TensorMap2D};
    /// let m = ctx.alloc_zeros::<f32>(16 * 16)?;
    /// let map = TensorMap2D::new(&ctx, &m, [16, 16], 16, [8, 16], Swizzle::None)?;
    /// assert_eq!(map.box_bytes(), 8 * 16 * 4);
    /// # Ok(()) }
    /// ```
    pub fn box_bytes(&self) -> u32 {
        // At most the device's shared memory per block (`strided` checked it): no overflow.
        self.box_shape.iter().product::<u32>() * core::mem::size_of::<T>() as u32
    }
}

impl<T, const R: usize> Drop for TensorMapNd<'_, T, R> {
    /// Waits for the context's work before the map's memory goes: launches name the map by
    /// address only, so no tracker knows which of them still read it.
    fn drop(&mut self) {
        wait_without_claiming(&self.ctx);
    }
}

/// A zeroed grid-barrier word for cooperative launches (`gpukernel_device::grid::sync`),
/// in device memory that this value owns. One launch at a time may use it; the barrier
/// returns to its initial state after a launch whose threads all called `sync` equally often.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::GridBarrierWord;
/// let bar = GridBarrierWord::new(&ctx)?;
/// let _param = bar.param(); // a `gpukernel_device::grid::GridBarrier` kernel argument
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct GridBarrierWord {
    ctx: Context,
    word: DeviceBuffer<u32>,
}

impl Drop for GridBarrierWord {
    /// Waits for the context's work before the word goes (launches name it by address only).
    fn drop(&mut self) {
        wait_without_claiming(&self.ctx);
    }
}

impl GridBarrierWord {
    /// A new barrier word, zeroed.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let bar = gpukernel_runtime::GridBarrierWord::new(&ctx)?;
    /// assert_ne!(bar.param().raw(), 0);
    /// # Ok(()) }
    /// ```
    pub fn new(ctx: &Context) -> Result<Self> {
        let s = ctx.default_stream();
        let word = s.alloc_zeros::<u32>(1)?;
        // Zero before any launch that names it by address (without the foreign-call check,
        // as in `TensorMap2D::new`).
        s.wait_idle()?;
        Ok(GridBarrierWord {
            ctx: ctx.clone(),
            word,
        })
    }

    /// The kernel argument.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let bar = gpukernel_runtime::GridBarrierWord::new(&ctx)?;
    /// let p: gpukernel_runtime::GridBarrier = bar.param();
    /// # Ok(()) }
    /// ```
    pub fn param(&self) -> GridBarrier {
        GridBarrier::from_raw(self.word.as_raw())
    }
}

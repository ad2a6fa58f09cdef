//! Hopper launch helpers that live in device memory: TMA descriptors (tensor maps) and grid
//! barriers for cooperative launches.
//!
//! A [`TensorMap2D`] describes a row-major matrix held in a device buffer or view, and the box
//! (tile) that one `tma::load` / `tma::store` of `gpukernel_device::tma` moves. The runtime
//! checks the shape, pitch, box and swizzle against the hardware's rules before the driver
//! sees them (`cuTensorMapEncodeTiled` answers a bare `CUDA_ERROR_INVALID_VALUE`), encodes the
//! map, and keeps the 128 bytes in device memory (64-byte aligned); the kernel receives their
//! address as a `gpukernel_device::tma::TensorMap` parameter ([`TensorMap2D::param`]). The
//! map borrows the memory it describes for its lifetime `'a`, so the memory outlives every
//! launch that can name it through the map.

use std::marker::PhantomData;

use gpukernel_device::DeviceCopy;
use gpukernel_device::grid::GridBarrier;
use gpukernel_device::tma::TensorMap;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::memory::{DeviceBuffer, DeviceSlice};

/// An element type the tensor memory accelerator knows (`CUtensorMapDataType`).
///
/// Sealed: the copy engine moves `DATA_TYPE`'s size per element while [`TensorMap2D::new`]
/// checks the extent with `size_of::<T>()`, so only the library's own element types (whose two
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

/// A TMA descriptor of a row-major 2D tensor of `T` in device memory: `rows × cols` elements,
/// `pitch` elements from one row to the next, moved in boxes of `box_rows × box_cols`.
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
pub struct TensorMap2D<'a, T> {
    ctx: Context,
    words: DeviceBuffer<MapBytes>,
    shape: [u64; 2],
    box_shape: [u32; 2],
    _memory: PhantomData<&'a T>,
}

impl<T> std::fmt::Debug for TensorMap2D<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorMap2D")
            .field("rows_cols", &self.shape)
            .field("box", &self.box_shape)
            .finish()
    }
}

impl<'a, T: TmaElement> TensorMap2D<'a, T> {
    /// The map of `memory` seen as `[rows, cols]` elements with `pitch` elements between row
    /// starts, in boxes of `[box_rows, box_cols]` with `swizzle`. Checked: the matrix fits
    /// `memory`; the base address is 16-byte aligned, the pitch a multiple of 16 bytes (below
    /// 2⁴⁰) and at least a row; every extent from 1 to 2³²; each box side from 1 to 256 and a
    /// multiple of 16 bytes along the row, at most the swizzle span when swizzled.
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
        [rows, cols]: [u64; 2],
        pitch: u64,
        [box_rows, box_cols]: [u32; 2],
        swizzle: Swizzle,
    ) -> Result<Self> {
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
        for (what, v) in [("rows", rows), ("cols", cols)] {
            if v == 0 || v > 1 << 32 {
                return Err(fail(format!("{what} = {v}: each extent must be 1 to 2^32")));
            }
        }
        if pitch < cols {
            return Err(fail(format!(
                "pitch {pitch} is shorter than a row of {cols} elements"
            )));
        }
        let pitch_bytes = pitch * elem;
        if !pitch_bytes.is_multiple_of(16) || pitch_bytes >= 1 << 40 {
            return Err(fail(format!(
                "the pitch is {pitch_bytes} bytes: it must be a multiple of 16 bytes below 2^40 (pad the rows to a multiple of {} elements)",
                (16 / elem).max(1)
            )));
        }
        let needed = (rows - 1)
            .checked_mul(pitch)
            .and_then(|v| v.checked_add(cols));
        if needed.is_none_or(|n| n > parts.len as u64) {
            return Err(fail(format!(
                "{rows} rows of {cols} with pitch {pitch} do not fit the memory's {} elements",
                parts.len
            )));
        }
        if !parts.ptr.is_multiple_of(16) {
            return Err(fail(format!(
                "its address {:#x} is not 16-byte aligned (a view starting mid-buffer must start on a 16-byte boundary)",
                parts.ptr
            )));
        }
        for (what, v) in [("box rows", box_rows), ("box cols", box_cols)] {
            if !(1..=256).contains(&v) {
                return Err(fail(format!(
                    "{what} = {v}: each box side must be 1 to 256"
                )));
            }
        }
        let row_bytes = box_cols as u64 * elem;
        if !row_bytes.is_multiple_of(16) {
            return Err(fail(format!(
                "a box row is {box_cols} elements = {row_bytes} bytes: it must be a multiple of 16 bytes"
            )));
        }
        if let Some(span) = swizzle.span_bytes()
            && row_bytes > span as u64
        {
            return Err(fail(format!(
                "a box row is {row_bytes} bytes, more than the {span}-byte swizzle span: use at most {} columns or a wider swizzle",
                span as u64 / elem
            )));
        }
        let raw = crate::driver::TiledMap {
            data_type: T::DATA_TYPE,
            rank: 2,
            base: parts.ptr,
            dims: [cols, rows, 1, 1, 1],
            strides: [pitch_bytes, 0, 0, 0],
            boxes: [box_cols, box_rows, 1, 1, 1],
            swizzle: swizzle.code(),
        };
        // SAFETY: the fields were checked above; the memory is borrowed for `'a`, which the
        // map (the only way to name it) cannot outlive.
        let words = unsafe { ctx.inner.backend.encode_tensor_map(&raw) }?;
        // Launches name the map by address only (no buffer argument orders them after the
        // copy): the map is in place before `new` returns.
        let s = ctx.default_stream();
        let words = s.htod_copy(&[MapBytes(words)])?;
        // Without the foreign-call check: a failure of another launch stays pending for the
        // next observation of its results instead of being reported as this map's.
        s.wait_idle()?;
        Ok(TensorMap2D {
            ctx: ctx.clone(),
            words,
            shape: [rows, cols],
            box_shape: [box_rows, box_cols],
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
        self.box_shape[0] * self.box_shape[1] * core::mem::size_of::<T>() as u32
    }
}

impl<T> Drop for TensorMap2D<'_, T> {
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

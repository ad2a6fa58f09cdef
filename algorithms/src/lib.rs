//! Device-wide algorithms on gpukernel's buffers and streams: reduce (sum, minimum, maximum)
//! of `u32`, `i32`, `f32`, `u64`, `i64`, `f64`, to one value, by segments and by rows;
//! inclusive and exclusive sums in one pass (decoupled look-back); the 256-bin byte histogram
//! and the general even-bin histogram; and the reduce and scans of a user's associative
//! operator (not necessarily commutative) through [`device_algorithms!`], which instantiates
//! the kernels in the user's own kernels crate. On the GPU and on the simulator.
//!
//! [`Algorithms::new`] loads the algorithms' kernels (this crate's own kernels crate,
//! `gpukernel-algorithms-kernels`, compiled to PTX by `nvptx-builder` like any kernels crate)
//! into a context once; each call is then typed, checked launches on the caller's stream. The
//! reduce is one launch, whose few words of scratch (a ticket and one partial per block) the
//! `Algorithms` allocates once and keeps (see [`Algorithms::reduce`]); the other algorithms'
//! temporary storage comes from the stream-ordered allocator and is freed after their work.
//!
//! ```
//! use gpukernel_algorithms::{Algorithms, Max, Sum};
//! use gpukernel_runtime::Device;
//!
//! # fn main() -> gpukernel_runtime::Result<()> {
//! let ctx = Device::simulator().primary_context()?; // or Device::get(0)?
//! let algs = Algorithms::new(&ctx)?;
//! let stream = ctx.default_stream();
//! let x = stream.htod_copy(&[3.0f32, -1.0, 4.0, 1.5])?;
//! let mut out = stream.alloc_zeros::<f32>(1)?;
//! algs.reduce(&stream, &x, Sum, &mut out)?;
//! assert_eq!(out.to_host_vec()?, [7.5]);
//! assert_eq!(algs.reduce_to_host(&stream, &x, Max)?, 4.0);
//! # Ok(()) }
//! ```

use std::sync::{Mutex, OnceLock};

use gpukernel_algorithms_kernels as k;
use gpukernel_runtime::{
    Context, DeviceBuffer, DeviceCopy, DeviceView, DeviceViewMut, DisjointSlice, Error, Kernel,
    LaunchConfig, Module, Result, SafeKernel, Stream, TypedKernel,
};

pub use gpukernel_algorithms_kernels::Item;

mod sort;

pub use gpukernel_algorithms_kernels::device_algorithms;
pub use gpukernel_algorithms_kernels::user_op::UserOp;
pub use gpukernel_device::ops::{Identity, Max, Min, ReduceOp, Sum};
#[doc(hidden)]
pub use sort::SortKernels;
pub use sort::{DeviceSortKey, SORT_MAX_KEYS, SortKey};

/// Threads per block of the reduce kernels.
pub const BLOCK: u32 = k::BLOCK;

/// Blocks per SM of [`Algorithms::reduce`]'s grid (measured on an H100 and an H200 for the
/// two-launch reduce: within 0.5% of the best shape on both; the one-launch reduce on an H100:
/// 1.012× CUB's `DeviceReduce::Sum` at 2^28 f32, the best shape 1.017×).
pub const DEFAULT_BLOCKS_PER_SM: u32 = 4;

type Pair<P, F> = (TypedKernel<P>, TypedKernel<F>);
type ReduceParams<T> = (
    &'static [T],
    DisjointSlice<'static, T>,
    DisjointSlice<'static, u64>,
);

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Sum {}
    impl Sealed for super::Min {}
    impl Sealed for super::Max {}
}

/// An operator the device-wide reduce has kernels for: [`Sum`], [`Min`], [`Max`] (each for
/// every [`Item`] type). They are commutative: the reduce combines elements in an order of its
/// own (a float sum differs from a sequential one in the last bits, and is the same from run
/// to run on one device and grid).
///
/// ```
/// use gpukernel_algorithms::{DeviceReduceOp, Min};
/// fn takes<Op: DeviceReduceOp<u64>>(_op: Op) {}
/// takes(Min);
/// ```
pub trait DeviceReduceOp<T: Item>: Identity<T> + sealed::Sealed {
    #[doc(hidden)]
    type Kernel: SafeKernel<Params = ReduceParams<T>>;
    #[doc(hidden)]
    fn __cell(kernels: &Kernels) -> &OnceLock<TypedKernel<Self::Kernel>>;
    #[doc(hidden)]
    fn __load(module: &Module) -> Result<TypedKernel<Self::Kernel>>;
}

macro_rules! reduce_ops {
    ($($field:ident: $t:ty, $op:ident, $kernel:ident;)*) => {
        /// The algorithms' kernels, looked up in the module on first use.
        #[doc(hidden)]
        #[derive(Default)]
        pub struct Kernels {
            $($field: OnceLock<TypedKernel<k::$kernel>>,)*
            sum_f32_v8: OnceLock<TypedKernel<k::reduce_sum_f32_v8>>,
            sum_f32_v2: OnceLock<TypedKernel<k::reduce_sum_f32_v2>>,
            sum_f32_two: OnceLock<Pair<k::reduce_partial_sum_f32, k::reduce_final_sum_f32>>,
            scan: ScanKernels,
            scan_tuning: ScanTuning,
            segmented: SegmentedKernels,
            histogram_even: HistogramKernels,
            histogram256: OnceLock<TypedKernel<k::histogram256_u8>>,
            sort: sort::SortKernels,
        }
        $(
            impl DeviceReduceOp<$t> for $op {
                type Kernel = k::$kernel;
                fn __cell(kernels: &Kernels) -> &OnceLock<TypedKernel<k::$kernel>> {
                    &kernels.$field
                }
                fn __load(module: &Module) -> Result<TypedKernel<k::$kernel>> {
                    module.kernel(k::$kernel)
                }
            }
        )*
    };
}

reduce_ops! {
    sum_f32: f32, Sum, reduce_sum_f32;
    sum_f64: f64, Sum, reduce_sum_f64;
    sum_i32: i32, Sum, reduce_sum_i32;
    sum_u32: u32, Sum, reduce_sum_u32;
    sum_i64: i64, Sum, reduce_sum_i64;
    sum_u64: u64, Sum, reduce_sum_u64;
    min_f32: f32, Min, reduce_min_f32;
    min_f64: f64, Min, reduce_min_f64;
    min_i32: i32, Min, reduce_min_i32;
    min_u32: u32, Min, reduce_min_u32;
    min_i64: i64, Min, reduce_min_i64;
    min_u64: u64, Min, reduce_min_u64;
    max_f32: f32, Max, reduce_max_f32;
    max_f64: f64, Max, reduce_max_f64;
    max_i32: i32, Max, reduce_max_i32;
    max_u32: u32, Max, reduce_max_u32;
    max_i64: i64, Max, reduce_max_i64;
    max_u64: u64, Max, reduce_max_u64;
}

/// The scan tuning kernels (the benchmark's rows), looked up on first use.
#[doc(hidden)]
#[derive(Default)]
pub struct ScanTuning {
    scan_tune_128x6: OnceLock<TypedKernel<k::scan_tune_128x6>>,
    scan_tune_128x6_sleep: OnceLock<TypedKernel<k::scan_tune_128x6_sleep>>,
    scan_tune_128x6_first600: OnceLock<TypedKernel<k::scan_tune_128x6_first600>>,
    scan_tune_128x6_first2000: OnceLock<TypedKernel<k::scan_tune_128x6_first2000>>,
    scan_tune_128x6_poll200: OnceLock<TypedKernel<k::scan_tune_128x6_poll200>>,
    scan_tune_128x5_sleep: OnceLock<TypedKernel<k::scan_tune_128x5_sleep>>,
    scan_tune_128x7_sleep: OnceLock<TypedKernel<k::scan_tune_128x7_sleep>>,
    scan_tune_256x6_sleep: OnceLock<TypedKernel<k::scan_tune_256x6_sleep>>,
    scan_tune_128x6_claim_sleep: OnceLock<TypedKernel<k::scan_tune_128x6_claim_sleep>>,
}

impl std::fmt::Debug for ScanTuning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScanTuning { .. }")
    }
}

impl std::fmt::Debug for ScanKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScanKernels { .. }")
    }
}

impl std::fmt::Debug for Kernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kernels { .. }")
    }
}

/// An operator the device-wide scans have kernels for: [`Sum`] of every [`Item`] type.
///
/// ```
/// use gpukernel_algorithms::{DeviceScanOp, Sum};
/// fn takes<Op: DeviceScanOp<u32>>(_op: Op) {}
/// takes(Sum);
/// ```
pub trait DeviceScanOp<T: Item>: Identity<T> + sealed::Sealed {
    #[doc(hidden)]
    type Inclusive: Kernel<Params = ScanParams<T>>;
    #[doc(hidden)]
    type Exclusive: Kernel<Params = ScanParams<T>>;
    #[doc(hidden)]
    fn __cell(kernels: &Kernels) -> &OnceLock<Pair<Self::Inclusive, Self::Exclusive>>;
    #[doc(hidden)]
    fn __load(module: &Module) -> Result<Pair<Self::Inclusive, Self::Exclusive>>;
}

type ScanParams<T> = (
    &'static [T],
    DisjointSlice<'static, T>,
    DisjointSlice<'static, u64>,
);

macro_rules! scan_ops {
    ($($field:ident: $t:ty, $incl:ident, $excl:ident;)*) => {
        /// The scan kernels, looked up in the module on first use.
        #[doc(hidden)]
        #[derive(Default)]
        pub struct ScanKernels {
            $($field: OnceLock<Pair<k::$incl, k::$excl>>,)*
        }
        $(
            impl DeviceScanOp<$t> for Sum {
                type Inclusive = k::$incl;
                type Exclusive = k::$excl;
                fn __cell(kernels: &Kernels) -> &OnceLock<Pair<k::$incl, k::$excl>> {
                    &kernels.scan.$field
                }
                fn __load(module: &Module) -> Result<Pair<k::$incl, k::$excl>> {
                    Ok((module.kernel(k::$incl)?, module.kernel(k::$excl)?))
                }
            }
        )*
    };
}

scan_ops! {
    sum_f32: f32, scan_inclusive_sum_f32, scan_exclusive_sum_f32;
    sum_i32: i32, scan_inclusive_sum_i32, scan_exclusive_sum_i32;
    sum_u32: u32, scan_inclusive_sum_u32, scan_exclusive_sum_u32;
    sum_f64: f64, scan_inclusive_sum_f64, scan_exclusive_sum_f64;
    sum_i64: i64, scan_inclusive_sum_i64, scan_exclusive_sum_i64;
    sum_u64: u64, scan_inclusive_sum_u64, scan_exclusive_sum_u64;
}

/// What a device-wide algorithm reads: `&DeviceBuffer<T>`, `&DeviceView<T>`, `DeviceView<T>`.
///
/// ```
/// use gpukernel_algorithms::{Algorithms, Sum};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
/// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
/// let x = stream.htod_copy(&[1u32, 2, 3, 4])?;
/// assert_eq!(algs.reduce_to_host(&stream, x.slice(1..3)?, Sum)?, 5); // a view
/// # Ok(()) }
/// ```
pub trait Input<'a, T: DeviceCopy> {
    /// The elements as a view.
    fn into_view(self) -> Result<DeviceView<'a, T>>;
}

impl<'a, T: DeviceCopy> Input<'a, T> for &'a DeviceBuffer<T> {
    fn into_view(self) -> Result<DeviceView<'a, T>> {
        self.slice(..)
    }
}
impl<'a, T: DeviceCopy> Input<'a, T> for DeviceView<'a, T> {
    fn into_view(self) -> Result<DeviceView<'a, T>> {
        Ok(self)
    }
}
impl<'a, T: DeviceCopy> Input<'a, T> for &DeviceView<'a, T> {
    fn into_view(self) -> Result<DeviceView<'a, T>> {
        self.slice(..)
    }
}

/// Where a reduce writes its one result (the first element): `&mut DeviceBuffer<T>`,
/// `DeviceViewMut<T>`, `&mut DeviceViewMut<T>`, at least one element long.
///
/// ```
/// use gpukernel_algorithms::{Algorithms, Min};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
/// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
/// let x = stream.htod_copy(&[5i64, -2, 9])?;
/// let mut out = stream.alloc_zeros::<i64>(4)?;
/// algs.reduce(&stream, &x, Min, out.slice_mut(2..3)?)?; // into element 2
/// assert_eq!(out.to_host_vec()?, [0, 0, -2, 0]);
/// # Ok(()) }
/// ```
pub trait Output<T: DeviceCopy> {
    /// Runs `f` on the first element as a one-element view; [`Error::LengthMismatch`] when
    /// there is none.
    fn with_first(self, f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>) -> Result<()>;
}

fn empty_output() -> Error {
    Error::LengthMismatch {
        operation: "Algorithms::reduce (the output must hold at least one element)",
        destination: 0,
        source_len: 1,
    }
}

impl<T: DeviceCopy> Output<T> for &mut DeviceBuffer<T> {
    fn with_first(self, f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>) -> Result<()> {
        if self.is_empty() {
            return Err(empty_output());
        }
        f(self.slice_mut(..1)?)
    }
}
impl<T: DeviceCopy> Output<T> for DeviceViewMut<'_, T> {
    fn with_first(mut self, f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>) -> Result<()> {
        (&mut self).with_first(f)
    }
}
impl<T: DeviceCopy> Output<T> for &mut DeviceViewMut<'_, T> {
    fn with_first(self, f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>) -> Result<()> {
        if self.is_empty() {
            return Err(empty_output());
        }
        f(self.slice_mut(..1)?)
    }
}

/// Where a scan writes: `&mut DeviceBuffer<T>`, `DeviceViewMut<T>`, `&mut DeviceViewMut<T>`,
/// exactly as long as the input.
///
/// ```
/// use gpukernel_algorithms::{Algorithms, Sum};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
/// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
/// let x = stream.htod_copy(&[1.0f32, 1.0, 1.0])?;
/// let mut y = stream.alloc_zeros::<f32>(5)?;
/// algs.inclusive_scan(&stream, &x, Sum, y.slice_mut(1..4)?)?;
/// assert_eq!(y.to_host_vec()?, [0.0, 1.0, 2.0, 3.0, 0.0]);
/// assert!(algs.inclusive_scan(&stream, &x, Sum, &mut y).is_err()); // 5 ≠ 3
/// # Ok(()) }
/// ```
pub trait OutputAll<T: DeviceCopy> {
    /// Runs `f` on the whole output after checking that it has `len` elements
    /// ([`Error::LengthMismatch`] otherwise).
    fn with_all(
        self,
        len: usize,
        f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>,
    ) -> Result<()>;
    /// Runs `f` on the whole output, whatever its length.
    fn with_all_any(self, f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>) -> Result<()>;
}

fn scan_length(destination: usize, source_len: usize) -> Error {
    Error::LengthMismatch {
        operation: "Algorithms::inclusive_scan / exclusive_scan (the output must have the input's length)",
        destination,
        source_len,
    }
}

impl<T: DeviceCopy> OutputAll<T> for &mut DeviceBuffer<T> {
    fn with_all(
        self,
        len: usize,
        f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>,
    ) -> Result<()> {
        if self.len() != len {
            return Err(scan_length(self.len(), len));
        }
        f(self.slice_mut(..)?)
    }
    fn with_all_any(self, f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>) -> Result<()> {
        f(self.slice_mut(..)?)
    }
}
impl<T: DeviceCopy> OutputAll<T> for &mut DeviceViewMut<'_, T> {
    fn with_all(
        self,
        len: usize,
        f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>,
    ) -> Result<()> {
        if self.len() != len {
            return Err(scan_length(self.len(), len));
        }
        f(self.slice_mut(..)?)
    }
    fn with_all_any(self, f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>) -> Result<()> {
        f(self.slice_mut(..)?)
    }
}
impl<T: DeviceCopy> OutputAll<T> for DeviceViewMut<'_, T> {
    fn with_all(
        mut self,
        len: usize,
        f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>,
    ) -> Result<()> {
        (&mut self).with_all(len, f)
    }
    fn with_all_any(mut self, f: &mut dyn FnMut(DeviceViewMut<'_, T>) -> Result<()>) -> Result<()> {
        (&mut self).with_all_any(f)
    }
}

/// The algorithms' kernels loaded into one context.
///
/// ```
/// use gpukernel_algorithms::{Algorithms, Sum};
/// # fn main() -> gpukernel_runtime::Result<()> {
/// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
/// let algs = Algorithms::new(&ctx)?; // once per context
/// let stream = ctx.new_stream()?;
/// let x = stream.htod_copy(&vec![1.0f64; 1000])?;
/// assert_eq!(algs.reduce_to_host(&stream, &x, Sum)?, 1000.0);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Algorithms {
    module: Module,
    sms: u32,
    kernels: Kernels,
    /// The one-launch reduces' scratch (ticket and partials), allocated on first use, grown
    /// when a launch needs more, replaced after a failed launch (see [`Algorithms::reduce`]).
    scratch: Mutex<Option<DeviceBuffer<u64>>>,
}

impl Algorithms {
    /// Loads the algorithms' kernels into `ctx` (the GPU's PTX, or the simulator's entries).
    ///
    /// ```
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let algs = gpukernel_algorithms::Algorithms::new(&ctx)?;
    /// # let _ = algs; Ok(()) }
    /// ```
    pub fn new(ctx: &Context) -> Result<Self> {
        let module = ctx.load_module(k::PTX.as_bytes())?;
        let sms = ctx.device().multiprocessor_count()?.max(1);
        Ok(Algorithms {
            module,
            sms,
            kernels: Kernels::default(),
            scratch: Mutex::new(None),
        })
    }

    /// Reduces `input` with `op` into the first element of `out`, on `stream` (CUB's
    /// `DeviceReduce::Reduce`/`Sum`/`Min`/`Max`). An empty input gives the operator's
    /// identity (`0`, the type's greatest or least value). Ordered like any launch: the
    /// input's writers before, the output's readers after.
    ///
    /// One launch: a grid of a few blocks per SM, each block's partial in scratch memory, the
    /// last block to finish (a ticket) reduces them into `out`. The scratch (8 bytes per
    /// block and a ticket: about 4 KiB on an H100) belongs to this `Algorithms`: allocated
    /// zeroed on the first call's stream, kept, grown when a call needs more, never reachable
    /// from outside. It is device memory like any buffer's, so the runtime orders its uses:
    /// calls on one stream run back to back, and a call on another stream waits for the
    /// previous call's launch (the scratch cannot be shared by two launches in flight).
    /// Reduces meant to overlap on several streams each need their own `Algorithms`. After a
    /// failed launch the scratch is replaced, so one failure does not spoil later calls.
    ///
    /// ```
    /// use gpukernel_algorithms::{Algorithms, Max};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let x = stream.htod_copy(&[7u32, 42, 3])?;
    /// let mut m = stream.alloc_zeros::<u32>(1)?;
    /// algs.reduce(&stream, &x, Max, &mut m)?;
    /// assert_eq!(m.to_host_vec()?, [42]);
    /// # Ok(()) }
    /// ```
    pub fn reduce<'i, T: Item, Op: DeviceReduceOp<T>>(
        &self,
        stream: &Stream,
        input: impl Input<'i, T>,
        op: Op,
        out: impl Output<T>,
    ) -> Result<()> {
        let _ = op;
        let kernel = get(Op::__cell(&self.kernels), || Op::__load(&self.module))?;
        let input = input.into_view()?;
        let blocks = self.first_pass_blocks::<T>(input.len(), DEFAULT_BLOCKS_PER_SM);
        self.reduce_launch(stream, kernel, input, out, blocks)
    }

    /// One launch of a one-launch reduce kernel on `blocks` blocks, with the scratch this
    /// `Algorithms` keeps.
    fn reduce_launch<K: SafeKernel<Params = ReduceParams<T>>, T: Item>(
        &self,
        stream: &Stream,
        kernel: &TypedKernel<K>,
        input: DeviceView<'_, T>,
        out: impl Output<T>,
        blocks: usize,
    ) -> Result<()> {
        let grid = u32::try_from(blocks).map_err(|_| Error::InvalidLaunchConfig {
            kernel: K::NAME.to_string(),
            dimension: "grid.x (one block per partial)",
            value: blocks as u64,
            min: 1,
            max: u32::MAX as u64,
        })?;
        out.with_first(&mut |o| {
            self.with_scratch(stream, k::last_block::scratch_words(blocks), |s| {
                stream.launch(kernel, LaunchConfig::new(grid, BLOCK), (input, o, s))
            })
        })
    }

    /// Runs `f` (one launch on `stream`) with the scratch of at least `words` words: allocated
    /// zeroed on `stream` when there is none or it is too short (the old one is freed after
    /// every use of it, on every stream), dropped when `f` fails (a launch that stopped part
    /// way may leave the ticket counted: the next call starts from fresh, zeroed scratch).
    /// The lock is held while `f` enqueues, not while the work runs: the runtime orders the
    /// scratch's uses like any buffer's.
    fn with_scratch(
        &self,
        stream: &Stream,
        words: usize,
        f: impl FnOnce(&mut DeviceBuffer<u64>) -> Result<()>,
    ) -> Result<()> {
        let mut guard = self.scratch.lock().unwrap_or_else(|poisoned| {
            // A panic while it was held (none is expected): the scratch's state is unknown.
            self.scratch.clear_poison();
            let mut g = poisoned.into_inner();
            *g = None;
            g
        });
        if guard.as_ref().is_none_or(|s| s.len() < words) {
            *guard = None;
            let usual =
                k::last_block::scratch_words(self.sms as usize * DEFAULT_BLOCKS_PER_SM as usize);
            *guard = Some(stream.alloc_zeros::<u64>(words.max(usual))?);
        }
        let scratch = guard.as_mut().expect("allocated just above");
        let r = f(scratch);
        if r.is_err() {
            *guard = None;
        }
        r
    }

    /// [`reduce`](Self::reduce), then the result copied to the host (a synchronization).
    ///
    /// ```
    /// use gpukernel_algorithms::{Algorithms, Sum};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let x = stream.htod_copy(&[1i32, -2, 3])?;
    /// assert_eq!(algs.reduce_to_host(&stream, &x, Sum)?, 2);
    /// # Ok(()) }
    /// ```
    pub fn reduce_to_host<'i, T: Item, Op: DeviceReduceOp<T>>(
        &self,
        stream: &Stream,
        input: impl Input<'i, T>,
        op: Op,
    ) -> Result<T> {
        let mut out = stream.alloc_zeros::<T>(1)?;
        self.reduce(stream, input, op, &mut out)?;
        Ok(out.to_host_vec()?[0])
    }

    /// The inclusive scan of `input` with `op` into `output` (CUB's
    /// `DeviceScan::InclusiveSum`): `output[i] = input[0] ⊕ … ⊕ input[i]`, in one pass over
    /// the data (decoupled look-back). `output` must have `input`'s length
    /// ([`Error::LengthMismatch`] otherwise). The status words (8 bytes per tile of 3072
    /// 32-bit or 1536 64-bit elements, 24 for 64-bit types) come from the stream-ordered
    /// allocator.
    ///
    /// ```
    /// use gpukernel_algorithms::{Algorithms, Sum};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let x = stream.htod_copy(&[1u32, 2, 3, 4])?;
    /// let mut y = stream.alloc_zeros::<u32>(4)?;
    /// algs.inclusive_scan(&stream, &x, Sum, &mut y)?;
    /// assert_eq!(y.to_host_vec()?, [1, 3, 6, 10]);
    /// # Ok(()) }
    /// ```
    pub fn inclusive_scan<'i, T: Item, Op: DeviceScanOp<T>>(
        &self,
        stream: &Stream,
        input: impl Input<'i, T>,
        op: Op,
        output: impl OutputAll<T>,
    ) -> Result<()> {
        let _ = op;
        let (ki, _) = get(Op::__cell(&self.kernels), || Op::__load(&self.module))?;
        self.scan(stream, ki, input.into_view()?, output)
    }

    /// The exclusive scan of `input` with `op` into `output` (CUB's
    /// `DeviceScan::ExclusiveSum`): `output[0]` is the identity, `output[i] = input[0] ⊕ … ⊕
    /// input[i-1]`. As [`inclusive_scan`](Self::inclusive_scan) otherwise.
    ///
    /// ```
    /// use gpukernel_algorithms::{Algorithms, Sum};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let counts = stream.htod_copy(&[3i32, 0, 2, 5])?;
    /// let mut offsets = stream.alloc_zeros::<i32>(4)?;
    /// algs.exclusive_scan(&stream, &counts, Sum, &mut offsets)?;
    /// assert_eq!(offsets.to_host_vec()?, [0, 3, 3, 5]);
    /// # Ok(()) }
    /// ```
    pub fn exclusive_scan<'i, T: Item, Op: DeviceScanOp<T>>(
        &self,
        stream: &Stream,
        input: impl Input<'i, T>,
        op: Op,
        output: impl OutputAll<T>,
    ) -> Result<()> {
        let _ = op;
        let (_, ke) = get(Op::__cell(&self.kernels), || Op::__load(&self.module))?;
        self.scan(stream, ke, input.into_view()?, output)
    }

    fn scan<K: Kernel<Params = ScanParams<T>>, T: Item>(
        &self,
        stream: &Stream,
        kernel: &TypedKernel<K>,
        input: DeviceView<'_, T>,
        output: impl OutputAll<T>,
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        scan_launch(
            stream,
            kernel,
            input,
            output,
            k::scan_tile_len(size),
            k::SCAN_BLOCK,
        )
    }

    /// The inclusive f32 sum with tuning shape `shape` (an index into
    /// [`scan_tuning_shapes`](Self::scan_tuning_shapes)): the benchmark's tuning rows.
    #[doc(hidden)]
    pub fn scan_f32_tuned(
        &self,
        stream: &Stream,
        input: DeviceView<'_, f32>,
        output: DeviceViewMut<'_, f32>,
        shape: usize,
    ) -> Result<()> {
        let cells = &self.kernels.scan_tuning;
        macro_rules! tuned {
            ($($i:literal: $name:ident),*) => {
                match shape {
                    $($i => {
                        let kern = get(&cells.$name, || self.module.kernel(k::$name))?;
                        let (tb, v, ..) = k::SCAN_TUNING[$i];
                        scan_launch(stream, kern, input, output, tb as usize * v * 4, tb)
                    })*
                    _ => Err(Error::InvalidLaunchConfig {
                        kernel: "scan_f32_tuned".to_string(),
                        dimension: "shape",
                        value: shape as u64,
                        min: 0,
                        max: k::SCAN_TUNING.len() as u64 - 1,
                    }),
                }
            };
        }
        tuned!(
            0: scan_tune_128x6,
            1: scan_tune_128x6_sleep,
            2: scan_tune_128x6_first600,
            3: scan_tune_128x6_first2000,
            4: scan_tune_128x6_poll200,
            5: scan_tune_128x5_sleep,
            6: scan_tune_128x7_sleep,
            7: scan_tune_256x6_sleep,
            8: scan_tune_128x6_claim_sleep
        )
    }

    /// The tuning shapes of [`scan_f32_tuned`](Self::scan_f32_tuned): name and `(threads,
    /// vectors per thread, claim by counter, first sleep ns, poll sleep ns)`.
    #[doc(hidden)]
    pub fn scan_tuning_shapes() -> impl Iterator<Item = (&'static str, (u32, usize, bool, u32, u32))>
    {
        k::SCAN_TUNING_NAMES
            .iter()
            .copied()
            .zip(k::SCAN_TUNING.iter().copied())
    }

    /// Counts the bytes of `data` into 256 bins (CUB's `DeviceHistogram::HistogramEven` with
    /// 257 levels over `u8` samples): `bins[v]` = the number of bytes equal to `v`. `bins`
    /// must hold 256 counters ([`Error::LengthMismatch`] otherwise); it is zeroed first (on
    /// `stream`), so a call counts `data` alone. At most `u32::MAX` bytes, which every bin can
    /// count ([`Error::InvalidLaunchConfig`] otherwise).
    ///
    /// ```
    /// use gpukernel_algorithms::Algorithms;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let data = stream.htod_copy(b"abracadabra")?;
    /// let mut bins = stream.alloc_zeros::<u32>(256)?;
    /// algs.histogram256(&stream, &data, &mut bins)?;
    /// let bins = bins.to_host_vec()?;
    /// assert_eq!((bins[b'a' as usize], bins[b'b' as usize], bins[b'z' as usize]), (5, 2, 0));
    /// # Ok(()) }
    /// ```
    pub fn histogram256<'i>(
        &self,
        stream: &Stream,
        data: impl Input<'i, u8>,
        bins: impl OutputAll<u32>,
    ) -> Result<()> {
        let kernel = get(&self.kernels.histogram256, || {
            self.module.kernel(k::histogram256_u8)
        })?;
        let data = data.into_view()?;
        // A bin counts to `u32::MAX`: more bytes than that could all be one value, whose count
        // would wrap.
        if u32::try_from(data.len()).is_err() {
            return Err(Error::InvalidLaunchConfig {
                kernel: <k::histogram256_u8 as Kernel>::NAME.to_string(),
                dimension: "elements (each bin is a u32 counter: count larger inputs in parts)",
                value: data.len() as u64,
                min: 0,
                max: u32::MAX as u64,
            });
        }
        let blocks = (self.sms as usize * DEFAULT_BLOCKS_PER_SM as usize)
            .min(data.len().div_ceil(16 * BLOCK as usize))
            .max(1) as u32;
        bins.with_all(256, &mut |mut b| {
            b.memset_d8(0)?;
            stream.launch(kernel, LaunchConfig::new(blocks, BLOCK), (data, b))
        })
        .map_err(|e| match e {
            Error::LengthMismatch {
                destination,
                source_len,
                ..
            } => Error::LengthMismatch {
                operation: "Algorithms::histogram256 (the bins must be 256 counters)",
                destination,
                source_len,
            },
            e => e,
        })
    }

    /// Reduces each segment of `input` with `op` (CUB's `DeviceSegmentedReduce::Reduce`):
    /// segment `s` is `input[offsets[s]..offsets[s + 1]]`, `out[s]` its reduction in index
    /// order, the operator's identity for an empty segment (`offsets[s + 1] <= offsets[s]`).
    /// `offsets` has `out.len() + 1` entries ([`Error::LengthMismatch`] otherwise); an offset
    /// past the input's end makes the launch fail (an out-of-bounds error at the next
    /// synchronization). Short segments (on average under 2048 elements) are reduced by one
    /// warp each, longer ones by one block each.
    ///
    /// ```
    /// use gpukernel_algorithms::{Algorithms, Sum};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let x = stream.htod_copy(&[1i32, 2, 3, 4, 5])?;
    /// let offsets = stream.htod_copy(&[0u32, 2, 2, 5])?;
    /// let mut sums = stream.alloc_zeros::<i32>(3)?;
    /// algs.segmented_reduce(&stream, &x, &offsets, Sum, &mut sums)?;
    /// assert_eq!(sums.to_host_vec()?, [3, 0, 12]); // the middle segment is empty
    /// # Ok(()) }
    /// ```
    pub fn segmented_reduce<'i, 'o, T: Item, Op: DeviceSegmentedOp<T>>(
        &self,
        stream: &Stream,
        input: impl Input<'i, T>,
        offsets: impl Input<'o, u32>,
        op: Op,
        out: impl OutputAll<T>,
    ) -> Result<()> {
        let _ = op;
        let kernel = get(Op::__cell(&self.kernels), || Op::__load(&self.module))?;
        let (input, offsets) = (input.into_view()?, offsets.into_view()?);
        if offsets.is_empty() {
            return Err(Error::LengthMismatch {
                operation: "Algorithms::segmented_reduce (the offsets must have one entry more than the output: no offsets at all)",
                destination: 0,
                source_len: 1,
            });
        }
        let segments = offsets.len() - 1;
        self.segmented_launch(stream, kernel, input, offsets, 0, segments, out)
            .map_err(|e| match e {
                Error::LengthMismatch {
                    destination,
                    source_len,
                    ..
                } => Error::LengthMismatch {
                    operation: "Algorithms::segmented_reduce (the output must have one element per segment: offsets.len() - 1)",
                    destination,
                    source_len,
                },
                e => e,
            })
    }

    /// Reduces each row of the row-major `rows × row_len` matrix `input` with `op`:
    /// `out[r]` = the reduction of `input[r × row_len..(r + 1) × row_len]` in index order (the
    /// identity when `row_len` is 0). `input` must hold `out.len() × row_len` elements
    /// ([`Error::LengthMismatch`] otherwise).
    ///
    /// ```
    /// use gpukernel_algorithms::{Algorithms, Max};
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let m = stream.htod_copy(&[1.0f32, 7.0, 2.0, -1.0, -3.0, -2.0])?; // 2 × 3
    /// let mut maxes = stream.alloc_zeros::<f32>(2)?;
    /// algs.reduce_rows(&stream, &m, 3, Max, &mut maxes)?;
    /// assert_eq!(maxes.to_host_vec()?, [7.0, -1.0]);
    /// # Ok(()) }
    /// ```
    pub fn reduce_rows<'i, T: Item, Op: DeviceSegmentedOp<T>>(
        &self,
        stream: &Stream,
        input: impl Input<'i, T>,
        row_len: usize,
        op: Op,
        out: impl OutputAll<T>,
    ) -> Result<()> {
        let _ = op;
        let kernel = get(Op::__cell(&self.kernels), || Op::__load(&self.module))?;
        let input = input.into_view()?;
        // Rows of no elements tile only an empty input (whatever the row count).
        if row_len == 0 && !input.is_empty() {
            return Err(Error::LengthMismatch {
                operation: "Algorithms::reduce_rows (the input must be whole rows of row_len elements: row_len 0 tiles no elements)",
                destination: 0,
                source_len: input.len(),
            });
        }
        let rows = input.len().checked_div(row_len);
        if let Some(r) = rows
            && r * row_len != input.len()
        {
            return Err(Error::LengthMismatch {
                operation: "Algorithms::reduce_rows (the input must be whole rows of row_len elements)",
                destination: r * row_len,
                source_len: input.len(),
            });
        }
        // No offsets: the kernel takes the rows.
        let no_offsets = stream.alloc_zeros::<u32>(0)?;
        out.with_all_any(&mut |o| {
            let segments = o.len();
            if let Some(r) = rows
                && r != segments
            {
                return Err(Error::LengthMismatch {
                    operation: "Algorithms::reduce_rows (the output must have one element per row)",
                    destination: segments,
                    source_len: r,
                });
            }
            self.segmented_launch(
                stream,
                kernel,
                input,
                no_offsets.slice(..)?,
                row_len as u64,
                segments,
                o,
            )
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn segmented_launch<K: SafeKernel<Params = SegmentedParams<T>>, T: Item>(
        &self,
        stream: &Stream,
        kernel: &TypedKernel<K>,
        input: DeviceView<'_, T>,
        offsets: DeviceView<'_, u32>,
        row_len: u64,
        segments: usize,
        out: impl OutputAll<T>,
    ) -> Result<()> {
        if segments == 0 {
            return out.with_all(0, &mut |_| Ok(()));
        }
        let warps = (k::ORDERED_BLOCK / 32) as usize;
        let per_warp = input.len() / segments < 2048;
        let wanted = if per_warp {
            segments.div_ceil(warps)
        } else {
            segments
        };
        let grid = wanted.min(self.sms as usize * 16).max(1) as u32;
        out.with_all(segments, &mut |o| {
            stream.launch(
                kernel,
                LaunchConfig::new(grid, k::ORDERED_BLOCK),
                (input, offsets, row_len, per_warp as u32, o),
            )
        })
    }

    /// Counts `samples` into `bins.len()` even bins from `lower` (inclusive) to `upper`
    /// (exclusive) (CUB's `DeviceHistogram::HistogramEven` with `num_levels = bins.len() +
    /// 1`): a sample `s` with `lower <= s < upper` counts in bin `(s - lower) × bins / (upper -
    /// lower)` (for floats `(s - lower) × r`, `r = bins / (upper - lower)` in the sample's
    /// precision, as CUB computes it; for integers exactly); other samples and NaNs count
    /// nowhere. `bins` is zeroed first (on `stream`). [`Error::InvalidArgument`] when
    /// `bins` is empty or longer than `u32::MAX`, or `lower < upper` does not hold; at most
    /// `u32::MAX` samples, which every bin can count ([`Error::InvalidLaunchConfig`]
    /// otherwise).
    ///
    /// ```
    /// use gpukernel_algorithms::Algorithms;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let x = stream.htod_copy(&[0.5f32, 1.5, 1.7, 9.9, 10.0, -0.1])?;
    /// let mut bins = stream.alloc_zeros::<u32>(5)?; // 6 levels: 0, 2, 4, 6, 8, 10
    /// algs.histogram_even(&stream, &x, 0.0, 10.0, &mut bins)?;
    /// assert_eq!(bins.to_host_vec()?, [3, 0, 0, 0, 1]); // 10.0 and -0.1 are outside
    /// # Ok(()) }
    /// ```
    pub fn histogram_even<'i, T: HistogramSample>(
        &self,
        stream: &Stream,
        samples: impl Input<'i, T>,
        lower: T,
        upper: T,
        bins: impl OutputAll<u32>,
    ) -> Result<()> {
        // `!(lower < upper)` also refuses NaN levels.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        if !(lower < upper) {
            return Err(Error::InvalidArgument {
                operation: "Algorithms::histogram_even",
                argument: "lower, upper",
                reason: format!(
                    "must satisfy lower < upper (got lower {lower:?}, upper {upper:?}): the levels bound the bins from below and above"
                ),
            });
        }
        let kernel = get(T::__cell(&self.kernels), || T::__load(&self.module))?;
        let samples = samples.into_view()?;
        // A bin counts to `u32::MAX`: more samples than that could all fall in one bin, whose
        // count would wrap.
        if u32::try_from(samples.len()).is_err() {
            return Err(Error::InvalidLaunchConfig {
                kernel: <T::Kernel as Kernel>::NAME.to_string(),
                dimension: "elements (each bin is a u32 counter: count larger inputs in parts)",
                value: samples.len() as u64,
                min: 0,
                max: u32::MAX as u64,
            });
        }
        let blocks = (self.sms as usize * DEFAULT_BLOCKS_PER_SM as usize)
            .min(samples.len().div_ceil(32 * BLOCK as usize))
            .max(1) as u32;
        bins.with_all_any(&mut |mut b| {
            if b.is_empty() {
                return Err(Error::InvalidArgument {
                    operation: "Algorithms::histogram_even",
                    argument: "bins",
                    reason: "is empty: pass num_levels - 1 counters (at least one bin)".into(),
                });
            }
            // Bin indices are `u32` (CUB's `num_levels` is an `int`): checked before the bins
            // are zeroed.
            if u32::try_from(b.len()).is_err() {
                return Err(Error::InvalidArgument {
                    operation: "Algorithms::histogram_even",
                    argument: "bins",
                    reason: format!(
                        "has {} counters: at most u32::MAX bins (a bin index is a u32)",
                        b.len()
                    ),
                });
            }
            b.memset_d8(0)?;
            stream.launch(
                kernel,
                LaunchConfig::new(blocks, BLOCK),
                (samples, lower, upper, b),
            )
        })
    }

    /// Reduces `input` in index order with the user's operator whose kernels
    /// [`device_algorithms!`] instantiated (`kernels`, loaded from the user's module) into the
    /// first element of `out`. The operator need not be commutative. An empty input gives
    /// its identity. One launch, with the scratch of [`reduce`](Self::reduce) (the same
    /// ordering across streams).
    pub fn reduce_user<'i, U: UserOp>(
        &self,
        stream: &Stream,
        kernels: &UserKernels<U>,
        input: impl Input<'i, U::T>,
        out: impl Output<U::T>,
    ) -> Result<()> {
        let input = input.into_view()?;
        let unit = 32 * 16 / std::mem::size_of::<U::T>() * k::ORDERED_VECS * 8;
        // At most `DEFAULT_BLOCKS_PER_SM` blocks per SM: the grid fits a `u32`.
        let blocks = (self.sms as usize * DEFAULT_BLOCKS_PER_SM as usize)
            .min(input.len().div_ceil(unit))
            .max(1);
        out.with_first(&mut |o| {
            self.with_scratch(stream, k::last_block::scratch_words(blocks), |s| {
                stream.launch(
                    &kernels.reduce,
                    LaunchConfig::new(blocks as u32, k::ORDERED_BLOCK),
                    (input, o, s),
                )
            })
        })
    }

    /// The inclusive scan of `input` with the user's operator (see
    /// [`reduce_user`](Self::reduce_user)) into `output`, as
    /// [`inclusive_scan`](Self::inclusive_scan).
    pub fn inclusive_scan_user<'i, U: UserOp>(
        &self,
        stream: &Stream,
        kernels: &UserKernels<U>,
        input: impl Input<'i, U::T>,
        output: impl OutputAll<U::T>,
    ) -> Result<()> {
        self.scan(stream, &kernels.inclusive, input.into_view()?, output)
    }

    /// The exclusive scan of `input` with the user's operator (`output[0]` its identity), as
    /// [`exclusive_scan`](Self::exclusive_scan).
    pub fn exclusive_scan_user<'i, U: UserOp>(
        &self,
        stream: &Stream,
        kernels: &UserKernels<U>,
        input: impl Input<'i, U::T>,
        output: impl OutputAll<U::T>,
    ) -> Result<()> {
        self.scan(stream, &kernels.exclusive, input.into_view()?, output)
    }

    /// The first pass's grid for `n` elements: `blocks_per_sm` blocks per SM, fewer for a short
    /// input (one per tile), at least one.
    fn first_pass_blocks<T>(&self, n: usize, blocks_per_sm: u32) -> usize {
        let tile = BLOCK as usize * k::VECS * (16 / std::mem::size_of::<T>());
        (self.sms as usize * blocks_per_sm.max(1) as usize)
            .min(n.div_ceil(tile))
            .max(1)
    }

    /// The number of blocks (partials) [`reduce`](Self::reduce) launches for `n` elements of
    /// `T`: the length of the `partials` that [`sum_f32_stages`](Self::sum_f32_stages) takes.
    #[doc(hidden)]
    pub fn reduce_partials<T>(&self, n: usize) -> usize {
        self.first_pass_blocks::<T>(n, DEFAULT_BLOCKS_PER_SM)
    }

    /// The f32 sum in two launches (a first pass into `partials`, the caller's, of
    /// [`reduce_partials`](Self::reduce_partials) elements, then one block reducing them into
    /// `out`), or the first pass alone unless `final_pass`: the benchmark's breakdown of what
    /// the one-launch reduce's time is made of.
    #[doc(hidden)]
    pub fn sum_f32_stages(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<f32>,
        partials: &mut DeviceBuffer<f32>,
        out: &mut DeviceBuffer<f32>,
        final_pass: bool,
    ) -> Result<()> {
        let (kp, kf) = get(&self.kernels.sum_f32_two, || {
            Ok((
                self.module.kernel(k::reduce_partial_sum_f32)?,
                self.module.kernel(k::reduce_final_sum_f32)?,
            ))
        })?;
        let blocks = u32::try_from(partials.len()).map_err(|_| Error::InvalidLaunchConfig {
            kernel: <k::reduce_partial_sum_f32 as Kernel>::NAME.to_string(),
            dimension: "grid.x (one block per partial)",
            value: partials.len() as u64,
            min: 1,
            max: u32::MAX as u64,
        })?;
        stream.launch(
            kp,
            LaunchConfig::new(blocks, BLOCK),
            (input, &mut *partials),
        )?;
        if final_pass {
            out.with_first(&mut |o| {
                stream.launch(kf, LaunchConfig::new(1, BLOCK), (&*partials, o))
            })?;
        }
        Ok(())
    }

    /// The one-launch f32 sum with its grid (`blocks_per_sm` blocks per SM) and its 16-byte
    /// loads in flight per thread (`vecs`: 2, 4 (what [`reduce`](Self::reduce) runs) or 8)
    /// chosen: the benchmark's tuning rows.
    #[doc(hidden)]
    pub fn sum_f32_tuned(
        &self,
        stream: &Stream,
        input: DeviceView<'_, f32>,
        out: &mut DeviceBuffer<f32>,
        blocks_per_sm: u32,
        vecs: usize,
    ) -> Result<()> {
        let blocks = self.first_pass_blocks::<f32>(input.len(), blocks_per_sm);
        match vecs {
            2 => {
                let kv = get(&self.kernels.sum_f32_v2, || {
                    self.module.kernel(k::reduce_sum_f32_v2)
                })?;
                self.reduce_launch(stream, kv, input, out, blocks)
            }
            8 => {
                let kv = get(&self.kernels.sum_f32_v8, || {
                    self.module.kernel(k::reduce_sum_f32_v8)
                })?;
                self.reduce_launch(stream, kv, input, out, blocks)
            }
            _ => {
                let kv = get(<Sum as DeviceReduceOp<f32>>::__cell(&self.kernels), || {
                    <Sum as DeviceReduceOp<f32>>::__load(&self.module)
                })?;
                self.reduce_launch(stream, kv, input, out, blocks)
            }
        }
    }

    /// The one-launch f32 sum on a grid of exactly `blocks` blocks (those past the input add
    /// the identity): the tests' grids of more partials than the last block's threads.
    #[doc(hidden)]
    pub fn sum_f32_grid(
        &self,
        stream: &Stream,
        input: &DeviceBuffer<f32>,
        out: &mut DeviceBuffer<f32>,
        blocks: u32,
    ) -> Result<()> {
        let kernel = get(<Sum as DeviceReduceOp<f32>>::__cell(&self.kernels), || {
            <Sum as DeviceReduceOp<f32>>::__load(&self.module)
        })?;
        let blocks = blocks.max(1) as usize;
        self.reduce_launch(stream, kernel, input.slice(..)?, out, blocks)
    }
}

macro_rules! segmented_ops {
    ($($field:ident: $t:ty, $op:ident, $kernel:ident;)*) => {
        /// The segmented reduce kernels, looked up in the module on first use.
        #[doc(hidden)]
        #[derive(Default)]
        pub struct SegmentedKernels {
            $($field: OnceLock<TypedKernel<k::$kernel>>,)*
        }
        $(
            impl DeviceSegmentedOp<$t> for $op {
                type Kernel = k::$kernel;
                fn __cell(kernels: &Kernels) -> &OnceLock<TypedKernel<k::$kernel>> {
                    &kernels.segmented.$field
                }
                fn __load(module: &Module) -> Result<TypedKernel<k::$kernel>> {
                    module.kernel(k::$kernel)
                }
            }
        )*
    };
}

type SegmentedParams<T> = (
    &'static [T],
    &'static [u32],
    u64,
    u32,
    DisjointSlice<'static, T>,
);

/// An operator the segmented reduce has kernels for: [`Sum`], [`Min`], [`Max`] of every
/// [`Item`] type.
///
/// ```
/// use gpukernel_algorithms::{DeviceSegmentedOp, Max};
/// fn takes<Op: DeviceSegmentedOp<f64>>(_op: Op) {}
/// takes(Max);
/// ```
pub trait DeviceSegmentedOp<T: Item>: Identity<T> + sealed::Sealed {
    #[doc(hidden)]
    type Kernel: SafeKernel<Params = SegmentedParams<T>>;
    #[doc(hidden)]
    fn __cell(kernels: &Kernels) -> &OnceLock<TypedKernel<Self::Kernel>>;
    #[doc(hidden)]
    fn __load(module: &Module) -> Result<TypedKernel<Self::Kernel>>;
}

segmented_ops! {
    sum_f32: f32, Sum, segmented_sum_f32;
    sum_f64: f64, Sum, segmented_sum_f64;
    sum_i32: i32, Sum, segmented_sum_i32;
    sum_u32: u32, Sum, segmented_sum_u32;
    sum_i64: i64, Sum, segmented_sum_i64;
    sum_u64: u64, Sum, segmented_sum_u64;
    min_f32: f32, Min, segmented_min_f32;
    min_f64: f64, Min, segmented_min_f64;
    min_i32: i32, Min, segmented_min_i32;
    min_u32: u32, Min, segmented_min_u32;
    min_i64: i64, Min, segmented_min_i64;
    min_u64: u64, Min, segmented_min_u64;
    max_f32: f32, Max, segmented_max_f32;
    max_f64: f64, Max, segmented_max_f64;
    max_i32: i32, Max, segmented_max_i32;
    max_u32: u32, Max, segmented_max_u32;
    max_i64: i64, Max, segmented_max_i64;
    max_u64: u64, Max, segmented_max_u64;
}

impl std::fmt::Debug for SegmentedKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SegmentedKernels { .. }")
    }
}

type HistogramParams<T> = (&'static [T], T, T, DisjointSlice<'static, u32>);

macro_rules! histogram_samples {
    ($($field:ident: $t:ty, $kernel:ident;)*) => {
        /// The histogram kernels, looked up in the module on first use.
        #[doc(hidden)]
        #[derive(Default)]
        pub struct HistogramKernels {
            $($field: OnceLock<TypedKernel<k::$kernel>>,)*
        }
        $(
            impl HistogramSample for $t {
                type Kernel = k::$kernel;
                fn __cell(kernels: &Kernels) -> &OnceLock<TypedKernel<k::$kernel>> {
                    &kernels.histogram_even.$field
                }
                fn __load(module: &Module) -> Result<TypedKernel<k::$kernel>> {
                    module.kernel(k::$kernel)
                }
            }
        )*
    };
}

/// A sample type of [`Algorithms::histogram_even`]: `f32`, `f64`, `i32`, `u32`.
pub trait HistogramSample: k::Sample + PartialOrd + std::fmt::Debug {
    #[doc(hidden)]
    type Kernel: SafeKernel<Params = HistogramParams<Self>>;
    #[doc(hidden)]
    fn __cell(kernels: &Kernels) -> &OnceLock<TypedKernel<Self::Kernel>>;
    #[doc(hidden)]
    fn __load(module: &Module) -> Result<TypedKernel<Self::Kernel>>;
}

histogram_samples! {
    f32: f32, histogram_even_f32;
    f64: f64, histogram_even_f64;
    i32: i32, histogram_even_i32;
    u32: u32, histogram_even_u32;
}

impl std::fmt::Debug for HistogramKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HistogramKernels { .. }")
    }
}

/// The kernels that [`device_algorithms!`] instantiated for a user's operator, loaded from
/// the user's module: what [`Algorithms::reduce_user`], [`Algorithms::inclusive_scan_user`]
/// and [`Algorithms::exclusive_scan_user`] launch.
///
/// ```ignore
/// // In the user's kernels crate `my_kernels`:
/// gpukernel_algorithms_kernels::device_algorithms! {
///     pub struct FirstLastAlgorithms for u64, FirstLast;
///     reduce: first_last_reduce;
///     scan: first_last_inclusive, first_last_exclusive;
/// }
/// // On the host:
/// let module = ctx.load_module(my_kernels::PTX.as_bytes())?;
/// let fl = UserKernels::<my_kernels::FirstLastAlgorithms>::load(&module)?;
/// algs.inclusive_scan_user(&stream, &fl, &x, &mut y)?;
/// ```
pub struct UserKernels<U: UserOp> {
    reduce: TypedKernel<U::Reduce>,
    inclusive: TypedKernel<U::ScanInclusive>,
    exclusive: TypedKernel<U::ScanExclusive>,
}

impl<U: UserOp> std::fmt::Debug for UserKernels<U> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UserKernels<{}>", std::any::type_name::<U>())
    }
}

impl<U: UserOp> UserKernels<U> {
    /// Looks the three kernels up in `module` (the user's kernels crate's PTX, or its
    /// simulator entries), checking their signatures like any kernel lookup.
    pub fn load(module: &Module) -> Result<Self> {
        let (r, i, e) = U::kernels();
        Ok(UserKernels {
            reduce: module.kernel(r)?,
            inclusive: module.kernel(i)?,
            exclusive: module.kernel(e)?,
        })
    }
}

/// One scan launch: `tile` elements per block of `threads` threads, the status words (zeroed,
/// stream-ordered) from the allocator.
fn scan_launch<K: Kernel<Params = ScanParams<T>>, T: Item>(
    stream: &Stream,
    kernel: &TypedKernel<K>,
    input: DeviceView<'_, T>,
    output: impl OutputAll<T>,
    tile: usize,
    threads: u32,
) -> Result<()> {
    let n = input.len();
    if n == 0 {
        return output.with_all(0, &mut |_| Ok(()));
    }
    let tiles = n.div_ceil(tile);
    let grid = u32::try_from(tiles).map_err(|_| Error::InvalidLaunchConfig {
        kernel: K::NAME.to_string(),
        dimension: "elements",
        value: n as u64,
        min: 0,
        max: u32::MAX as u64 * tile as u64,
    })?;
    let mut status = stream.alloc_zeros::<u64>(k::status_words(tiles, std::mem::size_of::<T>()))?;
    output.with_all(n, &mut |o| {
        // SAFETY: the scan kernels' contract: `status` holds the status words, zeroed on this
        // stream just above and used by this launch alone (freed, stream-ordered, after it).
        unsafe {
            stream.launch_unchecked(
                kernel,
                LaunchConfig::new(grid, threads),
                (input, o, &mut status),
            )
        }
    })
}

/// The cell's value, loaded on first use (two threads may both load; one value is kept).
fn get<V>(cell: &OnceLock<V>, load: impl FnOnce() -> Result<V>) -> Result<&V> {
    if let Some(k) = cell.get() {
        return Ok(k);
    }
    let _ = cell.set(load()?);
    Ok(cell.get().expect("set just above"))
}

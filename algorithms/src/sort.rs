//! Device-wide radix sort of keys and of key-value pairs (CUB's `DeviceRadixSort::SortKeys`,
//! `SortPairs`): least significant digit first, 8 bits per pass, onesweep style (one
//! histogram of every pass's digits up front, then one launch per pass whose tiles find their
//! output places by decoupled look-back). See `gpukernel_algorithms_kernels::sort`.

use std::sync::OnceLock;

use gpukernel_algorithms_kernels::sort as ks;
use gpukernel_runtime::{
    DeviceCopy, DeviceView, DeviceViewMut, DisjointSlice, Error, Kernel, LaunchConfig, Module,
    Result, SafeKernel, Stream, TypedKernel,
};

use crate::{Algorithms, BLOCK, Input, OutputAll, get};

pub use gpukernel_algorithms_kernels::sort::{SORT_MAX_KEYS, SortKey};

type HistParams<K> = (&'static [K], DisjointSlice<'static, u32>, u32);
type KeysParams<K> = (
    &'static [K],
    DisjointSlice<'static, K>,
    &'static [u32],
    DisjointSlice<'static, u32>,
    DisjointSlice<'static, u32>,
    u32,
    u32,
);
type PairsParams<K> = (
    &'static [K],
    DisjointSlice<'static, K>,
    &'static [u32],
    DisjointSlice<'static, u32>,
    &'static [u32],
    DisjointSlice<'static, u32>,
    DisjointSlice<'static, u32>,
    u32,
    u32,
);
type Triple<H, K, P> = (TypedKernel<H>, TypedKernel<K>, TypedKernel<P>);

mod sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
    impl Sealed for f32 {}
    impl Sealed for u64 {}
}

/// A key type of the radix sort: `u32`, `i32`, `f32`, `u64`, in their natural order; `f32`
/// in IEEE 754 total order, as [`f32::total_cmp`]: `-NaN < -∞ < … < -0.0 < +0.0 < … < +∞ <
/// +NaN` (a NaN's place is set by its sign bit; NaNs of one sign keep their input order).
///
/// ```
/// use gpukernel_algorithms::DeviceSortKey;
/// fn takes<K: DeviceSortKey>() {}
/// takes::<f32>();
/// ```
pub trait DeviceSortKey: ks::SortKey + DeviceCopy + sealed::Sealed {
    #[doc(hidden)]
    type Hist: SafeKernel<Params = HistParams<Self>>;
    #[doc(hidden)]
    type Keys: Kernel<Params = KeysParams<Self>>;
    #[doc(hidden)]
    type Pairs: Kernel<Params = PairsParams<Self>>;
    #[doc(hidden)]
    fn __cell(kernels: &SortKernels) -> &OnceLock<Triple<Self::Hist, Self::Keys, Self::Pairs>>;
    #[doc(hidden)]
    fn __load(module: &Module) -> Result<Triple<Self::Hist, Self::Keys, Self::Pairs>>;
}

macro_rules! sort_keys {
    ($($field:ident: $t:ty, $hist:ident, $keys:ident, $pairs:ident;)*) => {
        /// The sort's kernels, looked up in the module on first use.
        #[doc(hidden)]
        #[derive(Default)]
        pub struct SortKernels {
            $($field: OnceLock<Triple<ks::$hist, ks::$keys, ks::$pairs>>,)*
            scan: OnceLock<TypedKernel<ks::sort_scan_bins>>,
            tuned: Tuned,
        }
        $(
            impl DeviceSortKey for $t {
                type Hist = ks::$hist;
                type Keys = ks::$keys;
                type Pairs = ks::$pairs;
                fn __cell(
                    kernels: &SortKernels,
                ) -> &OnceLock<Triple<ks::$hist, ks::$keys, ks::$pairs>> {
                    &kernels.$field
                }
                fn __load(module: &Module) -> Result<Triple<ks::$hist, ks::$keys, ks::$pairs>> {
                    Ok((
                        module.kernel(ks::$hist)?,
                        module.kernel(ks::$keys)?,
                        module.kernel(ks::$pairs)?,
                    ))
                }
            }
        )*
    };
}

sort_keys! {
    u32_: u32, sort_histogram_u32, sort_onesweep_u32, sort_onesweep_pairs_u32;
    i32_: i32, sort_histogram_i32, sort_onesweep_i32, sort_onesweep_pairs_i32;
    f32_: f32, sort_histogram_f32, sort_onesweep_f32, sort_onesweep_pairs_f32;
    u64_: u64, sort_histogram_u64, sort_onesweep_u64, sort_onesweep_pairs_u64;
}

impl std::fmt::Debug for SortKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SortKernels { .. }")
    }
}

/// The tuning variants of the u32 keys-only pass and of the u32 pairs' pass.
#[derive(Default)]
struct Tuned(
    OnceLock<TypedKernel<ks::sort_onesweep_u32_tune_a>>,
    OnceLock<TypedKernel<ks::sort_onesweep_u32_tune_b>>,
    OnceLock<TypedKernel<ks::sort_onesweep_u32_tune_c>>,
    OnceLock<TypedKernel<ks::sort_onesweep_pairs_u32_tune_a>>,
);

/// Blocks per SM of the histogram pass.
const HIST_BLOCKS_PER_SM: usize = 4;

fn sort_length(operation: &'static str) -> impl Fn(Error) -> Error {
    move |e| match e {
        Error::LengthMismatch {
            destination,
            source_len,
            ..
        } => Error::LengthMismatch {
            operation,
            destination,
            source_len,
        },
        e => e,
    }
}

impl Algorithms {
    /// Sorts `keys` into `out` in ascending order (CUB's `DeviceRadixSort::SortKeys`), on
    /// `stream`: `u32`, `i32`, `u64` by value, `f32` in IEEE total order (see
    /// [`DeviceSortKey`]). `out` must have `keys`' length ([`Error::LengthMismatch`]
    /// otherwise); at most [`SORT_MAX_KEYS`] keys. Temporary storage (a second buffer of
    /// keys, the digit counts and a status word per 256 digits and tile of 7168 keys, 4096 for `u64`) comes
    /// from the stream-ordered allocator.
    ///
    /// ```
    /// use gpukernel_algorithms::Algorithms;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let x = stream.htod_copy(&[2.5f32, -0.0, f32::NEG_INFINITY, 0.0, -7.0])?;
    /// let mut y = stream.alloc_zeros::<f32>(5)?;
    /// algs.sort_keys(&stream, &x, &mut y)?;
    /// let y = y.to_host_vec()?;
    /// assert_eq!(y, [f32::NEG_INFINITY, -7.0, -0.0, 0.0, 2.5]);
    /// assert!(y[2].is_sign_negative() && y[3].is_sign_positive());
    /// # Ok(()) }
    /// ```
    pub fn sort_keys<'i, K: DeviceSortKey>(
        &self,
        stream: &Stream,
        keys: impl Input<'i, K>,
        out: impl OutputAll<K>,
    ) -> Result<()> {
        self.keys_only(stream, keys, out, false)
    }

    /// [`sort_keys`](Self::sort_keys) in descending order (the reverse of the ascending
    /// order; equal keys still keep their input order).
    ///
    /// ```
    /// use gpukernel_algorithms::Algorithms;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let x = stream.htod_copy(&[3i32, -1, 7, 0])?;
    /// let mut y = stream.alloc_zeros::<i32>(4)?;
    /// algs.sort_keys_descending(&stream, &x, &mut y)?;
    /// assert_eq!(y.to_host_vec()?, [7, 3, 0, -1]);
    /// # Ok(()) }
    /// ```
    pub fn sort_keys_descending<'i, K: DeviceSortKey>(
        &self,
        stream: &Stream,
        keys: impl Input<'i, K>,
        out: impl OutputAll<K>,
    ) -> Result<()> {
        self.keys_only(stream, keys, out, true)
    }

    /// Sorts `keys` into `keys_out` in ascending order and moves each `u32` of `values` with
    /// its key into `values_out` (CUB's `DeviceRadixSort::SortPairs`): stable, so values of
    /// equal keys keep their input order (with `values` = `0..n`, `values_out` is the sorting
    /// permutation). All four must have one length ([`Error::LengthMismatch`] otherwise).
    /// As [`sort_keys`](Self::sort_keys) otherwise.
    ///
    /// ```
    /// use gpukernel_algorithms::Algorithms;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let keys = stream.htod_copy(&[30u64, 10, 20, 10])?;
    /// let index = stream.htod_copy(&[0u32, 1, 2, 3])?;
    /// let (mut k, mut v) = (stream.alloc_zeros::<u64>(4)?, stream.alloc_zeros::<u32>(4)?);
    /// algs.sort_pairs(&stream, &keys, &index, &mut k, &mut v)?;
    /// assert_eq!(k.to_host_vec()?, [10, 10, 20, 30]);
    /// assert_eq!(v.to_host_vec()?, [1, 3, 2, 0]);
    /// # Ok(()) }
    /// ```
    pub fn sort_pairs<'i, 'v, K: DeviceSortKey>(
        &self,
        stream: &Stream,
        keys: impl Input<'i, K>,
        values: impl Input<'v, u32>,
        keys_out: impl OutputAll<K>,
        values_out: impl OutputAll<u32>,
    ) -> Result<()> {
        self.pairs(stream, keys, values, keys_out, values_out, false)
    }

    /// [`sort_pairs`](Self::sort_pairs) in descending order of the keys (values of equal keys
    /// still in their input order).
    ///
    /// ```
    /// use gpukernel_algorithms::Algorithms;
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let ctx = gpukernel_runtime::Device::simulator().primary_context()?;
    /// let (algs, stream) = (Algorithms::new(&ctx)?, ctx.default_stream());
    /// let keys = stream.htod_copy(&[1.0f32, 3.0, 1.0])?;
    /// let vals = stream.htod_copy(&[7u32, 8, 9])?;
    /// let (mut k, mut v) = (stream.alloc_zeros::<f32>(3)?, stream.alloc_zeros::<u32>(3)?);
    /// algs.sort_pairs_descending(&stream, &keys, &vals, &mut k, &mut v)?;
    /// assert_eq!((k.to_host_vec()?, v.to_host_vec()?), (vec![3.0, 1.0, 1.0], vec![8, 7, 9]));
    /// # Ok(()) }
    /// ```
    pub fn sort_pairs_descending<'i, 'v, K: DeviceSortKey>(
        &self,
        stream: &Stream,
        keys: impl Input<'i, K>,
        values: impl Input<'v, u32>,
        keys_out: impl OutputAll<K>,
        values_out: impl OutputAll<u32>,
    ) -> Result<()> {
        self.pairs(stream, keys, values, keys_out, values_out, true)
    }

    fn keys_only<'i, K: DeviceSortKey>(
        &self,
        stream: &Stream,
        keys: impl Input<'i, K>,
        out: impl OutputAll<K>,
        descending: bool,
    ) -> Result<()> {
        let keys = keys.into_view()?;
        let (_, kk, kp) = get(K::__cell(&self.kernels.sort), || K::__load(&self.module))?;
        out.with_all(keys.len(), &mut |mut o| {
            self.radix_sort(
                stream,
                keys,
                &mut o,
                None,
                descending,
                (kk, kp),
                (K::TILE, K::THREADS),
            )
        })
        .map_err(sort_length(
            "Algorithms::sort_keys (the output must have the keys' length)",
        ))
    }

    fn pairs<'i, 'v, K: DeviceSortKey>(
        &self,
        stream: &Stream,
        keys: impl Input<'i, K>,
        values: impl Input<'v, u32>,
        keys_out: impl OutputAll<K>,
        values_out: impl OutputAll<u32>,
        descending: bool,
    ) -> Result<()> {
        let (keys, values) = (keys.into_view()?, values.into_view()?);
        let n = keys.len();
        if values.len() != n {
            return Err(Error::LengthMismatch {
                operation: "Algorithms::sort_pairs (the values must have the keys' length)",
                destination: values.len(),
                source_len: n,
            });
        }
        let (_, kk, kp) = get(K::__cell(&self.kernels.sort), || K::__load(&self.module))?;
        let mut values_out = Some(values_out);
        keys_out
            .with_all(n, &mut |mut ko| {
                let vo = values_out.take().expect("called once");
                vo.with_all(n, &mut |mut vo| {
                    let values = Some((values, &mut vo));
                    self.radix_sort(
                        stream,
                        keys,
                        &mut ko,
                        values,
                        descending,
                        (kk, kp),
                        (K::PAIRS_TILE, K::PAIRS_THREADS),
                    )
                })
            })
            .map_err(sort_length(
                "Algorithms::sort_pairs (the outputs must have the keys' length)",
            ))
    }

    /// The sort itself: the histogram, its scan, then one onesweep launch per digit from
    /// the input and between a temporary buffer and the output (an even number of passes,
    /// so the last one writes the output).
    /// `kk`, `kp`: the keys-only and the pairs' pass, the one that runs (`kp` with values)
    /// having tiles of `tile` keys for blocks of `threads`.
    #[allow(clippy::too_many_arguments)]
    fn radix_sort<
        K: DeviceSortKey,
        KK: Kernel<Params = KeysParams<K>>,
        KP: Kernel<Params = PairsParams<K>>,
    >(
        &self,
        stream: &Stream,
        keys: DeviceView<'_, K>,
        out: &mut DeviceViewMut<'_, K>,
        values: Option<(DeviceView<'_, u32>, &mut DeviceViewMut<'_, u32>)>,
        descending: bool,
        (kk, kp): (&TypedKernel<KK>, &TypedKernel<KP>),
        (tile, threads): (usize, u32),
    ) -> Result<()> {
        let n = keys.len();
        if n == 0 {
            return Ok(());
        }
        let (kh, _, _) = get(K::__cell(&self.kernels.sort), || K::__load(&self.module))?;
        if n > SORT_MAX_KEYS {
            return Err(Error::InvalidLaunchConfig {
                kernel: KK::NAME.to_string(),
                dimension: "elements",
                value: n as u64,
                min: 0,
                max: SORT_MAX_KEYS as u64,
            });
        }
        let scan = get(&self.kernels.sort.scan, || {
            self.module.kernel(ks::sort_scan_bins)
        })?;
        let passes = K::PASSES as usize;
        let flip = if descending { u32::MAX } else { 0 };

        let mut hist = stream.alloc_zeros::<u32>(passes * ks::RADIX)?;
        let hist_blocks = (self.sms as usize * HIST_BLOCKS_PER_SM)
            .min(n.div_ceil(BLOCK as usize * ks::HIST_ITEMS))
            .max(1) as u32;
        stream.launch(
            kh,
            LaunchConfig::new(hist_blocks, BLOCK),
            (&keys, &mut hist, flip),
        )?;
        stream.launch(
            scan,
            LaunchConfig::new(passes as u32, ks::RADIX as u32),
            (&mut hist,),
        )?;

        let tiles = n.div_ceil(tile);
        // SAFETY: pass 0 writes every element before pass 1 reads them; `K` and `u32` are
        // numbers, valid for any bits.
        let mut tmp = unsafe { stream.alloc::<K>(n) }?;
        let mut values = match values {
            // SAFETY: as above.
            Some((vin, vout)) => Some((vin, vout, unsafe { stream.alloc::<u32>(n) }?)),
            None => None,
        };
        let mut status = stream.alloc_zeros::<u32>(tiles * ks::RADIX)?;
        let mut counters = stream.alloc_zeros::<u32>(passes)?;
        let cfg = LaunchConfig::new(tiles as u32, threads);
        for p in 0..passes {
            if p > 0 {
                stream.memset_d8_async(&mut status, 0)?;
            }
            let bins = hist.slice(p * ks::RADIX..(p + 1) * ks::RADIX)?;
            let counter = counters.slice_mut(p..p + 1)?;
            let shift = (p as u32) * ks::RADIX_BITS;
            // SAFETY: `bins` are the scanned counts of digit `p` of these keys (every pass's
            // input is a permutation of `keys`), `status` was zeroed on this stream since the
            // last pass, `counter` is this pass's zeroed counter, and the grid is one block of
            // `BLOCK` threads per tile: the kernel's contract.
            unsafe {
                match &mut values {
                    None => {
                        if p == 0 {
                            stream.launch_unchecked(
                                kk,
                                cfg,
                                (&keys, &mut tmp, bins, &mut status, counter, shift, flip),
                            )
                        } else if p % 2 == 1 {
                            stream.launch_unchecked(
                                kk,
                                cfg,
                                (&tmp, &mut *out, bins, &mut status, counter, shift, flip),
                            )
                        } else {
                            stream.launch_unchecked(
                                kk,
                                cfg,
                                (&*out, &mut tmp, bins, &mut status, counter, shift, flip),
                            )
                        }
                    }
                    Some((vin, vout, tv)) => {
                        if p == 0 {
                            stream.launch_unchecked(
                                kp,
                                cfg,
                                (
                                    &keys,
                                    &mut tmp,
                                    &*vin,
                                    &mut *tv,
                                    bins,
                                    &mut status,
                                    counter,
                                    shift,
                                    flip,
                                ),
                            )
                        } else if p % 2 == 1 {
                            stream.launch_unchecked(
                                kp,
                                cfg,
                                (
                                    &tmp,
                                    &mut *out,
                                    &*tv,
                                    &mut **vout,
                                    bins,
                                    &mut status,
                                    counter,
                                    shift,
                                    flip,
                                ),
                            )
                        } else {
                            stream.launch_unchecked(
                                kp,
                                cfg,
                                (
                                    &*out,
                                    &mut tmp,
                                    &**vout,
                                    &mut *tv,
                                    bins,
                                    &mut status,
                                    counter,
                                    shift,
                                    flip,
                                ),
                            )
                        }
                    }
                }
            }?;
        }
        Ok(())
    }

    /// The u32 keys-only sort with the onesweep pass's shape chosen: `variant` 0 is
    /// [`sort_keys`](Self::sort_keys)' (256 threads × 28 keys, counts early), `1 + i` is
    /// `gpukernel_algorithms_kernels::sort::SORT_TUNING[i]`. The benchmark's tuning rows.
    #[doc(hidden)]
    pub fn sort_keys_u32_tuned(
        &self,
        stream: &Stream,
        keys: DeviceView<'_, u32>,
        mut out: DeviceViewMut<'_, u32>,
        variant: u32,
    ) -> Result<()> {
        if out.len() != keys.len() {
            return Err(Error::LengthMismatch {
                operation: "Algorithms::sort_keys_u32_tuned",
                destination: out.len(),
                source_len: keys.len(),
            });
        }
        let (_, k0, kp) = get(u32::__cell(&self.kernels.sort), || {
            u32::__load(&self.module)
        })?;
        let tuned = &self.kernels.sort.tuned;
        let o = &mut out;
        let shape = |i: usize| {
            let (_, threads, items) = ks::SORT_TUNING[i];
            (threads as usize * items, threads)
        };
        macro_rules! variants {
            ($($v:literal: $field:tt, $kernel:ident;)*) => {
                match variant {
                    $($v => {
                        let k = get(&tuned.$field, || self.module.kernel(ks::$kernel))?;
                        self.radix_sort(stream, keys, o, None, false, (k, kp), shape($v - 1))
                    })*
                    _ => self.radix_sort(
                        stream,
                        keys,
                        o,
                        None,
                        false,
                        (k0, kp),
                        (u32::TILE, u32::THREADS),
                    ),
                }
            };
        }
        variants! {
            1: 0, sort_onesweep_u32_tune_a;
            2: 1, sort_onesweep_u32_tune_b;
            3: 2, sort_onesweep_u32_tune_c;
        }
    }

    /// The sort of u32 keys and u32 values with the onesweep pass's shape chosen: `variant`
    /// 0 is [`sort_pairs`](Self::sort_pairs)', `1 + i` is
    /// `gpukernel_algorithms_kernels::sort::SORT_PAIRS_TUNING[i]`. The benchmark's tuning rows.
    #[doc(hidden)]
    pub fn sort_pairs_u32_tuned(
        &self,
        stream: &Stream,
        (keys, values): (DeviceView<'_, u32>, DeviceView<'_, u32>),
        (mut keys_out, mut values_out): (DeviceViewMut<'_, u32>, DeviceViewMut<'_, u32>),
        variant: u32,
    ) -> Result<()> {
        let n = keys.len();
        if values.len() != n || keys_out.len() != n || values_out.len() != n {
            return Err(Error::LengthMismatch {
                operation: "Algorithms::sort_pairs_u32_tuned",
                destination: keys_out.len().min(values_out.len()).min(values.len()),
                source_len: n,
            });
        }
        let (_, kk, k0) = get(u32::__cell(&self.kernels.sort), || {
            u32::__load(&self.module)
        })?;
        let tuned = &self.kernels.sort.tuned;
        let v = Some((values, &mut values_out));
        let ko = &mut keys_out;
        macro_rules! variants {
            ($($v:literal: $field:tt, $kernel:ident;)*) => {
                match variant {
                    $($v => {
                        let k = get(&tuned.$field, || self.module.kernel(ks::$kernel))?;
                        let (threads, items) = ks::SORT_PAIRS_TUNING[$v - 1];
                        let shape = (threads as usize * items, threads);
                        self.radix_sort(stream, keys, ko, v, false, (kk, k), shape)
                    })*
                    _ => self.radix_sort(
                        stream,
                        keys,
                        ko,
                        v,
                        false,
                        (kk, k0),
                        (u32::PAIRS_TILE, u32::PAIRS_THREADS),
                    ),
                }
            };
        }
        variants! {
            1: 3, sort_onesweep_pairs_u32_tune_a;
        }
    }
}

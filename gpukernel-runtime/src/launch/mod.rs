//! Launch configurations and typed kernel launches.
//!
//! A typed launch packs the arguments' ABI values (see the "Kernel ABI" contract: scalars and
//! `DeviceCopy` structs by value, slices as a `u64` pointer then a `u64` length, raw pointers
//! as one `u64`) into a tuple on the stack, writes one pointer per parameter at them into an
//! array of [`MAX_KERNEL_PARAMS`] slots (the rest left unwritten), and calls `cuLaunchKernel`
//! (or the simulator) with it: no allocation, no lookup, a few comparisons for validation,
//! one atomic add and subtract on the stream (the launch is in flight from its ordering to its
//! enqueue) and, per buffer argument, a few loads of its allocation's ordering grant (no lock
//! while the same stream uses it again; see `memory/tracker.rs`).

pub(crate) mod args;
mod config;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_ordering;

use core::ffi::c_void;
use std::sync::Arc;

use gpukernel_device::{Kernel, SafeKernel};

use crate::backend::LaunchDesc;
use crate::error::Result;
use crate::module::{Function, TypedKernel};
use crate::stream::Stream;

pub use args::{KernelArg, LaunchArgs, RequiresLaunchUnchecked, Safe, SafetyLevel};
pub use config::{DEFAULT_BLOCK, Dim3, LaunchAttributes, LaunchConfig};

/// The most ABI parameters a typed launch passes (16 arguments of up to five parameters each:
/// a `DisjointSlice3D` lowers to five).
pub const MAX_KERNEL_PARAMS: usize = 80;

// --- launching -------------------------------------------------------------------------------

impl Stream {
    /// Launches kernel `K` with typed arguments, checked at compile time against
    /// `K::Params` (see [`KernelArg`]). Asynchronous on CUDA: a fault of the kernel is reported
    /// by the next synchronizing call ([`Error::KernelFault`](crate::Error::KernelFault) naming this launch). On the
    /// simulator the grid runs before this returns, and a failure is returned here
    /// ([`Error::SimulatorFault`](crate::Error::SimulatorFault)).
    ///
    /// Only safe kernels ([`SafeKernel`]: `#[kernel]`s declared `fn`) launch here; an
    /// `unsafe fn` kernel has preconditions no argument type checks, so it needs
    /// `unsafe { stream.launch_unchecked(..) }`.
    ///
    /// The configuration is checked first (zero or too large dimensions, too many threads per
    /// block, too much shared memory: [`Error::InvalidLaunchConfig`](crate::Error::InvalidLaunchConfig) naming the kernel and the
    /// dimension).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let x = stream.htod_copy(&[1.0f32, 2.0, 3.0])?;
    /// let mut y = stream.htod_copy(&[1.0f32; 3])?;
    /// let saxpy = module.kernel(saxpy)?; // `saxpy(a: f32, x: &[f32], y: DisjointSlice<f32>)`
    /// stream.launch(&saxpy, LaunchConfig::for_elements(3)?, (2.0f32, &x, &mut y))?;
    /// assert_eq!(y.to_host_vec()?, [3.0, 5.0, 7.0]);
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn launch<K: SafeKernel, A: LaunchArgs<K::Params, Safety = Safe>>(
        &self,
        kernel: &TypedKernel<K>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        // SAFETY: `K: SafeKernel` says the body is sound for any arguments of its parameter
        // types; `Safety = Safe` excludes `&mut [T]` parameters (only `unsafe fn` kernels take
        // them); everything else is upheld by `KernelArg`.
        unsafe { self.launch_unchecked(kernel, config, args) }
    }

    /// As [`launch`](Self::launch), also for kernels with `&mut [T]` parameters (`unsafe fn`
    /// kernels).
    ///
    /// # Safety
    /// The caller upholds the kernel's `# Safety` contract (for `&mut [T]`: no two threads
    /// access one element unless all accesses are reads).
    ///
    /// # Example
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let mut data = stream.htod_copy(&[1.0f32, 2.0, 3.0])?;
    /// let scale = module.kernel(scale)?; // `unsafe fn scale(a: f32, data: &mut [f32])`
    /// // SAFETY: one thread per element: no two threads touch the same one.
    /// let cfg = LaunchConfig::for_elements(3)?;
    /// unsafe { stream.launch_unchecked(&scale, cfg, (10.0f32, &mut data))? };
    /// assert_eq!(data.to_host_vec()?, [10.0, 20.0, 30.0]);
    /// # Ok(()) }
    /// ```
    #[inline]
    pub unsafe fn launch_unchecked<K: Kernel, A: LaunchArgs<K::Params>>(
        &self,
        kernel: &TypedKernel<K>,
        config: LaunchConfig,
        args: A,
    ) -> Result<()> {
        let _range = crate::profile::nvtx_range!("launch {}", K::NAME);
        self.not_capturing("Stream::launch")?;
        let f = &kernel.function;
        if !Arc::ptr_eq(&f.module.ctx, self.ctx()) {
            return Err(crate::context::mismatch(
                "Stream::launch",
                "the kernel",
                self.ctx(),
                &f.module.ctx,
            ));
        }
        config.validate_typed(kernel)?;
        // In flight from the arguments' ordering until the backend has the launch.
        let this = &self.enqueuing();
        let mut abi = args.lower(this, &mut args::Lent::new::<K>())?;
        args::check_same_len::<K, A>(&abi)?;
        let mut params = args::abi::ParamArray::new();
        A::fill(&mut abi, &mut params);
        #[cfg(test)]
        tests_ordering::before_enqueue();
        // SAFETY: the parameter array points at `abi`, which lives until after the call and
        // holds exactly the ABI values of `K::Params` (`LaunchArgs`); `lower` ordered the
        // work after pending conflicting work.
        unsafe { self.launch_raw(f, Some(K::SIM_ENTRY), &config, params.as_mut_slice()) }
    }

    /// Launches a kernel from a module without type checking: `params` holds one pointer per
    /// ABI parameter of the kernel (see [`Kernel`]'s ABI), as for `cuLaunchKernel`. For PTX from
    /// elsewhere. Not supported on the simulator (it needs the kernel's Rust body).
    ///
    /// # Safety
    /// `params` must match the kernel's parameters exactly (count, order, types); every memory
    /// the kernel reaches through them must stay valid and unaliased as the kernel requires
    /// until it completes; nothing orders this launch after other streams' work on that memory.
    /// For a `#[kernel]` that takes a `DisjointSlice` the configuration must be
    /// one-dimensional, and for one that takes a `DisjointSlice2D` its z extent 1 (the checks
    /// of the typed launches, see [`TypedKernel::launch_dims`]; nothing checks them here); the
    /// slices a `#[kernel(same_len(..))]` names must have one length (`Kernel::SAME_LEN`).
    /// The pointer of a slice parameter (`&[T]`, `&mut [T]`, `DisjointSlice`,
    /// `DisjointSlice2D`, `DisjointSlice3D`) is never null and is aligned, even for an empty
    /// one (the typed launches pass 256 for memory at address 0).
    ///
    /// # Example
    ///
    /// ```no_run
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// // A `__global__ void fill(float* out, float v, unsigned n)` from PTX built elsewhere.
    /// let f = module.function("fill")?;
    /// let mut out = ctx.alloc_zeros::<f32>(1000)?;
    /// let (mut ptr, mut v, mut n) = (out.as_raw(), 1.5f32, 1000u32);
    /// let mut params = [(&raw mut ptr).cast(), (&raw mut v).cast(), (&raw mut n).cast()];
    /// // SAFETY: the parameters are `fill`'s, in order; `out` outlives the launch (synchronized).
    /// unsafe { stream.launch_untyped(&f, LaunchConfig::for_elements(1000)?, &mut params)? };
    /// stream.synchronize()?;
    /// # Ok(()) }
    /// ```
    pub unsafe fn launch_untyped(
        &self,
        function: &Function,
        config: LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        let _range = crate::profile::nvtx_range!("launch {}", function.name);
        self.not_capturing("Stream::launch_untyped")?;
        if !Arc::ptr_eq(&function.module.ctx, self.ctx()) {
            return Err(crate::context::mismatch(
                "Stream::launch_untyped",
                "the function",
                self.ctx(),
                &function.module.ctx,
            ));
        }
        config.validate(function)?;
        // SAFETY: forwarded from the caller.
        unsafe { self.launch_raw(function, None, &config, params) }
    }

    /// Hands the launch to the backend and marks the module's foreign-call record.
    ///
    /// # Safety
    /// As `Backend::launch`: `params` matches the function's parameters.
    #[inline(always)]
    unsafe fn launch_raw(
        &self,
        f: &Function,
        sim_entry: Option<gpukernel_device::SimEntry>,
        config: &LaunchConfig,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        let desc = LaunchDesc {
            function: f.info.handle,
            name: f.name,
            sim_entry,
            grid: config.grid.to_array(),
            block: config.block.to_array(),
            shared_mem_bytes: config.shared_mem_bytes,
            stream: self.handle(),
            ffi: f.module.ffi.as_ref().map(|t| &t.record),
            attributes: config.attributes,
        };
        f.note_launch(self.handle());
        // SAFETY: forwarded from the caller.
        unsafe {
            self.ctx()
                .backend
                .launch(&desc, params, &self.state().last_launch)
        }
    }
}

//! Launch configurations: grid and block dimensions, dynamic shared memory, and their
//! validation against the device's and the kernel's limits.

use crate::error::{Error, Result};
use gpukernel_device::LaunchDims;

use crate::module::{Function, TypedKernel};

/// Grid or block dimensions, x y z.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::Dim3;
/// assert_eq!(Dim3::from((16, 16)), Dim3::new(16, 16, 1));
/// let cfg = LaunchConfig::new((64, 64), (16, 16)); // a 2D grid of 2D blocks
/// assert_eq!(cfg.block.to_array(), [16, 16, 1]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// x
    pub x: u32,
    /// y
    pub y: u32,
    /// z
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::Dim3;
    /// let block = Dim3::new(8, 8, 4); // 256 threads
    /// let cfg = LaunchConfig::new(Dim3::new(32, 32, 1), block);
    /// # Ok(()) }
    /// ```
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }

    /// As an array.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::Dim3;
    /// let [x, y, z] = Dim3::new(4, 2, 1).to_array();
    /// assert_eq!(x * y * z, 8);
    /// # Ok(()) }
    /// ```
    pub const fn to_array(self) -> [u32; 3] {
        [self.x, self.y, self.z]
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Self {
        Dim3::new(x, 1, 1)
    }
}
impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Self {
        Dim3::new(x, y, 1)
    }
}
impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Self {
        Dim3::new(x, y, z)
    }
}
impl From<[u32; 3]> for Dim3 {
    fn from([x, y, z]: [u32; 3]) -> Self {
        Dim3::new(x, y, z)
    }
}

/// How to launch a kernel: blocks per grid, threads per block, dynamic shared memory.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// let n = 1000;
/// let cfg = LaunchConfig::for_elements(n)?; // 4 blocks of 256 threads
/// assert_eq!((cfg.grid.x, cfg.block.x), (4, 256));
/// let tiled = LaunchConfig::new((8, 8), (16, 16)).with_shared_mem_bytes(16 * 16 * 4);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    /// Blocks per grid.
    pub grid: Dim3,
    /// Threads per block.
    pub block: Dim3,
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

/// Threads per block of [`LaunchConfig::for_elements`].
pub const DEFAULT_BLOCK: u32 = 256;

/// The largest `grid.x` of any CUDA device.
const MAX_GRID_X: u64 = i32::MAX as u64;

impl LaunchConfig {
    /// `grid` blocks of `block` threads, no dynamic shared memory.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let cfg = LaunchConfig::new(4, 256); // 4 blocks of 256 threads
    /// let mut out = ctx.alloc_zeros::<u32>(1024)?;
    /// stream.launch(&module.kernel(iota)?, cfg, (&mut out,))?;
    /// assert_eq!(out.to_host_vec()?[1023], 1023);
    /// # Ok(()) }
    /// ```
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_mem_bytes: 0,
        }
    }

    /// The same configuration with `bytes` of dynamic shared memory per block.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// // 256 threads, each with one f32 of dynamic shared memory (`dynamic_shared::<f32>()`).
    /// let cfg = LaunchConfig::new(64, 256).with_shared_mem_bytes(256 * 4);
    /// assert_eq!(cfg.shared_mem_bytes, 1024);
    /// # Ok(()) }
    /// ```
    pub fn with_shared_mem_bytes(self, bytes: u32) -> Self {
        LaunchConfig {
            shared_mem_bytes: bytes,
            ..self
        }
    }

    /// One thread per element: blocks of 256 threads, enough blocks to cover `n` elements.
    /// An error when `n` is 0 or needs more blocks than a grid can have.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let cfg = LaunchConfig::for_elements(1 << 20)?; // 4096 blocks of 256 threads
    /// assert_eq!(cfg.grid.x * cfg.block.x, 1 << 20);
    /// assert!(LaunchConfig::for_elements(0).is_err()); // Error::InvalidLaunchConfig
    /// # Ok(()) }
    /// ```
    pub fn for_elements(n: usize) -> Result<Self> {
        Self::for_elements_with_block(n, DEFAULT_BLOCK)
    }

    /// One thread per element with blocks of `block` threads.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let cfg = LaunchConfig::for_elements_with_block(1000, 128)?;
    /// assert_eq!((cfg.grid.x, cfg.block.x), (8, 128));
    /// # Ok(()) }
    /// ```
    pub fn for_elements_with_block(n: usize, block: u32) -> Result<Self> {
        let err = |dimension, value: u64, max| Error::InvalidLaunchConfig {
            kernel: "LaunchConfig::for_elements".to_owned(),
            dimension,
            value,
            min: 1,
            max,
        };
        if block == 0 {
            return Err(err("block.x", 0, 1024));
        }
        let max_elements = MAX_GRID_X.saturating_mul(block as u64);
        if n == 0 || n as u64 > max_elements {
            return Err(err("elements", n as u64, max_elements));
        }
        let grid = (n as u64).div_ceil(block as u64) as u32;
        Ok(LaunchConfig::new(grid, block))
    }

    /// One thread per element with the block size that maximises the kernel's occupancy
    /// ([`Function::optimal_block_size`]).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let saxpy = module.kernel(saxpy)?;
    /// let cfg = LaunchConfig::for_elements_optimal(1 << 20, &saxpy)?; // occupancy-optimal blocks
    /// let x = ctx.alloc_zeros::<f32>(1 << 20)?;
    /// let mut y = ctx.alloc_zeros::<f32>(1 << 20)?;
    /// stream.launch(&saxpy, cfg, (2.0f32, &x, &mut y))?;
    /// # Ok(()) }
    /// ```
    pub fn for_elements_optimal(n: usize, function: &Function) -> Result<Self> {
        Self::for_elements_with_block(n, function.optimal_block_size(0)?)
    }

    /// Checks the configuration against the device's and the kernel's limits.
    #[inline]
    pub(crate) fn validate(&self, f: &Function) -> Result<()> {
        let l = &f.module.ctx.limits;
        let g = self.grid.to_array();
        let b = self.block.to_array();
        let threads = b[0] as u64 * b[1] as u64 * b[2] as u64;
        let max_threads = f.info.max_threads_per_block.min(l.max_threads_per_block) as u64;
        let max_shared = f
            .max_dynamic_shared_bytes
            .load(std::sync::atomic::Ordering::Relaxed);
        let ok = (0..3)
            .all(|i| g[i] >= 1 && g[i] <= l.max_grid[i] && b[i] >= 1 && b[i] <= l.max_block[i])
            && threads <= max_threads
            && self.shared_mem_bytes <= max_shared
            && grid_threads(g, threads).is_some();
        if ok {
            Ok(())
        } else {
            Err(self.invalid(f, max_threads, max_shared))
        }
    }

    /// [`validate`](Self::validate), then the dimensions the typed kernel's disjoint outputs
    /// allow ([`TypedKernel::launch_dims`]): every typed launch path calls this.
    #[inline]
    pub(crate) fn validate_typed<K: gpukernel_device::Kernel>(
        &self,
        kernel: &TypedKernel<K>,
    ) -> Result<()> {
        self.validate(&kernel.function)?;
        let (g, b) = (self.grid.to_array(), self.block.to_array());
        match kernel.launch_dims.violation(g, b) {
            None => Ok(()),
            Some((dimension, value)) => Err(dims_error(kernel, dimension, value)),
        }
    }

    #[cold]
    #[inline(never)]
    fn invalid(&self, f: &Function, max_threads: u64, max_shared: u32) -> Error {
        let l = &f.module.ctx.limits;
        let err = |dimension, value: u64, min, max| Error::InvalidLaunchConfig {
            kernel: f.name().to_owned(),
            dimension,
            value,
            min,
            max,
        };
        const GRID: [&str; 3] = ["grid.x", "grid.y", "grid.z"];
        const BLOCK: [&str; 3] = ["block.x", "block.y", "block.z"];
        let g = self.grid.to_array();
        let b = self.block.to_array();
        for i in 0..3 {
            if g[i] == 0 || g[i] > l.max_grid[i] {
                return err(GRID[i], g[i] as u64, 1, l.max_grid[i] as u64);
            }
            if b[i] == 0 || b[i] > l.max_block[i] {
                return err(BLOCK[i], b[i] as u64, 1, l.max_block[i] as u64);
            }
        }
        let threads = b[0] as u64 * b[1] as u64 * b[2] as u64;
        if threads > max_threads {
            return err("threads per block", threads, 1, max_threads);
        }
        if grid_threads(g, threads).is_none() {
            // `ThreadIndex` (what makes `DisjointSlice` writes disjoint) is a linear `usize`:
            // more threads than that would give two threads the same index.
            let blocks = g[0] as u128 * g[1] as u128 * g[2] as u128;
            return err(
                "threads in the grid",
                u64::try_from(blocks * threads as u128).unwrap_or(u64::MAX),
                1,
                u64::MAX,
            );
        }
        err(
            "shared_mem_bytes",
            self.shared_mem_bytes as u64,
            0,
            max_shared as u64,
        )
    }
}

#[cold]
#[inline(never)]
fn dims_error<K: gpukernel_device::Kernel>(
    kernel: &TypedKernel<K>,
    dimension: &'static str,
    value: u32,
) -> Error {
    let (output, allowed) = match kernel.launch_dims {
        LaunchDims::One => (
            "DisjointSlice",
            "one-dimensional (grid (n, 1, 1), blocks (m, 1, 1))",
        ),
        _ => ("DisjointSlice2D", "two-dimensional (grid.z = block.z = 1)"),
    };
    Error::LaunchDimensionsNotAllowed {
        kernel: kernel.function.name().to_owned(),
        output,
        allowed,
        dimension,
        value,
    }
}

/// The number of threads of a grid, if it fits a `u64` (the width of a `ThreadIndex`).
#[inline(always)]
fn grid_threads(grid: [u32; 3], threads_per_block: u64) -> Option<u64> {
    (grid[0] as u64)
        .checked_mul(grid[1] as u64)?
        .checked_mul(grid[2] as u64)?
        .checked_mul(threads_per_block)
}

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
    /// Launch attributes (`cuLaunchKernelEx`): clusters, cooperative launch, programmatic
    /// dependent launch. The default sets none (a plain `cuLaunchKernel`).
    pub attributes: LaunchAttributes,
}

/// The launch attributes of a [`LaunchConfig`], passed through `cuLaunchKernelEx` (and a
/// kernel node's attributes in graphs). Set them with [`LaunchConfig::with_cluster`],
/// [`LaunchConfig::cooperative`] and [`LaunchConfig::programmatic_dependent`].
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// use gpukernel_runtime::{Dim3, LaunchAttributes};
/// let cfg = LaunchConfig::new(8, 128).with_cluster(2);
/// assert_eq!(cfg.attributes.cluster, Some(Dim3::new(2, 1, 1)));
/// assert_eq!(LaunchConfig::new(8, 128).attributes, LaunchAttributes::default());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LaunchAttributes {
    /// Cluster dimensions in blocks (`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`, compute
    /// capability 9.0+): the grid must be a whole number of clusters, and the cluster no larger
    /// than the kernel allows (`cuOccupancyMaxPotentialClusterSize`).
    pub cluster: Option<Dim3>,
    /// A cooperative launch (`CU_LAUNCH_ATTRIBUTE_COOPERATIVE`): every block resident at once,
    /// so the kernel may use `gpukernel_device::grid::sync`. The grid may have at most as many
    /// blocks as fit on the device at once (`cuOccupancyMaxActiveBlocksPerMultiprocessor` ×
    /// multiprocessors); more is an error at the launch, never a hang.
    pub cooperative: bool,
    /// Programmatic stream serialization
    /// (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`, compute capability 9.0+): the
    /// kernel may start before the previous kernel on the stream completed, and waits for it in
    /// `gpukernel_device::grid::wait_dependencies`. Private: only the `unsafe`
    /// [`LaunchConfig::programmatic_dependent`] sets it (read it with
    /// [`LaunchAttributes::is_programmatic_dependent`]).
    pub(crate) programmatic_dependent: bool,
}

impl LaunchAttributes {
    /// Whether any attribute is set (the launch then goes through `cuLaunchKernelEx`).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert!(!LaunchConfig::new(1, 32).attributes.any());
    /// assert!(LaunchConfig::new(1, 32).cooperative().attributes.any());
    /// # Ok(()) }
    /// ```
    pub fn any(&self) -> bool {
        self.cluster.is_some() || self.cooperative || self.programmatic_dependent
    }

    /// Whether programmatic stream serialization is set (by the `unsafe`
    /// [`LaunchConfig::programmatic_dependent`]).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// assert!(!LaunchConfig::new(1, 32).attributes.is_programmatic_dependent());
    /// # Ok(()) }
    /// ```
    pub fn is_programmatic_dependent(&self) -> bool {
        self.programmatic_dependent
    }
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
            attributes: LaunchAttributes::default(),
        }
    }

    /// The same configuration in clusters of `cluster` blocks (compute capability 9.0+; the
    /// simulator runs the blocks of a cluster at the same time). The grid must be a whole
    /// number of clusters; at most 8 blocks per cluster unless the kernel allows more.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// use gpukernel_runtime::Dim3;
    /// let cfg = LaunchConfig::new((8, 2), 128).with_cluster((4, 1));
    /// assert_eq!(cfg.attributes.cluster, Some(Dim3::new(4, 1, 1)));
    /// # Ok(()) }
    /// ```
    pub fn with_cluster(self, cluster: impl Into<Dim3>) -> Self {
        let mut c = self;
        c.attributes.cluster = Some(cluster.into());
        c
    }

    /// The same configuration, launched cooperatively (every block resident at once, so the
    /// kernel may call `grid::sync`). [`LaunchConfig::max_cooperative_blocks`] says how many
    /// blocks fit.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let cfg = LaunchConfig::new(4, 256).cooperative();
    /// assert!(cfg.attributes.cooperative);
    /// # Ok(()) }
    /// ```
    pub fn cooperative(self) -> Self {
        let mut c = self;
        c.attributes.cooperative = true;
        c
    }

    /// The same configuration with programmatic stream serialization: the kernel may start
    /// while the previous kernel on the stream still runs (it calls
    /// `grid::wait_dependencies` before reading that kernel's results).
    ///
    /// # Safety
    ///
    /// The borrow rules of [`Stream::launch`](crate::Stream::launch) order launches on a stream
    /// one after another; this attribute breaks that order. The caller promises that the kernel
    /// launched with this configuration calls `gpukernel_device::grid::wait_dependencies()`
    /// before it touches (reads or writes) any memory that a kernel it may overlap writes or
    /// reads, and that none of those kernels relies on this kernel not running yet (for
    /// example by waiting on a flag this kernel sets). Otherwise they race on that memory.
    ///
    /// The kernels it may overlap are the preceding kernel on the stream and, when that one
    /// was itself launched with this attribute, every kernel before it back to (and
    /// including) the last one launched without it: a programmatic kernel that exits or calls
    /// `launch_dependents` before its own `wait_dependencies` lets this one start while the
    /// kernels before it still run (measured on an H100: a kernel two programmatic launches
    /// after a long one read all of that one's output before it was written). The kernel's
    /// `wait_dependencies` waits for all of them.
    ///
    /// In a graph ([`Graph::add_kernel`](crate::Graph::add_kernel)), the preceding kernels
    /// are the kernel nodes among the node's explicit dependencies: they are joined by
    /// programmatic edges, and the same promise holds for each of them and, through the
    /// programmatic edges that join those to their own dependencies, for those too.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// // SAFETY: the kernel launched with `cfg` waits in `grid::wait_dependencies` first.
    /// let cfg = unsafe { LaunchConfig::for_elements(1 << 20)?.programmatic_dependent() };
    /// assert!(cfg.attributes.is_programmatic_dependent());
    /// # Ok(()) }
    /// ```
    pub unsafe fn programmatic_dependent(self) -> Self {
        let mut c = self;
        c.attributes.programmatic_dependent = true;
        c
    }

    /// The most blocks of `block` threads and `shared_mem_bytes` of dynamic shared memory that
    /// can be resident at once for `function` (`cuOccupancyMaxActiveBlocksPerMultiprocessor` ×
    /// multiprocessors): the largest grid of a cooperative launch.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// let f = module.function("saxpy")?;
    /// let blocks = LaunchConfig::max_cooperative_blocks(&f, 256, 0)?;
    /// let cfg = LaunchConfig::new(blocks, 256).cooperative();
    /// # Ok(()) }
    /// ```
    pub fn max_cooperative_blocks(
        function: &Function,
        block: impl Into<Dim3>,
        shared_mem_bytes: u32,
    ) -> Result<u32> {
        let b = block.into();
        let threads = (b.x as u64 * b.y as u64 * b.z as u64).min(u32::MAX as u64) as u32;
        let backend = &function.module.ctx.backend;
        let per_sm =
            backend.max_active_blocks_per_sm(function.info.handle, threads, shared_mem_bytes)?;
        Ok(per_sm.saturating_mul(backend.cooperative_multiprocessors()?))
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
        if !ok {
            return Err(self.invalid(f, max_threads, max_shared));
        }
        if self.attributes.any() {
            self.validate_attributes(f)?;
        }
        Ok(())
    }

    /// Checks the launch attributes against the grid, the device and the kernel: clusters
    /// divide the grid and fit the kernel's largest cluster; a cooperative grid fits the
    /// device at once.
    #[cold]
    #[inline(never)]
    pub(crate) fn validate_attributes(&self, f: &Function) -> Result<()> {
        let backend = &f.module.ctx.backend;
        let kernel = f.name().to_owned();
        let g = self.grid.to_array();
        if let Some(c) = self.attributes.cluster {
            let c = c.to_array();
            const NAMES: [&str; 3] = ["cluster.x", "cluster.y", "cluster.z"];
            for i in 0..3 {
                if c[i] == 0 || !g[i].is_multiple_of(c[i]) {
                    return Err(Error::ClusterShapeInvalid {
                        kernel,
                        grid: g,
                        cluster: c,
                        reason: format!(
                            "{} = {} does not divide the grid's {} blocks along that axis: the grid must be a whole number of clusters",
                            NAMES[i], c[i], g[i]
                        ),
                    });
                }
            }
            let blocks = c[0] as u64 * c[1] as u64 * c[2] as u64;
            let max = backend.max_cluster_size(
                f.info.handle,
                self.grid.to_array(),
                self.block.to_array(),
                self.shared_mem_bytes,
            )?;
            if blocks > max as u64 {
                return Err(Error::ClusterShapeInvalid {
                    kernel,
                    grid: g,
                    cluster: c,
                    reason: format!(
                        "a cluster of {blocks} blocks is larger than the {max} this kernel can have with blocks of {:?} and {} bytes of dynamic shared memory (cuOccupancyMaxPotentialClusterSize; 0 means the device has no clusters); use smaller clusters or blocks",
                        self.block.to_array(),
                        self.shared_mem_bytes
                    ),
                });
            }
        }
        if self.attributes.cooperative {
            let blocks = g[0] as u64 * g[1] as u64 * g[2] as u64;
            let max = Self::max_cooperative_blocks(f, self.block, self.shared_mem_bytes)?;
            if blocks > max as u64 {
                return Err(Error::CooperativeGridTooLarge {
                    kernel,
                    blocks,
                    max,
                });
            }
        }
        Ok(())
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

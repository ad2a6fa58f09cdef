//! Thread block clusters (Hopper, sm_90): the cluster's indices and sizes, its barrier, and
//! distributed shared memory (a block reading and writing the shared memory of the other
//! blocks of its cluster).
//!
//! A launch with cluster dimensions (`LaunchConfig::with_cluster` in gpukernel-runtime)
//! groups its blocks into clusters that run at the same time on one GPU processing cluster;
//! without them every block is a cluster of one. The registers are PTX's `%clusterid`,
//! `%nclusterid`, `%cluster_ctaid`, `%cluster_nctaid`, `%cluster_ctarank` and
//! `%cluster_nctarank`; the barrier is `barrier.cluster`; [`map_shared_rank`] is `mapa`.
//!
//! In the simulator the blocks of a cluster run at the same time (one OS thread each), so the
//! cluster barrier and peer shared memory behave as on the GPU; a cluster barrier that cannot
//! complete is reported as an error naming the waiting thread, never a hang.
//!
//! ```
//! use gpukernel_device::prelude::*;
//! use gpukernel_device::{cluster, shared::shared_array, thread};
//!
//! /// Each block of a cluster of two publishes its rank; each thread then reads the other
//! /// block's value through distributed shared memory.
//! #[kernel]
//! pub fn swap_ranks(mut out: DisjointSlice<u32>) {
//!     let mine = shared_array!(u32, 1);
//!     let rank = cluster::block_rank();
//!     if thread::thread_idx_x() == 0 {
//!         // SAFETY: one writer; the readers wait for the cluster barrier below.
//!         unsafe { mine.write(0, rank) };
//!     }
//!     cluster::sync(); // every block's value is written
//!     let peer = cluster::map_shared_rank(mine.as_mut_ptr(), rank ^ 1);
//!     // SAFETY: no block writes `mine` again, and none exits before the last barrier.
//!     let theirs = unsafe { peer.read() };
//!     out.set(thread::index(), theirs);
//!     cluster::sync(); // the peer's shared memory stays alive until everyone has read it
//! }
//! ```

use crate::thread::Dim3;

#[cfg(target_arch = "nvptx64")]
macro_rules! sreg {
    ($name:literal) => {{
        let v: u32;
        // SAFETY: reading a special register has no preconditions.
        unsafe {
            core::arch::asm!(concat!("mov.u32 {0}, ", $name, ";"), out(reg32) v,
                options(pure, nomem, nostack, preserves_flags));
        }
        v
    }};
}

#[cfg(not(target_arch = "nvptx64"))]
fn host_cluster_dim() -> Dim3 {
    crate::host::with_context("cluster", |cx| cx.hooks().cluster_dim())
}

/// The cluster's size in blocks (`%cluster_nctaid`; CUDA's `cluster.dim_blocks()`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, thread};
/// #[kernel]
/// pub fn blocks_per_cluster(mut out: DisjointSlice<u32>) {
///     out.set(thread::index(), cluster::dim().volume() as u32);
/// }
/// ```
#[inline(always)]
pub fn dim() -> Dim3 {
    #[cfg(target_arch = "nvptx64")]
    {
        Dim3::new(
            sreg!("%cluster_nctaid.x"),
            sreg!("%cluster_nctaid.y"),
            sreg!("%cluster_nctaid.z"),
        )
    }
    #[cfg(not(target_arch = "nvptx64"))]
    host_cluster_dim()
}

/// This block's index inside its cluster (`%cluster_ctaid`; CUDA's `cluster.block_index()`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, thread};
/// #[kernel]
/// pub fn x_in_cluster(mut out: DisjointSlice<u32>) {
///     out.set(thread::index(), cluster::block_idx().x);
/// }
/// ```
#[inline(always)]
pub fn block_idx() -> Dim3 {
    #[cfg(target_arch = "nvptx64")]
    {
        Dim3::new(
            sreg!("%cluster_ctaid.x"),
            sreg!("%cluster_ctaid.y"),
            sreg!("%cluster_ctaid.z"),
        )
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (c, b) = (host_cluster_dim(), crate::thread::block_idx());
        Dim3::new(b.x % c.x, b.y % c.y, b.z % c.z)
    }
}

/// The cluster's index in the grid (`%clusterid`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, thread};
/// #[kernel]
/// pub fn which_cluster(mut out: DisjointSlice<u32>) {
///     out.set(thread::index(), cluster::cluster_idx().x);
/// }
/// ```
#[inline(always)]
pub fn cluster_idx() -> Dim3 {
    #[cfg(target_arch = "nvptx64")]
    {
        Dim3::new(
            sreg!("%clusterid.x"),
            sreg!("%clusterid.y"),
            sreg!("%clusterid.z"),
        )
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (c, b) = (host_cluster_dim(), crate::thread::block_idx());
        Dim3::new(b.x / c.x, b.y / c.y, b.z / c.z)
    }
}

/// The grid's size in clusters (`%nclusterid`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, thread};
/// #[kernel]
/// pub fn clusters(mut out: DisjointSlice<u32>) {
///     out.set(thread::index(), cluster::grid_dim().volume() as u32);
/// }
/// ```
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    #[cfg(target_arch = "nvptx64")]
    {
        Dim3::new(
            sreg!("%nclusterid.x"),
            sreg!("%nclusterid.y"),
            sreg!("%nclusterid.z"),
        )
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (c, g) = (host_cluster_dim(), crate::thread::grid_dim());
        Dim3::new(g.x / c.x, g.y / c.y, g.z / c.z)
    }
}

/// This block's rank in its cluster, `0..size()` (`%cluster_ctarank`; CUDA's
/// `cluster.block_rank()`): the linear [`block_idx`], x fastest.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, thread};
/// #[kernel]
/// pub fn ranks(mut out: DisjointSlice<u32>) {
///     out.set(thread::index(), cluster::block_rank());
/// }
/// ```
#[inline(always)]
pub fn block_rank() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r = sreg!("%cluster_ctarank");
        let n = sreg!("%cluster_nctarank");
        // SAFETY: the hardware's range.
        unsafe { core::hint::assert_unchecked(r < n) };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let (c, i) = (host_cluster_dim(), block_idx());
        i.x + i.y * c.x + i.z * c.x * c.y
    }
}

/// The number of blocks in the cluster (`%cluster_nctarank`; CUDA's `cluster.num_blocks()`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, thread};
/// #[kernel]
/// pub fn cluster_size(mut out: DisjointSlice<u32>) {
///     out.set(thread::index(), cluster::size());
/// }
/// ```
#[inline(always)]
pub fn size() -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        sreg!("%cluster_nctarank")
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        host_cluster_dim().volume() as u32
    }
}

/// Whether the launch named cluster dimensions (`%is_explicit_cluster`).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, thread};
/// #[kernel]
/// pub fn explicit(mut out: DisjointSlice<u32>) {
///     out.set(thread::index(), cluster::is_explicit() as u32);
/// }
/// ```
#[inline(always)]
pub fn is_explicit() -> bool {
    #[cfg(target_arch = "nvptx64")]
    {
        let v: u32;
        // SAFETY: reading a special register.
        unsafe {
            core::arch::asm!("{{ .reg .pred p; mov.pred p, %is_explicit_cluster; selp.u32 {0}, 1, 0, p; }}",
                out(reg32) v, options(pure, nomem, nostack));
        }
        v != 0
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::with_context("cluster::is_explicit", |cx| {
            cx.hooks().cluster_is_explicit()
        })
    }
}

/// The cluster barrier (`barrier.cluster.arrive.release` then `barrier.cluster.wait.acquire`;
/// CUDA's `cluster.sync()`): waits until every thread of the cluster arrived, and makes the
/// shared-memory writes of every block before it visible to every block after it. Every
/// thread of the cluster must call it (a thread that never does keeps the others waiting: on
/// the GPU a hang, in the simulator an error).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, thread};
/// #[kernel]
/// pub fn meet(mut out: DisjointSlice<u32>) {
///     cluster::sync();
///     out.set(thread::index(), cluster::block_rank());
/// }
/// ```
#[inline(always)]
pub fn sync() {
    // SAFETY: arrive then wait, in this order, by the same thread.
    unsafe {
        arrive();
        wait();
    }
}

/// Arrives at the cluster barrier without waiting (`barrier.cluster.arrive.release`): the
/// first half of [`sync`], to overlap independent work with the other blocks' arrival.
///
/// # Safety
/// Each thread alternates `arrive` and [`wait`], starting with `arrive` (the PTX ISA leaves
/// other orders undefined).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, thread};
/// #[kernel]
/// pub fn split(mut out: DisjointSlice<u32>) {
///     // SAFETY: arrive, then wait, once each.
///     unsafe { cluster::arrive() };
///     let i = thread::index();
///     let v = i.get() as u32 * 2; // independent work while the cluster arrives
///     unsafe { cluster::wait() };
///     out.set(i, v);
/// }
/// ```
#[inline(always)]
pub unsafe fn arrive() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!("barrier.cluster.arrive.release;", options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::host::with_context("cluster::arrive", |cx| cx.hooks().cluster_arrive());
}

/// Waits for the cluster barrier phase this thread [arrived](arrive) at
/// (`barrier.cluster.wait.acquire`).
///
/// # Safety
/// As [`arrive`]: the thread arrived since its last wait.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, thread};
/// #[kernel]
/// pub fn split_wait(mut out: DisjointSlice<u32>) {
///     // SAFETY: arrive, then wait, once each.
///     unsafe {
///         cluster::arrive();
///         cluster::wait();
///     }
///     out.set(thread::index(), 1);
/// }
/// ```
#[inline(always)]
pub unsafe fn wait() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract.
    unsafe {
        core::arch::asm!("barrier.cluster.wait.acquire;", options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    crate::host::with_context("cluster::wait", |cx| cx.hooks().cluster_wait());
}

/// The generic address, in the shared memory of the block of rank `rank` of this cluster, of
/// what `p` (an address in this block's shared memory: a `shared_array!` or `dynamic_shared`
/// element) addresses here (`mapa.u64`; CUDA's `cluster.map_shared_rank`). Plain loads,
/// stores and atomics through the result reach the peer block's shared memory (distributed
/// shared memory).
///
/// Computing the address is safe; using it is not: the peer block must not have exited (end
/// with [`sync`] so no block leaves while others read its memory), and accesses must not race
/// with the peer's own. A `rank` outside the cluster stops the kernel (`trap`; a panic in the
/// simulator).
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, shared::shared_array, sync, thread};
/// /// Block rank 0 of each cluster sums one value from every block of its cluster.
/// #[kernel]
/// pub fn cluster_sum(x: &[f32], mut out: DisjointSlice<f32>) {
///     let slot = shared_array!(f32, 1);
///     if thread::thread_idx_x() == 0 {
///         let b = thread::block_idx_x() as usize;
///         unsafe { slot.write(0, x[b]) }; // SAFETY: one writer before the barrier
///     }
///     cluster::sync();
///     let mut total = 0.0;
///     if cluster::block_rank() == 0 {
///         for r in 0..cluster::size() {
///             // SAFETY: written before the barrier; every block waits below before exiting.
///             total += unsafe { cluster::map_shared_rank(slot.as_mut_ptr(), r).read() };
///         }
///     }
///     cluster::sync();
///     out.set(thread::index(), total);
/// }
/// ```
#[inline(always)]
pub fn map_shared_rank<T>(p: *mut T, rank: u32) -> *mut T {
    if rank >= size() {
        crate::__trap_out_of_bounds(rank as usize, size() as usize);
    }
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u64;
        // SAFETY: address arithmetic only (no memory is accessed).
        unsafe {
            core::arch::asm!("mapa.u64 {0}, {1}, {2};", out(reg64) r, in(reg64) p as u64,
                in(reg32) rank, options(pure, nomem, nostack));
        }
        r as *mut T
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        crate::host::with_context("cluster::map_shared_rank", |cx| {
            cx.hooks().map_shared_rank(p.cast(), rank).cast()
        })
    }
}

/// An address in the distributed shared memory of the cluster (`.shared::cluster`, 32 bits on
/// the GPU), as [`map_shared_rank_addr`] returns it: the operand of `ld.shared::cluster` and
/// `st.shared::cluster`, and of the cluster forms of `mbarrier` and bulk copies.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, thread};
/// #[kernel]
/// pub fn peer_word(mut out: DisjointSlice<u32>) {
///     let w = shared_array!(u32, 1);
///     if thread::thread_idx_x() == 0 {
///         unsafe { w.write(0, 7) }; // SAFETY: one writer before the barrier
///     }
///     cluster::sync();
///     let peer = cluster::map_shared_rank_addr(SharedAddr::of(w.as_mut_ptr()), 0);
///     // SAFETY: written before the barrier; nobody exits before the second barrier.
///     let v = unsafe { peer.load_u32() };
///     cluster::sync();
///     out.set(thread::index(), v);
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterAddr {
    #[cfg(target_arch = "nvptx64")]
    addr: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    addr: *mut u8,
}

/// `mapa.shared::cluster.u32`: the `.shared::cluster` address of `addr` (this block's shared
/// memory) in the block of rank `rank` of the cluster. A `rank` outside the cluster stops the
/// kernel.
///
/// ```
/// # use gpukernel_device::prelude::*;
/// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, thread};
/// #[kernel]
/// pub fn poke_first(mut out: DisjointSlice<u32>) {
///     let w = shared_array!(u32, 1);
///     cluster::sync();
///     if thread::thread_idx_x() == 0 && cluster::block_rank() == 1 {
///         let a = cluster::map_shared_rank_addr(SharedAddr::of(w.as_mut_ptr()), 0);
///         unsafe { a.store_u32(5) }; // SAFETY: the only writer; read after the barrier
///     }
///     cluster::sync();
///     out.set(thread::index(), unsafe { w.read(0) }); // SAFETY: no writes after the barrier
/// }
/// ```
#[inline(always)]
pub fn map_shared_rank_addr(addr: crate::mma::SharedAddr, rank: u32) -> ClusterAddr {
    if rank >= size() {
        crate::__trap_out_of_bounds(rank as usize, size() as usize);
    }
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: address arithmetic only.
        unsafe {
            core::arch::asm!("mapa.shared::cluster.u32 {0}, {1}, {2};", out(reg32) r,
                in(reg32) addr.raw(), in(reg32) rank, options(pure, nomem, nostack));
        }
        ClusterAddr { addr: r }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        ClusterAddr {
            addr: map_shared_rank(addr.raw(), rank),
        }
    }
}

impl ClusterAddr {
    /// This address plus `bytes`.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, thread};
    /// #[kernel]
    /// pub fn second(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u32, 2);
    ///     let a = cluster::map_shared_rank_addr(SharedAddr::of(w.as_mut_ptr()), 0).add_bytes(4);
    ///     cluster::sync();
    ///     out.set(thread::index(), unsafe { a.load_u32() }); // SAFETY: zero-initialised, no writer
    ///     cluster::sync();
    /// }
    /// ```
    #[inline(always)]
    pub fn add_bytes(self, bytes: usize) -> ClusterAddr {
        #[cfg(target_arch = "nvptx64")]
        {
            ClusterAddr {
                addr: self.addr.wrapping_add(bytes as u32),
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            ClusterAddr {
                addr: self.addr.wrapping_add(bytes),
            }
        }
    }

    /// The raw operand: the 32-bit `.shared::cluster` address on the GPU, the peer's host
    /// pointer in the simulator.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, thread};
    /// #[kernel]
    /// pub fn raw_addr(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u32, 1);
    ///     let a = cluster::map_shared_rank_addr(SharedAddr::of(w.as_mut_ptr()), 0);
    ///     out.set(thread::index(), (a.raw() as usize % 4) as u32); // aligned: 0
    /// }
    /// ```
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn raw(self) -> u32 {
        self.addr
    }

    /// The raw operand: the 32-bit `.shared::cluster` address on the GPU, the peer's host
    /// pointer in the simulator.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, thread};
    /// #[kernel]
    /// pub fn raw_addr(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u32, 1);
    ///     let a = cluster::map_shared_rank_addr(SharedAddr::of(w.as_mut_ptr()), 0);
    ///     out.set(thread::index(), (a.raw() as usize % 4) as u32); // aligned: 0
    /// }
    /// ```
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    pub fn raw(self) -> *mut u8 {
        self.addr
    }

    /// `ld.shared::cluster.u32`.
    ///
    /// # Safety
    /// The address is 4-byte aligned inside a live block's shared memory (the block has not
    /// exited), and no thread writes it concurrently.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, thread};
    /// #[kernel]
    /// pub fn load_peer(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u32, 1);
    ///     cluster::sync();
    ///     let a = cluster::map_shared_rank_addr(SharedAddr::of(w.as_mut_ptr()), 0);
    ///     out.set(thread::index(), unsafe { a.load_u32() }); // SAFETY: no writer
    ///     cluster::sync();
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn load_u32(self) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let v: u32;
            // SAFETY: the caller's contract.
            unsafe {
                core::arch::asm!("ld.shared::cluster.u32 {0}, [{1}];", out(reg32) v,
                    in(reg32) self.addr, options(nostack, readonly));
            }
            v
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: the caller's contract.
        unsafe {
            self.addr.cast::<u32>().read_volatile()
        }
    }

    /// `st.shared::cluster.u32`.
    ///
    /// # Safety
    /// As [`load_u32`](Self::load_u32), and no other thread accesses the word concurrently.
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, thread};
    /// #[kernel]
    /// pub fn store_peer(mut out: DisjointSlice<u32>) {
    ///     let w = shared_array!(u32, 1);
    ///     cluster::sync();
    ///     if thread::thread_idx_x() == 0 && cluster::block_rank() == 0 {
    ///         let a = cluster::map_shared_rank_addr(SharedAddr::of(w.as_mut_ptr()), 0);
    ///         unsafe { a.store_u32(3) }; // SAFETY: the only access before the barrier
    ///     }
    ///     cluster::sync();
    ///     out.set(thread::index(), unsafe { w.read(0) }); // SAFETY: no writer now
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn store_u32(self, v: u32) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's contract.
        unsafe {
            core::arch::asm!("st.shared::cluster.u32 [{0}], {1};", in(reg32) self.addr,
                in(reg32) v, options(nostack));
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: the caller's contract.
        unsafe {
            self.addr.cast::<u32>().write_volatile(v)
        }
    }

    /// `ld.shared::cluster.f32`.
    ///
    /// # Safety
    /// As [`load_u32`](Self::load_u32).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, thread};
    /// #[kernel]
    /// pub fn load_peer_f32(mut out: DisjointSlice<f32>) {
    ///     let w = shared_array!(f32, 1);
    ///     cluster::sync();
    ///     let a = cluster::map_shared_rank_addr(SharedAddr::of(w.as_mut_ptr()), 0);
    ///     out.set(thread::index(), unsafe { a.load_f32() }); // SAFETY: no writer
    ///     cluster::sync();
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn load_f32(self) -> f32 {
        // SAFETY: forwarded.
        f32::from_bits(unsafe { self.load_u32() })
    }

    /// `st.shared::cluster.f32`.
    ///
    /// # Safety
    /// As [`store_u32`](Self::store_u32).
    ///
    /// ```
    /// # use gpukernel_device::prelude::*;
    /// use gpukernel_device::{cluster, mma::SharedAddr, shared::shared_array, thread};
    /// #[kernel]
    /// pub fn store_peer_f32(mut out: DisjointSlice<f32>) {
    ///     let w = shared_array!(f32, 1);
    ///     cluster::sync();
    ///     if thread::thread_idx_x() == 0 && cluster::block_rank() == 0 {
    ///         let a = cluster::map_shared_rank_addr(SharedAddr::of(w.as_mut_ptr()), 0);
    ///         unsafe { a.store_f32(1.5) }; // SAFETY: the only access before the barrier
    ///     }
    ///     cluster::sync();
    ///     out.set(thread::index(), unsafe { w.read(0) }); // SAFETY: no writer now
    /// }
    /// ```
    #[inline(always)]
    pub unsafe fn store_f32(self, v: f32) {
        // SAFETY: forwarded.
        unsafe { self.store_u32(v.to_bits()) }
    }
}

//! The device-wide scan: one pass over the data, decoupled look-back (Merrill & Garland).
//!
//! A tile is `TB` threads × `V` 16-byte vectors per thread. Its life, for the block that owns
//! it:
//!
//! 1. its index: the block's index (blocks start in index order, so every tile a block waits
//!    for belongs to a block that already runs), or with `CLAIM` an atomic counter (the status
//!    array's last word: one more barrier, for the tuning rows);
//! 2. `V` coalesced 16-byte loads per thread, all in flight at once: step `j` of lane `l` of
//!    warp `w` holds the elements at `w × 32 × per × V + j × 32 × per + per × l`, `per` = 4
//!    (32-bit types) or 2 (64-bit);
//! 3. in registers and shuffles only: a serial scan of each vector, one warp scan per step,
//!    the steps chained by the warp's running total;
//! 4. one barrier: each warp's total through shared memory; every thread combines the warps
//!    before its own, thread 0 publishes the tile's aggregate;
//! 5. warp 0 alone looks back over the tiles before (their status words, 32 at a time, with a
//!    short sleep between polls of a tile not yet published), publishes the inclusive prefix
//!    and leaves it in shared memory; one barrier;
//! 6. `V` 16-byte stores per thread.
//!
//! Partial and misaligned tiles take the same steps element by element.
//!
//! Status words: for 32-bit types one word per tile, `flag << 32 | value bits`, written and
//! read whole (relaxed 64-bit accesses at device scope), so a reader never sees a flag
//! without its value. For 64-bit types three words per tile: the flag, the aggregate and the
//! inclusive prefix; a value is stored before its flag is *released*, and read after the flag
//! is *acquired*.

use gpukernel_device::ops::Identity;
use gpukernel_device::prelude::*;
use gpukernel_device::{sync, thread, warp};

use crate::{Item, ld16};

const FLAG_AGGREGATE: u64 = 1;
const FLAG_INCLUSIVE: u64 = 2;

/// Writes 16 bytes: `st.global.v4.u32`.
///
/// # Safety
/// `p` is a 16-byte aligned global address valid for 16 bytes that no other thread accesses
/// during the kernel.
#[inline(always)]
pub(crate) unsafe fn st16(p: *mut [u32; 4], w: [u32; 4]) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's promise.
    unsafe {
        core::arch::asm!(
            "st.global.v4.u32 [{0}], {{{1}, {2}, {3}, {4}}};",
            in(reg64) p, in(reg32) w[0], in(reg32) w[1], in(reg32) w[2], in(reg32) w[3],
            options(nostack),
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's promise.
    unsafe {
        p.write(w)
    }
}

/// Sleeps about `ns` nanoseconds between polls of another tile's status (`nanosleep.u32`; in
/// the simulator a spin hint that stops the thread once another block failed, which on a GPU
/// would have ended the grid).
#[inline(always)]
fn sleep(ns: u32) {
    gpukernel_device::sync::poll_pause(ns);
}

/// The address of status word `i` (bounds-checked: a trap, a panic in the simulator).
#[inline(always)]
fn status_ptr(status: &DisjointSlice<'_, u64>, i: usize) -> *mut u64 {
    if i >= status.len() {
        gpukernel_device::__trap_out_of_bounds(i, status.len());
    }
    // SAFETY: in bounds.
    unsafe { status.as_mut_ptr().add(i) }
}

/// A load of status word `i` at device scope (`ld.relaxed.gpu` or `ld.acquire.gpu`: the L2,
/// where every block's stores meet).
#[inline(always)]
pub(crate) fn status_load<const ACQUIRE: bool>(status: &DisjointSlice<'_, u64>, i: usize) -> u64 {
    let p = status_ptr(status, i);
    #[cfg(target_arch = "nvptx64")]
    {
        let w: u64;
        // SAFETY: `p` is an aligned status word of global memory; every access of the status
        // words during the launch is atomic (this kernel's only).
        unsafe {
            if ACQUIRE {
                core::arch::asm!(
                    "{{ .reg .b64 g; cvta.to.global.u64 g, {1}; ld.acquire.gpu.global.b64 {0}, [g]; }}",
                    out(reg64) w, in(reg64) p, options(nostack),
                );
            } else {
                core::arch::asm!(
                    "{{ .reg .b64 g; cvta.to.global.u64 g, {1}; ld.relaxed.gpu.global.b64 {0}, [g]; }}",
                    out(reg64) w, in(reg64) p, options(nostack, readonly),
                );
            }
        }
        w
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        use core::sync::atomic::Ordering;
        let order = if ACQUIRE {
            Ordering::Acquire
        } else {
            Ordering::Relaxed
        };
        // SAFETY: as above; the simulator's blocks are host threads.
        unsafe { core::sync::atomic::AtomicU64::from_ptr(p) }.load(order)
    }
}

/// A store of status word `i` at device scope (`st.relaxed.gpu` or `st.release.gpu`).
#[inline(always)]
pub(crate) fn status_store<const RELEASE: bool>(
    status: &DisjointSlice<'_, u64>,
    i: usize,
    word: u64,
) {
    let p = status_ptr(status, i);
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: as in `status_load`.
    unsafe {
        if RELEASE {
            core::arch::asm!(
                "{{ .reg .b64 g; cvta.to.global.u64 g, {0}; st.release.gpu.global.b64 [g], {1}; }}",
                in(reg64) p, in(reg64) word, options(nostack),
            );
        } else {
            core::arch::asm!(
                "{{ .reg .b64 g; cvta.to.global.u64 g, {0}; st.relaxed.gpu.global.b64 [g], {1}; }}",
                in(reg64) p, in(reg64) word, options(nostack),
            );
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        use core::sync::atomic::Ordering;
        let order = if RELEASE {
            Ordering::Release
        } else {
            Ordering::Relaxed
        };
        // SAFETY: as in `status_load`.
        unsafe { core::sync::atomic::AtomicU64::from_ptr(p) }.store(word, order)
    }
}

/// `for $i in 0..8 { if $cond $body }`, unrolled whatever LLVM's thresholds say: the tile's
/// arrays, indexed by `$i`, then stay in registers (a rolled loop keeps them on the stack).
macro_rules! unrolled {
    ($i:ident, $cond:expr, $body:block) => {
        gpukernel_device::unroll!($i in [0, 1, 2, 3, 4, 5, 6, 7] {
            if $cond $body
        })
    };
}

/// [`unrolled!`] over `0..4` (the elements of a 16-byte vector).
macro_rules! unrolled4 {
    ($i:ident, $cond:expr, $body:block) => {
        gpukernel_device::unroll!($i in [0, 1, 2, 3] {
            if $cond $body
        })
    };
}

/// Whether `T`'s status fits one word with its flag (32-bit types).
#[inline(always)]
const fn packed<T>() -> bool {
    core::mem::size_of::<T>() == 4
}

/// Status words a scan of `tiles` tiles of `T` needs (the tile counter included).
pub const fn status_words(tiles: usize, size_of_t: usize) -> usize {
    if size_of_t == 4 {
        tiles + 1
    } else {
        3 * tiles + 1
    }
}

/// Publishes tile `tile`'s aggregate or inclusive prefix.
#[inline(always)]
fn publish<T: Item>(status: &DisjointSlice<'_, u64>, tiles: usize, tile: usize, flag: u64, v: T) {
    if packed::<T>() {
        status_store::<false>(status, tile, flag << 32 | v.to_bits64());
    } else {
        let slot = if flag == FLAG_AGGREGATE {
            tiles + tile
        } else {
            2 * tiles + tile
        };
        status_store::<false>(status, slot, v.to_bits64());
        status_store::<true>(status, tile, flag);
    }
}

/// Tile `tile`'s status, waiting (sleeping `poll_ns` between polls) until it has one:
/// `(flag, value)`.
#[inline(always)]
fn wait_status<T: Item>(
    status: &DisjointSlice<'_, u64>,
    tiles: usize,
    tile: usize,
    poll_ns: u32,
) -> (u64, T) {
    if packed::<T>() {
        loop {
            let w = status_load::<false>(status, tile);
            if w >> 32 != 0 {
                return (w >> 32, T::from_bits64(w & 0xffff_ffff));
            }
            sleep(poll_ns);
        }
    } else {
        loop {
            let f = status_load::<true>(status, tile);
            if f != 0 {
                let slot = if f == FLAG_AGGREGATE {
                    tiles + tile
                } else {
                    2 * tiles + tile
                };
                return (f, T::from_bits64(status_load::<false>(status, slot)));
            }
            sleep(poll_ns);
        }
    }
}

/// The exclusive prefix of tile `tile` (> 0), by warp 0 of its block: the tiles before it,
/// read back 32 at a time until one has published its inclusive prefix. Returns it in every
/// lane.
#[inline(always)]
fn look_back<T: Item, Op: Identity<T>>(
    status: &DisjointSlice<'_, u64>,
    tiles: usize,
    tile: usize,
    op: Op,
    poll_ns: u32,
) -> T {
    let lane = thread::lane_id() as usize;
    let mut prefix = op.identity();
    let mut end = tile;
    loop {
        let (flag, value) = if end > lane {
            wait_status::<T>(status, tiles, end - 1 - lane, poll_ns)
        } else {
            // Before tile 0: nothing, as an inclusive identity (tile 0 always publishes its
            // inclusive prefix, so this is never reached while tile 0's word is in view).
            (FLAG_INCLUSIVE, op.identity())
        };
        let inclusive = warp::ballot_sync(warp::FULL_MASK, flag == FLAG_INCLUSIVE);
        // Lane 0 holds the latest tile: the warp reduction in lane order is reversed, so
        // reduce the lanes as `later ⊕ …`: combine with the operands swapped.
        let rev = |a: T, b: T| op.combine(b, a);
        if inclusive != 0 {
            // Lane `first` is the closest tile with an inclusive prefix: it and the aggregates
            // of the tiles after it make this tile's prefix.
            let first = inclusive.trailing_zeros() as usize;
            let part = if lane <= first { value } else { op.identity() };
            return op.combine(warp::reduce(part, rev), prefix);
        }
        prefix = op.combine(warp::reduce(value, rev), prefix);
        end -= 32;
    }
}

/// One tile of the scan: `out[i] = x_0 ⊕ … ⊕ x_i` (`INCLUSIVE`) or `x_0 ⊕ … ⊕ x_{i-1}` with
/// `out[0]` the identity. See the [module documentation](self) for the steps. The host
/// launches `n.div_ceil(TB × V × per)` blocks of `TB` threads, with
/// [`status_words`]`(tiles)` zeroed status words.
#[inline(always)]
// Index loops over the const-sized arrays: LLVM unrolls them fully, so the arrays stay in
// registers (a rolled loop indexes them dynamically, which ptxas lowers to select chains).
#[allow(clippy::needless_range_loop)]
pub fn scan_tile<
    T: Item,
    Op: Identity<T>,
    const INCLUSIVE: bool,
    const TB: u32,
    const V: usize,
    const CLAIM: bool,
    const FIRST_NS: u32,
    const POLL_NS: u32,
>(
    input: &[T],
    output: DisjointSlice<'_, T>,
    status: DisjointSlice<'_, u64>,
    op: Op,
) {
    let per = T::PER;
    let n = input.len();
    let warps = TB as usize / 32;
    let warp_len = 32 * per * V;
    let tile_len = warps * warp_len;
    let tiles = n.div_ceil(tile_len);
    // Uniform checks before any barrier: the host launches exactly this shape.
    assert!(
        TB.is_multiple_of(32)
            && TB <= 1024
            && V <= 8
            && thread::block_dim_x() == TB
            && thread::block_dim_y() == 1
            && thread::block_dim_z() == 1
            && output.len() == n
            && status.len() == status_words(tiles, core::mem::size_of::<T>())
            && thread::grid_dim_x() as usize == tiles
    );
    // Slots 0..32: the warps' totals; 32: the tile's prefix; 33: the claimed tile.
    let shared = gpukernel_device::shared::shared_array!(u64, 34);
    let (t, lane, w) = (
        thread::thread_idx_x() as usize,
        thread::lane_id() as usize,
        thread::warp_id() as usize,
    );
    let tile = if CLAIM {
        if t == 0 {
            let last = status.len() - 1;
            // SAFETY: the status array's last word is the tile counter, touched only
            // atomically; thread 0 alone writes slot 33, before the barrier.
            unsafe {
                let c = gpukernel_device::atomic::add(status.as_mut_ptr().add(last), 1u64);
                shared.write(33, c);
            }
        }
        sync::sync_threads();
        // SAFETY: written before the barrier, never again.
        (unsafe { shared.read(33) }) as usize
    } else {
        thread::block_idx_x() as usize
    };
    let seg = tile * tile_len + w * warp_len;
    let in_ptr = input.as_ptr();
    let out_ptr = output.as_mut_ptr();
    let vector =
        (tile + 1) * tile_len <= n && (in_ptr as usize | out_ptr as usize).is_multiple_of(16);
    let at = |j: usize| seg + j * 32 * per + per * lane;

    let mut v = [[op.identity(); 4]; V];
    if vector {
        let mut words = [[0u32; 4]; V];
        unrolled!(j, j < V, {
            // SAFETY: `at(j) + per <= (tile + 1) * tile_len <= n`, 16-byte aligned (`at(j)` is
            // a multiple of `per` elements, 16 bytes, from an aligned start); the input is a
            // `&[T]`, which nothing writes during the launch.
            words[j] = unsafe { ld16(in_ptr.add(at(j)).cast()) };
        });
        unrolled!(j, j < V, {
            unrolled4!(e, e < per, {
                v[j][e] = T::lane16(words[j], e);
            });
        });
    } else {
        unrolled!(j, j < V, {
            unrolled4!(e, e < per, {
                let i = at(j) + e;
                if i < n {
                    // SAFETY: `i < n`.
                    v[j][e] = unsafe { *input.get_unchecked(i) };
                }
            });
        });
    }

    // Scan within the warp, step by step, carrying the warp's running total.
    let mut carry = op.identity();
    unrolled!(j, j < V, {
        let vj = &mut v[j];
        let raw = *vj;
        let mut p = raw;
        unrolled4!(e, e < per && e >= 1, {
            p[e] = op.combine(p[e - 1], raw[e]);
        });
        let incl = warp::inclusive_scan(p[per - 1], op);
        // SAFETY: the block's warps are whole (TB is a multiple of 32): the mask holds the
        // caller.
        let before = unsafe { warp::shfl_up_sync_unchecked(warp::FULL_MASK, incl, 1) };
        let pre = if lane == 0 {
            carry
        } else {
            op.combine(carry, before)
        };
        unrolled4!(e, e < per, {
            vj[e] = if INCLUSIVE {
                op.combine(pre, p[e])
            } else if e == 0 {
                pre
            } else {
                op.combine(pre, p[e - 1])
            };
        });
        carry = op.combine(carry, warp::broadcast(incl, 31));
    });

    // The warps' totals through shared memory: one barrier.
    if lane == 31 {
        // SAFETY: lane 31 of warp `w` alone writes slot `w` (< 32), before the barrier.
        unsafe { shared.write(w, carry.to_bits64()) };
    }
    sync::sync_threads();
    let mut warps_before = op.identity();
    let mut tile_total = op.identity();
    for k in 0..warps {
        // SAFETY: written before the barrier, not again in this launch.
        let x = T::from_bits64(unsafe { shared.read(k) });
        if k == w {
            warps_before = tile_total;
        }
        tile_total = op.combine(tile_total, x);
    }

    let tile_prefix = if tile == 0 {
        if t == 0 {
            publish(&status, tiles, 0, FLAG_INCLUSIVE, tile_total);
        }
        op.identity()
    } else {
        if w == 0 {
            if lane == 0 {
                publish(&status, tiles, tile, FLAG_AGGREGATE, tile_total);
            }
            // Give the tiles before a moment to publish before polling them.
            if tiles > 500 {
                sleep(FIRST_NS);
            }
            let prefix = look_back(&status, tiles, tile, op, POLL_NS);
            if lane == 0 {
                publish(
                    &status,
                    tiles,
                    tile,
                    FLAG_INCLUSIVE,
                    op.combine(prefix, tile_total),
                );
                // SAFETY: thread 0 alone writes slot 32, before the barrier.
                unsafe { shared.write(32, prefix.to_bits64()) };
            }
        }
        sync::sync_threads();
        // SAFETY: written before the barrier, not again in this launch.
        T::from_bits64(unsafe { shared.read(32) })
    };
    let pre = op.combine(tile_prefix, warps_before);

    unrolled!(j, j < V, {
        unrolled4!(e, e < per, {
            v[j][e] = op.combine(pre, v[j][e]);
        });
    });
    if vector {
        unrolled!(j, j < V, {
            let mut words = [0u32; 4];
            unrolled4!(e, e < per, {
                T::set_lane16(&mut words, e, v[j][e]);
            });
            // SAFETY: as for the load; elements `at(j)..at(j) + per` of the output are this
            // thread's alone (the tiles, warps, steps and lanes partition the elements).
            unsafe { st16(out_ptr.add(at(j)).cast(), words) };
        });
    } else {
        unrolled!(j, j < V, {
            unrolled4!(e, e < per, {
                let i = at(j) + e;
                if i < n {
                    // SAFETY: as above; in bounds.
                    unsafe { output.write(i, v[j][e]) };
                }
            });
        });
    }
}

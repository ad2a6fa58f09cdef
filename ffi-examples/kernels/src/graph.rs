//! A kernel that drives a CUDA graph's conditional node: one step of an iterative loop that
//! runs on the GPU until it converges, without a round trip to the host.

use gpukernel_device::graph::ConditionalHandle;
use gpukernel_device::{DisjointSlice, kernel, sync, thread};

/// Halves every element and sets `again` to whether any element is still above `tol`: the
/// body of a `while` node that loops until every element is at most `tol`. Launch it with one
/// block covering `x` (the block's threads vote with `sync_threads_or`, and its first thread
/// sets the condition).
// ANCHOR: halve_until
#[kernel]
pub fn halve_until(mut x: DisjointSlice<f32>, tol: f32, again: ConditionalHandle) {
    let mut above = false;
    if let Some(xi) = x.get_mut(thread::index()) {
        *xi *= 0.5;
        above = *xi > tol;
    }
    again.set_by_first_thread(sync::sync_threads_or(above));
}
// ANCHOR_END: halve_until

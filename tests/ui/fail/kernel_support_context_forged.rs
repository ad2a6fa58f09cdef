// Nor can safe code make a thread context of its own, with any hooks pointer.
use core::ptr::NonNull;
use gpukernel_device::host::{SimHooks, ThreadContext};
use gpukernel_device::thread::Dim3;

pub fn forge(hooks: NonNull<dyn SimHooks>) -> ThreadContext {
    let d = Dim3::new(1, 1, 1);
    ThreadContext {
        thread_idx: d,
        block_idx: d,
        block_dim: d,
        grid_dim: d,
        hooks,
    }
}

fn main() {}

// The simulator's thread context cannot be forged in safe code: its hooks pointer is
// dereferenced by the safe `hooks()`, so only the `unsafe` constructor sets it.
use core::ptr::NonNull;
use gpukernel_device::host::{SimHooks, ThreadContext};
use gpukernel_device::thread::Dim3;

fn forge(hooks: NonNull<dyn SimHooks>) -> ThreadContext {
    let d = Dim3::new(1, 1, 1);
    ThreadContext {
        thread_idx: d,
        block_idx: d,
        block_dim: d,
        grid_dim: d,
        hooks,
    }
}

fn redirect(cx: &mut ThreadContext, hooks: NonNull<dyn SimHooks>) {
    cx.hooks = hooks;
    let _ = ThreadContext::new(Dim3::new(1, 1, 1), Dim3::new(1, 1, 1), Dim3::new(1, 1, 1), Dim3::new(1, 1, 1), hooks);
}

fn main() {
    let _ = (forge, redirect);
}

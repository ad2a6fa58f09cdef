// The context's constructor is `unsafe`: the hooks pointer it takes must be live whenever
// `hooks()` dereferences it, which only the simulator can promise.
use core::ptr::NonNull;
use gpukernel_device::host::{SimHooks, ThreadContext};
use gpukernel_device::thread::Dim3;

pub fn forge_with_new(hooks: NonNull<dyn SimHooks>) -> ThreadContext {
    let d = Dim3::new(1, 1, 1);
    ThreadContext::new(d, d, d, d, hooks)
}

fn main() {}

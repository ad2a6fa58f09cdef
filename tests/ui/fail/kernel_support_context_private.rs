// The simulator's thread context cannot be pointed at other hooks from safe code: its hooks
// pointer is dereferenced by the safe `hooks()`, so only `unsafe` functions set it.
use core::ptr::NonNull;
use gpukernel_device::host::{SimHooks, ThreadContext};

pub fn redirect(cx: &mut ThreadContext, hooks: NonNull<dyn SimHooks>) {
    cx.hooks = hooks;
}

fn main() {}

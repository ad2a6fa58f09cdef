// NCCL enqueues a group's operations when the group ends, after the closure returns: a buffer
// an operation takes must outlive the group, so one made (and dropped) inside the closure is
// refused.
use gpukernel_runtime::collective::{self, Communicator, ReduceOp};
use gpukernel_runtime::Device;

fn main() {
    let ctx = Device::simulator().primary_context().unwrap();
    let comms = Communicator::for_contexts(&[ctx.clone()]).unwrap();
    let s = ctx.default_stream();
    collective::group(|g| {
        let mut tmp = ctx.alloc_zeros::<f32>(16)?;
        g.all_reduce_in_place(&comms[0], &s, &mut tmp, ReduceOp::Sum)
    })
    .unwrap();
}

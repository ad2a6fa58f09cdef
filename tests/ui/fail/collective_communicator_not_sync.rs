// NCCL forbids concurrent calls on one communicator: `Communicator` is `Send` (one thread at a
// time may own it) but not `Sync` (no sharing between threads).
use gpukernel_runtime::collective::Communicator;
use gpukernel_runtime::Device;

fn main() {
    let ctx = Device::simulator().primary_context().unwrap();
    let comms = Communicator::for_contexts(&[ctx]).unwrap();
    let comm = &comms[0];
    std::thread::scope(|s| {
        s.spawn(|| comm.rank());
    });
}

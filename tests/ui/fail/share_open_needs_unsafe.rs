// Opening another process's memory and importing another API's memory are `unsafe`: the
// exporter's side (keeping it alive, not touching it while our work runs) cannot be checked.
use gpukernel_runtime::external::{ExternalMemory, ExternalMemoryHandle};
use gpukernel_runtime::ipc::{IpcMemHandle, VmmHandle};
use gpukernel_runtime::Device;

fn main() {
    let ctx = Device::simulator().primary_context().unwrap();
    let handle = IpcMemHandle::<f32>::from_bytes(&[0u8; 104]).unwrap();
    let _ = handle.open(&ctx);
    let _ = ExternalMemory::import(&ctx, ExternalMemoryHandle::OpaqueWin32(1), 64, true);
    let vmm: VmmHandle<f32> = VmmHandle::recv(&a_socket()).unwrap();
    let _ = vmm.open(&ctx);
}

fn a_socket() -> std::os::unix::net::UnixStream {
    std::os::unix::net::UnixStream::pair().unwrap().0
}

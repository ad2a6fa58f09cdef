// A view of a mapped external buffer cannot outlive the buffer (whose drop unmaps it).
use gpukernel_runtime::external::ExternalMemory;
use gpukernel_runtime::DeviceView;

fn view_of(mem: &ExternalMemory) -> DeviceView<'static, f32> {
    let buf = mem.map::<f32>(0, 16).unwrap();
    buf.slice(..).unwrap()
}

fn main() {}

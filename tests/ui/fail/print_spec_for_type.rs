// A spec that does not fit the argument's type stops the compilation when the format is
// built (a const, evaluated per call site): hex is for integers, a precision for floats.
use gpukernel_device::gpu_println;

fn main() {
    let x = 1.5f32;
    gpu_println!("{:x}", x);
}

// `gpu_println!` checks its format at compile time: placeholders against arguments, the
// specs it supports, and the argument types.
use gpukernel_device::gpu_println;

struct Point {
    x: f32,
}

fn main() {
    let (i, x) = (3u32, 1.5f32);
    gpu_println!("{} {}", i);
    gpu_println!("{}", i, x);
    gpu_println!("{:?}", x);
    gpu_println!("{name}", i);
    gpu_println!("unclosed {", i);
    gpu_println!("{}", Point { x });
}

// What `gpu_println!` expands to is not callable from safe code: `%s` reads its slot as the
// address of a string, so a format and slots not built together would read any address.
use gpukernel_device::__private::printf;

fn main() {
    printf::print(b"%s\0", &[16]);
}

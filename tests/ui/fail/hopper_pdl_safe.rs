// A programmatic dependent launch may start before the previous kernel on the stream finished,
// so the borrow rules no longer order the two: asking for it is `unsafe`.
use gpukernel_runtime::LaunchConfig;

fn main() {
    let cfg = LaunchConfig::new(4, 32).programmatic_dependent();
    let _ = cfg;
}

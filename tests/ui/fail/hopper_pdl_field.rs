// The programmatic-dependent attribute cannot be set around the `unsafe` constructor: the field
// is private.
use gpukernel_runtime::LaunchConfig;

fn main() {
    let mut cfg = LaunchConfig::new(4, 32);
    cfg.attributes.programmatic_dependent = true;
    let _ = cfg;
}

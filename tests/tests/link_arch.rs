//! Architectures the installed NVRTC / nvJitLink do not compile for, injected (the test GPU is
//! sm_90): the link falls back to the highest supported architecture whose code the device
//! runs, or fails with `UnsupportedArchitecture`, never with NVRTC's raw "invalid value for
//! --gpu-architecture".
//!
//! Needs NVRTC and nvJitLink (`cargo xtask doctor`), like `link_offline.rs`.

mod link_support;

use gpukernel_runtime::Error;
use gpukernel_runtime::link::{CachePolicy, Linker};
use link_support::{PTX, err, ok, source};

const ADD: &str =
    "extern \"C\" __device__ int add_f(float* r, float a, float b) { *r = a + b; return 0; }";

fn offline(arch: &str) -> Linker {
    let mut linker = ok(Linker::for_arch(arch));
    linker.cache(CachePolicy::Disabled);
    linker
}

#[test]
fn unknown_minor_versions_link_for_the_same_major() {
    for (asked, linked) in [("sm_77", "sm_75"), ("sm_85", "sm_80"), ("sm_91", "sm_90")] {
        let image = ok(offline(asked).add_cuda_source(ADD, "add.cu").link());
        assert_eq!(
            image.arch().map(|a| a.to_string()).as_deref(),
            Some(linked),
            "{asked}"
        );
    }
    // The Rust kernels (PTX for sm_90) with their `.cu`, for an injected 9.1.
    let mut linker = offline("sm_90");
    linker.assume_compute_capability(9, 1);
    let image = ok(linker
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"))
        .link());
    assert_eq!(image.arch().map(|a| a.sm()), Some(90));
}

#[test]
fn an_architecture_no_tool_supports_is_named_with_the_supported_ones() {
    let mut linker = offline("sm_90");
    linker.assume_compute_capability(13, 0);
    let e = err(linker.add_cuda_source(ADD, "add.cu").link());
    let Error::UnsupportedArchitecture { device, supported } = &e else {
        panic!("expected UnsupportedArchitecture, got {e}")
    };
    assert_eq!(device, "sm_130");
    assert!(supported.iter().any(|s| s == "sm_90"), "{supported:?}");
    let shown = e.to_string();
    assert!(!shown.contains("invalid value"), "{shown}");
    assert!(shown.contains("hint:"), "{shown}");
}

//! Linker messages: C++ symbols demangled beside their mangled names, duplicate definitions
//! naming the inputs that define them.
//!
//! Needs NVRTC and nvJitLink (`cargo xtask doctor`), like `link_offline.rs`.

mod link_support;

use gpukernel_runtime::Error;
use gpukernel_runtime::link::{CachePolicy, Linker, demangle};
use link_support::{err, ok};

fn offline() -> Linker {
    let mut linker = ok(Linker::for_arch("sm_90"));
    linker.cache(CachePolicy::Disabled);
    linker
}

#[test]
fn undefined_cpp_symbols_are_demangled() {
    // `scale` is a C++ function (no `extern "C"`): its symbol is mangled.
    let e = err(offline()
        .add_cuda_source(
            "__device__ float scale(float x, int k);\n\
             extern \"C\" __global__ void uses_scale(float* p) { p[0] = scale(p[0], 2); }",
            "caller.cu",
        )
        .link());
    let Error::UndefinedSymbol { symbol, .. } = &e else {
        panic!("expected UndefinedSymbol, got {e}")
    };
    assert_eq!(symbol, "_Z5scalefi");
    assert!(
        e.to_string().contains("`_Z5scalefi` (C++: `scale(float, int)`)"),
        "{e}"
    );
}

#[test]
fn duplicate_cpp_symbols_name_inputs_and_demangle() {
    let def = "__device__ float twice(float x) { return 2.0f * x; }\n";
    let e = err(offline()
        .add_cuda_source(def, "a.cu")
        .add_cuda_source(&format!("// another copy\n{def}"), "b.cu")
        .link());
    let Error::DuplicateSymbol {
        symbol, defined_in, ..
    } = &e
    else {
        panic!("expected DuplicateSymbol, got {e}")
    };
    assert_eq!(symbol, "_Z5twicef");
    assert_eq!(defined_in, &["a.cu", "b.cu"]);
    let shown = e.to_string();
    assert!(shown.contains("(C++: `twice(float)`)"), "{shown}");
    assert!(!shown.contains("(none)"), "{shown}");
    assert_eq!(demangle("_Z5twicef").as_deref(), Some("twice(float)"));
}

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
        e.to_string()
            .contains("`_Z5scalefi` (C++: `scale(float, int)`)"),
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

/// CUDA 13's CCCL headers (`<cuda/std/...>`, CUB) compile without extra options.
#[test]
fn cuda_13_cccl_headers_compile_without_options() {
    let source = "#include <cuda/std/cstdint>\n\
                  #include <cuda/std/limits>\n\
                  #include <cub/warp/warp_reduce.cuh>\n\
                  extern \"C\" __global__ void warp_sum(const float* in, float* out) {\n\
                      using Reduce = cub::WarpReduce<float>;\n\
                      __shared__ typename Reduce::TempStorage tmp;\n\
                      cuda::std::int32_t lane = threadIdx.x;\n\
                      float s = Reduce(tmp).Sum(in[lane]);\n\
                      if (lane == 0) out[0] = s + cuda::std::numeric_limits<float>::epsilon() * 0.0f;\n\
                  }\n";
    let image = ok(offline().add_cuda_source(source, "cccl.cu").link());
    assert!(
        ok(image.entry_points()).iter().any(|e| e == "warp_sum"),
        "the kernel is in the image"
    );
}

/// A header NVRTC cannot find is named with the call that fixes it.
#[test]
fn a_missing_header_says_which_call_fixes_it() {
    let e = err(offline()
        .add_cuda_source(
            "#include \"my_helpers.h\"\nextern \"C\" __device__ int f(float* r) { *r = HELPER; return 0; }",
            "uses_header.cu",
        )
        .link());
    let Error::NvrtcMissingHeader { header, .. } = &e else {
        panic!("expected NvrtcMissingHeader, got {e}")
    };
    assert_eq!(header, "my_helpers.h");
    let shown = e.to_string();
    assert!(
        shown.contains("Linker::include_dir") && shown.contains("Linker::header(\"my_helpers.h\""),
        "{shown}"
    );
    // With the header given, it compiles.
    ok(offline()
        .header("my_helpers.h", "#define HELPER 1.0f\n")
        .add_cuda_source(
            "#include \"my_helpers.h\"\nextern \"C\" __device__ int f(float* r) { *r = HELPER; return 0; }",
            "uses_header.cu",
        )
        .link());
}

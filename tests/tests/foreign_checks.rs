//! Foreign declarations checked against their definitions, without a GPU: one test per bad
//! definition (NVRTC compiles the `.cu` with the declarations' prototypes; PTX parameter
//! lists are compared), the unchecked acknowledgement for binary inputs, and the simulator's
//! link.
//!
//! Needs NVRTC and nvJitLink (`cargo xtask doctor`), like `link_offline.rs`.

mod link_support;

use gpukernel_runtime::Error;
use gpukernel_runtime::link::{
    Arch, CachePolicy, CudaOutput, ForeignAbi, ForeignDecl, InputKind, Linker, compile_cuda,
};
use link_support::{PTX, artifacts, err, ok, source};

fn offline() -> Linker {
    let mut linker = ok(Linker::for_arch("sm_90"));
    linker.cache(CachePolicy::Disabled);
    linker
}

/// Links `multiply_vectors` (which calls `mul_f32_f32(f32, f32) -> f32`) or another kernel
/// with `source` as the definition.
fn link_with(kernel: &str, source: &str) -> Result<(), Error> {
    offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &[kernel])
        .add_cuda_source(source, "bad.cu")
        .link()
        .map(|_| ())
}

/// The mismatch's fields, or a panic naming what came instead.
#[track_caller]
fn mismatch(e: &Error) -> (&str, &str, &str, &str) {
    match e {
        Error::ForeignSignatureMismatch(m) => {
            (&m.symbol, &m.declared_at, &m.expected, &m.defined_at)
        }
        other => panic!("expected ForeignSignatureMismatch, got {other}\n{other:?}"),
    }
}

#[test]
fn the_manifest_is_in_the_kernels_ptx() {
    let decls = ForeignDecl::from_ptx(PTX);
    let mul = decls.iter().find(|d| d.symbol == "mul_f32_f32").unwrap();
    assert_eq!(mul.abi, ForeignAbi::Numba);
    assert!(
        mul.declared_at.contains("kernels/src/ffi.rs:"),
        "{}",
        mul.declared_at
    );
    assert_eq!(
        mul.c_declaration(),
        "extern \"C\" __device__ int mul_f32_f32(float*, float, float)"
    );
    let axpy = decls.iter().find(|d| d.symbol == "axpy_c").unwrap();
    assert_eq!(axpy.abi, ForeignAbi::C);
    assert_eq!(
        axpy.c_declaration(),
        "extern \"C\" __device__ float axpy_c(float, float, float)"
    );
    let dot = decls.iter().find(|d| d.symbol == "dot2").unwrap();
    assert_eq!(dot.args, ["struct Float2", "struct Float2"]);
}

#[test]
fn matching_definitions_link_every_abi_and_spelling() {
    // functions.cu as shipped: scalars, pointers, structs (checked by size), a unit return.
    ok(offline()
        .add_ptx_kernels(
            PTX,
            "kernels.ptx",
            &[
                "multiply_vectors",
                "sum_rows",
                "dot_with",
                "swap_and_scale",
                "add_through_pointer",
                "axpy_with_c_abi",
            ],
        )
        .add_file(source("functions.cu"))
        .link());
    // Another C spelling of the same ABI types (`float*` for `const float*`, `int` for
    // `int32_t`) is not a mismatch.
    ok(link_with(
        "sum_rows",
        "extern \"C\" __device__ int sum_reduce(float* ret, float* a, int n) { *ret = a[0] + n; return 0; }",
    ));
}

#[test]
fn wrong_argument_types_name_both_sides() {
    let e = err(link_with(
        "multiply_vectors",
        "// a comment\nextern \"C\" __device__ int mul_f32_f32(double* ret, double a, double b) {\n  *ret = a * b; return 0;\n}\n",
    ));
    let (symbol, declared_at, expected, defined_at) = mismatch(&e);
    assert_eq!(symbol, "mul_f32_f32");
    assert!(declared_at.contains("ffi.rs:"), "{declared_at}");
    assert_eq!(
        expected,
        "extern \"C\" __device__ int mul_f32_f32(float*, float, float)"
    );
    assert_eq!(defined_at, "bad.cu:2", "{e}");
    let shown = e.to_string();
    assert!(
        shown.contains("does not match its Rust declaration") && shown.contains("hint:"),
        "{shown}"
    );
}

#[test]
fn wrong_argument_count_is_a_mismatch() {
    let e = err(link_with(
        "multiply_vectors",
        "extern \"C\" __device__ int mul_f32_f32(float* ret, float a) { *ret = a; return 0; }",
    ));
    assert_eq!(mismatch(&e).3, "bad.cu:1", "{e}");
}

#[test]
fn wrong_return_type_is_a_mismatch() {
    // Numba's ABI returns an `int` status.
    let e = err(link_with(
        "multiply_vectors",
        "extern \"C\" __device__ float mul_f32_f32(float* ret, float a, float b) { return a * b; }",
    ));
    assert_eq!(mismatch(&e).0, "mul_f32_f32", "{e}");
    // A C-ABI function returning `double` for `-> f32`.
    let e = err(link_with(
        "axpy_with_c_abi",
        "extern \"C\" __device__ double axpy_c(float a, float x, float y) { return a * x + y; }",
    ));
    assert_eq!(mismatch(&e).0, "axpy_c", "{e}");
}

#[test]
fn c_abi_declaration_against_a_numba_definition_is_a_mismatch() {
    let e = err(link_with(
        "axpy_with_c_abi",
        "extern \"C\" __device__ int axpy_c(float* ret, float a, float x, float y) { *ret = a * x + y; return 0; }",
    ));
    let (symbol, _, expected, _) = mismatch(&e);
    assert_eq!(symbol, "axpy_c");
    assert_eq!(
        expected,
        "extern \"C\" __device__ float axpy_c(float, float, float)"
    );
}

#[test]
fn ptx_definitions_are_compared_by_parameter_list() {
    // The wrong definition compiled to PTX on its own (no declarations to check against).
    let bad = ok(compile_cuda(
        "extern \"C\" __device__ int mul_f32_f32(double* ret, double a, double b) { *ret = a * b; return 0; }",
        "bad_mul.cu",
        &[],
        Arch::from_compute_capability(9, 0),
        &[],
        CudaOutput::Ptx,
    ));
    let bad = String::from_utf8(bad).unwrap();
    let e = err(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_ptx(&bad, "bad_mul.ptx")
        .link());
    let (symbol, _, _, defined_at) = mismatch(&e);
    assert_eq!((symbol, defined_at), ("mul_f32_f32", "bad_mul.ptx"));
    assert!(
        e.to_string().contains("(64-bit, 64-bit, 64-bit)"),
        "the parameter lists are shown: {e}"
    );
    // The simulator's link checks PTX inputs the same way.
    let e = err(Linker::for_simulator()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_ptx(&bad, "bad_mul.ptx")
        .link());
    assert_eq!(mismatch(&e).0, "mul_f32_f32");
}

#[test]
fn binary_inputs_defining_declared_functions_need_the_unchecked_call() {
    let arts = artifacts();
    for (kernel, path) in [
        ("add_one_cubin", &arts.cubin),
        ("affine_fatbin", &arts.fatbin),
        ("square_archive", &arts.archive),
        ("sub_one_object", &arts.object),
    ] {
        let e = err(offline()
            .add_ptx_kernels(PTX, "kernels.ptx", &[kernel])
            .add_file(path)
            .link());
        let Error::UncheckedForeignDefinitions { inputs, symbols } = &e else {
            panic!("{kernel}: expected UncheckedForeignDefinitions, got {e}")
        };
        assert_eq!(inputs.len(), 1, "{e}");
        assert_eq!(symbols.len(), 1, "{e}");
        assert!(e.to_string().contains("add_file_unchecked"), "{e}");
        // Acknowledged, it links.
        let mut linker = offline();
        linker.add_ptx_kernels(PTX, "kernels.ptx", &[kernel]);
        // SAFETY: built from cuda/*_lib.cu, whose definitions match src/ffi.rs.
        unsafe { linker.add_file_unchecked(path) };
        ok(linker.link());
    }
    // A binary input linked with kernels that declare nothing it could define is fine.
    let cubin = std::fs::read(&arts.cubin).unwrap();
    ok(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"))
        .add_data(InputKind::Cubin, cubin.clone(), "unrelated.cubin")
        .link());
    // The simulator asks for the same acknowledgement.
    let e = err(Linker::for_simulator()
        .add_ptx_kernels(PTX, "kernels.ptx", &["add_one_cubin"])
        .add_data(InputKind::Cubin, cubin.clone(), "cubin_lib.cubin")
        .link());
    assert!(
        matches!(e, Error::UncheckedForeignDefinitions { .. }),
        "{e}"
    );
    let mut sim = Linker::for_simulator();
    sim.add_ptx_kernels(PTX, "kernels.ptx", &["add_one_cubin"]);
    // SAFETY: as above.
    unsafe { sim.add_data_unchecked(InputKind::Cubin, cubin, "cubin_lib.cubin") };
    ok(sim.link());
}

#[test]
fn only_the_selected_kernels_declarations_are_checked() {
    // A wrong `cubin_add_one` does not matter to a link of `multiply_vectors` alone.
    ok(offline()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file(source("functions.cu"))
        .add_cuda_source(
            "extern \"C\" __device__ int cubin_add_one(double* ret, double x) { *ret = x; return 0; }",
            "other.cu",
        )
        .link());
}

//! Struct layouts the foreign-declaration check accepted although the C struct differs from
//! the Rust one: the fields of a tuple struct (named `0`, `1`: no C field can have those
//! names, so none was checked; now such a struct is refused), and fields that are arrays or
//! structs (checked by offset and size only, so an array of `int` passes for an array of
//! `f32`, and a nested struct of other field types for the Rust one: still accepted). Each record is as `declare_device!` writes it for the Rust
//! struct named in the case; each C definition passes a struct of the same size and alignment
//! whose fields mean something else, so the foreign code would read the Rust values as other
//! types. The run-time Linker (NVRTC) must refuse each.

mod link_support;

use gpukernel_runtime::Error;
use gpukernel_runtime::link::{CachePolicy, Linker};
use link_support::ok;

/// A PTX declaring `f(struct S)` (Numba's ABI, returning `int`) with `layout`'s record.
fn ptx(size: usize, layout: &str) -> String {
    let record = format!(
        "gpukernel-foreign-v1\nsymbol=take_s\nabi=numba\nat=src/layout.rs:7\nret=int\narg=struct S\n{layout}"
    );
    let bytes: Vec<String> = record.bytes().map(|b| b.to_string()).collect();
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\n\
         .extern .func (.param .b32 func_retval0) take_s(\n\t.param .b64 take_s_r,\n\t.param .align 4 .b8 take_s_a[{size}]\n);\n\
         .visible .global .align 1 .b8 __gpukernel_foreign_take_s_1[{}] = {{{}}};\n\
         \n.visible .entry layout_kernel()\n{{\n\tret;\n}}\n",
        bytes.len(),
        bytes.join(", ")
    )
}

fn link(ptx: &str, source: &str) -> Result<(), Error> {
    let mut linker = ok(Linker::for_arch("sm_90"));
    linker.cache(CachePolicy::Disabled);
    linker.add_ptx(ptx, "kernels.ptx");
    linker.add_cuda_source(source, "defs.cu");
    linker.link().map(|_| ())
}

fn definition(s: &str) -> String {
    format!(
        "{s}\nextern \"C\" __device__ int take_s(int* r, S s) {{ (void)s; *r = 0; return 0; }}\n"
    )
}

/// (what, the record of the Rust struct, its size, a C struct that fits, one that does not).
const CASES: &[(&str, &str, usize, &str, &str)] = &[
    (
        "array field `struct S { v: [f32; 4] }`",
        "struct=S:16:4\nfield=S:v:0:16:7\n",
        16,
        "struct S { float v[4]; };",
        "struct S { int v[4]; };",
    ),
    (
        "nested struct `struct S { inner: Inner { a: f32, b: u32 }, c: u32 }`",
        "struct=S:12:4\nfield=S:inner:0:8:8\nfield=S:c:8:4:1\n",
        12,
        "struct Inner { float a; unsigned b; };\nstruct S { Inner inner; unsigned c; };",
        "struct Inner { unsigned a; float b; };\nstruct S { Inner inner; unsigned c; };",
    ),
];

#[test]
fn fitting_structs_link() {
    for &(what, layout, size, fits, _) in CASES {
        link(&ptx(size, layout), &definition(fits)).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

/// The record of `#[derive(DeviceCopy)] struct S(f32, u32)`.
const TUPLE: &str = "struct=S:8:4\nfield=S:0:0:4:3\nfield=S:1:4:4:1\n";

#[test]
fn a_tuple_struct_is_refused_with_its_field_named() {
    for c in [
        "struct S { unsigned a; float b; };",
        "struct S { float a; unsigned b; };",
    ] {
        match link(&ptx(8, TUPLE), &definition(c)) {
            Err(Error::ForeignSignatureMismatch(m)) => assert!(
                m.detail.contains("a field named '0' (a tuple struct)")
                    && m.detail.contains("give the Rust struct named fields"),
                "{}",
                m.detail
            ),
            other => panic!("`{c}` accepted for a tuple struct: {other:?}"),
        }
    }
    // The simulator's Linker: the same refusal.
    let e = Linker::for_simulator()
        .add_ptx(&ptx(8, TUPLE), "kernels.ptx")
        .add_cuda_source(&definition("struct S { unsigned a; float b; };"), "defs.cu")
        .link();
    assert!(
        matches!(&e, Err(Error::ForeignSignatureMismatch(m)) if m.detail.contains("tuple struct")),
        "{e:?}"
    );
}

#[test]
#[ignore = "hole: array and struct fields are checked by offset and size only, not their \
            element or field types (the record's field kind is `bytes`: gpukernel-ffi-check \
            record.rs field_c_type, check.rs layout_asserts)"]
fn structs_whose_fields_mean_other_types_are_refused() {
    let mut accepted = Vec::new();
    for &(what, layout, size, _, wrong) in CASES {
        match link(&ptx(size, layout), &definition(wrong)) {
            Err(Error::ForeignSignatureMismatch(_)) => {}
            other => accepted.push(format!("{what}: `{wrong}`: {other:?}")),
        }
    }
    assert!(accepted.is_empty(), "accepted:\n{}", accepted.join("\n"));
}

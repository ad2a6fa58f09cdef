//! Foreign structs the layout check accepted although the C struct means other types than the
//! Rust one: a C++ class with an `operator[]` in place of a Rust array field. The record names
//! an array's first element (`v[0]`, `m[0][0]`), and `s.v[0]` of such a class is a member of
//! the element's type at the element's offset, so the check passed while the class's other
//! members (Rust's `v[1]`, ...) were of other types. Now a field whose element is recorded must
//! be a built-in array, on the run-time Linker's path (NVRTC) and the simulator's (the host's
//! C++ compiler). And a Rust `f16` / `bf16` field: any 2-byte class passed for it.
mod link_support;

use gpukernel_runtime::Error;
use gpukernel_runtime::link::Linker;
use link_support::{foreign_struct_ptx as ptx, link_foreign_struct as link};

fn sim(ptx: &str, source: &str) -> Result<(), Error> {
    Linker::for_simulator()
        .add_ptx(ptx, "kernels.ptx")
        .add_cuda_source(source, "defs.cu")
        .link()
        .map(|_| ())
}

fn definition(s: &str) -> String {
    format!(
        "{s}\nextern \"C\" __device__ int take_s(int* r, S s) {{ (void)s; *r = 0; return 0; }}\n"
    )
}

mod rust {
    //! The Rust structs of the cases, as `declare_device!` users write them.
    use gpukernel_device::DeviceCopy;

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct Array {
        pub v: [f32; 4],
    }

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct Matrix {
        pub m: [[i32; 2]; 2],
    }

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct Halves {
        pub h: gpukernel_device::half::f16,
        pub b: gpukernel_device::half::bf16,
    }

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct Flag {
        pub ok: bool,
    }
}

/// The record lines `declare_device!` writes for `T` passed as `struct S`, and `T`'s size.
fn record<T: gpukernel_device::DeviceCopy>() -> (String, usize) {
    use gpukernel_device::__private::{ForeignStruct, foreign_record};
    let s = [ForeignStruct::of::<T>("S")];
    let r: [u8; 512] = foreign_record::<512>("", &s);
    let text = std::str::from_utf8(&r).unwrap().trim_end_matches('\0');
    (text.to_owned(), std::mem::size_of::<T>())
}

/// (what, the Rust struct's record and size, the C struct that fits, a class indexed like it).
fn cases() -> Vec<(&'static str, (String, usize), &'static str, &'static str)> {
    vec![
        (
            "`v: [f32; 4]`",
            record::<rust::Array>(),
            "struct S { float v[4]; };",
            "struct V { float a; int b; float c; int d;\n\
             __host__ __device__ constexpr float& operator[](int) { return a; } };\n\
             struct S { V v; };",
        ),
        (
            "`m: [[i32; 2]; 2]`",
            record::<rust::Matrix>(),
            "struct S { int m[2][2]; };",
            "struct P { int x; float y;\n\
             __host__ __device__ constexpr int& operator[](int) { return x; } };\n\
             struct S { P m[2]; };",
        ),
    ]
}

#[test]
fn a_class_indexed_like_an_array_is_refused() {
    for (what, (layout, size), fits, class) in cases() {
        let p = ptx(size, &layout);
        link(&p, &definition(fits)).unwrap_or_else(|e| panic!("{what}: {e}"));
        sim(&p, &definition(fits)).unwrap_or_else(|e| panic!("{what}, simulator: {e}"));
        for (path, r) in [
            ("NVRTC", link(&p, &definition(class))),
            ("simulator", sim(&p, &definition(class))),
        ] {
            match r {
                Err(Error::ForeignSignatureMismatch(m)) => assert!(
                    m.detail.contains("must be a C array"),
                    "{what} ({path}): {}",
                    m.detail
                ),
                other => panic!("{what} ({path}): a class with operator[] accepted: {other:?}"),
            }
        }
    }
}

/// A Rust `f16` / `bf16` field is CUDA's `__half` / `__nv_bfloat16`, not any class of two
/// bytes aligned to two: two `bool`s (the f16's bits read as bools) and the other 16-bit float
/// (an f16 read as a bfloat16) were accepted, the field's check comparing only the size.
#[test]
fn a_half_field_is_cudas_class_of_its_kind_only() {
    let (layout, size) = record::<rust::Halves>();
    let p = ptx(size, &layout);
    let fits = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n\
                struct S { __half h; __nv_bfloat16 b; };";
    link(&p, &definition(fits)).unwrap_or_else(|e| panic!("{e}"));
    sim(&p, &definition(fits)).unwrap_or_else(|e| panic!("simulator: {e}"));
    for wrong in [
        "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n\
         struct S { __nv_bfloat16 h; __half b; };",
        "struct alignas(2) Two { bool a; bool b; };\nstruct S { Two h; Two b; };",
        "struct Bits { unsigned short x; };\nstruct S { Bits h; Bits b; };",
    ] {
        for (path, r) in [
            ("NVRTC", link(&p, &definition(wrong))),
            ("simulator", sim(&p, &definition(wrong))),
        ] {
            match r {
                Err(Error::ForeignSignatureMismatch(m)) => assert!(
                    m.detail.contains("Rust's field 'S.h'"),
                    "`{wrong}` ({path}): {}",
                    m.detail
                ),
                other => panic!("`{wrong}` ({path}) accepted for f16 / bf16 fields: {other:?}"),
            }
        }
    }
}

/// C members the Rust struct does not name are not seen: an anonymous union lays a `unsigned
/// char` over Rust's `bool`, so the foreign code may return a `bool` holding 2.
#[test]
#[ignore = "hole: the check finds each Rust field in the C struct but cannot enumerate the C \
            struct's members, so an anonymous union member overlapping a field (a byte over a \
            bool) passes"]
fn a_union_member_over_a_bool_field_is_refused() {
    let (layout, size) = record::<rust::Flag>();
    let c = "struct S { union { bool ok; unsigned char raw; }; };";
    assert!(
        matches!(
            link(&ptx(size, &layout), &definition(c)),
            Err(Error::ForeignSignatureMismatch(_))
        ),
        "an anonymous union over a bool field accepted"
    );
}

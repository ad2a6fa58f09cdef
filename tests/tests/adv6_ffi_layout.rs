//! Foreign structs the layout check accepted although the C struct means other types than the
//! Rust one: a C++ class with an `operator[]` in place of a Rust array field. The record names
//! an array's first element (`v[0]`, `m[0][0]`), and `s.v[0]` of such a class is a member of
//! the element's type at the element's offset, so the check passed while the class's other
//! members (Rust's `v[1]`, ...) were of other types. Now a field whose element is recorded must
//! be a built-in array, on the run-time Linker's path (NVRTC) and the simulator's (the host's
//! C++ compiler). And a Rust `f16` / `bf16` field: any 2-byte class passed for it.
//!
//! A C union laid over a Rust `bool` (the check asked only about the members Rust names, so a
//! `union { bool ok; unsigned char raw; }` passed, and the foreign code could hand back a
//! `bool` holding 2): a struct with a `bool` anywhere inside must now hold no union. And a C
//! bit-field, reference or static member where Rust has a field stopped the compile inside the
//! check's own header; each is now a mismatch that names the field and what it is.
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

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct Flags {
        pub n: u32,
        pub v: [bool; 4],
    }

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct Nested {
        pub x: f32,
        pub inner: Flag,
    }

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct Pair {
        pub a: i32,
        pub b: f32,
    }

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct Outer {
        pub p: [Pair; 2],
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

/// The host compile of the simulator's library (`nvptx_builder::host_cc`, the host's C++
/// compiler through `cc`): the checks of the declaration in `ptx` after `source`.
#[cfg(target_os = "linux")]
fn host(ptx: &str, source: &str) -> Result<(), String> {
    let dir = link_support::temp_dir("adv6-host");
    let path = dir.join("defs.cu");
    std::fs::write(&path, source).unwrap();
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let mut build = cc::Build::new();
    build
        .target(&triple)
        .host(&triple)
        .opt_level(0)
        .debug(false)
        .cargo_metadata(false);
    let decls = nvptx_builder::foreign::declarations_in_ptx(ptx);
    assert_eq!(decls.len(), 1, "the record of take_s");
    match nvptx_builder::host_cc::HostCc::new(build, &dir)
        .cargo_metadata(false)
        .declarations(&decls)
        .check_all(&[&path])
    {
        Ok(()) => Ok(()),
        Err(nvptx_builder::Error::ForeignSignatureMismatch { symbol, detail, .. }) => {
            assert_eq!(symbol, "take_s");
            Err(detail)
        }
        Err(e) => panic!("the host compile failed otherwise than by a mismatch: {e}\n{source}"),
    }
}

/// Checks `definition(c)` for the Rust struct `T` on every path that compiles it: the run-time
/// Linker (NVRTC), the simulator's Linker (NVRTC) and the simulator's host compile (the host's
/// C++ compiler). `Ok` when every path accepts it, else each path's mismatch detail (a refusal
/// that is no mismatch, or a path that disagrees, fails the test).
fn every_path<T: gpukernel_device::DeviceCopy>(c: &str) -> Result<(), Vec<String>> {
    let (layout, size) = record::<T>();
    let p = ptx(size, &layout);
    let source = definition(c);
    let detail = |path: &str, r: Result<(), Error>| match r {
        Ok(()) => None,
        Err(Error::ForeignSignatureMismatch(m)) => {
            assert_eq!(m.symbol, "take_s", "{path}");
            Some(m.detail)
        }
        Err(e) => panic!("{path}: refused otherwise than by a mismatch: {e}\n{source}"),
    };
    let mut refusals = vec![
        ("NVRTC", detail("NVRTC", link(&p, &source))),
        ("simulator", detail("simulator", sim(&p, &source))),
    ];
    #[cfg(target_os = "linux")]
    refusals.push(("host compile", host(&p, &source).err()));
    if refusals.iter().all(|(_, r)| r.is_none()) {
        return Ok(());
    }
    let accepted: Vec<_> = refusals.iter().filter(|(_, r)| r.is_none()).collect();
    assert!(
        accepted.is_empty(),
        "the paths disagree on `{c}`: {refusals:?}"
    );
    Err(refusals.into_iter().filter_map(|(_, r)| r).collect())
}

/// Asserts that every path refuses `c` for `T` with a detail containing each of `names`.
#[track_caller]
fn refused<T: gpukernel_device::DeviceCopy>(c: &str, names: &[&str]) {
    match every_path::<T>(c) {
        Ok(()) => panic!("`{c}` accepted"),
        Err(details) => {
            for d in details {
                for n in names {
                    assert!(d.contains(n), "`{c}`: no '{n}' in: {d}");
                }
            }
        }
    }
}

/// C members the Rust struct does not name were not seen: an anonymous union lays an
/// `unsigned char` over Rust's `bool`, so the foreign code may return a `bool` holding 2. A
/// struct with a `bool` anywhere inside (a field, a nested struct's field, an array's
/// elements) must hold no union, named or anonymous, however deep; a plain one still fits.
#[test]
fn a_union_member_over_a_bool_field_is_refused() {
    let union = "must be plain: no union";
    every_path::<rust::Flag>("struct S { bool ok; };").unwrap();
    refused::<rust::Flag>(
        "struct S { union { bool ok; unsigned char raw; }; };",
        &[union, "Rust's 'S' holds a 'bool' ('S.ok')"],
    );
    refused::<rust::Flag>(
        "struct S { union { struct { bool ok; }; unsigned char raw; }; };",
        &[union],
    );
    every_path::<rust::Flags>("struct S { unsigned n; bool v[4]; };").unwrap();
    refused::<rust::Flags>(
        "struct S { unsigned n; union { bool v[4]; unsigned w; }; };",
        &[union, "('S.v[0]')"],
    );
    every_path::<rust::Nested>("struct Flag { bool ok; };\nstruct S { float x; Flag inner; };")
        .unwrap();
    refused::<rust::Nested>(
        "union Flag { bool ok; unsigned char raw; };\nstruct S { float x; Flag inner; };",
        &[union, "('S.inner.ok')"],
    );
    // A struct without a `bool` may still lay members over each other: every byte pattern
    // is a value of its fields.
    every_path::<rust::Pair>("struct S { union { int a; float a_bits; }; float b; };").unwrap();
}

/// A C bit-field, reference, static member or enumerator of a Rust field's name stopped the
/// compile in the check's own header (`offsetof` of a bit-field or a reference cannot be taken),
/// a compile error that named neither the struct nor the field; each is now a mismatch that
/// does, on every path, also inside nested structs and array elements.
#[test]
fn a_bit_field_a_reference_or_a_static_member_is_named() {
    every_path::<rust::Pair>("struct S { int a; float b; };").unwrap();
    for (c, names) in [
        (
            "struct S { int a : 32; float b; };",
            ["its field 'a' is a bit-field", "Rust's field 'S.a'"],
        ),
        (
            "struct S { int& a; float b; };",
            [
                "its field 'a' is a reference, not a value",
                "Rust's field 'S.a'",
            ],
        ),
        (
            "struct S { int a; float& b; };",
            [
                "its field 'b' is a reference, not a value",
                "Rust's field 'S.b'",
            ],
        ),
        (
            "struct S { static const int a = 1; int x; float b; };",
            ["its field 'a' is a static member", "Rust's field 'S.a'"],
        ),
        // A member named like the field that is no object of the struct's bytes.
        (
            "struct S { enum { a }; int x; float b; };",
            ["has no field 'a'", "Rust's field 'S.a'"],
        ),
    ] {
        refused::<rust::Pair>(c, &names);
    }
    every_path::<rust::Outer>("struct P { int a; float b; };\nstruct S { P p[2]; };").unwrap();
    refused::<rust::Outer>(
        "struct P { int a : 32; float b; };\nstruct S { P p[2]; };",
        &[
            "its field 'p[0].a' is a bit-field",
            "Rust's field 'S.p[0].a'",
        ],
    );
}

//! Struct layouts the foreign-declaration check accepted although the C struct differs from
//! the Rust one: the fields of a tuple struct (named `0`, `1`: no C field can have those
//! names, so none was checked; now such a struct is refused), and fields that are arrays or
//! structs (once checked by offset and size only, so an array of `int` passed for an array of
//! `f32`, and a nested struct of other field types for the Rust one; now the record follows
//! nested fields and array elements). Each record is the one `declare_device!` writes for the
//! Rust struct of the case; each wrong C definition passes a struct of the same size and
//! alignment whose fields mean something else, so the foreign code would read the Rust values
//! as other types. The run-time Linker (NVRTC) must refuse each.

mod link_support;

use gpukernel_runtime::Error;
use gpukernel_runtime::link::Linker;
use link_support::{foreign_struct_ptx as ptx, link_foreign_struct as link};

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
    pub struct Inner {
        pub a: f32,
        pub b: u32,
    }

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct Nested {
        pub inner: Inner,
        pub c: u32,
    }

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct ArrayOfStructs {
        pub p: [Inner; 2],
        pub m: [[i32; 2]; 2],
    }

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct TupleInner(pub f32, pub u32);

    #[repr(C)]
    #[derive(Clone, Copy, DeviceCopy)]
    pub struct NestedTuple {
        pub t: TupleInner,
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

/// (what, the Rust struct's record and size, a C struct that fits, ones that do not).
type Case = (
    &'static str,
    (String, usize),
    &'static str,
    Vec<&'static str>,
);

fn cases() -> Vec<Case> {
    use rust::*;
    vec![
        (
            "array field `struct S { v: [f32; 4] }`",
            record::<Array>(),
            "struct S { float v[4]; };",
            vec![
                "struct S { int v[4]; };",
                "struct S { unsigned v[4]; };",
                "struct S { short v[8]; };",
            ],
        ),
        (
            "nested struct `struct S { inner: Inner { a: f32, b: u32 }, c: u32 }`",
            record::<Nested>(),
            "struct Inner { float a; unsigned b; };\nstruct S { Inner inner; unsigned c; };",
            vec![
                "struct Inner { unsigned a; float b; };\nstruct S { Inner inner; unsigned c; };",
                "struct Inner { float b; unsigned a; };\nstruct S { Inner inner; unsigned c; };",
                "struct S { float inner[2]; unsigned c; };",
            ],
        ),
        (
            "arrays of structs and of arrays `struct S { p: [Inner; 2], m: [[i32; 2]; 2] }`",
            record::<ArrayOfStructs>(),
            "struct Inner { float a; unsigned b; };\nstruct S { Inner p[2]; int m[2][2]; };",
            vec![
                "struct Inner { unsigned a; float b; };\nstruct S { Inner p[2]; int m[2][2]; };",
                "struct Inner { float a; unsigned b; };\nstruct S { Inner p[2]; float m[2][2]; };",
                "struct Inner { float a; unsigned b; };\nstruct S { Inner p[2]; int m[4]; };",
            ],
        ),
    ]
}

/// The simulator's Linker compiles the check with the host's C++ compiler
/// (`__builtin_offsetof` of a designator): the same answers.
#[test]
fn the_simulator_linker_checks_nested_fields_too() {
    let sim = |layout: &str, size: usize, c: &str| {
        Linker::for_simulator()
            .add_ptx(&ptx(size, layout), "kernels.ptx")
            .add_cuda_source(&definition(c), "defs.cu")
            .link()
            .map(|_| ())
    };
    for (what, (layout, size), fits, wrongs) in cases() {
        sim(&layout, size, fits).unwrap_or_else(|e| panic!("{what}: {e}"));
        for wrong in wrongs {
            assert!(
                matches!(
                    sim(&layout, size, wrong),
                    Err(Error::ForeignSignatureMismatch(_))
                ),
                "{what}: `{wrong}` accepted by the simulator's Linker"
            );
        }
    }
}

#[test]
fn the_record_follows_nested_structs_and_array_elements() {
    let (r, _) = record::<rust::ArrayOfStructs>();
    assert_eq!(
        r,
        "struct=S:32:4\nfield=S:p:0:16:7\nfield=S:p[0]:0:8:8\nfield=S:p[0].a:0:4:3\n\
         field=S:p[0].b:4:4:1\nfield=S:m:16:16:7\nfield=S:m[0]:16:8:7\nfield=S:m[0][0]:16:4:2\n"
    );
}

#[test]
fn fitting_structs_link() {
    for (what, (layout, size), fits, _) in cases() {
        link(&ptx(size, &layout), &definition(fits)).unwrap_or_else(|e| panic!("{what}: {e}"));
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
fn structs_whose_fields_mean_other_types_are_refused() {
    let mut accepted = Vec::new();
    for (what, (layout, size), _, wrongs) in cases() {
        for wrong in wrongs {
            match link(&ptx(size, &layout), &definition(wrong)) {
                Err(Error::ForeignSignatureMismatch(m)) => assert!(
                    m.detail.contains("Rust's field 'S."),
                    "{what}: `{wrong}`: the message names no field: {}",
                    m.detail
                ),
                other => accepted.push(format!("{what}: `{wrong}`: {other:?}")),
            }
        }
    }
    assert!(accepted.is_empty(), "accepted:\n{}", accepted.join("\n"));
}

#[test]
fn a_tuple_struct_inside_a_named_field_is_refused() {
    let (layout, size) = record::<rust::NestedTuple>();
    assert!(layout.contains("field=S:t.0:0:4:3"), "{layout}");
    match link(
        &ptx(size, &layout),
        &definition("struct T { float a; unsigned b; };\nstruct S { T t; };"),
    ) {
        Err(Error::ForeignSignatureMismatch(m)) => {
            assert!(m.detail.contains("a field named 't.0'"), "{}", m.detail)
        }
        other => panic!("a tuple struct inside a field accepted: {other:?}"),
    }
}

//! Foreign declarations × definitions, as a matrix: every type a `declare_device!` entry
//! accepts (8- to 64-bit integers, `isize`/`usize`, `f32`/`f64`, `bool`, `f16`/`bf16`,
//! pointers, `#[repr(C)]` structs), in both ABIs (Numba's and `extern "C"`), against
//! definitions spelled the way C programmers spell them (`int`, `signed`, `long`, `unsigned`,
//! `std::int32_t`, a typedef), with and without the standard integer header, on every path that
//! compiles or links a `.cu`: the run-time Linker (NVRTC; a `.cu` in memory, a `.cu` file, and
//! the PTX compiled from it), the simulator's Linker, and the host compile of the simulator's
//! library (`nvptx_builder::host_cc`). Every matching spelling links; every mismatch (`f64`
//! against `float`, `i32` against `unsigned`, the return slot of `-> u64` written as
//! `uint32_t*`, a pointer to `float` against a pointer to `int`, ...) is refused with
//! `ForeignSignatureMismatch` naming the Rust declaration, the definition's line and the
//! parameter.
//!
//! The declarations are records as `declare_device!` writes them (`gpukernel-macros`'
//! `foreign/manifest.rs`; its unit test pins the same C spellings) in a PTX that declares the
//! functions `.extern`, as the kernels' PTX does.
//!
//! Needs NVRTC and nvJitLink (`cargo xtask doctor`) and a host C++ compiler. The tests at the
//! end run kernels that call integer-signature definitions on the simulator and, with the
//! `gpu` feature, on a GPU.

mod link_support;

use std::path::{Path, PathBuf};

use gpukernel_runtime::Error;
use gpukernel_runtime::link::{CachePolicy, CudaOutput, Linker, compile_cuda};
use link_support::{err, ok, temp_dir};

/// One declarable type: its Rust spelling (for messages), the record's C type, its PTX
/// parameter in the kernels' `.extern .func`, C spellings of a definition that fit it
/// (`STD::` is `cuda::std::` for NVRTC and `std::` for the host compiler, with the integer
/// header included), and spellings that do not.
struct Ty {
    rust: &'static str,
    record: &'static str,
    ptx: &'static str,
    fits: &'static [&'static str],
    wrong: &'static [&'static str],
}

const TYPES: &[Ty] = &[
    Ty {
        rust: "i8",
        record: "signed char",
        ptx: ".b32",
        fits: &["signed char", "STD::int8_t"],
        wrong: &["unsigned char", "short"],
    },
    Ty {
        rust: "i16",
        record: "short",
        ptx: ".b32",
        fits: &["short", "short int", "signed short", "STD::int16_t"],
        wrong: &["unsigned short", "int"],
    },
    Ty {
        rust: "i32",
        record: "int",
        ptx: ".b32",
        fits: &["int", "signed", "signed int", "STD::int32_t"],
        wrong: &["unsigned", "long long", "float"],
    },
    Ty {
        rust: "i64",
        record: "long long",
        ptx: ".b64",
        fits: &["long long", "long", "STD::int64_t", "signed long long"],
        wrong: &["unsigned long long", "int", "double"],
    },
    Ty {
        rust: "isize",
        record: "long long",
        ptx: ".b64",
        fits: &["long", "STD::intptr_t", "long long"],
        wrong: &["unsigned long", "int"],
    },
    Ty {
        rust: "u8",
        record: "unsigned char",
        ptx: ".b32",
        fits: &["unsigned char", "STD::uint8_t"],
        wrong: &["signed char", "bool"],
    },
    Ty {
        rust: "u16",
        record: "unsigned short",
        ptx: ".b32",
        fits: &["unsigned short", "STD::uint16_t", "unsigned short int"],
        wrong: &["short", "unsigned"],
    },
    Ty {
        rust: "u32",
        record: "unsigned int",
        ptx: ".b32",
        fits: &["unsigned", "unsigned int", "STD::uint32_t"],
        wrong: &["int", "unsigned long long"],
    },
    Ty {
        rust: "u64",
        record: "unsigned long long",
        ptx: ".b64",
        fits: &["unsigned long long", "unsigned long", "STD::uint64_t"],
        wrong: &["long long", "unsigned", "double"],
    },
    Ty {
        rust: "usize",
        record: "unsigned long long",
        ptx: ".b64",
        fits: &["unsigned long", "STD::uintptr_t", "unsigned long long"],
        wrong: &["long", "unsigned"],
    },
    Ty {
        rust: "f32",
        record: "float",
        ptx: ".f32",
        fits: &["float"],
        wrong: &["double", "int", "unsigned"],
    },
    Ty {
        rust: "f64",
        record: "double",
        ptx: ".f64",
        fits: &["double"],
        wrong: &["float", "long long"],
    },
    Ty {
        rust: "bool",
        record: "bool",
        ptx: ".b32",
        fits: &["bool"],
        wrong: &["unsigned char", "int"],
    },
    Ty {
        rust: "f16",
        record: "struct f16",
        ptx: ".b16",
        fits: &["unsigned short", "STD::uint16_t"],
        wrong: &["short", "float"],
    },
    Ty {
        rust: "bf16",
        record: "struct bf16",
        ptx: ".b16",
        fits: &["unsigned short"],
        wrong: &["short", "float"],
    },
    Ty {
        rust: "*mut f32",
        record: "float*",
        ptx: ".b64",
        fits: &["float*", "const float*"],
        wrong: &["int*", "double*", "float"],
    },
    Ty {
        rust: "*const i32",
        record: "const int*",
        ptx: ".b64",
        fits: &["const int*", "int*", "const STD::int32_t*"],
        wrong: &["const unsigned*", "const long long*"],
    },
    Ty {
        rust: "*mut u64",
        record: "unsigned long long*",
        ptx: ".b64",
        fits: &["unsigned long long*", "unsigned long*", "STD::uint64_t*"],
        wrong: &["unsigned*", "STD::uint32_t*", "long long*"],
    },
    Ty {
        rust: "*mut c_void",
        record: "void*",
        ptx: ".b64",
        fits: &["void*", "float*", "Pair*"],
        wrong: &["unsigned long long", "int"],
    },
    Ty {
        rust: "*const f16",
        record: "const struct f16*",
        ptx: ".b64",
        fits: &["const unsigned short*", "Half*"],
        wrong: &["const float*", "const short*"],
    },
    Ty {
        rust: "Pair",
        record: "struct Pair",
        ptx: ".align 4 .b8 P[8]",
        fits: &["Pair", "const Pair"],
        wrong: &["float", "Pair*"],
    },
    Ty {
        rust: "*mut Pair",
        record: "struct Pair*",
        ptx: ".b64",
        fits: &["Pair*", "const Pair*", "void*"],
        wrong: &["float*", "Pair"],
    },
];

/// The ABIs of a declaration.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Abi {
    Numba,
    C,
}

/// Where a type sits in one declaration `fn(a: T, b: i32) -> T`.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Slot {
    /// The argument `a`.
    Arg,
    /// The return value (Numba's return slot, `T*`).
    Ret,
}

/// One declared function: `fn(a: T, b: i32) -> T`, named after its position in the matrix.
struct Decl {
    symbol: String,
    abi: Abi,
    ty: &'static Ty,
    /// Its line in the (imaginary) Rust file the records name.
    line: usize,
}

fn declarations() -> Vec<Decl> {
    let mut out = Vec::new();
    for abi in [Abi::Numba, Abi::C] {
        for (k, ty) in TYPES.iter().enumerate() {
            let tag = if abi == Abi::Numba { "n" } else { "c" };
            out.push(Decl {
                symbol: format!("m_{tag}_{k}"),
                abi,
                ty,
                line: 100 + out.len(),
            });
        }
    }
    out
}

/// The record `declare_device!` writes for `d` (see `gpukernel-macros`' `manifest.rs`).
fn record(d: &Decl) -> String {
    let abi = if d.abi == Abi::Numba { "numba" } else { "c" };
    format!(
        "gpukernel-foreign-v1\nsymbol={}\nabi={abi}\nat=src/matrix.rs:{}\nret={}\narg={}\narg=int\n",
        d.symbol, d.line, d.ty.record, d.ty.record
    )
}

/// A kernels PTX that declares every function of `decls` `.extern` (as rustc lowers the
/// declarations) and carries their records.
fn kernels_ptx(decls: &[&Decl]) -> String {
    let mut ptx = String::from(".version 8.0\n.target sm_90\n.address_size 64\n\n");
    for d in decls {
        let param = |n: &str| match d.ty.ptx.split_once(" P") {
            Some((head, tail)) => format!(".param {head} {}_{n}{tail}", d.symbol),
            None => format!(".param {} {}_{n}", d.ty.ptx, d.symbol),
        };
        let (ret, mut params) = match d.abi {
            Abi::Numba => (
                "(.param .b32 func_retval0) ".to_owned(),
                vec![format!(".param .b64 {}_r", d.symbol)],
            ),
            Abi::C => (
                match d.ty.ptx.split_once(" P") {
                    Some((head, tail)) => format!("(.param {head} func_retval0{tail}) "),
                    None => format!("(.param {} func_retval0) ", d.ty.ptx),
                },
                Vec::new(),
            ),
        };
        params.push(param("a"));
        params.push(format!(".param .b32 {}_b", d.symbol));
        ptx.push_str(&format!(
            ".extern .func {ret}{}(\n\t{}\n);\n",
            d.symbol,
            params.join(",\n\t")
        ));
        let bytes: Vec<String> = record(d).bytes().map(|b| b.to_string()).collect();
        ptx.push_str(&format!(
            ".visible .global .align 1 .b8 __gpukernel_foreign_{}_1[{}] = {{{}}};\n",
            d.symbol,
            bytes.len(),
            bytes.join(", ")
        ));
    }
    ptx.push_str("\n.visible .entry matrix_kernel()\n{\n\tret;\n}\n");
    ptx
}

/// Which compiler reads a definition: the spelling of `STD::` and the header it needs.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Compiler {
    Nvrtc,
    Host,
}

/// The source's first lines: the types the spellings use, with or without the integer header.
fn prelude(compiler: Compiler, with_header: bool) -> String {
    let mut s = String::new();
    if with_header {
        s.push_str(match compiler {
            Compiler::Nvrtc => "#include <cuda/std/cstdint>\n",
            Compiler::Host => "#include <cstdint>\n",
        });
    }
    s.push_str("struct Pair { float x; float y; };\nstruct Half { unsigned short bits; };\n");
    s
}

/// `spelling` for `compiler` (`STD::` resolved), or `None` where it needs the header.
fn spell(spelling: &str, compiler: Compiler, with_header: bool) -> Option<String> {
    if spelling.contains("STD::") {
        if !with_header {
            return None;
        }
        let ns = match compiler {
            Compiler::Nvrtc => "cuda::std::",
            Compiler::Host => "std::",
        };
        return Some(spelling.replace("STD::", ns));
    }
    Some(spelling.to_owned())
}

/// The definition of `d` with `arg` as the argument's type and `ret` as the returned one.
fn definition(d: &Decl, ret: &str, arg: &str) -> String {
    match d.abi {
        Abi::Numba => format!(
            "extern \"C\" __device__ int {}({ret}* r, {arg} a, int b) {{ (void)r; (void)a; (void)b; return 0; }}\n",
            d.symbol
        ),
        Abi::C => format!(
            "extern \"C\" __device__ {ret} {}({arg} a, int b) {{ (void)a; (void)b; {ret} v{{}}; return v; }}\n",
            d.symbol
        ),
    }
}

/// Sources that define every declaration with fitting spellings: the `j`th source takes each
/// type's `j`th spelling (cycling), until every spelling was used once.
fn fitting_sources(decls: &[Decl], compiler: Compiler, with_header: bool) -> Vec<String> {
    let rounds = TYPES.iter().map(|t| t.fits.len()).max().unwrap_or(1);
    (0..rounds)
        .map(|j| {
            let mut src = prelude(compiler, with_header);
            for d in decls {
                let fits: Vec<String> =
                    d.ty.fits
                        .iter()
                        .filter_map(|s| spell(s, compiler, with_header))
                        .collect();
                let arg = &fits[j % fits.len()];
                let ret = &fits[(j + 1) % fits.len()];
                src.push_str(&definition(d, ret, arg));
            }
            src
        })
        .collect()
}

/// One mismatch: `d` defined with a wrong spelling in one slot.
struct Mismatch<'a> {
    decl: &'a Decl,
    slot: Slot,
    wrong: String,
    source: String,
    /// The definition's line in `source`.
    line: usize,
}

/// Every wrong spelling of every type, in the argument and (first one) in the return slot,
/// each alone in a source (the other slot spelled right).
fn mismatches(decls: &[Decl], compiler: Compiler, with_header: bool) -> Vec<Mismatch<'_>> {
    let mut out = Vec::new();
    for d in decls {
        let right = spell(d.ty.fits[0], compiler, with_header).unwrap();
        for (w, wrong) in d.ty.wrong.iter().enumerate() {
            let Some(wrong) = spell(wrong, compiler, with_header) else {
                continue;
            };
            for slot in [Slot::Arg, Slot::Ret] {
                if slot == Slot::Ret && w > 0 {
                    continue;
                }
                let (ret, arg) = match slot {
                    Slot::Arg => (right.as_str(), wrong.as_str()),
                    Slot::Ret => (wrong.as_str(), right.as_str()),
                };
                let prelude = prelude(compiler, with_header);
                let line = prelude.lines().count() + 2;
                let source = format!("{prelude}// the definition\n{}", definition(d, ret, arg));
                out.push(Mismatch {
                    decl: d,
                    slot,
                    wrong: wrong.clone(),
                    source,
                    line,
                });
            }
        }
    }
    out
}

/// Checks that `e` is the mismatch `m` names: the symbol, the Rust declaration, the
/// definition's line and the parameter at fault.
#[track_caller]
fn assert_names(e: &Error, m: &Mismatch<'_>, defined_in: &str) {
    let Error::ForeignSignatureMismatch(found) = e else {
        panic!(
            "{} ({:?} {:?}, defined with `{}`): expected ForeignSignatureMismatch, got {e}",
            m.decl.ty.rust, m.decl.abi, m.slot, m.wrong
        );
    };
    let context = format!(
        "{} ({:?}, {:?} spelled `{}`): {e}",
        m.decl.ty.rust, m.decl.abi, m.slot, m.wrong
    );
    assert_eq!(found.symbol, m.decl.symbol, "{context}");
    assert_eq!(
        found.declared_at,
        format!("src/matrix.rs:{}", m.decl.line),
        "{context}"
    );
    assert!(
        found
            .defined_at
            .ends_with(&format!("{defined_in}:{}", m.line)),
        "{context}"
    );
    let at_fault = match (m.decl.abi, m.slot) {
        (Abi::Numba, Slot::Arg) => "parameter 2 must be",
        (Abi::C, Slot::Arg) => "parameter 1 must be",
        (Abi::Numba, Slot::Ret) => "parameter 1, the return slot, must be",
        (Abi::C, Slot::Ret) => "the definition must return",
    };
    assert!(found.detail.contains(at_fault), "{context}");
    assert!(
        found.detail.contains(&declared_text(m)),
        "the message names the declared type: {context}"
    );
}

/// How the message quotes the declared type at fault.
fn declared_text(m: &Mismatch<'_>) -> String {
    match (m.decl.abi, m.slot) {
        (Abi::Numba, Slot::Ret) => format!("'{}*'", m.decl.ty.record),
        _ => format!("'{}'", m.decl.ty.record),
    }
}

fn offline() -> Linker {
    let mut linker = ok(Linker::for_arch("sm_90"));
    linker.cache(CachePolicy::Disabled);
    linker
}

/// How a definition reaches the Linker.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Input {
    /// `add_cuda_source`.
    Memory,
    /// `add_file` of a `.cu`.
    File,
}

fn link(
    linker: &mut Linker,
    ptx: &str,
    source: &str,
    input: Input,
    dir: &Path,
) -> Result<(), Error> {
    linker.add_ptx(ptx, "kernels.ptx");
    match input {
        Input::Memory => {
            linker.add_cuda_source(source, "defs.cu");
        }
        Input::File => {
            let path = dir.join("defs.cu");
            std::fs::write(&path, source).unwrap();
            linker.add_file(&path);
        }
    }
    linker.link().map(|_| ())
}

#[test]
fn the_c_spellings_compile_without_any_header() {
    // The regression: prototypes spelled `int32_t` did not compile under NVRTC. Each record's C
    // type is a builtin one, and a source that defines nothing (another input does) still
    // compiles with the checks of every declaration.
    let decls = declarations();
    for d in &decls {
        assert!(
            !d.ty.record.contains("_t") && !d.ty.record.contains("std"),
            "{}",
            d.ty.record
        );
    }
    let all: Vec<&Decl> = decls.iter().collect();
    let ptx = kernels_ptx(&all);
    let defs = fitting_sources(&decls, Compiler::Nvrtc, false).remove(0);
    // One source declares, another defines: both compile, the link resolves.
    let header: String = defs
        .lines()
        .map(|l| match l.split_once(" {") {
            Some((proto, _)) if l.starts_with("extern") => format!("{proto};\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    let caller = format!("{header}extern \"C\" __device__ int use_them() {{ return 0; }}\n");
    ok(offline()
        .add_ptx(&ptx, "kernels.ptx")
        .add_cuda_source(&caller, "declares.cu")
        .add_cuda_source("__device__ int unrelated() { return 1; }\n", "unrelated.cu")
        .add_cuda_source(&defs, "defines.cu")
        .link());
}

#[test]
fn fitting_definitions_link_through_nvrtc_in_memory_and_from_files() {
    let decls = declarations();
    let all: Vec<&Decl> = decls.iter().collect();
    let ptx = kernels_ptx(&all);
    let dir = temp_dir("matrix-fits");
    for with_header in [false, true] {
        for (j, src) in fitting_sources(&decls, Compiler::Nvrtc, with_header)
            .iter()
            .enumerate()
        {
            for input in [Input::Memory, Input::File] {
                if let Err(e) = link(&mut offline(), &ptx, src, input, &dir) {
                    panic!("spelling round {j}, header {with_header}, {input:?}: {e}\n{src}");
                }
            }
        }
    }
}

#[test]
fn every_mismatch_is_refused_by_the_run_time_linker() {
    let decls = declarations();
    let dir = temp_dir("matrix-wrong");
    let mut count = 0;
    for with_header in [false, true] {
        for (n, m) in mismatches(&decls, Compiler::Nvrtc, with_header)
            .iter()
            .filter(|m| !with_header || m.wrong.contains("std::"))
            .enumerate()
        {
            // Every case in memory; the file input for every third one (the same compile).
            let ptx = kernels_ptx(&[m.decl]);
            let e = err(link(&mut offline(), &ptx, &m.source, Input::Memory, &dir));
            assert_names(&e, m, "defs.cu");
            if n % 3 == 0 {
                let e = err(link(&mut offline(), &ptx, &m.source, Input::File, &dir));
                assert_names(&e, m, "defs.cu");
            }
            count += 1;
        }
    }
    assert!(count > 100, "{count} mismatches");
}

#[test]
fn the_return_slot_of_a_u64_written_as_uint32_is_refused() {
    // Issue 28 C6: PTX widths cannot see a pointee; the C-level check can.
    let decls = declarations();
    let d = decls
        .iter()
        .find(|d| d.abi == Abi::Numba && d.ty.rust == "u64")
        .unwrap();
    let src = format!(
        "#include <cuda/std/cstdint>\n// writes 4 bytes into an 8-byte slot\n{}",
        definition(d, "cuda::std::uint32_t", "unsigned long long")
    );
    let e = err(offline()
        .add_ptx(&kernels_ptx(&[d]), "kernels.ptx")
        .add_cuda_source(&src, "slot.cu")
        .link());
    let Error::ForeignSignatureMismatch(m) = &e else {
        panic!("{e}")
    };
    assert_eq!(m.defined_at, "slot.cu:3", "{e}");
    assert!(
        m.detail
            .contains("parameter 1, the return slot, must be 'unsigned long long*'")
            && m.detail.contains("the definition: extern"),
        "{e}"
    );
    // The same definition as PTX: widths are all a PTX keeps (a pointer is 64 bits), so it
    // links; that is why `.cu` sources are checked at the C level.
    let ptx_def = ok(compile_cuda(
        &src,
        "slot.cu",
        &[],
        "sm_90".parse().unwrap(),
        &[],
        CudaOutput::Ptx,
    ));
    ok(offline()
        .add_ptx(&kernels_ptx(&[d]), "kernels.ptx")
        .add_ptx(std::str::from_utf8(&ptx_def).unwrap(), "slot.ptx")
        .link());
}

#[test]
fn definitions_the_check_cannot_see_or_that_macros_hide_are_refused() {
    // A definition inside a namespace, or an `extern "C"` function beside C++ overloads of its
    // name, is not visible to the check at global scope; it used to be left to the PTX check,
    // which compares widths only (`int` for `float` linked). Macros of the check's words or of
    // the symbol defined after the source used to blind it too.
    let decls = declarations();
    let d = decls
        .iter()
        .find(|d| d.abi == Abi::C && d.ty.rust == "f32")
        .unwrap();
    let int_def = definition(d, "int", "int");
    let float_def = definition(d, "float", "float");
    let sym = &d.symbol;
    let cases = [
        ("namespaced", format!("namespace n {{ {int_def} }}\n")),
        (
            "overloaded",
            format!("{int_def}__device__ int {sym}(int a) {{ return a; }}\n"),
        ),
        (
            "renamed by a macro after the definition",
            format!(
                "{int_def}{}#define {sym} good\n",
                float_def.replace(sym.as_str(), "good")
            ),
        ),
        (
            "static_assert a macro",
            format!("{int_def}#define static_assert(...)\n"),
        ),
        (
            "decltype a macro",
            format!("{int_def}#define decltype(x) float(float, int)\n"),
        ),
    ];
    let dir = temp_dir("matrix-unseen");
    for (what, src) in &cases {
        for input in [Input::Memory, Input::File] {
            let e = link(&mut offline(), &kernels_ptx(&[d]), src, input, &dir)
                .expect_err(&format!("{what} ({input:?}) linked:\n{src}"));
            let Error::ForeignSignatureMismatch(m) = &e else {
                panic!("{what}: {e}")
            };
            assert_eq!(m.symbol, *sym, "{what}: {e}");
            if what.starts_with("namespaced") || what.starts_with("overloaded") {
                assert!(
                    m.detail.contains("not visible at global scope")
                        && m.detail.contains("define it at global scope"),
                    "{what}: {e}"
                );
            }
        }
    }
    // A fitting definition at global scope links.
    ok(link(
        &mut offline(),
        &kernels_ptx(&[d]),
        &float_def,
        Input::Memory,
        &dir,
    ));
    // The build-time host compile (the simulator's library, `foreign_sources`) refuses the same
    // definitions with the same words; it used to drop their check and build them.
    #[cfg(target_os = "linux")]
    {
        let builder_decls = builder_declarations(&[d]);
        for (what, src) in &cases[..2] {
            let e = host_check(&dir, src, &builder_decls)
                .expect_err(&format!("{what}: the host compile accepted\n{src}"));
            let nvptx_builder::Error::ForeignSignatureMismatch {
                symbol,
                defined_at,
                detail,
                ..
            } = &e
            else {
                panic!("{what}: {e}")
            };
            assert_eq!(symbol, sym, "{what}: {e}");
            assert!(defined_at.ends_with("defs.cu:1"), "{what}: {e}");
            assert!(
                detail.contains("not visible at global scope")
                    && detail.contains("define it at global scope as one `extern \"C\"` function"),
                "{what}: {e}"
            );
        }
        // A source that only declares and calls it (another source defines it) passes.
        let caller = format!(
            "extern \"C\" __device__ float {sym}(float a, int b);\n\
             namespace n {{ __device__ float twice(float a) {{ return 2.0f * {sym}(a, 1); }} }}\n"
        );
        host_check(&dir, &caller, &builder_decls).unwrap_or_else(|e| panic!("{e}"));
        host_check(&dir, &float_def, &builder_decls).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn a_void_pointer_return_slot_is_refused_unless_the_return_is_unit() {
    // The definition writes the result through its return slot: `void*` there fitted any
    // declared return type, so a definition could write 8 bytes into a 4-byte `f32` slot.
    let decls = declarations();
    let d = decls
        .iter()
        .find(|d| d.abi == Abi::Numba && d.ty.rust == "f32")
        .unwrap();
    let src = definition(d, "void", "float");
    let e = err(offline()
        .add_ptx(&kernels_ptx(&[d]), "kernels.ptx")
        .add_cuda_source(&src, "slot.cu")
        .link());
    let Error::ForeignSignatureMismatch(m) = &e else {
        panic!("{e}")
    };
    assert!(
        m.detail
            .contains("parameter 1, the return slot, must be 'float*'"),
        "{e}"
    );
    ok(offline()
        .add_ptx(&kernels_ptx(&[d]), "kernels.ptx")
        .add_cuda_source(&definition(d, "float", "float"), "slot.cu")
        .link());
}

#[test]
fn ptx_definitions_are_checked_by_their_widths() {
    // A PTX definition keeps widths, not C types: `f64` against `float` and a struct against a
    // scalar are refused; signedness is invisible there (documented).
    let decls = declarations();
    let find = |abi, rust| {
        decls
            .iter()
            .find(|d| d.abi == abi && d.ty.rust == rust)
            .unwrap()
    };
    for (d, ret, arg, refused) in [
        (find(Abi::Numba, "f64"), "double", "float", true),
        (find(Abi::C, "f64"), "float", "double", true),
        (find(Abi::Numba, "Pair"), "Pair", "float", true),
        (find(Abi::C, "i64"), "long long", "int", true),
        (find(Abi::Numba, "i32"), "int", "unsigned", false),
        (
            find(Abi::C, "u16"),
            "unsigned short",
            "unsigned short",
            false,
        ),
    ] {
        let src = format!(
            "{}{}",
            prelude(Compiler::Nvrtc, false),
            definition(d, ret, arg)
        );
        let code = ok(compile_cuda(
            &src,
            "def.cu",
            &[],
            "sm_90".parse().unwrap(),
            &[],
            CudaOutput::Ptx,
        ));
        let r = offline()
            .add_ptx(&kernels_ptx(&[d]), "kernels.ptx")
            .add_ptx(std::str::from_utf8(&code).unwrap(), "def.ptx")
            .link();
        match (refused, r) {
            (true, Err(Error::ForeignSignatureMismatch(m))) => {
                assert_eq!(m.symbol, d.symbol);
                assert_eq!(m.defined_at, "def.ptx");
                assert!(m.detail.contains("PTX parameters"), "{}", m.detail);
            }
            (false, Ok(_)) => {}
            (refused, r) => panic!(
                "{} {:?} with ({ret}, {arg}): refused {refused} expected, got {:?}",
                d.ty.rust,
                d.abi,
                r.map(|_| ())
            ),
        }
    }
}

#[test]
fn the_simulators_linker_checks_cu_definitions_as_a_gpu_link_does() {
    // Issue 26 item 8: `compile_foreign_for_host` + `Linker::add_cuda_source` on the
    // simulator ran an `f64` declaration against a `float` definition and returned zeros.
    let decls = declarations();
    let f64_decl = decls
        .iter()
        .find(|d| d.abi == Abi::Numba && d.ty.rust == "f64")
        .unwrap();
    let src = format!(
        "// float, where the Rust declaration says f64\n{}",
        definition(f64_decl, "float", "double")
    );
    let e = err(Linker::for_simulator()
        .add_ptx(&kernels_ptx(&[f64_decl]), "kernels.ptx")
        .add_cuda_source(&src, "scale.cu")
        .link());
    let Error::ForeignSignatureMismatch(m) = &e else {
        panic!("{e}")
    };
    assert_eq!(m.declared_at, format!("src/matrix.rs:{}", f64_decl.line));
    assert_eq!(m.defined_at, "scale.cu:2", "{e}");
    assert!(
        m.detail.contains("the return slot, must be 'double*'"),
        "{e}"
    );
    // The build-script half of the same reproduction: the host compile of that source for the
    // simulator's library (`compile_foreign_for_host`, which now takes the declarations, is
    // this `HostCc` with them) refuses it as well, naming the same places.
    let dir = temp_dir("matrix-sim-host");
    let e = host_check(&dir, &src, &builder_declarations(&[f64_decl])).unwrap_err();
    let nvptx_builder::Error::ForeignSignatureMismatch {
        declared_at,
        defined_at,
        detail,
        ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!(declared_at, &format!("src/matrix.rs:{}", f64_decl.line));
    assert!(defined_at.ends_with("defs.cu:2"), "{e}");
    assert!(detail.contains("the return slot, must be 'double*'"), "{e}");
    // The whole matrix through the simulator's Linker: fitting spellings link, a sample of
    // mismatches (one per type and ABI) is refused.
    let all: Vec<&Decl> = decls.iter().collect();
    let ptx = kernels_ptx(&all);
    let dir = temp_dir("matrix-sim");
    for src in fitting_sources(&decls, Compiler::Nvrtc, true) {
        if let Err(e) = link(
            &mut Linker::for_simulator(),
            &ptx,
            &src,
            Input::Memory,
            &dir,
        ) {
            panic!("{e}\n{src}");
        }
    }
    let mut seen = Vec::new();
    for m in mismatches(&decls, Compiler::Nvrtc, false) {
        if seen.contains(&m.decl.symbol) {
            continue;
        }
        seen.push(m.decl.symbol.clone());
        let e = err(link(
            &mut Linker::for_simulator(),
            &kernels_ptx(&[m.decl]),
            &m.source,
            Input::File,
            &dir,
        ));
        assert_names(&e, &m, "defs.cu");
    }
}

/// The records as `nvptx-builder` reads them back from a kernels PTX.
fn builder_declarations(decls: &[&Decl]) -> Vec<nvptx_builder::foreign::ForeignDeclaration> {
    nvptx_builder::foreign::declarations_in_ptx(&kernels_ptx(decls))
}

fn host_build() -> cc::Build {
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let mut b = cc::Build::new();
    b.target(&triple)
        .host(&triple)
        .opt_level(0)
        .debug(false)
        .cargo_metadata(false);
    b
}

/// The host compile's syntax check of `source` (as the simulator's library is built), with
/// `decls` to check the definitions against.
fn host_check(
    dir: &Path,
    source: &str,
    decls: &[nvptx_builder::foreign::ForeignDeclaration],
) -> Result<(), nvptx_builder::Error> {
    let path: PathBuf = dir.join("defs.cu");
    std::fs::write(&path, source).unwrap();
    nvptx_builder::host_cc::HostCc::new(host_build(), dir)
        .cargo_metadata(false)
        .declarations(decls)
        .check_all(&[&path])
}

#[test]
#[cfg(target_os = "linux")]
fn the_host_compile_for_the_simulator_checks_every_type() {
    let decls = declarations();
    let all: Vec<&Decl> = decls.iter().collect();
    let builder_decls = builder_declarations(&all);
    assert_eq!(builder_decls.len(), decls.len());
    let dir = temp_dir("matrix-host");
    for with_header in [false, true] {
        for src in fitting_sources(&decls, Compiler::Host, with_header) {
            if let Err(e) = host_check(&dir, &src, &builder_decls) {
                panic!("header {with_header}: {e}\n{src}");
            }
        }
    }
    let mut count = 0;
    // Every other case (the host compiler is slower than NVRTC; the run-time test has them all).
    for m in mismatches(&decls, Compiler::Host, true).iter().step_by(2) {
        let e = host_check(&dir, &m.source, &builder_declarations(&[m.decl])).unwrap_err();
        let context = format!(
            "{} ({:?}, {:?} spelled `{}`): {e}",
            m.decl.ty.rust, m.decl.abi, m.slot, m.wrong
        );
        let nvptx_builder::Error::ForeignSignatureMismatch {
            symbol,
            declared_at,
            defined_at,
            detail,
            ..
        } = &e
        else {
            panic!("{context}")
        };
        assert_eq!(symbol, &m.decl.symbol, "{context}");
        assert_eq!(declared_at, &format!("src/matrix.rs:{}", m.decl.line));
        assert!(
            defined_at.ends_with(&format!("defs.cu:{}", m.line)),
            "{context}"
        );
        assert!(detail.contains(&declared_text(m)), "{context}");
        count += 1;
    }
    assert!(count > 40, "{count}");
}

/// `integer_signatures`'s outputs, computed on the host as the definitions in
/// `functions.cu` compute them.
#[allow(clippy::type_complexity)]
fn integer_outputs(
    x: &[i32],
    w: &[i64],
) -> (Vec<i32>, Vec<u64>, Vec<i64>, Vec<i64>, Vec<f64>, Vec<u64>) {
    let bar = x.iter().map(|&v| v + 1).collect();
    let scaled = x.iter().map(|&v| (v as u64).wrapping_mul(3)).collect();
    let narrow = x
        .iter()
        .map(|&v| v as i8 as i64 + v as u8 as i64 + v as i16 as i64 + v as u16 as i64)
        .collect();
    let last = x.iter().zip(w).map(|(&v, &wv)| wv - v as i64).collect();
    let picked = x
        .iter()
        .map(|&v| if v % 2 == 0 { v as f64 * 0.5 } else { -1.0 })
        .collect();
    let joined = x
        .iter()
        .map(|&v| ((v as u32 as u64) << 32) | u64::from(!(v as u32)))
        .collect();
    (bar, scaled, narrow, last, picked, joined)
}

/// With the `gpu` feature this also runs on CUDA device 0 (cuLink), and fails without one.
#[test]
fn integer_signatures_link_and_run_on_every_device() {
    // Issue 28 A: Numba-style definitions with integer signatures (`int bar(int* r, int a)`,
    // `long`, `unsigned char`, `unsigned long`, a typedef) link through the run-time Linker and
    // compute what the host computes, on the simulator (the host-compiled `functions.cu`) and
    // on the GPU (NVRTC + cuLink).
    use ffi_examples_kernels::ffi_int::integer_signatures;
    use gpukernel_runtime::Kernel;
    const FUNCTIONS_CU: &str = include_str!("../../ffi-examples/kernels/cuda/functions.cu");
    const ABI_H: &str = include_str!("../../ffi-examples/kernels/cuda/gpukernel_abi.h");
    let n = 1_027;
    let x: Vec<i32> = (0..n as i32)
        .map(|i| i.wrapping_mul(2_654_435_761_u32 as i32) >> 3)
        .collect();
    let w: Vec<i64> = (0..n as i64)
        .map(|i| i * 1_000_000_007 - (1 << 40))
        .collect();
    let want = integer_outputs(&x, &w);
    for (name, ctx) in gpukernel_tests::devices() {
        let module = ok(Linker::new(&ctx).and_then(|mut l| {
            l.add_ptx_kernels(
                ffi_examples_kernels::PTX,
                "kernels.ptx",
                &[integer_signatures::NAME],
            )
            .add_cuda_source(FUNCTIONS_CU, "functions.cu")
            .header("gpukernel_abi.h", ABI_H)
            .link_and_load()
        }));
        let (dx, dw) = (ok(ctx.htod_copy(&x)), ok(ctx.htod_copy(&w)));
        let mut bar = ok(ctx.alloc_zeros::<i32>(n));
        let mut scaled = ok(ctx.alloc_zeros::<u64>(n));
        let mut narrow = ok(ctx.alloc_zeros::<i64>(n));
        let mut last = ok(ctx.alloc_zeros::<i64>(n));
        let mut picked = ok(ctx.alloc_zeros::<f64>(n));
        let mut joined = ok(ctx.alloc_zeros::<u64>(n));
        ok(ctx.default_stream().launch(
            &ok(module.kernel(integer_signatures)),
            ok(gpukernel_runtime::LaunchConfig::for_elements(n)),
            (
                &dx,
                &dw,
                &mut bar,
                &mut scaled,
                &mut narrow,
                &mut last,
                &mut picked,
                &mut joined,
            ),
        ));
        assert_eq!(ok(bar.to_host_vec()), want.0, "int_bar on {name}");
        assert_eq!(ok(scaled.to_host_vec()), want.1, "scale_u64 on {name}");
        assert_eq!(ok(narrow.to_host_vec()), want.2, "narrow_sum on {name}");
        assert_eq!(ok(last.to_host_vec()), want.3, "last_plus on {name}");
        assert_eq!(ok(picked.to_host_vec()), want.4, "pick_c on {name}");
        assert_eq!(ok(joined.to_host_vec()), want.5, "join_c on {name}");
    }
}

#[test]
#[cfg_attr(not(feature = "gpu"), ignore = "needs a GPU (feature gpu)")]
fn numbas_integer_example_runs_on_the_gpu() {
    // The issue's own reproduction: `fn(a: i32) -> i32` against Numba's
    // `extern "C" __device__ int bar(int* r, int a)`, alone in a `.cu` (no header at all),
    // linked by cuLink and launched.
    use ffi_examples_kernels::ffi_int::integer_signatures;
    use gpukernel_runtime::Kernel;
    let ctx = match gpukernel_runtime::Device::get(0) {
        Ok(d) => ok(d.primary_context()),
        Err(e) => panic!("this test needs a CUDA GPU (feature `gpu` is on): {e}"),
    };
    let src = "extern \"C\" __device__ int int_bar(int* r, int a) { *r = (int)((unsigned)a << 1); return 0; }\n\
               extern \"C\" __device__ int scale_u64(unsigned long long* r, unsigned long long x, unsigned by) { *r = x + by; return 0; }\n\
               extern \"C\" __device__ int narrow_sum(long long* r, signed char a, unsigned char b, short c, unsigned short d) { *r = a - b + c - d; return 0; }\n\
               extern \"C\" __device__ int last_plus(long* r, const long* p, unsigned long long n, long off) { *r = p[0] * (long)n + off; return 0; }\n\
               extern \"C\" __device__ double pick_c(bool f, double a, double b) { return f ? b : a; }\n\
               extern \"C\" __device__ unsigned long long join_c(unsigned int hi, unsigned lo) { return hi ^ lo; }\n";
    let module = ok(Linker::new(&ctx).and_then(|mut l| {
        l.cache(CachePolicy::Disabled)
            .add_ptx_kernels(
                ffi_examples_kernels::PTX,
                "kernels.ptx",
                &[integer_signatures::NAME],
            )
            .add_cuda_source(src, "numba_style.cu")
            .link_and_load()
    }));
    let x: Vec<i32> = vec![-7, 0, 1, 2, 1_000_000, i32::MIN, i32::MAX, 300];
    let w: Vec<i64> = x.iter().map(|&v| i64::from(v) * 3 - 5).collect();
    let n = x.len();
    let (dx, dw) = (ok(ctx.htod_copy(&x)), ok(ctx.htod_copy(&w)));
    let mut bar = ok(ctx.alloc_zeros::<i32>(n));
    let mut scaled = ok(ctx.alloc_zeros::<u64>(n));
    let mut narrow = ok(ctx.alloc_zeros::<i64>(n));
    let mut last = ok(ctx.alloc_zeros::<i64>(n));
    let mut picked = ok(ctx.alloc_zeros::<f64>(n));
    let mut joined = ok(ctx.alloc_zeros::<u64>(n));
    ok(ctx.default_stream().launch(
        &ok(module.kernel(integer_signatures)),
        ok(gpukernel_runtime::LaunchConfig::for_elements(n)),
        (
            &dx,
            &dw,
            &mut bar,
            &mut scaled,
            &mut narrow,
            &mut last,
            &mut picked,
            &mut joined,
        ),
    ));
    let want_bar: Vec<i32> = x.iter().map(|&v| v.wrapping_mul(2)).collect();
    let want_scaled: Vec<u64> = x.iter().map(|&v| (v as u64).wrapping_add(3)).collect();
    let want_narrow: Vec<i64> = x
        .iter()
        .map(|&v| v as i8 as i64 - v as u8 as i64 + v as i16 as i64 - v as u16 as i64)
        .collect();
    let want_last: Vec<i64> = x.iter().zip(&w).map(|(&v, &wv)| wv - v as i64).collect();
    let want_picked: Vec<f64> = x
        .iter()
        .map(|&v| if v % 2 == 0 { -1.0 } else { v as f64 * 0.5 })
        .collect();
    let want_joined: Vec<u64> = x
        .iter()
        .map(|&v| u64::from(v as u32 ^ !(v as u32)))
        .collect();
    assert_eq!(ok(bar.to_host_vec()), want_bar);
    assert_eq!(ok(scaled.to_host_vec()), want_scaled);
    assert_eq!(ok(narrow.to_host_vec()), want_narrow);
    assert_eq!(ok(last.to_host_vec()), want_last);
    assert_eq!(ok(picked.to_host_vec()), want_picked);
    assert_eq!(ok(joined.to_host_vec()), want_joined);
}

/// A `#[repr(C)]` struct by value with its recorded layout, as `declare_device!` writes it for
/// `#[derive(DeviceCopy)] struct Rec { a: f32, b: u32, c: i16 }` (12 bytes, 4-aligned; the
/// kinds are `gpukernel_device::signature::kind`'s), taken and returned by `layout_n` (Numba's
/// ABI) and `layout_c` (`extern "C"`).
fn layout_ptx() -> String {
    let layout = "struct=Rec:12:4\nfield=Rec:a:0:4:3\nfield=Rec:b:4:4:1\nfield=Rec:c:8:2:2\n";
    let mut ptx = String::from(".version 8.0\n.target sm_90\n.address_size 64\n\n");
    for (symbol, abi, ret) in [
        ("layout_n", "numba", "(.param .b32 func_retval0) "),
        ("layout_c", "c", "(.param .align 4 .b8 func_retval0[12]) "),
    ] {
        let first = if abi == "numba" {
            format!(".param .b64 {symbol}_r,\n\t")
        } else {
            String::new()
        };
        ptx.push_str(&format!(
            ".extern .func {ret}{symbol}(\n\t{first}.param .align 4 .b8 {symbol}_a[12],\n\t.param .b32 {symbol}_b\n);\n"
        ));
        let record = format!(
            "gpukernel-foreign-v1\nsymbol={symbol}\nabi={abi}\nat=src/layout.rs:{}\nret=struct Rec\narg=struct Rec\narg=int\n{layout}",
            if abi == "numba" { 10 } else { 20 }
        );
        let bytes: Vec<String> = record.bytes().map(|b| b.to_string()).collect();
        ptx.push_str(&format!(
            ".visible .global .align 1 .b8 __gpukernel_foreign_{symbol}_1[{}] = {{{}}};\n",
            bytes.len(),
            bytes.join(", ")
        ));
    }
    ptx.push_str("\n.visible .entry matrix_kernel()\n{\n\tret;\n}\n");
    ptx
}

/// Definitions of `layout_n` and `layout_c` after `rec`, the C struct `Rec`.
fn layout_source(rec: &str) -> String {
    format!(
        "{rec}\n\
         extern \"C\" __device__ int layout_n(Rec* r, Rec a, int b) {{ *r = a; (void)b; return 0; }}\n\
         extern \"C\" __device__ Rec layout_c(Rec a, int b) {{ (void)b; return a; }}\n"
    )
}

/// C structs that fit `Rec` (the field names, offsets and kinds, the size and alignment) and
/// ones that do not, each with what the refusal must name.
const LAYOUT_FITS: &[&str] = &[
    "struct Rec { float a; unsigned b; short c; };",
    "typedef struct { float a; unsigned int b; signed short c; } Rec;",
];
const LAYOUT_WRONG: &[(&str, &str, &str)] = &[
    (
        "fields swapped",
        "struct Rec { unsigned b; float a; short c; };",
        "its field 'a' must be at offset 0",
    ),
    (
        "a field of another type at the same offset",
        "struct Rec { int a; unsigned b; short c; };",
        "its field 'a' must be 'float'",
    ),
    (
        "other padding, same size",
        "struct Rec { float a; unsigned b; short pad; short c; };",
        "its field 'c' must be at offset 8",
    ),
    (
        "other alignment",
        "struct alignas(8) Rec { float a; unsigned b; short c; };",
        "must be aligned to 4 bytes (alignof)",
    ),
    (
        "packed: other size and alignment",
        "#pragma pack(push, 2)\nstruct Rec { float a; unsigned b; short c; };\n#pragma pack(pop)",
        "must be 12 bytes (sizeof)",
    ),
    (
        "a field renamed",
        "struct Rec { float x; unsigned b; short c; };",
        "has no field 'a'",
    ),
    (
        "other fields",
        "struct Rec { float a; unsigned long long d; };",
        "has no field 'b'",
    ),
    (
        "a field narrower, the size kept by padding",
        "struct Rec { float a; unsigned b; signed char c; };",
        "its field 'c' must be 'short'",
    ),
];

#[test]
fn struct_layouts_are_checked_field_by_field_on_every_path() {
    let ptx = layout_ptx();
    let dir = temp_dir("matrix-layout");
    let host_decls = nvptx_builder::foreign::declarations_in_ptx(&ptx);
    assert_eq!(host_decls.len(), 2);
    assert_eq!(host_decls[0].structs[0].fields.len(), 3);
    for rec in LAYOUT_FITS {
        let src = layout_source(rec);
        for input in [Input::Memory, Input::File] {
            ok(link(&mut offline(), &ptx, &src, input, &dir));
        }
        ok(Linker::for_simulator()
            .add_ptx(&ptx, "kernels.ptx")
            .add_cuda_source(&src, "defs.cu")
            .link());
        #[cfg(target_os = "linux")]
        host_check(&dir, &src, &host_decls).unwrap_or_else(|e| panic!("{rec}: {e}"));
    }
    for &(what, rec, names) in LAYOUT_WRONG {
        let src = layout_source(rec);
        let context = |e: &dyn std::fmt::Display| format!("{what}:\n{src}\n{e}");
        let e = link(&mut offline(), &ptx, &src, Input::Memory, &dir)
            .expect_err(&format!("{what} linked:\n{src}"));
        let Error::ForeignSignatureMismatch(m) = &e else {
            panic!("{}", context(&e))
        };
        // The first definition refused is `layout_n`'s, on the source's line after `Rec`.
        assert_eq!(m.symbol, "layout_n", "{}", context(&e));
        assert_eq!(m.declared_at, "src/layout.rs:10", "{}", context(&e));
        let line = rec.lines().count() + 1;
        assert_eq!(m.defined_at, format!("defs.cu:{line}"), "{}", context(&e));
        assert!(
            m.detail.contains(names) && m.detail.contains("Rust's"),
            "{}",
            context(&e)
        );
        // The simulator's Linker: the same refusal.
        let e = err(Linker::for_simulator()
            .add_ptx(&ptx, "kernels.ptx")
            .add_cuda_source(&src, "defs.cu")
            .link());
        assert!(
            matches!(&e, Error::ForeignSignatureMismatch(m) if m.detail.contains(names)),
            "{}",
            context(&e)
        );
        // The host compile of the simulator's library (`foreign_sources`).
        #[cfg(target_os = "linux")]
        {
            let e = host_check(&dir, &src, &host_decls).expect_err(what);
            let nvptx_builder::Error::ForeignSignatureMismatch { symbol, detail, .. } = &e else {
                panic!("{}", context(&e))
            };
            assert_eq!(symbol, "layout_n", "{}", context(&e));
            assert!(detail.contains(names), "{}", context(&e));
        }
    }
    // `extern "C"`: the returned struct is checked too.
    let c_only = "struct Rec { float a; unsigned b; short c; };\n\
                  struct Other { unsigned b; float a; short c; };\n\
                  extern \"C\" __device__ int layout_n(Rec* r, Rec a, int b) { *r = a; (void)b; return 0; }\n\
                  extern \"C\" __device__ Other layout_c(Rec a, int b) { (void)b; Other o{}; return o; }\n";
    let e = link(&mut offline(), &ptx, c_only, Input::Memory, &dir).unwrap_err();
    assert!(
        matches!(&e, Error::ForeignSignatureMismatch(m)
            if m.symbol == "layout_c" && m.detail.contains("the returned struct: its field 'a'")),
        "{e}"
    );
}

#[test]
fn declare_device_records_the_layout_of_derived_structs() {
    // `Float2` is `#[derive(DeviceCopy)]`: the records of `dot2` and `swap_scale` in the example
    // kernels' PTX carry its size, alignment and fields, as the device build laid them out.
    let decls = gpukernel_runtime::link::ForeignDecl::from_ptx(ffi_examples_kernels::PTX);
    let dot2 = decls
        .iter()
        .find(|d| d.symbol == "dot2")
        .expect("dot2's record");
    let float2 = &dot2.structs[0];
    assert_eq!(
        (float2.name.as_str(), float2.size, float2.align),
        ("Float2", 8, 4)
    );
    let fields: Vec<(&str, u64, u64, &str)> = float2
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.offset, f.size, f.c_type.as_str()))
        .collect();
    assert_eq!(fields, [("x", 0, 4, "float"), ("y", 4, 4, "float")]);
    let swap = decls.iter().find(|d| d.symbol == "swap_scale").unwrap();
    assert_eq!(swap.structs, dot2.structs);
}

#[test]
fn the_records_field_kinds_are_the_device_crates() {
    // The record carries `gpukernel_device::signature::kind` numbers; `gpukernel-ffi-check`
    // reads them with its own copy of the numbers, which must not drift.
    use gpukernel_device::signature::kind as device;
    use gpukernel_ffi_check::record::kind as record;
    assert_eq!(
        [
            device::UNSIGNED,
            device::SIGNED,
            device::FLOAT,
            device::BOOL,
            device::BFLOAT
        ],
        [
            record::UNSIGNED,
            record::SIGNED,
            record::FLOAT,
            record::BOOL,
            record::BFLOAT
        ]
    );
}

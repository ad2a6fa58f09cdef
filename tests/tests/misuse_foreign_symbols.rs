//! A `declare_device!` record naming a PTX system call (`free`), or a C library name
//! (`memset`), is refused at link time on every device: the link exempts system calls from
//! needing a definition, so a kernel's "foreign" `free(x.as_ptr())` used to reach the
//! driver's `free` and fault (and `memset` with `u64` arguments overwrote a read-only input).
//! `declare_device!` refuses these names at compile time and the build refuses them too
//! (`tests/ui/fail/declare_reserved_symbol.rs`, `nvptx-builder`'s `foreign` tests); this is
//! the last line, for records made by any means.

use gpukernel_runtime::Error;
use gpukernel_runtime::link::Linker;
use gpukernel_tests::devices;

/// A kernels PTX as `declare_device!(unsafe extern { release = "<symbol>", safe extern "C"
/// fn(p: u64) })` and a kernel calling it would make.
fn ptx_calling(symbol: &str) -> String {
    let record = format!(
        "gpukernel-foreign-v1\nsymbol={symbol}\nabi=c\nat=src/evil.rs:3\nret=void\narg=uint64_t\n"
    );
    let bytes: Vec<String> = record.bytes().map(|b| b.to_string()).collect();
    format!(
        ".version 7.8\n.target sm_90\n.address_size 64\n\n\
         .extern .func {symbol}(\n\t.param .b64 {symbol}_param_0\n)\n;\n\
         .visible .global .align 1 .b8 __gpukernel_foreign_{symbol}_0a1b[{}] = {{{}}};\n\n\
         .visible .entry releases(\n\t.param .u64 releases_param_0\n)\n{{\n\
         \t.reg .b64 \t%rd<2>;\n\tld.param.u64 \t%rd1, [releases_param_0];\n\
         \t{{\n\t.param .b64 param0;\n\tst.param.b64 \t[param0], %rd1;\n\
         \tcall.uni \n\t{symbol}, \n\t(\n\tparam0\n\t);\n\t}}\n\tret;\n}}\n",
        bytes.len(),
        bytes.join(", ")
    )
}

#[test]
fn declared_system_calls_and_library_names_are_refused_at_link_time() {
    for (name, ctx) in devices() {
        for (symbol, provider) in [("free", "PTX system call"), ("memset", "C library")] {
            let e = Linker::new(&ctx)
                .unwrap()
                .add_ptx(&ptx_calling(symbol), "evil.ptx")
                .link()
                .err()
                .unwrap_or_else(|| panic!("{name}: a declared `{symbol}` linked"));
            match &e {
                Error::ForeignSymbolNotForeign {
                    symbol: s,
                    declared_at,
                    ..
                } => {
                    assert_eq!(
                        (s.as_str(), declared_at.as_str()),
                        (symbol, "src/evil.rs:3")
                    );
                    assert!(e.to_string().contains(provider), "{name}: {e}");
                }
                other => {
                    panic!("{name}: `{symbol}`: expected ForeignSymbolNotForeign, got {other}")
                }
            }
        }
        // The same kernel calling a name of its own is not refused for its name (it fails for
        // want of a definition instead).
        let e = Linker::new(&ctx)
            .unwrap()
            .add_ptx(&ptx_calling("release_buffer"), "evil.ptx")
            .link()
            .err();
        assert!(
            !matches!(e, Some(Error::ForeignSymbolNotForeign { .. })),
            "{name}: {e:?}"
        );
    }
}

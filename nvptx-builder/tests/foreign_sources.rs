//! The build-script paths of foreign CUDA C on a real kernels crate (written into a temporary
//! folder, built with the nightly like any kernels crate): `Builder::include_dir` resolves a
//! library's `#include <Rng/rng.h>` for clang (`foreign_cuda`) and for the host compile
//! (`foreign_sources`), standard headers compile for the simulator, and a declared function
//! that no source defines is named, with its declaration and the fix, before any host link.
//!
//! Needs the nightly with rust-src and llvm-tools, clang-19 and the CUDA headers
//! (`cargo xtask doctor`).

use std::path::{Path, PathBuf};

use nvptx_builder::{Builder, Error};

const MANIFEST: &str = r#"[package]
name = "fixture-kernels"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
gpukernel-device = { path = "DEVICE" }

[workspace]
"#;

const LIB: &str = r#"#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use gpukernel_device::{prelude::*, thread};

declare_device!(unsafe extern {
    pub "scale_f32", safe fn(x: f32, factor: f32) -> f32;
    pub "rng_next", safe fn(x: u32) -> u32;
});

#[kernel]
pub fn scale(x: &[f32], factor: f32, mut out: DisjointSlice<f32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = scale_f32(x[i.get()], factor);
    }
}

#[kernel]
pub fn next(x: &[u32], mut out: DisjointSlice<u32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = rng_next(x[i.get()]);
    }
}
"#;

/// Standard and system headers, as a user's `.cu` has them.
const SCALE_CU: &str = r#"#include <iostream>
#include <stdexcept>
#include <cstdint>
#include <cmath>
#include <pthread.h>
extern "C" __device__ int scale_f32(float* ret, float x, float factor) {
    *ret = x * factor;
    return 0;
}
"#;

/// A header-only library, reached through the include directory only.
const RNG_H: &str = r#"#pragma once
#include <cstdint>
__host__ __device__ inline std::uint32_t rng_step(std::uint32_t x) {
    return x * 1664525u + 1013904223u;
}
"#;

const RANDOM_CU: &str = r#"#include <Rng/rng.h>
extern "C" __device__ int rng_next(unsigned* ret, unsigned x) {
    *ret = rng_step(x);
    return 0;
}
"#;

/// The same function, misspelt.
const TYPO_CU: &str = "// a typo\nextern \"C\" __device__ int rng_nxet(unsigned* ret, unsigned x) {\n    *ret = x;\n    return 0;\n}\n";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A crate that declares libc functions and names no foreign source: on the simulator the
/// declarations bound to the host process's own `getpid` and `__libc_free` (safe kernel code
/// could free host memory), so the build refuses them.
const LIBC_LIB: &str = r#"#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_gpu_kernel))]

use gpukernel_device::{prelude::*, thread};

declare_device!(unsafe extern {
    pub "getpid", safe extern "C" fn() -> i32;
    pub "__libc_free", safe extern "C" fn(p: u64);
});

#[kernel]
pub fn pid(mut out: DisjointSlice<i32>) {
    let i = thread::index();
    if let Some(o) = out.get_mut(&i) {
        *o = getpid();
        __libc_free(0);
    }
}
"#;

/// The fixture crate, with the workspace's lock file so that nothing is fetched.
fn fixture() -> PathBuf {
    fixture_with("foreign-sources", LIB)
}

fn fixture_with(name: &str, lib: &str) -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    write(
        &dir.join("Cargo.toml"),
        &MANIFEST.replace("DEVICE", &root.join("device-lib").display().to_string()),
    );
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    write(&dir.join("src/lib.rs"), lib);
    write(&dir.join("cuda/scale.cu"), SCALE_CU);
    write(&dir.join("cuda/random.cu"), RANDOM_CU);
    write(&dir.join("cuda/typo.cu"), TYPO_CU);
    write(&dir.join("third_party/include/Rng/rng.h"), RNG_H);
    dir
}

fn builder(dir: &Path, out: &str) -> Builder {
    let out = dir.join(out);
    std::fs::create_dir_all(&out).unwrap();
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("nvptx-kernels");
    Builder::new(dir, out)
        .package_name("fixture-kernels")
        .target_dir(target)
}

/// Held by each test for its whole run: the tests set the environment and build in one folder.
static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The host compile reads cc's settings from the variables cargo gives build scripts.
fn set_build_script_env() {
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    for (k, v) in [
        ("TARGET", triple.as_str()),
        ("HOST", triple.as_str()),
        ("OPT_LEVEL", "1"),
        ("DEBUG", "false"),
    ] {
        if std::env::var_os(k).is_none() {
            // SAFETY: each test sets the same values before it starts any process; the tests
            // of this binary run one at a time (`ENV` is held for the whole test).
            unsafe { std::env::set_var(k, v) };
        }
    }
}

#[test]
fn include_dirs_standard_headers_and_missing_definitions_on_the_build_paths() {
    let _env = ENV
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    set_build_script_env();
    let dir = fixture();

    // `rng_next` is declared, and the only close definition is misspelt: named before the
    // host link, with the Rust declaration, the close name's definition and the fix.
    let e = builder(&dir, "out-missing")
        .foreign_sources(&["cuda/scale.cu", "cuda/typo.cu"])
        .build_all()
        .unwrap_err();
    let Error::ForeignDefinitionMissing { missing, sources } = &e else {
        panic!("expected ForeignDefinitionMissing, got: {e}")
    };
    assert_eq!(missing.len(), 1, "{e}");
    assert_eq!(missing[0].symbol, "rng_next");
    assert_eq!(missing[0].declared_at, "src/lib.rs:8", "{e}");
    assert_eq!(sources.len(), 2);
    let text = e.to_string();
    assert!(
        text.contains("`rng_next`, declared by `declare_device!` at src/lib.rs:8")
            && text.contains(&format!(
                "rng_nxet ({}:2)",
                dir.join("cuda/typo.cu").display()
            ))
            && text.contains("`foreign_sources` (or `foreign_cuda`"),
        "{text}"
    );
    assert!(!text.contains("scale_f32"), "{text}");

    // Without the include directory, neither compile finds the library.
    let e = builder(&dir, "out-no-include")
        .foreign_cuda(["cuda/random.cu"])
        .build_all()
        .unwrap_err();
    assert!(
        matches!(e, Error::ForeignDeviceCompileFailed { .. })
            && e.to_string().contains("Rng/rng.h"),
        "{e}"
    );

    // With it: clang links `random.cu` into the PTX, the host compiles both sources (the
    // standard headers included), and every declaration is defined on the host.
    let out = builder(&dir, "out-ok")
        .include_dir("third_party/include")
        .foreign_sources(&["cuda/scale.cu"])
        .foreign_cuda(["cuda/random.cu"])
        .build_all()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out.linked_cuda.len(), 1, "{:?}", out.linked_cuda);
    assert_eq!(out.linked_cuda[0].defines, ["rng_next"]);
    let ptx = std::fs::read_to_string(&out.ptx).unwrap();
    assert!(
        ptx.contains("1664525")
            && !ptx.contains(".extern .func (.param .b32 func_retval0) rng_next"),
        "rng_step inlined from the library header"
    );
    let lib = dir.join("out-ok/libfixture_kernels_foreign.a");
    let bytes = std::fs::read(&lib).unwrap();
    assert!(
        bytes.windows(8).any(|w| w == b"rng_next") && bytes.windows(9).any(|w| w == b"scale_f32"),
        "{} defines both functions",
        lib.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn declarations_without_any_foreign_source_are_refused() {
    let _env = ENV
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    set_build_script_env();
    let dir = fixture_with("no-foreign-sources", LIBC_LIB);
    let e = builder(&dir, "out").build_all().unwrap_err();
    let Error::ForeignDefinitionMissing { missing, sources } = &e else {
        panic!("expected ForeignDefinitionMissing, got: {e}")
    };
    let mut symbols: Vec<(&str, &str)> = missing
        .iter()
        .map(|m| (m.symbol.as_str(), m.declared_at.as_str()))
        .collect();
    symbols.sort_unstable();
    assert_eq!(
        symbols,
        [("__libc_free", "src/lib.rs:8"), ("getpid", "src/lib.rs:7")],
        "{e}"
    );
    assert!(sources.is_empty(), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("`getpid`, declared by `declare_device!` at src/lib.rs:7")
            && text.contains("the sources compiled for the host: none")
            && text.contains("`foreign_sources` (or `foreign_cuda`"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

//! The guide's troubleshooting chapter shows the messages the code gives: each
//! `<!-- message: NAME -->` block of `book/src/troubleshooting.md` is compared here with the
//! error that NAME's test produces (on the simulator, or built as nvptx-builder builds it).
//! A message that changes fails its test until the chapter shows the new text.

use ffi_examples_lto_kernels::{PTX, multiply_vectors, sqrt_checked};
use gpukernel_runtime::ipc::ShareKind;
use gpukernel_runtime::{Context, Device, Error, LaunchConfig};

const PAGE: &str = include_str!("../../book/src/troubleshooting.md");

/// Every message the chapter shows, each checked by one test below.
const CHECKED: &[&str] = &[
    "nightly_missing",
    "clang_missing",
    "cuda_headers_missing",
    "simulator_fault",
    "foreign_call_failed",
    "launch_dimensions",
    "not_on_simulator",
];

/// The text of the ```text block after `<!-- message: NAME -->`.
fn shown(name: &str) -> String {
    let marker = format!("<!-- message: {name} -->");
    let at = PAGE
        .find(&marker)
        .unwrap_or_else(|| panic!("troubleshooting.md has no `{marker}`"));
    let rest = &PAGE[at + marker.len()..];
    let open = rest
        .find("```text\n")
        .expect("a ```text block after the marker")
        + 8;
    let close = rest[open..]
        .find("\n```")
        .expect("the block's closing fence");
    rest[open..open + close].to_string()
}

/// `text` with each `.rs:LINE:COLUMN` as `.rs:_:_`: a message that names a source location
/// stays the chapter's message when the lines above it move.
fn without_lines(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(".rs:") {
        out.push_str(&rest[..at + 4]);
        rest = &rest[at + 4..];
        let digits = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let line = digits(rest);
        if line > 0 && rest[line..].starts_with(':') && digits(&rest[line + 1..]) > 0 {
            let col = digits(&rest[line + 1..]);
            out.push_str("_:_");
            rest = &rest[line + 1 + col..];
        }
    }
    out.push_str(rest);
    out
}

fn check(name: &str, got: impl std::fmt::Display) {
    let got = got.to_string();
    println!("--- {name} ---\n{got}");
    assert_eq!(
        without_lines(&got),
        without_lines(&shown(name)),
        "the message `{name}` changed: show the new text in book/src/troubleshooting.md"
    );
}

fn sim() -> Context {
    Device::simulator().primary_context().unwrap()
}

#[test]
fn the_chapter_shows_only_checked_messages() {
    let mut found = Vec::new();
    let mut rest = PAGE;
    while let Some(at) = rest.find("<!-- message: ") {
        let tail = &rest[at + 14..];
        let end = tail.find(" -->").expect("`-->` after a message marker");
        found.push(tail[..end].to_string());
        rest = &tail[end..];
    }
    let mut want: Vec<String> = CHECKED.iter().map(|s| s.to_string()).collect();
    want.sort();
    found.sort();
    assert_eq!(
        found, want,
        "message markers in troubleshooting.md vs. the tests here"
    );
}

#[test]
fn source_locations_are_compared_without_lines() {
    assert_eq!(
        without_lines("(at src/lib.rs:43:22) and a.rs:7 and b.rs:x"),
        "(at src/lib.rs:_:_) and a.rs:7 and b.rs:x"
    );
}

#[test]
fn nightly_missing() {
    check(
        "nightly_missing",
        nvptx_builder::Error::NightlyMissing {
            toolchain: "nightly-2026-05-20".into(),
            detail:
                "error: toolchain 'nightly-2026-05-20-x86_64-unknown-linux-gnu' is not installed"
                    .into(),
        },
    );
}

#[test]
fn clang_missing() {
    check(
        "clang_missing",
        nvptx_builder::Error::ClangMissing {
            clang: "clang-19".into(),
            from_env: false,
            detail: "No such file or directory (os error 2)".into(),
            install: "`cargo xtask doctor` in the gpukernel checkout (it runs `apt-get install clang-19`)",
        },
    );
}

#[test]
fn cuda_headers_missing() {
    check(
        "cuda_headers_missing",
        nvptx_builder::Error::CudaHeadersMissing {
            searched: vec!["/home/me/.cache/gpukernel/cuda-13.0/nvidia/cu13".into()],
        },
    );
}

#[test]
fn simulator_fault() {
    let ctx = sim();
    let module = ctx.load_module(PTX.as_bytes()).unwrap();
    let kernel = module.kernel(multiply_vectors).unwrap();
    let n = 1000;
    // `a` one element short: the last thread's `a[i]` is out of bounds.
    let (a, b) = (
        ctx.htod_copy(&vec![1.0f32; n - 1]).unwrap(),
        ctx.htod_copy(&vec![2.0f32; n]).unwrap(),
    );
    let mut out = ctx.alloc_zeros::<f32>(n).unwrap();
    let cfg = LaunchConfig::for_elements(n).unwrap();
    let e = ctx
        .default_stream()
        .launch(&kernel, cfg, (&a, &b, &mut out))
        .and_then(|()| out.to_host_vec().map(drop))
        .unwrap_err();
    assert!(matches!(e, Error::SimulatorFault { .. }), "{e:?}");
    check("simulator_fault", e);
}

#[test]
fn foreign_call_failed() {
    let ctx = sim();
    let module = ctx.load_module(PTX.as_bytes()).unwrap();
    let kernel = module.kernel(sqrt_checked).unwrap();
    let mut x = vec![4.0f32; 1000];
    x[777] = -1.0; // checked_sqrt returns status 33 for a negative input
    let x = ctx.htod_copy(&x).unwrap();
    let mut out = ctx.alloc_zeros::<f32>(1000).unwrap();
    ctx.default_stream()
        .launch(
            &kernel,
            LaunchConfig::for_elements(1000).unwrap(),
            (&x, &mut out),
        )
        .unwrap();
    let e = out.to_host_vec().unwrap_err();
    assert!(matches!(e, Error::ForeignCallFailed { .. }), "{e:?}");
    check("foreign_call_failed", e);
}

#[test]
fn launch_dimensions() {
    let ctx = sim();
    let module = ctx.load_module(PTX.as_bytes()).unwrap();
    let kernel = module.kernel(multiply_vectors).unwrap();
    let (a, b) = (
        ctx.htod_copy(&[1.0f32; 512]).unwrap(),
        ctx.htod_copy(&[2.0f32; 512]).unwrap(),
    );
    let mut out = ctx.alloc_zeros::<f32>(512).unwrap();
    let e = ctx
        .default_stream()
        .launch(
            &kernel,
            LaunchConfig::new((1, 2, 1), 256),
            (&a, &b, &mut out),
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::LaunchDimensionsNotAllowed { .. }),
        "{e:?}"
    );
    check("launch_dimensions", e);
}

#[test]
fn not_on_simulator() {
    let e = sim()
        .alloc_shareable::<f32>(1024, ShareKind::Ipc)
        .unwrap_err();
    assert!(matches!(e, Error::NotOnSimulator { .. }), "{e:?}");
    check("not_on_simulator", e);
}

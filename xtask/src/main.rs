//! Project automation for gpukernel: `cargo xtask <command>`.
//!
//! * `doctor [--check]` — checks, and unless `--check` installs, what builds and tests need:
//!   the nightly toolchain with `rust-src` and `llvm-tools-preview`, the CUDA 13.0 compiler
//!   wheels (NVRTC, nvcc/ptxas, nvJitLink, libdevice) into the per-user folder
//!   `~/.cache/gpukernel/cuda-13.0` (or this checkout's `.cuda-tools/` where that exists, or
//!   `GPUKERNEL_CUDA_TOOLS`), and clang-19.
//! * `new <DIR> [--git URL]` — writes a ready project outside this checkout: a workspace with
//!   a kernels crate (`build.rs`, one `.cu`), a host crate and a test on the simulator,
//!   depending on this checkout by path (or on `URL` by git). `new --check` is the CI step that
//!   `test` runs: a generated project in a temporary folder, built, tested and run.
//! * `test` — the README's test command: doctor, the whole test suite (kernel tests run on the
//!   simulator; GPU-only tests show as ignored without the `gpu` feature), every example on
//!   the simulator, a project from `new` built and tested in a temporary folder, then
//!   `doc-check` and `ptx-check`. xtask's own tests include the guide's check (`book --check`).
//! * `example [NAME]` — the README's headline example (default `multiply_vectors`): on the GPU
//!   if one is present, else on the simulator.
//! * `doc-check` — every public item of `gpukernel-device` and `gpukernel-runtime` (functions,
//!   types, traits, macros, type aliases, inherent and trait methods) has a doc example; reads
//!   the nightly rustdoc's JSON output and names `file:line` of each item without one.
//! * `ptx-check` — validates every PTX the build emitted with ptxas, for sm_90 and sm_80.
//! * `fuzz [--seconds N] [TARGET...]` — runs each fuzz target of `fuzz/` (default: all, 60 s
//!   each) with cargo-fuzz on the nightly toolchain, installing cargo-fuzz when missing.
//! * `book [--check]` — checks that every code block of the user guide (`book/src`) and of
//!   README.md is code the tests compile (includes of anchored regions), then builds the guide
//!   with `mdbook` into `target/book` (`--check`: the check only, no mdbook needed).
//! * `package-check` — the four library crates as crates.io would get them: API docs without a
//!   rustdoc warning, `cargo package` (verified), and a `new` project depending on them by
//!   version from a local directory source that replaces crates.io (see `package.rs`).
//! * `sanitize [TOOL] [STEP...]` — the GPU bundle's steps under compute-sanitizer (memcheck,
//!   racecheck, synccheck and initcheck, or TOOL alone), failing on any report: builds the
//!   bundle (only the named steps' binaries when STEPs are given) and runs its
//!   `./run.sh sanitize` where a GPU is present, else says how to run it on one.
//! * `gpu-bundle [DIR]` — release builds of the GPU tests, benchmarks and examples plus a
//!   `run.sh`, for a machine with a GPU and no Rust toolchain.

mod book;
mod doccheck;
mod fuzz;
mod new;
mod package;
mod sanitize;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const CUDA_WHEELS: &[&str] = &[
    "nvidia-cuda-nvrtc==13.0.*",
    "nvidia-cuda-nvcc==13.0.*",
    "nvidia-nvjitlink==13.0.*",
    "nvidia-nvvm==13.0.*",
    "nvidia-cuda-runtime==13.0.*",
    "nvidia-cuda-cccl==13.0.*",
    // nvcc's crt/host_config.h and friends live in their own wheel.
    "nvidia-cuda-crt==13.0.*",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("doctor") => doctor(!args.iter().any(|a| a == "--check")),
        Some("test") => test(&args[1..]),
        Some("example") => example(
            args.get(1)
                .map(String::as_str)
                .unwrap_or("multiply_vectors"),
        ),
        Some("ptx-check") => ptx_check(),
        Some("doc-check") => doccheck::doc_check(),
        Some("new") => new::new_command(&args[1..]),
        Some("fuzz") => fuzz::fuzz(&args[1..]),
        Some("package-check") => package::package_check(),
        Some("sanitize") => sanitize::sanitize(&args[1..]),
        Some("gpu-bundle") => gpu_bundle(args.get(1).map(PathBuf::from)),
        Some("book") => book::book(&args[1..]),
        Some(other) => Err(format!("unknown command `{other}`\n{USAGE}")),
        None => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "usage: cargo xtask <doctor [--check] | test [-- <cargo test args>] | example [NAME] | new <DIR> [--git URL] | new --check | ptx-check | doc-check | fuzz [--seconds N] [TARGET...] | package-check | sanitize [TOOL] [STEP...] | gpu-bundle [DIR] | book [--check]>";

/// The commands `main` dispatches (the guide's check refuses a `cargo xtask` line naming
/// another).
pub(crate) const COMMANDS: &[&str] = &[
    "doctor",
    "test",
    "example",
    "ptx-check",
    "doc-check",
    "new",
    "fuzz",
    "package-check",
    "sanitize",
    "gpu-bundle",
    "book",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// The CUDA tool root (`bin/ptxas`, `lib/libnvrtc.so.13`, `include/`) that `doctor` checks
/// and fills: `GPUKERNEL_CUDA_TOOLS` if set, else this checkout's `.cuda-tools/nvidia/cu13` if
/// it exists (kept for checkouts and CI machines that have one), else the per-user folder.
fn cuda_tools() -> PathBuf {
    if let Some(dir) = std::env::var_os("GPUKERNEL_CUDA_TOOLS").filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    let local = root().join(".cuda-tools/nvidia/cu13");
    if local.is_dir() {
        return local;
    }
    user_tools_install_dir().join("nvidia/cu13")
}

/// Where pip installs the wheels for [`cuda_tools`] (their `nvidia/cu13` is the tool root).
fn cuda_tools_install_dir() -> Result<PathBuf, String> {
    let tools = cuda_tools();
    if tools.ends_with("nvidia/cu13") {
        Ok(tools.parent().and_then(Path::parent).unwrap().to_path_buf())
    } else {
        Err(format!(
            "GPUKERNEL_CUDA_TOOLS={} lacks the CUDA 13.0 tools, and doctor installs only into a folder \
             ending in nvidia/cu13: point it at a CUDA 13 toolkit, or unset it to use {}",
            tools.display(),
            user_tools_install_dir().join("nvidia/cu13").display()
        ))
    }
}

/// `$XDG_CACHE_HOME/gpukernel/cuda-13.0`, else `~/.cache/gpukernel/cuda-13.0`: the same folder
/// nvptx-builder's `user_tools_install_dir` and the runtime search, from any project.
fn user_tools_install_dir() -> PathBuf {
    let var = |v: &str| {
        std::env::var_os(v)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    };
    var("XDG_CACHE_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("gpukernel/cuda-13.0")
}

fn nightly() -> String {
    std::env::var("GPUKERNEL_NIGHTLY").unwrap_or_else(|_| "nightly".into())
}

fn run(cmd: &mut Command) -> Result<(), String> {
    eprintln!("$ {}", show(cmd));
    let status = cmd
        .status()
        .map_err(|e| format!("could not start `{}`: {e}", show(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", show(cmd)))
    }
}

fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn show(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Environment for commands that load NVRTC/nvJitLink or run nvcc from the wheels.
fn with_cuda_env(cmd: &mut Command) -> &mut Command {
    let tools = cuda_tools();
    if tools.is_dir() && std::env::var_os("GPUKERNEL_CUDA_TOOLS").is_none() {
        cmd.env("GPUKERNEL_CUDA_TOOLS", &tools);
    }
    let mut ld = vec![tools.join("lib")];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        ld.extend(std::env::split_paths(&old));
    }
    if let Ok(joined) = std::env::join_paths(ld) {
        cmd.env("LD_LIBRARY_PATH", joined);
    }
    cmd
}

fn doctor(install: bool) -> Result<(), String> {
    let mut problems = Vec::new();
    let tc = nightly();

    // 1. The nightly toolchain and its components.
    let have_nightly = output(Command::new("rustup").args(["run", &tc, "rustc", "-V"])).is_some();
    if !have_nightly {
        if install {
            run(Command::new("rustup").args([
                "toolchain",
                "install",
                &tc,
                "--profile",
                "minimal",
                "--component",
                "rust-src,llvm-tools-preview",
            ]))?;
        } else {
            problems.push(format!("nightly toolchain `{tc}` missing: rustup toolchain install {tc} --profile minimal --component rust-src,llvm-tools-preview"));
        }
    }
    let installed = output(Command::new("rustup").args([
        "component",
        "list",
        "--installed",
        "--toolchain",
        &tc,
    ]))
    .unwrap_or_default();
    for comp in ["rust-src", "llvm-tools"] {
        if !installed.lines().any(|l| l.starts_with(comp)) {
            let name = if comp == "llvm-tools" {
                "llvm-tools-preview"
            } else {
                comp
            };
            if install {
                run(Command::new("rustup").args(["component", "add", name, "--toolchain", &tc]))?;
            } else {
                problems.push(format!(
                    "component `{name}` missing: rustup component add {name} --toolchain {tc}"
                ));
            }
        }
    }

    // 2. The CUDA compiler wheels, pinned to the GPU machine's CUDA 13.0.
    let tools = cuda_tools();
    let needed = [
        "bin/ptxas",
        "bin/nvcc",
        "lib/libnvrtc.so.13",
        "lib/libnvJitLink.so.13",
        "nvvm/libdevice/libdevice.10.bc",
        "include/cuda_runtime.h",
        "include/crt/host_config.h",
        // clang-19 compiles `foreign_cuda` sources against these (build-time LTO).
        "include/cuda.h",
    ];
    let missing: Vec<_> = needed.iter().filter(|p| !tools.join(p).exists()).collect();
    if !missing.is_empty() {
        if install {
            let python = ["python3", "python"]
                .into_iter()
                .find(|p| output(Command::new(p).arg("--version")).is_some())
                .ok_or(
                    "python3 with pip is needed to install the CUDA compiler wheels from PyPI",
                )?;
            let target = cuda_tools_install_dir()?;
            eprintln!(
                "doctor: installing the CUDA 13.0 compiler wheels from PyPI into {} \
                 (about 583 MB on the first install; once per user, for every project)",
                target.display()
            );
            let mut cmd = Command::new(python);
            cmd.args([
                "-m",
                "pip",
                "install",
                "--progress-bar",
                "on",
                "--disable-pip-version-check",
                "--no-deps",
                "--upgrade",
                "--target",
            ])
            .arg(&target)
            .args(CUDA_WHEELS);
            let started = std::time::Instant::now();
            run(&mut cmd)?;
            eprintln!(
                "doctor: CUDA wheels installed in {:.0} s",
                started.elapsed().as_secs_f64()
            );
            let still: Vec<_> = needed.iter().filter(|p| !tools.join(p).exists()).collect();
            if !still.is_empty() {
                return Err(format!(
                    "after installing the CUDA wheels these are still missing under {}: {still:?}",
                    tools.display()
                ));
            }
        } else {
            problems.push(format!("CUDA compiler tools missing under {}: {missing:?} (cargo xtask doctor installs them)", tools.display()));
        }
    }

    // 3. clang-19 (build-time LTO of foreign CUDA C with Rust kernels).
    if output(Command::new("clang-19").arg("--version")).is_none() {
        if install {
            let sudo = if output(Command::new("id").arg("-u")).is_some_and(|u| u.trim() == "0") {
                None
            } else {
                Some("sudo")
            };
            let apt = |args: &[&str]| {
                let mut c = match sudo {
                    Some(s) => {
                        let mut c = Command::new(s);
                        c.arg("apt-get");
                        c
                    }
                    None => Command::new("apt-get"),
                };
                c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
                c
            };
            if run(&mut apt(&["install", "-y", "-qq", "clang-19"])).is_err() {
                run(&mut apt(&["update", "-qq"]))?;
                run(&mut apt(&["install", "-y", "-qq", "clang-19"]))?;
            }
        } else {
            problems.push("clang-19 missing: apt-get install clang-19".into());
        }
    }

    if problems.is_empty() {
        eprintln!(
            "doctor: nightly `{tc}` with rust-src and llvm-tools, CUDA 13.0 tools in {}, clang-19: all present",
            tools.display()
        );
        Ok(())
    } else {
        Err(format!(
            "doctor found problems:\n  - {}",
            problems.join("\n  - ")
        ))
    }
}

fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    with_cuda_env(&mut c);
    c
}

fn test(extra: &[String]) -> Result<(), String> {
    doctor(true)?;
    eprintln!(
        "test: the workspace's tests; the macros' UI tests (tests/ui, `ui` below) compile every \
         case with cargo and print nothing until the end (about 90 s)"
    );
    let mut cmd = cargo();
    // Every failing test binary is reported, not only the first.
    cmd.args([
        "test",
        "--workspace",
        "--exclude",
        "xtask",
        "--no-fail-fast",
    ]);
    let extra: Vec<&String> = extra.iter().filter(|a| *a != "--").collect();
    if !extra.is_empty() {
        cmd.arg("--").args(extra);
    }
    run(&mut cmd)?;
    run(cargo().args(["test", "-p", "xtask"]))?;
    // The cudarc interop feature (its GPU tests are ignored without `gpu`).
    run(cargo().args([
        "test",
        "-p",
        "gpukernel-tests",
        "--features",
        "cudarc-interop",
        "--test",
        "cudarc_interop",
    ]))?;
    nvtx_check()?;
    windows_check()?;
    run_examples_on_simulator()?;
    new::check_generated_project()?;
    doccheck::doc_check()?;
    ptx_check()
}

/// The `nvtx` feature of gpukernel-runtime: the ranges each operation opens, on the simulator
/// (`profile::tests`; the NVTX3 calls themselves are checked under `nsys` on a GPU).
fn nvtx_check() -> Result<(), String> {
    run(cargo().args([
        "test",
        "-p",
        "gpukernel-runtime",
        "--features",
        "nvtx",
        "--lib",
        "profile::",
    ]))
}

/// The Windows forms of the sharing API (D3D12, Win32 handles) are compiled for
/// `x86_64-pc-windows-msvc` (`cargo check`: no Windows machine runs them). blake3 builds without
/// its C code there (`blake3/pure`: no MSVC here). Skipped, saying so, when the target's
/// standard library cannot be installed.
fn windows_check() -> Result<(), String> {
    const TARGET: &str = "x86_64-pc-windows-msvc";
    let installed =
        output(Command::new("rustup").args(["target", "list", "--installed"])).unwrap_or_default();
    if !installed.lines().any(|l| l.trim() == TARGET) {
        let added = Command::new("rustup")
            .args(["target", "add", TARGET])
            .status()
            .is_ok_and(|s| s.success());
        if !added {
            eprintln!(
                "windows check: SKIPPED (`rustup target add {TARGET}` failed): the Windows sharing API was not compiled"
            );
            return Ok(());
        }
    }
    run(cargo().args([
        "check",
        "-p",
        "gpukernel-runtime",
        "--features",
        "cudarc-interop,blake3/pure",
        "--target",
        TARGET,
    ]))?;
    eprintln!("windows check: gpukernel-runtime compiles for {TARGET}");
    Ok(())
}

/// Examples that need a GPU and another API: run by the GPU bundle, not on the simulator.
const GPU_ONLY_EXAMPLES: &[&str] = &["vulkan_interop"];

/// Examples that need several simulated devices on the simulator, and how many.
const SIM_DEVICES: &[(&str, &str)] = &[("data_parallel", "2")];

/// Runs every example of `ffi-examples` on the simulator (each checks its result against the
/// host and exits non-zero on a mismatch).
fn run_examples_on_simulator() -> Result<(), String> {
    let dir = root().join("ffi-examples/examples");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.extension().is_some_and(|x| x == "rs"))
                .then(|| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .flatten()
        })
        .collect();
    names.sort();
    names.retain(|n| {
        let gpu_only = GPU_ONLY_EXAMPLES.contains(&n.as_str());
        if gpu_only {
            eprintln!("examples: {n} needs a GPU and Vulkan: it runs in the GPU bundle");
        }
        !gpu_only
    });
    for name in &names {
        let mut cmd = cargo();
        cmd.args(["run", "--quiet", "-p", "ffi-examples", "--example", name])
            .env("GPUKERNEL_BACKEND", "sim");
        if let Some((_, n)) = SIM_DEVICES.iter().find(|(e, _)| e == name) {
            cmd.env("GPUKERNEL_SIM_DEVICES", n);
        }
        run(&mut cmd)?;
    }
    eprintln!(
        "examples: {} ran on the simulator and matched the host",
        names.len()
    );
    Ok(())
}

fn example(name: &str) -> Result<(), String> {
    doctor(true)?;
    eprintln!(
        "example: building `{name}` (release) and running it on the GPU if there is one, else on \
         the simulator (GPUKERNEL_BACKEND=cuda|sim chooses)"
    );
    run(cargo().args(["run", "--release", "-p", "ffi-examples", "--example", name]))?;
    eprintln!("example: `{name}` checked its result against the host: it matches");
    Ok(())
}

/// Every `*.ptx` (with its `*.bc`) that nvptx-builder wrote under target/.
fn built_ptx() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    for profile in ["debug", "release"] {
        let build = target.join(profile).join("build");
        let Ok(rd) = std::fs::read_dir(&build) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(files) = std::fs::read_dir(e.path().join("out")) else {
                continue;
            };
            for f in files.flatten() {
                let p = f.path();
                if p.extension().is_some_and(|x| x == "ptx") && p.with_extension("bc").is_file() {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

fn ptx_check() -> Result<(), String> {
    let ptxas = cuda_tools().join("bin/ptxas");
    let ptxas = if ptxas.is_file() {
        ptxas
    } else {
        PathBuf::from("ptxas")
    };
    let sysroot =
        output(Command::new("rustup").args(["run", &nightly(), "rustc", "--print", "sysroot"]))
            .ok_or("nightly toolchain not found (run cargo xtask doctor)")?;
    let host = output(Command::new("rustc").arg("-vV"))
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        })
        .unwrap_or_else(|| "x86_64-unknown-linux-gnu".into());
    let llc = PathBuf::from(sysroot.trim())
        .join("lib/rustlib")
        .join(host)
        .join("bin/llc");

    let ptxs = built_ptx();
    if ptxs.is_empty() {
        return Err(
            "no PTX found under target/*/build/*/out: build the workspace first (cargo build)"
                .into(),
        );
    }
    let tmp = std::env::temp_dir().join(format!("gpukernel-ptx-check-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let mut checked = 0;
    for ptx in &ptxs {
        // An architecture-specific PTX (`.target sm_90a`, for wgmma) is checked for that
        // target alone: its instructions exist nowhere else.
        let target = std::fs::read_to_string(ptx)
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix(".target ").map(|a| a.trim().to_string()))
            })
            .unwrap_or_default();
        let checks = if target.ends_with('a') {
            vec![(ptx.clone(), target.clone())]
        } else {
            // sm_90: the PTX as built. sm_80: the same bitcode through llc for sm_80.
            let ptx80 = tmp.join(format!("{checked}-sm_80.ptx"));
            run(Command::new(&llc)
                .arg("-mcpu=sm_80")
                .arg("-O3")
                .arg(ptx.with_extension("bc"))
                .arg("-o")
                .arg(&ptx80))?;
            vec![
                (ptx.clone(), "sm_90".to_string()),
                (ptx80, "sm_80".to_string()),
            ]
        };
        for (file, arch) in checks {
            let obj = tmp.join(format!("{checked}-{arch}.o"));
            let out = Command::new(&ptxas)
                .arg(format!("-arch={arch}"))
                .arg("-c")
                .arg(&file)
                .arg("-o")
                .arg(&obj)
                .output()
                .map_err(|e| {
                    format!(
                        "could not run {} ({e}); run cargo xtask doctor",
                        ptxas.display()
                    )
                })?;
            if !out.status.success() {
                return Err(format!(
                    "ptxas -arch={arch} rejected {} (from {}):\n{}{}",
                    file.display(),
                    ptx.display(),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            let entries = std::fs::read_to_string(&file)
                .map(|t| t.matches(".entry ").count())
                .unwrap_or(0);
            eprintln!(
                "ptx-check: {} OK for {arch} ({entries} entries)",
                file.display()
            );
        }
        checked += 1;
    }
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!(
        "ptx-check: {checked} PTX file(s) accepted by ptxas for sm_90 and sm_80 (sm_90a-specific ones for sm_90a)"
    );
    Ok(())
}

fn gpu_bundle(dir: Option<PathBuf>) -> Result<(), String> {
    let dir = dir.unwrap_or_else(|| root().join("gpu-bundle"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).map_err(|e| e.to_string())?;

    // Test binaries with the GPU tests compiled in.
    let out = cargo()
        .args([
            "test",
            "--release",
            "--no-run",
            "--message-format=json",
            "--features",
            "gpu,gpukernel-tests/cudarc-interop,gpukernel-runtime/nccl,ffi-examples/nccl",
        ])
        .args([
            "-p",
            "gpukernel-runtime",
            "-p",
            "gpukernel-tests",
            "-p",
            "ffi-examples",
            "-p",
            "gpukernel-algorithms",
        ])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "building the GPU test binaries failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut tests = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if !line.contains("\"reason\":\"compiler-artifact\"") || !line.contains("\"test\":true") {
            continue;
        }
        if let Some(exe) = json_str(line, "executable") {
            let name = json_str(line, "name").unwrap_or_default();
            // trybuild UI tests drive cargo: they run in CI, not on a machine without Rust.
            // The benchmark binaries have no unit tests: their test harnesses stay out (the
            // bundle must stay under 64 MiB).
            if name.starts_with("ui") || line.contains("\"kind\":[\"bin\"]") {
                continue;
            }
            let file = Path::new(&exe)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            tests.push((name, file.clone()));
            copy(Path::new(&exe), &dir.join("bin").join(&file))?;
        }
    }
    // Examples and benchmarks.
    run(cargo().args([
        "build",
        "--release",
        "--features",
        "gpu,nccl",
        "-p",
        "ffi-examples",
        "--examples",
        "--bins",
    ]))?;
    let release = root().join("target/release");
    let mut examples = Vec::new();
    for e in std::fs::read_dir(release.join("examples"))
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let p = e.path();
        let n = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_file() && !n.contains('-') && p.extension().is_none() {
            copy(&p, &dir.join("bin").join(&n))?;
            examples.push(n);
        }
    }
    examples.sort();
    let mut benches = Vec::new();
    for e in std::fs::read_dir(root().join("ffi-examples/src/bin"))
        .map_err(|e| e.to_string())?
        .flatten()
    {
        if let Some(stem) = e.path().file_stem() {
            let n = stem.to_string_lossy().into_owned();
            copy(&release.join(&n), &dir.join("bin").join(&n))?;
            benches.push(n);
        }
    }
    // The device-wide algorithms against CUB (compiled with the GPU machine's nvcc) and Numba.
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "gpukernel-algorithms",
        "--features",
        "example-op",
        "--bin",
        "bench_algorithms",
    ]))?;
    copy(
        &release.join("bench_algorithms"),
        &dir.join("bin/bench_algorithms"),
    )?;
    benches.push("bench_algorithms".to_string());
    benches.sort();
    for f in std::fs::read_dir(dir.join("bin"))
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let _ = Command::new("strip").arg(f.path()).status();
    }
    // One xz archive of bin/, unpacked by run.sh: a GPU run carries at most 64 MiB with the
    // source tree, and the stripped binaries alone are three times that (gzip: 63 MB for 50
    // test binaries; xz: 20 MB).
    run(Command::new("tar")
        .env("XZ_OPT", "-6 -T0")
        .arg("cJf")
        .arg(dir.join("bin.tar.xz"))
        .arg("-C")
        .arg(&dir)
        .arg("bin"))?;
    std::fs::remove_dir_all(dir.join("bin")).map_err(|e| e.to_string())?;
    // Data files the examples and tests read at run time.
    copy_dir(
        &root().join("ffi-examples/kernels/cuda"),
        &dir.join("data/cuda"),
    )?;
    // The Numba rows of `bench_suite` (run before it; it reads their results file).
    copy(
        &root().join("ffi-examples/bench/numba_suite.py"),
        &dir.join("data/numba_suite.py"),
    )?;
    // PyTorch's side of `bench_attention` (it runs the script from `GPUKERNEL_DATA_DIR`).
    copy(
        &root().join("ffi-examples/bench/bench_attention.py"),
        &dir.join("data/bench_attention.py"),
    )?;

    vulkan_libs(&dir.join("lib"));

    let mut sh = bundle_preamble();
    // `./run.sh sanitize [TOOL] [STEP...]`: the steps under compute-sanitizer, then exit.
    sh.push_str(&sanitize::sanitize_sh(&tests, &examples));
    for (name, file) in &tests {
        // The several-device test binaries run test by test, each under its own time limit,
        // so that a hang names its test (and leaves the stacks of its threads in the log).
        let line = match multi_gpu_step(name) {
            "two_gpus" => format!("two_gpus_each_test bin/{file} # {name}\n"),
            "mstep" => format!("each_test bin/{file} # {name}\n"),
            kind => format!("{kind} bin/{file} --test-threads=1 --nocapture # {name}\n"),
        };
        sh.push_str(&line);
    }
    // Memory errors in our kernels and foreign calls: the kernel suite and the examples under
    // compute-sanitizer's memcheck (any report fails the step). API errors are not reported:
    // the runtime checks every driver result itself, and probes one parameter past the end
    // with cuFuncGetParamInfo on purpose (drivers before CUDA 13.2 have no parameter count).
    sh.push_str("if command -v compute-sanitizer >/dev/null; then\n");
    for (name, file) in tests.iter().filter(|(n, _)| n == "kernels") {
        sh.push_str(&format!("  step compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 bin/{file} --test-threads=1 # {name}\n"));
    }
    // Not the Vulkan example: memcheck does not see the memory the Vulkan driver allocates.
    for e in examples.iter().filter(|e| {
        !TWO_GPU_STEPS.contains(&e.as_str()) && !GPU_ONLY_EXAMPLES.contains(&e.as_str())
    }) {
        sh.push_str(&format!(
            "  step compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 bin/{e}\n"
        ));
    }
    sh.push_str("fi\n");
    for e in &examples {
        sh.push_str(&format!("{} bin/{e}\n", multi_gpu_step(e)));
    }
    // The two-process example as two hosts would run it: each rank a process that sees one
    // GPU (CUDA_VISIBLE_DEVICES), the unique id relayed through pipes.
    if examples.iter().any(|e| e == "nccl_two_process") {
        sh.push_str("two_gpus bin/nccl_two_process --one-gpu-each\n");
    }
    sh.push_str("if python3 -c 'import numba.cuda' 2>/dev/null; then\n  step python3 data/numba_suite.py /tmp/gpukernel-numba-suite.txt && export GPUKERNEL_NUMBA_RESULTS=/tmp/gpukernel-numba-suite.txt\nfi\n");
    for b in &benches {
        sh.push_str(&format!("{} bin/{b}\n", multi_gpu_step(b)));
    }
    sh.push_str(
        "echo\nif [ $fail -ne 0 ]; then echo 'SOME GPU STEPS FAILED'; exit 1; fi\n\
         if [ $skipped -ne 0 ]; then echo \"NO STEP FAILED, BUT $skipped STEP(S) WERE SKIPPED (needs 2 GPUs, found $gpus): NOT A FULL PASS\"; exit 3; fi\n\
         echo 'ALL GPU STEPS PASSED'\nexit 0\n",
    );
    let run_sh = dir.join("run.sh");
    std::fs::write(&run_sh, sh).map_err(|e| e.to_string())?;
    let _ = Command::new("chmod").arg("+x").arg(&run_sh).status();
    let size = output(Command::new("du").arg("-sh").arg(&dir)).unwrap_or_default();
    eprintln!(
        "gpu-bundle: {} tests, {} examples, {} benchmarks in {}",
        tests.len(),
        examples.len(),
        benches.len(),
        size.trim()
    );
    Ok(())
}

/// `run.sh`'s set-up: unpacking, the environment, the GPU count and the step functions
/// (shared by the full bundle and `sanitize`'s partial one).
fn bundle_preamble() -> String {
    let mut sh = String::from(
        "#!/usr/bin/env bash\n# Runs every GPU test, example and benchmark; exits non-zero on any failure.\nset -u\ncd \"$(dirname \"$0\")\"\n[ -d bin ] || tar xJf bin.tar.xz || { echo 'FAILED: cannot unpack bin.tar.xz'; exit 1; }\nexport GPUKERNEL_TEST_GPU=1 GPUKERNEL_BACKEND=cuda GPUKERNEL_DATA_DIR=\"$PWD/data\"\nexport GPUKERNEL_CACHE_DIR=\"${GPUKERNEL_CACHE_DIR:-/tmp/gpukernel-cache}\"\nexport LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}\nfail=0\nstep() { echo \"=== $*\"; timeout \"${STEP_TIMEOUT:-300}\" \"$@\" || { echo \"FAILED ($?): $*\"; fail=1; }; }\n",
    );
    sh.push_str(
        "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true\n",
    );
    // The Vulkan loader and glvnd's dispatch library (the NVIDIA ICD needs it) travel in lib/.
    sh.push_str("export GPUKERNEL_VULKAN_LOADER=\"$PWD/lib/libvulkan.so.1\" LD_LIBRARY_PATH=\"$PWD/lib:$LD_LIBRARY_PATH\"\nfor f in /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json; do [ -f \"$f\" ] && { export VK_DRIVER_FILES=\"$f\"; break; }; done\n");
    sh.push_str(MULTI_GPU_SH);
    sh
}

/// The Vulkan loader (`libvulkan.so.1`) and glvnd's libraries from Debian's packages (the GPU
/// machine has the NVIDIA driver's Vulkan ICD but no loader). When they cannot be fetched, the
/// bundle says so and its Vulkan steps fail on the GPU (they never pass without Vulkan).
fn vulkan_libs(lib: &Path) {
    let tmp = std::env::temp_dir().join(format!("gpukernel-vulkan-debs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let ok = std::fs::create_dir_all(lib).is_ok()
        && std::fs::create_dir_all(tmp.join("x")).is_ok()
        && Command::new("apt-get")
            .current_dir(&tmp)
            .args([
                "download",
                "libvulkan1",
                "libglvnd0",
                "libglx0",
                "libegl1",
                "libgl1",
                "libopengl0",
                "libgles2",
            ])
            .status()
            .is_ok_and(|s| s.success());
    let mut copied = 0;
    if ok {
        for deb in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            if deb.path().extension().is_some_and(|e| e == "deb") {
                let _ = Command::new("dpkg-deb")
                    .arg("-x")
                    .arg(deb.path())
                    .arg(tmp.join("x"))
                    .status();
            }
        }
        let so = tmp.join("x/usr/lib/x86_64-linux-gnu");
        for name in [
            "libvulkan.so.1",
            "libGLdispatch.so.0",
            "libGLX.so.0",
            "libEGL.so.1",
            "libGL.so.1",
            "libOpenGL.so.0",
            "libGLESv2.so.2",
        ] {
            // `fs::copy` follows the symbolic link to the versioned file.
            if std::fs::copy(so.join(name), lib.join(name)).is_ok() {
                copied += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    if copied == 0 {
        eprintln!(
            "gpu-bundle: WARNING: no Vulkan loader (apt-get download libvulkan1 failed): the Vulkan steps will fail on the GPU"
        );
    }
}

/// The bundle's steps (test binaries, examples, benchmarks) that need two GPUs: run only
/// where `nvidia-smi` lists two, else reported as skipped (`run.sh` then ends with status 3,
/// never "ALL GPU STEPS PASSED").
const TWO_GPU_STEPS: [&str; 4] = [
    "gpu_peer",
    "bench_multi",
    "nccl_two_process",
    "data_parallel",
];

/// The steps `./run.sh multi` runs: the several-device tests, examples and benchmark (also
/// those one GPU can run), for a short session on a two-GPU machine.
const MULTI_STEPS: [&str; 7] = [
    "gpu_peer",
    "bench_multi",
    "nccl_two_process",
    "data_parallel",
    "gpu_multi",
    "gpu_nccl",
    "sim_multi",
];

/// The `run.sh` function that runs a step named `name`.
fn multi_gpu_step(name: &str) -> &'static str {
    if TWO_GPU_STEPS.contains(&name) {
        "two_gpus"
    } else if MULTI_STEPS.contains(&name) {
        "mstep"
    } else {
        "step"
    }
}

/// `run.sh`'s set-up for several GPUs and NCCL: the GPU count, NCCL found under the name
/// cudarc loads, multicast off, and the step functions (`./run.sh multi` runs only the
/// several-device steps).
const MULTI_GPU_SH: &str = r#"only="${1:-all}"
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
gpus=${gpus:-0}
skipped=0
# NVLink multicast stays off in every process and child process (shared machines).
export NCCL_NVLS_ENABLE=0
# cudarc loads NCCL as libnccl.so; the nvidia-nccl-cu13 wheel ships libnccl.so.2 only.
nccl2=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)
[ -f "$nccl2" ] || nccl2=$(ls /usr/lib/x86_64-linux-gnu/libnccl.so.2 /usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2 /usr/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2 2>/dev/null | head -1)
if [ -n "$nccl2" ] && [ -f "$nccl2" ]; then
  mkdir -p "$PWD/nccl-lib" && ln -sf "$nccl2" "$PWD/nccl-lib/libnccl.so"
  export LD_LIBRARY_PATH="$PWD/nccl-lib:$LD_LIBRARY_PATH"
  echo "NCCL: $nccl2 (linked as nccl-lib/libnccl.so)"
else
  echo "NCCL: libnccl.so.2 not found; the NCCL steps will fail"
fi
echo "GPUs: $gpus"
if [ "$only" = multi ]; then step() { :; }; fi
mstep() { command_step "$@"; }
command_step() { echo "=== $*"; timeout "${STEP_TIMEOUT:-300}" "$@" || { echo "FAILED ($?): $*"; fail=1; }; }
two_gpus() {
  if [ "$gpus" -ge 2 ]; then command_step "$@"
  else echo "=== SKIPPED (needs 2 GPUs, found $gpus): $*"; skipped=$((skipped + 1)); fi
}
# The stacks of every thread of process $1 (a test that ran past its limit).
thread_stacks() {
  local t
  if command -v cuda-gdb >/dev/null; then timeout 180 cuda-gdb -p "$1" -batch -ex 'thread apply all bt' 2>&1 | tail -n 600
  elif command -v gdb >/dev/null; then timeout 180 gdb -p "$1" -batch -ex 'thread apply all bt' 2>&1 | tail -n 600
  fi
  for t in /proc/"$1"/task/*; do
    echo "--- thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)) wchan=$(cat "$t/wchan" 2>/dev/null)"
    cat "$t/stack" 2>/dev/null
  done
}
# Each test of the test binary $1 alone (`--exact`), under TEST_TIMEOUT seconds (300): on a
# timeout, the test's name and the stacks of its threads, then it is killed.
each_test() {
  local bin=$1 names t pid start rc
  names=$("$bin" --list 2>/dev/null | sed -n 's/: test$//p')
  if [ -z "$names" ]; then echo "=== $bin"; echo "FAILED: $bin --list listed no test"; fail=1; return; fi
  for t in $names; do
    echo "=== $bin $t"
    "$bin" --exact "$t" --test-threads=1 --nocapture &
    pid=$!; start=$SECONDS
    while kill -0 "$pid" 2>/dev/null && [ $((SECONDS - start)) -lt "${TEST_TIMEOUT:-300}" ]; do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "TIMEOUT (${TEST_TIMEOUT:-300} s): $bin $t (pid $pid); the stacks of its threads:"
      thread_stacks "$pid"
      kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
      echo "FAILED (timeout): $bin $t"; fail=1
    else
      wait "$pid"; rc=$?
      [ "$rc" -eq 0 ] || { echo "FAILED ($rc): $bin $t"; fail=1; }
    fi
  done
}
two_gpus_each_test() {
  if [ "$gpus" -ge 2 ]; then each_test "$@"
  else echo "=== SKIPPED (needs 2 GPUs, found $gpus): $*"; skipped=$((skipped + 1)); fi
}
"#;

/// The string value of `"key":"..."` in one line of cargo's JSON (no escapes in paths here).
fn json_str(line: &str, key: &str) -> Option<String> {
    let pat = format!("\"{key}\":\"");
    let start = line.find(&pat)? + pat.len();
    let end = line[start..].find('"')? + start;
    Some(line[start..end].to_string())
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("copy {} → {}: {e}", from.display(), to.display()))
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| e.to_string())?;
    for e in std::fs::read_dir(from)
        .map_err(|e| format!("{}: {e}", from.display()))?
        .flatten()
    {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()))?;
        } else {
            copy(&p, &to.join(e.file_name()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_str_reads_a_key() {
        let l =
            r#"{"reason":"compiler-artifact","executable":"/t/release/deps/x-12ab","name":"x"}"#;
        assert_eq!(
            json_str(l, "executable").as_deref(),
            Some("/t/release/deps/x-12ab")
        );
        assert_eq!(json_str(l, "name").as_deref(), Some("x"));
        assert_eq!(json_str(l, "missing"), None);
    }

    #[test]
    fn usage_names_every_command() {
        for c in COMMANDS {
            let named = USAGE
                .split(|x: char| !(x.is_ascii_alphanumeric() || x == '-'))
                .any(|w| w == *c);
            assert!(named, "USAGE lacks `{c}`");
        }
    }
}

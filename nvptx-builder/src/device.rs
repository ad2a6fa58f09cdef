//! The device build itself: the nightly cargo for nvptx64 (`cargo_build`), the bitcode of
//! every rlib linked with the foreign CUDA C and libdevice, `opt`, `llc` and the ptxas check
//! (`build_device`), and the tools they run.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::io_err;
use crate::{
    Builder, Error, LinkedCuda, NVPTX_TARGET, PtxOutput, base_arch, directives, find_cuda_tool,
    foreign, kernel_names, libdevice, lto, sass, shared_rewrite, tools,
};

/// The answers to libdevice's `__nvvm_reflect` queries, for every `opt` and `llc` run:
/// `__CUDA_PREC_SQRT` = 1, so that `sqrtf` in foreign CUDA C (clang maps it to `__nv_sqrtf`)
/// and inside libdevice's own functions is the correctly rounded `sqrt.rn.f32`, as with nvcc's
/// and NVRTC's default `-prec-sqrt=true` (the pass answers 0 otherwise: `sqrt.approx.f32`);
/// `__CUDA_ARCH` = the architecture (900 for sm_90), which `opt`'s reflect pass does not know
/// (it answers 0, and 63 libdevice functions would take their pre-Volta paths); `__CUDA_FTZ`
/// stays 0 (no flush to zero, NVRTC's default). The `opt` runs name the `nvvm-reflect` pass
/// first: `default<O3>` alone leaves the queries to `llc`, so the inliner and the unroller
/// would weigh both arms of every `__CUDA_FTZ` test (the foreign polynomial of `bench_lto` then
/// stayed rolled: 8 FMAs per loop body instead of 72).
pub(crate) fn reflect_args(arch: &str) -> [OsString; 2] {
    let sm = crate::parse_arch(arch).unwrap_or(0) * 10;
    [
        "--nvvm-reflect-add=__CUDA_PREC_SQRT=1".into(),
        format!("--nvvm-reflect-add=__CUDA_ARCH={sm}").into(),
    ]
}

impl Builder {
    /// The device build proper, linking the compiled `cuda` sources into the kernels.
    pub(crate) fn build_device(
        &self,
        arch: &str,
        cuda: Vec<lto::CudaBitcode>,
    ) -> Result<PtxOutput, Error> {
        let reflect = reflect_args(arch);
        let arch = arch.to_owned();
        let toolchain = tools::Toolchain::locate(&self.resolve_toolchain()?)?;
        let manifest = self.manifest_dir.join("Cargo.toml");
        let package = self
            .package_name
            .clone()
            .ok_or_else(|| Error::PackageNameUnknown {
                manifest: manifest.clone(),
            })?;
        let target_dir = self
            .target_dir
            .clone()
            .unwrap_or_else(|| default_target_dir(&self.out_dir));

        if self.emit_cargo_directives {
            for var in [
                "GPUKERNEL_ARCH",
                "GPUKERNEL_NIGHTLY",
                "GPUKERNEL_NVPTX_TARGET_DIR",
            ] {
                directives::emit(format!("cargo:rerun-if-env-changed={var}"));
            }
            directives::emit(format!("cargo:rerun-if-changed={}", manifest.display()));
        }

        let rlibs = self.cargo_build(&toolchain, &manifest, &target_dir, base_arch(&arch))?;
        let lib_name = package.replace('-', "_");
        let (own, deps): (Vec<_>, Vec<_>) = rlibs.into_iter().partition(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(&format!("lib{lib_name}-")) || n == format!("lib{lib_name}.rlib")
            })
        });

        let work = self
            .out_dir
            .join(format!("{}-nvptx-work", self.output_name));
        if work.exists() {
            std::fs::remove_dir_all(&work).map_err(io_err(&work))?;
        }
        std::fs::create_dir_all(&work).map_err(io_err(&work))?;

        let own_bc = extract_bitcode(&toolchain, &own, &work.join("own"))?;
        if own_bc.is_empty() {
            return Err(Error::NoBitcode { manifest });
        }
        let dep_bc = extract_bitcode(&toolchain, &deps, &work.join("deps"))?;

        let mut exported = exported_symbols(&toolchain, &own_bc)?;
        exported.insert(gpukernel_ffi_symbol().to_string());
        // The declaration records of `declare_device!` entries in dependencies stay too.
        exported.extend(
            exported_symbols(&toolchain, &dep_bc)?
                .into_iter()
                .filter(|s| s.starts_with(foreign::RECORD_PREFIX)),
        );
        let exported: Vec<String> = exported.into_iter().collect();

        let linked = work.join("linked.bc");
        let mut args: Vec<OsString> = own_bc.iter().map(|p| p.clone().into_os_string()).collect();
        args.extend(dep_bc.iter().map(|p| p.clone().into_os_string()));
        args.push("-o".into());
        args.push(linked.clone().into_os_string());
        run_tool(&toolchain.llvm_link, &args)?;

        // Drop everything the kernels do not reach before the textual pass: the module is then
        // small (core's IR alone is tens of megabytes).
        let pruned = work.join("pruned.bc");
        run_tool(
            &toolchain.opt,
            &[
                "-passes=internalize,globaldce".into(),
                format!("--internalize-public-api-list={}", exported.join(",")).into(),
                linked.into_os_string(),
                "-o".into(),
                pruned.clone().into_os_string(),
            ],
        )?;
        // CUDA's math library, when the Rust code calls it (`foreign_cuda` bitcode brings its
        // own libdevice functions from clang, already internal).
        libdevice::link_if_called(&toolchain, &pruned, &exported)?;
        // `shared_array!` statics move to the `.shared` state space (see `shared_rewrite`).
        let ir = run_tool(
            &toolchain.llvm_dis,
            &[pruned.into_os_string(), "-o".into(), "-".into()],
        )?;
        let mut ir = shared_rewrite::rewrite_shared_statics(&ir)
            .map_err(|e| Error::SharedRewrite(e.to_string()))?;
        // Every `declare_device!` symbol must be left for foreign code to define.
        foreign::check_declared_symbols(&ir)?;

        // Build-time LTO: the foreign sources' functions are checked against the kernels'
        // declarations, recorded for the run-time Linker, and linked in.
        let mut linked_cuda = Vec::new();
        let mut extra_bitcode: Vec<PathBuf> = Vec::new();
        let mut public = exported.clone();
        if !cuda.is_empty() {
            let declarations = foreign::declarations_in_ir(&ir);
            let mut with_ir = Vec::new();
            for source in &cuda {
                let text = run_tool(
                    &toolchain.llvm_dis,
                    &[
                        source.bitcode.clone().into_os_string(),
                        "-o".into(),
                        "-".into(),
                    ],
                )?;
                with_ir.push((source.clone(), text));
            }
            // The C-level check first (signedness, pointees: what LLVM types cannot show).
            for (source, text) in &with_ir {
                source.check_definitions(&declarations, text)?;
            }
            let defined = lto::check_signatures(&ir, &with_ir, &declarations)?;
            for (name, global) in lto::record_globals(&cuda, &defined) {
                ir.push_str(&global);
                public.push(name);
            }
            for (k, (source, defines)) in cuda.iter().zip(defined).enumerate() {
                linked_cuda.push(LinkedCuda {
                    source: source.named.clone(),
                    defines,
                });
                // clang emitted the IR unoptimized (see `lto`): optimize each source on its own
                // first, as clang's pipeline would have (with the square root answered as nvcc
                // answers it). Optimizing twice, alone and again once inlined, is what let LLVM
                // unroll the benchmark's foreign polynomial loop further than the Rust twin's;
                // one pass over the linked module measured 0.95x the twin instead of 1.05x.
                let optimized = work.join(format!("cuda-{k}.bc"));
                run_tool(
                    &toolchain.opt,
                    &[
                        "-passes=nvvm-reflect,default<O3>".into(),
                        reflect[0].clone(),
                        reflect[1].clone(),
                        source.bitcode.clone().into_os_string(),
                        "-o".into(),
                        optimized.clone().into_os_string(),
                    ],
                )?;
                extra_bitcode.push(optimized);
            }
        }
        let shared_ll = work.join("shared.ll");
        std::fs::write(&shared_ll, ir).map_err(io_err(&shared_ll))?;

        let bitcode = self.out_dir.join(format!("{}.bc", self.output_name));
        if extra_bitcode.is_empty() {
            run_tool(
                &toolchain.opt,
                &[
                    "-passes=nvvm-reflect,default<O3>".into(),
                    reflect[0].clone(),
                    reflect[1].clone(),
                    shared_ll.into_os_string(),
                    "-o".into(),
                    bitcode.clone().into_os_string(),
                ],
            )?;
        } else {
            // The extra modules' functions become internal to the PTX: inlined where called,
            // removed where not.
            let lto_bc = work.join("lto.bc");
            let mut args: Vec<OsString> = vec![shared_ll.into_os_string()];
            args.extend(extra_bitcode.iter().map(|p| p.clone().into_os_string()));
            args.extend(["-o".into(), lto_bc.clone().into_os_string()]);
            run_tool(&toolchain.llvm_link, &args)?;
            run_tool(
                &toolchain.opt,
                &[
                    "-passes=internalize,globaldce,nvvm-reflect,default<O3>".into(),
                    reflect[0].clone(),
                    reflect[1].clone(),
                    format!("--internalize-public-api-list={}", public.join(",")).into(),
                    lto_bc.into_os_string(),
                    "-o".into(),
                    bitcode.clone().into_os_string(),
                ],
            )?;
        }

        // The kernel-name record only in the entries that can fail a foreign call (see
        // `kernel_names`), on the optimized module.
        let optimized = run_tool(
            &toolchain.llvm_dis,
            &[bitcode.clone().into_os_string(), "-o".into(), "-".into()],
        )?;
        if let Some(resolved) =
            kernel_names::resolve(&optimized).map_err(|e| Error::KernelNames(e.to_string()))?
        {
            let names_ll = work.join("kernel-names.ll");
            std::fs::write(&names_ll, &resolved.ir).map_err(io_err(&names_ll))?;
            run_tool(
                &toolchain.opt,
                &[
                    "-passes=always-inline,globaldce".into(),
                    names_ll.into_os_string(),
                    "-o".into(),
                    bitcode.clone().into_os_string(),
                ],
            )?;
        }

        let ptx = self.out_dir.join(format!("{}.ptx", self.output_name));
        run_tool(
            &toolchain.llc,
            &[
                reflect[0].clone(),
                reflect[1].clone(),
                format!("-mcpu={arch}").into(),
                "-O3".into(),
                bitcode.clone().into_os_string(),
                "-o".into(),
                ptx.clone().into_os_string(),
            ],
        )?;

        let mut text = std::fs::read_to_string(&ptx).map_err(io_err(&ptx))?;
        if !self.launch_bounds.is_empty() {
            text = crate::launch_bounds::apply(&text, &self.launch_bounds)
                .map_err(Error::LaunchBounds)?;
            std::fs::write(&ptx, &text).map_err(io_err(&ptx))?;
        }
        let foreign = foreign::declarations_in_ptx(&text);
        check_entry_names(&text, &foreign)?;

        if self.validate {
            if let Some(ptxas) = find_cuda_tool("ptxas") {
                validate_ptx(&ptxas, &ptx, &arch)?;
            } else if self.emit_cargo_directives {
                directives::emit(format!(
                    "cargo:warning=ptxas not found: {} was not validated (run `cargo xtask doctor` to install the CUDA compiler tools)",
                    ptx.display()
                ));
            }
        }

        let (sass_archs, named) = self.resolve_sass_archs(&arch)?;
        let tools = (find_cuda_tool("ptxas"), find_cuda_tool("fatbinary"));
        let (fatbin, sass) = match &tools {
            _ if sass_archs.is_empty() => (
                sass::write_ptx_instead(&self.out_dir, &self.output_name, &ptx)?,
                None,
            ),
            (Some(ptxas), Some(fatbinary)) => {
                let embedded = sass::embed(
                    &sass::SassTools {
                        ptxas,
                        fatbinary,
                        llc: &toolchain.llc,
                        opt: &toolchain.opt,
                    },
                    &self.out_dir,
                    &self.output_name,
                    &ptx,
                    &bitcode,
                    &exported,
                    &arch,
                    &sass_archs,
                    &reflect,
                )?;
                match embedded {
                    Some(e) => (e.fatbin.clone(), Some(e)),
                    // Every kernel needs the run-time link: no SASS can be made before it.
                    None => (
                        sass::write_ptx_instead(&self.out_dir, &self.output_name, &ptx)?,
                        None,
                    ),
                }
            }
            (ptxas, _) => {
                let tool = if ptxas.is_none() {
                    "ptxas"
                } else {
                    "fatbinary"
                };
                if named {
                    return Err(Error::SassToolMissing {
                        tool,
                        searched: crate::cuda_tools_search_path(),
                    });
                }
                if self.emit_cargo_directives {
                    directives::emit(format!(
                        "cargo:warning={tool} not found: {}.fatbin holds the PTX only, JIT-compiled at load (run `cargo xtask doctor` to install the CUDA compiler tools)",
                        self.output_name
                    ));
                }
                (
                    sass::write_ptx_instead(&self.out_dir, &self.output_name, &ptx)?,
                    None,
                )
            }
        };
        let relocatable = match tools {
            (Some(ptxas), Some(fatbinary)) if !sass_archs.is_empty() => sass::relocatable(
                &sass::SassTools {
                    ptxas: &ptxas,
                    fatbinary: &fatbinary,
                    llc: &toolchain.llc,
                    opt: &toolchain.opt,
                },
                &self.out_dir,
                &self.output_name,
                &ptx,
                &bitcode,
                &arch,
                &sass_archs,
                &reflect,
            )?,
            _ => sass::write_relocatable_ptx_instead(&self.out_dir, &self.output_name, &ptx)?,
        };
        if self.emit_cargo_directives {
            directives::emit("cargo:rerun-if-env-changed=GPUKERNEL_SASS_ARCHS".to_string());
        }

        Ok(PtxOutput {
            ptx,
            bitcode,
            exported,
            arch,
            foreign,
            linked_cuda,
            fatbin,
            sass,
            relocatable,
        })
    }

    /// Runs the nightly cargo for nvptx64 and returns the rlibs of every crate it built.
    pub(crate) fn cargo_build(
        &self,
        toolchain: &tools::Toolchain,
        manifest: &Path,
        target_dir: &Path,
        arch: &str,
    ) -> Result<Vec<PathBuf>, Error> {
        let mut cmd = Command::new("rustup");
        cmd.args([
            "run",
            &toolchain.name,
            "cargo",
            "build",
            "--release",
            "--target",
            NVPTX_TARGET,
        ])
        .arg("-Zbuild-std=core")
        .arg("--manifest-path")
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .arg("--message-format=json-render-diagnostics");
        scrub_cargo_env(&mut cmd);
        // Every crate of the PTX must share one target-cpu; linker-plugin-lto makes each rlib
        // hold LLVM bitcode instead of per-crate PTX.
        let flags = [
            "-Clinker-plugin-lto",
            &format!("-Ctarget-cpu={arch}"),
            "-Cdebuginfo=0",
        ];
        cmd.env("CARGO_ENCODED_RUSTFLAGS", flags.join("\x1f"));
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let command = format!(
            "CARGO_ENCODED_RUSTFLAGS='{}' rustup run {} cargo build --release --target {NVPTX_TARGET} -Zbuild-std=core --manifest-path {} --target-dir {}",
            flags.join(" "),
            toolchain.name,
            manifest.display(),
            target_dir.display()
        );
        let mut child = cmd.spawn().map_err(Error::RustupMissing)?;
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let err_thread = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut rlibs = Vec::new();
        let mut deps_files = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if msg["reason"] != "compiler-artifact" {
                continue;
            }
            for f in msg["filenames"].as_array().into_iter().flatten() {
                if let Some(f) = f.as_str() {
                    let p = PathBuf::from(f);
                    if f.ends_with(".rlib") && f.contains(NVPTX_TARGET) {
                        rlibs.push(p);
                    }
                }
            }
            if let Some(d) = msg["filenames"]
                .as_array()
                .and_then(|a| a.first())
                .and_then(|f| f.as_str())
            {
                deps_files.push(PathBuf::from(d));
            }
        }
        let status = child.wait().map_err(Error::RustupMissing)?;
        let stderr = err_thread.join().unwrap_or_default();
        if !status.success() {
            if stderr.contains("is not installed")
                || stderr.contains("toolchain '") && stderr.contains("not installed")
            {
                return Err(Error::NightlyMissing {
                    toolchain: toolchain.name.clone(),
                    detail: stderr,
                });
            }
            return Err(Error::CompileFailed {
                manifest: manifest.to_path_buf(),
                command,
                diagnostics: stderr,
            });
        }
        if self.emit_cargo_directives {
            emit_rerun_if_changed(&rlibs, &toolchain.sysroot);
        }
        Ok(rlibs)
    }
}

/// Refuses a kernel whose entry has the name of a declared foreign function (of this crate
/// or a dependency: their records are in the one PTX). The macro cannot see it (each
/// declaration expands alone), so it is checked here, where both meet.
fn check_entry_names(ptx: &str, foreign: &[foreign::ForeignDeclaration]) -> Result<(), Error> {
    for line in ptx.lines() {
        let Some(rest) = line.trim_start().strip_prefix(".visible .entry ") else {
            continue;
        };
        let name = rest.split(['(', ' ']).next().unwrap_or_default();
        if let Some(d) = foreign.iter().find(|d| d.symbol == name) {
            return Err(Error::KernelNamedLikeForeign {
                kernel: name.to_owned(),
                declared_at: d.declared_at.clone(),
            });
        }
    }
    Ok(())
}

/// The name of the global that records failed foreign calls (see gpukernel-device's `ffi`).
pub(crate) fn gpukernel_ffi_symbol() -> &'static str {
    "__gpukernel_ffi_error"
}

/// Removes what cargo sets for build scripts so the child cargo uses the nightly's own rustc
/// and flags.
pub(crate) fn scrub_cargo_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        let Some(k) = k.to_str() else { continue };
        let drop = (k.starts_with("CARGO_") && k != "CARGO_HOME" && k != "CARGO_NET_OFFLINE")
            || k.starts_with("RUSTC")
            || k.starts_with("RUSTDOC")
            || matches!(
                k,
                "CARGO"
                    | "RUSTFLAGS"
                    | "RUSTUP_TOOLCHAIN"
                    | "OUT_DIR"
                    | "TARGET"
                    | "HOST"
                    | "PROFILE"
                    | "OPT_LEVEL"
                    | "DEBUG"
                    | "NUM_JOBS"
                    | "CARGO_MAKEFLAGS"
                    | "MAKEFLAGS"
                    | "MFLAGS"
            );
        if drop {
            cmd.env_remove(k);
        }
    }
}

/// `<target dir>/nvptx-kernels`, found by walking up from OUT_DIR to the directory cargo
/// marked with `CACHEDIR.TAG`.
pub(crate) fn default_target_dir(out_dir: &Path) -> PathBuf {
    out_dir
        .ancestors()
        .find(|a| a.join("CACHEDIR.TAG").exists())
        .map(|t| t.join("nvptx-kernels"))
        .unwrap_or_else(|| out_dir.join("nvptx-kernels"))
}

/// Emits `rerun-if-changed` for every source file of the device build (from cargo's dep-info
/// files next to the rlibs), except the standard library's.
pub(crate) fn emit_rerun_if_changed(rlibs: &[PathBuf], sysroot: &Path) {
    let mut seen = BTreeSet::new();
    for rlib in rlibs {
        let d = rlib.with_extension("d");
        let Ok(text) = std::fs::read_to_string(&d) else {
            continue;
        };
        for line in text.lines() {
            let Some((_, deps)) = line.split_once(": ") else {
                continue;
            };
            for dep in split_make_deps(deps) {
                let p = PathBuf::from(&dep);
                if p.starts_with(sysroot) || !p.is_file() {
                    continue;
                }
                if seen.insert(p.clone()) {
                    directives::emit(format!("cargo:rerun-if-changed={}", p.display()));
                }
            }
        }
    }
}

/// Splits a Makefile dependency list on unescaped spaces.
pub(crate) fn split_make_deps(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                cur.push(' ');
                chars.next();
            }
            ' ' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Extracts the LLVM bitcode members of each rlib into `dir`.
pub(crate) fn extract_bitcode(
    toolchain: &tools::Toolchain,
    rlibs: &[PathBuf],
    dir: &Path,
) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for (i, rlib) in rlibs.iter().enumerate() {
        let sub = dir.join(i.to_string());
        std::fs::create_dir_all(&sub).map_err(io_err(&sub))?;
        let rlib_abs = std::fs::canonicalize(rlib).map_err(io_err(rlib))?;
        let output = Command::new(&toolchain.llvm_ar)
            .arg("x")
            .arg(&rlib_abs)
            .current_dir(&sub)
            .output()
            .map_err(io_err(&toolchain.llvm_ar))?;
        if !output.status.success() {
            return Err(Error::ToolFailed {
                tool: toolchain.llvm_ar.clone(),
                args: vec!["x".into(), rlib_abs.display().to_string()],
                output: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        let mut members: Vec<PathBuf> = std::fs::read_dir(&sub)
            .map_err(io_err(&sub))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| is_bitcode(p))
            .collect();
        members.sort();
        out.extend(members);
    }
    Ok(out)
}

pub(crate) fn is_bitcode(p: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == *b"BC\xC0\xDE"
}

/// The symbols of the kernels crate that stay visible: those rustc did not mangle (kernel
/// entries and `#[no_mangle]` items).
pub(crate) fn exported_symbols(
    toolchain: &tools::Toolchain,
    own: &[PathBuf],
) -> Result<BTreeSet<String>, Error> {
    let mut args: Vec<OsString> = vec![
        "--defined-only".into(),
        "--extern-only".into(),
        "--format=just-symbols".into(),
    ];
    args.extend(own.iter().map(|p| p.clone().into_os_string()));
    let text = run_tool(&toolchain.llvm_nm, &args)?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|s| !s.is_empty() && !s.ends_with(':'))
        .filter(|s| !s.starts_with("_R") && !s.starts_with("_ZN"))
        .map(String::from)
        .collect())
}

pub(crate) fn run_tool(tool: &Path, args: &[OsString]) -> Result<String, Error> {
    let output = Command::new(tool)
        .args(args)
        .output()
        .map_err(io_err(tool))?;
    if !output.status.success() {
        return Err(Error::ToolFailed {
            tool: tool.to_path_buf(),
            args: args
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Checks `ptx` with `ptxas -arch=<arch> -c` (relocatable, so foreign `.extern .func`s may stay
/// unresolved until the runtime links them).
pub fn validate_ptx(ptxas: &Path, ptx: &Path, arch: &str) -> Result<(), Error> {
    let out = std::env::temp_dir().join(format!("gpukernel-ptxas-{}-{arch}.o", std::process::id()));
    let output = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-c")
        .arg(ptx)
        .arg("-o")
        .arg(&out)
        .output()
        .map_err(io_err(ptxas))?;
    let _ = std::fs::remove_file(&out);
    if !output.status.success() {
        return Err(Error::PtxasRejected {
            ptx: ptx.to_path_buf(),
            arch: arch.to_string(),
            log: format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_named_like_a_declared_foreign_function_is_refused() {
        let record = "gpukernel-foreign-v1\nsymbol=scale\nabi=numba\nat=src/ffi.rs:7\nret=float\narg=float\n";
        let bytes: Vec<String> = record.bytes().map(|b| b.to_string()).collect();
        let ptx = |entry: &str| {
            format!(
                ".visible .global .align 1 .b8 __gpukernel_foreign_scale_1[{}] = {{{}}};\n\
                 .visible .entry {entry}(\n\t.param .u64 a\n)\n{{\n\tret;\n}}\n",
                bytes.len(),
                bytes.join(", ")
            )
        };
        let text = ptx("scale");
        let foreign = foreign::declarations_in_ptx(&text);
        assert_eq!(foreign.len(), 1);
        let e = check_entry_names(&text, &foreign).unwrap_err().to_string();
        assert!(
            e.starts_with("kernel `scale` has the name of the foreign function `scale` declared at src/ffi.rs:7"),
            "{e}"
        );
        assert!(e.contains("hint: rename the kernel"), "{e}");
        let text = ptx("scale_all");
        check_entry_names(&text, &foreign::declarations_in_ptx(&text)).unwrap();
    }

    #[test]
    fn reflect_answers_the_architecture_and_precise_square_roots() {
        let [sqrt, arch] = reflect_args("sm_90a");
        assert_eq!(sqrt, "--nvvm-reflect-add=__CUDA_PREC_SQRT=1");
        assert_eq!(arch, "--nvvm-reflect-add=__CUDA_ARCH=900");
        assert_eq!(
            reflect_args("sm_80")[1],
            "--nvvm-reflect-add=__CUDA_ARCH=800"
        );
    }
}

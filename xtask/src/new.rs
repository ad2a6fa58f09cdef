//! `cargo xtask new <DIR>`: a ready project outside this checkout, and the CI check that builds
//! and tests one.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::{nightly, root, run, with_cuda_env};

/// The project's files: (path in the project, template text).
const FILES: &[(&str, &str)] = &[
    ("Cargo.toml", include_str!("../template/Cargo.toml.in")),
    ("README.md", include_str!("../template/README.md.in")),
    (".gitignore", include_str!("../template/gitignore")),
    (
        "kernels/Cargo.toml",
        include_str!("../template/kernels.Cargo.toml.in"),
    ),
    (
        "kernels/build.rs",
        include_str!("../template/kernels.build.rs"),
    ),
    (
        "kernels/src/lib.rs",
        include_str!("../template/kernels.lib.rs"),
    ),
    (
        "kernels/cuda/functions.cu",
        include_str!("../template/functions.cu"),
    ),
    (
        "host/Cargo.toml",
        include_str!("../template/host.Cargo.toml.in"),
    ),
    ("host/src/lib.rs", include_str!("../template/host.lib.rs")),
    ("host/src/main.rs", include_str!("../template/host.main.rs")),
    (
        "host/tests/simulator.rs",
        include_str!("../template/host.test.rs"),
    ),
];

/// Where the project's gpukernel crates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// This checkout, by path.
    Path(PathBuf),
    /// A git repository, and a branch of it.
    Git(String, Option<String>),
    /// A registry, by version (`package-check`: the packaged crates in a local directory
    /// source that replaces crates.io).
    Version(String),
}

/// The rustc version the templates were tested with (nvptx-builder's `TESTED_NIGHTLY`).
const TESTED_NIGHTLY: &str = "rustc 1.97.0-nightly (e50aa6fba 2026-05-19)";

/// `new <DIR> [--git URL [--branch B]]`.
pub(crate) fn new_command(args: &[String]) -> Result<(), String> {
    if args.first().is_some_and(|a| a == "--check") {
        return check_generated_project();
    }
    let mut dir = None;
    let mut source = Source::Path(root());
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--git" => {
                let url = it.next().ok_or("--git needs a URL")?;
                source = Source::Git(url.clone(), None);
            }
            "--branch" => {
                let branch = it.next().ok_or("--branch needs a name")?;
                match &mut source {
                    Source::Git(_, b) => *b = Some(branch.clone()),
                    Source::Path(_) | Source::Version(_) => {
                        return Err("--branch goes after --git URL".into());
                    }
                }
            }
            _ if dir.is_none() && !a.starts_with('-') => dir = Some(PathBuf::from(a)),
            _ => {
                return Err(format!(
                    "unexpected argument `{a}`\nusage: cargo xtask new <DIR> [--git URL]"
                ));
            }
        }
    }
    let dir = dir.ok_or("usage: cargo xtask new <DIR> [--git URL [--branch B]]")?;
    // `cargo xtask` runs in the checkout: a relative DIR is taken from where the user typed it.
    let dir = if dir.is_relative() {
        std::env::current_dir()
            .map_err(|e| e.to_string())?
            .join(dir)
    } else {
        dir
    };
    generate(&dir, &source, &nightly())?;
    eprintln!(
        "new: wrote {} (gpukernel from {})\n  cd {}\n  cargo test          # the kernels on the simulator\n  cargo run -p host   # on the GPU if there is one, else on the simulator",
        dir.display(),
        describe(&source),
        dir.display()
    );
    Ok(())
}

fn describe(source: &Source) -> String {
    match source {
        Source::Path(p) => format!("the checkout {}", p.display()),
        Source::Git(url, _) => format!("git {url}"),
        Source::Version(v) => format!("the registry, version {v}"),
    }
}

/// Writes the project into `dir` (which must be missing or empty).
pub(crate) fn generate(dir: &Path, source: &Source, nightly: &str) -> Result<(), String> {
    if dir.read_dir().is_ok_and(|mut d| d.next().is_some()) {
        return Err(format!(
            "{} exists and is not empty: choose a new folder",
            dir.display()
        ));
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "gpukernel-project".into());
    let dep = |krate: &str, folder: &str| match source {
        Source::Path(p) => format!(
            "{krate} = {{ path = {:?} }}",
            p.join(folder).display().to_string()
        ),
        Source::Git(url, None) => format!("{krate} = {{ git = {url:?} }}"),
        Source::Git(url, Some(b)) => format!("{krate} = {{ git = {url:?}, branch = {b:?} }}"),
        Source::Version(v) => format!("{krate} = {v:?}"),
    };
    let deps = [
        dep("gpukernel-device", "device-lib"),
        dep("gpukernel-runtime", "gpukernel-runtime"),
        dep("nvptx-builder", "nvptx-builder"),
    ]
    .join("\n");
    let source_line = match source {
        Source::Path(p) => format!("from the checkout at {}", p.display()),
        Source::Git(url, _) => format!("from git ({url})"),
        Source::Version(v) => format!("from the registry (version {v})"),
    };
    for (path, text) in FILES {
        let text = text
            .replace("{{DEPS}}", &deps)
            .replace("{{SOURCE}}", &source_line)
            .replace("{{NIGHTLY}}", nightly)
            .replace("{{TESTED}}", TESTED_NIGHTLY)
            .replace("{{NAME}}", &name);
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap())
            .map_err(|e| format!("{}: {e}", file.display()))?;
        std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(())
}

/// The CI check: generates a project in a temporary folder outside the checkout, runs its test
/// and its binary on the simulator, and checks that a syntax error in its `.cu` is reported
/// first and alone. It shares this checkout's target dir and lock file, so that nothing is
/// built twice.
pub(crate) fn check_generated_project() -> Result<(), String> {
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("gpukernel-new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    generate(&dir, &Source::Path(root()), &nightly())?;
    std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock"))
        .map_err(|e| format!("copying Cargo.lock: {e}"))?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    let cargo = |args: &[&str]| {
        let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        c.current_dir(&dir)
            .args(args)
            .env("CARGO_TARGET_DIR", &target)
            .env("GPUKERNEL_BACKEND", "sim");
        with_cuda_env(&mut c);
        c
    };
    eprintln!("new: a generated project in {}", dir.display());
    run(&mut cargo(&["test", "--quiet"]))?;
    run(&mut cargo(&["run", "--quiet", "-p", "host"]))?;

    // A syntax error in the .cu: the build script's output is the compiler's error.
    let cu = dir.join("kernels/cuda/functions.cu");
    let good = std::fs::read_to_string(&cu).map_err(|e| e.to_string())?;
    std::fs::write(&cu, good.replace("*ret = x * factor;", "*ret = x * factor"))
        .map_err(|e| e.to_string())?;
    let out = cargo(&["build", "--quiet", "-p", "kernels"])
        .output()
        .map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check_build_script_failure(&stderr)?;
    std::fs::write(&cu, good).map_err(|e| e.to_string())?;

    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "new: the generated project built, passed its test and ran on the simulator; its .cu \
         syntax error came first and alone ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A failing kernels build script's output: the compiler's error (file:line) right after
/// `--- stderr`, and no `--- stdout` section of cargo directives before it.
fn check_build_script_failure(stderr: &str) -> Result<(), String> {
    let after = stderr
        .split_once("--- stderr")
        .map(|(_, s)| s.trim_start())
        .ok_or_else(|| format!("the broken .cu did not fail the build script:\n{stderr}"))?;
    let first = after.lines().next().unwrap_or_default();
    if stderr.contains("--- stdout") || !first.contains("functions.cu:") || !first.contains("error")
    {
        return Err(format!(
            "a .cu syntax error should be the first line of the build script's output, alone:\n{stderr}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_every_file_with_the_placeholders_filled() {
        let dir = std::env::temp_dir().join(format!("gpukernel-new-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        generate(
            &dir,
            &Source::Git("file:///x/gpukernel".into(), Some("main".into())),
            "nightly-2026-05-20",
        )
        .unwrap();
        for (path, _) in FILES {
            let text = std::fs::read_to_string(dir.join(path)).unwrap();
            assert!(
                !text.contains("{{"),
                "{path} has an unfilled placeholder:\n{text}"
            );
        }
        let root = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            root.contains(r#"nvptx-builder = { git = "file:///x/gpukernel", branch = "main" }"#),
            "{root}"
        );
        let kernels = std::fs::read_to_string(dir.join("kernels/Cargo.toml")).unwrap();
        assert!(
            kernels.contains(r#"nightly = "nightly-2026-05-20""#),
            "{kernels}"
        );
        let e = generate(&dir, &Source::Path(crate::root()), "nightly").unwrap_err();
        assert!(e.contains("not empty"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_build_script_failure_must_start_with_the_compiler_error() {
        let good = "error: failed to run custom build command for `kernels`\n\nCaused by:\n  process didn't exit successfully\n  --- stderr\n  error: /p/kernels/cuda/functions.cu:9:5: error: expected ';'\n";
        assert!(check_build_script_failure(good).is_ok());
        let noisy = good.replace(
            "--- stderr",
            "--- stdout\n  cargo:rerun-if-changed=x\n  --- stderr",
        );
        assert!(check_build_script_failure(&noisy).is_err());
    }
}

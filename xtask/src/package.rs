//! `cargo xtask package-check`: the five library crates as crates.io would receive them.
//!
//! 1. their API docs build without a rustdoc warning (`RUSTDOCFLAGS=-D warnings`, with the
//!    features docs.rs documents);
//! 2. `cargo package` of the five (with its verification build of each packed crate, in
//!    dependency order, through cargo's temporary registry);
//! 3. a directory source that stands in for crates.io: the five `.crate` files unpacked, beside
//!    `cargo vendor` of every other crate the workspace and the nightly's `-Zbuild-std=core` need;
//! 4. a `cargo xtask new` project that depends on them **by version** (`gpukernel-runtime =
//!    "0.1.0"`), with crates.io replaced by that directory and cargo offline: it must build, pass
//!    its test on the simulator, run, and document itself (`cargo doc`), and its lock file must
//!    take each of the five from the registry with the checksum of its `.crate`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::new::{Source, generate};
use crate::{nightly, output, root, run, with_cuda_env};

/// The published crates, in dependency order.
pub(crate) const CRATES: [&str; 5] = [
    "gpukernel-ffi-check",
    "gpukernel-macros",
    "gpukernel-device",
    "nvptx-builder",
    "gpukernel-runtime",
];

/// The optional APIs that docs.rs documents (`[package.metadata.docs.rs]` of gpukernel-runtime).
const DOCUMENTED_FEATURES: &str =
    "gpukernel-runtime/cudarc-interop,gpukernel-runtime/nccl,gpukernel-runtime/nvtx";

/// The source name under which the project's `.cargo/config.toml` replaces crates.io.
const LOCAL_SOURCE: &str = "gpukernel-package-check";

const CRATES_IO: &str = "registry+https://github.com/rust-lang/crates.io-index";

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

fn cargo_in(dir: &Path) -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(dir);
    with_cuda_env(&mut c);
    c
}

/// One step's time, for the summary line.
fn timed<T>(
    times: &mut Vec<(&'static str, f64)>,
    name: &'static str,
    f: impl FnOnce() -> Result<T, String>,
) -> Result<T, String> {
    let t = Instant::now();
    let r = f()?;
    times.push((name, t.elapsed().as_secs_f64()));
    Ok(r)
}

pub(crate) fn package_check() -> Result<(), String> {
    let started = Instant::now();
    let mut times = Vec::new();
    timed(&mut times, "docs", api_docs)?;
    let crates = timed(&mut times, "package", package)?;
    let registry = target_dir().join("package-check/registry");
    timed(&mut times, "registry", || {
        directory_source(&crates, &registry)
    })?;
    timed(&mut times, "project", || registry_project(&registry))?;
    let _ = std::fs::remove_dir_all(&registry);
    let steps: Vec<String> = times.iter().map(|(n, s)| format!("{n} {s:.0} s")).collect();
    eprintln!(
        "package-check: the five crates documented without warnings, packaged and verified; a \
         project built, tested, ran and documented against them by version ({}; {:.0} s)",
        steps.join(", "),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The five crates' API docs, every rustdoc warning an error.
pub(crate) fn api_docs() -> Result<(), String> {
    let mut cmd = cargo_in(&root());
    cmd.args(["doc", "--no-deps", "--features", DOCUMENTED_FEATURES])
        .env("RUSTDOCFLAGS", "-D warnings");
    for c in CRATES {
        cmd.args(["-p", c]);
    }
    run(&mut cmd)
}

/// `cargo package` of the five (verified: each packed crate builds on its own, its
/// dependencies among the five taken from the packed ones); returns the `.crate` files.
fn package() -> Result<Vec<PathBuf>, String> {
    let mut cmd = cargo_in(&root());
    // Not a publish: a checkout with local changes is checked as it is.
    cmd.args(["package", "--allow-dirty"]);
    for c in CRATES {
        cmd.args(["-p", c]);
    }
    run(&mut cmd)?;
    let version = env!("CARGO_PKG_VERSION");
    let mut files = Vec::new();
    for c in CRATES {
        let f = target_dir().join(format!("package/{c}-{version}.crate"));
        let size = std::fs::metadata(&f)
            .map_err(|e| format!("{}: {e}", f.display()))?
            .len();
        // crates.io refuses more than 10 MiB; ours are a few hundred KiB (no tests, no data).
        if size > 2 << 20 {
            return Err(format!(
                "{} is {size} bytes: check the `include` list of {c}'s Cargo.toml",
                f.display()
            ));
        }
        eprintln!("package-check: {} ({} KiB)", f.display(), size / 1024);
        files.push(f);
    }
    Ok(files)
}

/// A directory source with the five packed crates and, vendored, every other crate that a
/// project needs: the workspace's dependencies and those of the nightly's standard library
/// sources (`-Zbuild-std=core` resolves them through the same source replacement).
fn directory_source(crates: &[PathBuf], dir: &Path) -> Result<(), String> {
    let _ = std::fs::remove_dir_all(dir);
    let sysroot = output(
        Command::new("rustc")
            .arg(format!("+{}", nightly()))
            .args(["--print", "sysroot"]),
    )
    .ok_or("`rustc +nightly --print sysroot` failed: run `cargo xtask doctor`")?;
    let std_manifest = Path::new(sysroot.trim()).join("lib/rustlib/src/rust/library/Cargo.toml");
    let mut vendor = Command::new("rustup");
    vendor
        .current_dir(root())
        .args([
            "run",
            &nightly(),
            "cargo",
            "vendor",
            "--versioned-dirs",
            "--quiet",
            "-s",
        ])
        .arg(&std_manifest)
        .arg(dir)
        // `cargo vendor` prints the configuration to use on stdout: not needed here.
        .stdout(std::process::Stdio::null());
    run(&mut vendor)?;
    for c in crates {
        run(Command::new("tar").arg("xzf").arg(c).arg("-C").arg(dir))?;
        let name = c
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_end_matches(".crate")
            .to_string();
        let sum = output(Command::new("sha256sum").arg(c))
            .and_then(|s| s.split_whitespace().next().map(str::to_string))
            .ok_or_else(|| format!("sha256sum {} failed", c.display()))?;
        // A directory source's record of each crate: the `.crate`'s checksum (what the lock
        // file records); the files' own checksums are optional.
        std::fs::write(
            dir.join(&name).join(".cargo-checksum.json"),
            format!("{{\"files\":{{}},\"package\":\"{sum}\"}}"),
        )
        .map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}

/// A generated project depending on the five by version, resolved from the directory source
/// alone (crates.io replaced, cargo offline): build, test, run, `cargo doc`, and the lock file.
fn registry_project(registry: &Path) -> Result<(), String> {
    let version = env!("CARGO_PKG_VERSION");
    let dir = std::env::temp_dir().join(format!("gpukernel-package-check-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    generate(&dir, &Source::Version(version.to_string()), &nightly())?;
    std::fs::create_dir_all(dir.join(".cargo")).map_err(|e| e.to_string())?;
    std::fs::write(
        dir.join(".cargo/config.toml"),
        format!(
            "[source.crates-io]\nreplace-with = \"{LOCAL_SOURCE}\"\n\n[source.{LOCAL_SOURCE}]\ndirectory = {:?}\n\n[net]\noffline = true\n",
            registry.display().to_string()
        ),
    )
    .map_err(|e| e.to_string())?;
    // The checkout's target dir: the third-party crates are the same units (same versions,
    // same source id), so only the five crates and the project compile.
    let target = target_dir();
    let cargo = |args: &[&str]| {
        let mut c = cargo_in(&dir);
        c.args(args)
            .env("CARGO_TARGET_DIR", &target)
            .env("GPUKERNEL_BACKEND", "sim");
        c
    };
    eprintln!(
        "package-check: a project depending on the packaged crates by version in {}",
        dir.display()
    );
    run(&mut cargo(&["test", "--quiet"]))?;
    run(&mut cargo(&["run", "--quiet", "-p", "host"]))?;
    // The project's docs with its gpukernel dependencies (`cargo doc -p nvptx-builder`, a
    // build-dependency only, is cargo's bug rust-lang/cargo#11105: see nvptx-builder's README).
    run(&mut cargo(&["doc", "--quiet"]))?;
    let lock = std::fs::read_to_string(dir.join("Cargo.lock")).map_err(|e| e.to_string())?;
    check_lock(&lock, registry, version)?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Each of the five is in the lock file at `version`, from crates.io (replaced by the
/// directory source), with the checksum of its packed `.crate`.
fn check_lock(lock: &str, registry: &Path, version: &str) -> Result<(), String> {
    for c in CRATES {
        let entry = lock_entry(lock, c).ok_or_else(|| {
            format!("{c} is not in the project's Cargo.lock: was it taken from the registry?")
        })?;
        let want_sum = std::fs::read_to_string(
            registry
                .join(format!("{c}-{version}"))
                .join(".cargo-checksum.json"),
        )
        .map_err(|e| e.to_string())?;
        let ok = entry.contains(&format!("version = \"{version}\""))
            && entry.contains(&format!("source = \"{CRATES_IO}\""))
            && entry
                .lines()
                .find_map(|l| l.strip_prefix("checksum = \""))
                .is_some_and(|s| want_sum.contains(s.trim_end_matches('"')));
        if !ok {
            return Err(format!(
                "the project's Cargo.lock does not take {c} {version} from the registry with \
                 its packed checksum:\n{entry}"
            ));
        }
    }
    Ok(())
}

/// The `[[package]]` entry of `name` in a lock file.
fn lock_entry<'a>(lock: &'a str, name: &str) -> Option<&'a str> {
    lock.split("[[package]]")
        .find(|e| e.trim_start().starts_with(&format!("name = \"{name}\"\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_entry_must_come_from_the_registry_with_the_packed_checksum() {
        let dir = std::env::temp_dir().join(format!("gpukernel-lock-test-{}", std::process::id()));
        for c in CRATES {
            std::fs::create_dir_all(dir.join(format!("{c}-0.1.0"))).unwrap();
            std::fs::write(
                dir.join(format!("{c}-0.1.0/.cargo-checksum.json")),
                format!("{{\"files\":{{}},\"package\":\"sum-{c}\"}}"),
            )
            .unwrap();
        }
        let entry = |c: &str, source: &str, sum: &str| {
            format!(
                "[[package]]\nname = \"{c}\"\nversion = \"0.1.0\"\nsource = \"{source}\"\nchecksum = \"{sum}\"\n\n"
            )
        };
        let good: String = CRATES
            .iter()
            .map(|c| entry(c, CRATES_IO, &format!("sum-{c}")))
            .collect();
        assert!(check_lock(&good, &dir, "0.1.0").is_ok());
        // By path (no source, no checksum): refused, naming the crate.
        let by_path = good.replace(
            &entry("nvptx-builder", CRATES_IO, "sum-nvptx-builder"),
            "[[package]]\nname = \"nvptx-builder\"\nversion = \"0.1.0\"\n\n",
        );
        let e = check_lock(&by_path, &dir, "0.1.0").unwrap_err();
        assert!(e.contains("nvptx-builder"), "{e}");
        // Another crate's checksum (the published one, not ours): refused.
        let other = good.replace("sum-gpukernel-device\"", "0000\"");
        assert!(check_lock(&other, &dir, "0.1.0").is_err());
        // Missing altogether.
        let missing = good.replace("name = \"gpukernel-macros\"", "name = \"x\"");
        assert!(check_lock(&missing, &dir, "0.1.0").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

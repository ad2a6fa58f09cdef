//! Every foreign function a kernels crate declares must be defined by the host library of its
//! foreign sources (the simulator's copy), else the host link fails later, far from the cause,
//! with `rust-lld: error: undefined symbol` after a page-long `cc` command line. The build
//! script knows the declarations and the library, so it checks here and names the missing
//! definition, its Rust declaration and the fix.

use std::path::{Path, PathBuf};

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSymbol};

use crate::error::MissingDefinition;
use crate::foreign::ForeignDeclaration;
use crate::{Error, io_err};

/// The prefix of every definition of a foreign library compiled for the host (the simulator):
/// `declare_device!`'s host-side wrapper links to `__gpukernel_host_f` (gpukernel-macros
/// spells the same prefix), so that a declaration can neither bind to a symbol of the host
/// process (libc's `getpid`, `__libc_free`) nor a foreign definition replace one (`write`).
pub const HOST_SYMBOL_PREFIX: &str = "__gpukernel_host_";

/// The global symbols the static library at `lib` defines, as the source spells them (the
/// host prefix removed); `None` when it is not an archive of objects this reader knows (then
/// nothing is checked).
pub(crate) fn defined_in_archive(lib: &Path) -> Result<Option<Vec<String>>, Error> {
    Ok(defined_raw(lib)?.map(|names| {
        names
            .into_iter()
            .map(|n| {
                n.strip_prefix(HOST_SYMBOL_PREFIX)
                    .map_or(n.clone(), str::to_owned)
            })
            .collect()
    }))
}

/// Renames every global symbol that the static library at `lib` defines, `f`, to
/// `__gpukernel_host_f`, in every member (references between members follow), with binutils'
/// `objcopy` (`$OBJCOPY` if set). Undefined references (to libc, to the simulator's entry
/// points) keep their names.
pub(crate) fn privatize(lib: &Path) -> Result<(), Error> {
    let Some(mut defined) = defined_raw(lib)? else {
        return Ok(());
    };
    defined.retain(|n| !n.starts_with(HOST_SYMBOL_PREFIX));
    defined.sort_unstable();
    defined.dedup();
    if defined.is_empty() {
        return Ok(());
    }
    let list = lib.with_extension("host-names");
    let text: String = defined
        .iter()
        .map(|n| format!("{n} {HOST_SYMBOL_PREFIX}{n}\n"))
        .collect();
    std::fs::write(&list, text).map_err(io_err(&list))?;
    let objcopy =
        std::env::var_os("OBJCOPY").map_or_else(|| PathBuf::from("objcopy"), PathBuf::from);
    let args = vec![
        format!("--redefine-syms={}", list.display()),
        lib.display().to_string(),
    ];
    let failed = |output: String| Error::ToolFailed {
        tool: objcopy.clone(),
        args: args.clone(),
        output,
    };
    let out = std::process::Command::new(&objcopy)
        .args(&args)
        .output()
        .map_err(|e| {
            failed(format!(
                "{e}\nhint: the simulator's copy of the foreign code is renamed with binutils' objcopy: \
                 install binutils (it comes with gcc), or set OBJCOPY to its path"
            ))
        })?;
    if !out.status.success() {
        return Err(failed(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

pub(crate) fn defined_raw(lib: &Path) -> Result<Option<Vec<String>>, Error> {
    let data = std::fs::read(lib).map_err(io_err(lib))?;
    let Ok(archive) = ArchiveFile::parse(&*data) else {
        return Ok(None);
    };
    let mut names = Vec::new();
    for member in archive.members() {
        let Ok(member) = member else {
            return Ok(None);
        };
        let Ok(bytes) = member.data(&*data) else {
            return Ok(None);
        };
        let Ok(file) = object::File::parse(bytes) else {
            return Ok(None);
        };
        for sym in file.symbols() {
            if sym.is_definition()
                && sym.is_global()
                && let Ok(name) = sym.name()
            {
                names.push(name.to_owned());
            }
        }
    }
    Ok(Some(names))
}

/// Whether the declaration at `declared_at` (`file!()`:line: relative to the workspace root,
/// or absolute) is in the crate at `manifest_dir`, rather than in a dependency whose own build
/// script compiles its foreign sources.
pub(crate) fn declared_in(manifest_dir: &Path, declared_at: &str) -> bool {
    let file = declared_at
        .rsplit_once(':')
        .map_or(declared_at, |(file, _)| file);
    let Ok(crate_dir) = manifest_dir.canonicalize() else {
        return false;
    };
    let path = Path::new(file);
    let candidates: Vec<PathBuf> = if path.is_absolute() {
        vec![path.to_path_buf()]
    } else {
        crate_dir.ancestors().map(|a| a.join(path)).collect()
    };
    candidates
        .iter()
        .find_map(|c| c.canonicalize().ok())
        .is_some_and(|found| found.starts_with(&crate_dir))
}

/// The declarations of `declared` that no symbol of `defined` defines, each with the close
/// names found (`name (source:line)`) and a C++ (not `extern "C"`) definition of it.
pub(crate) fn missing_definitions(
    declared: &[&ForeignDeclaration],
    defined: &[String],
    sources: &[PathBuf],
) -> Vec<MissingDefinition> {
    let texts: Vec<(&PathBuf, String)> = sources
        .iter()
        .filter_map(|s| Some((s, std::fs::read_to_string(s).ok()?)))
        .collect();
    let locate = |name: &str, search: &str| -> String {
        texts
            .iter()
            .find_map(|(path, text)| {
                crate::lto::definition_line(text, search)
                    .map(|line| format!("{name} ({}:{line})", path.display()))
            })
            .unwrap_or_else(|| name.to_owned())
    };
    let mut out = Vec::new();
    for decl in declared {
        if defined.contains(&decl.symbol) {
            continue;
        }
        let mut close: Vec<(usize, &String)> = defined
            .iter()
            .filter(|d| !d.starts_with("_Z") && !d.starts_with("gpukernel_"))
            .filter_map(|d| {
                let distance = edit_distance(&decl.symbol, d);
                let near = distance <= (decl.symbol.len() / 4).clamp(1, 3)
                    || d.eq_ignore_ascii_case(&decl.symbol);
                near.then_some((distance, d))
            })
            .collect();
        close.sort();
        let similar = close.iter().take(3).map(|(_, d)| locate(d, d)).collect();
        // `_Z<len><name>`: the same name defined without `extern "C"`.
        let mangled = format!("{}{}", decl.symbol.len(), decl.symbol);
        let cxx = defined
            .iter()
            .find(|d| d.starts_with("_Z") && d.contains(&mangled))
            .map(|d| locate(d, &decl.symbol));
        out.push(MissingDefinition {
            symbol: decl.symbol.clone(),
            declared_at: decl.declared_at.clone(),
            similar,
            cxx,
        });
    }
    out
}

/// Levenshtein distance (names are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(symbol: &str) -> ForeignDeclaration {
        ForeignDeclaration {
            symbol: symbol.into(),
            abi: crate::foreign::ForeignAbi::Numba,
            declared_at: "src/ffi.rs:7".into(),
            ret: "float".into(),
            args: vec!["float".into()],
            structs: Vec::new(),
        }
    }

    #[test]
    fn distances() {
        assert_eq!(edit_distance("mul_f32_f32", "mul_f32_f32"), 0);
        assert_eq!(edit_distance("mul_f32_f3", "mul_f32_f32"), 1);
        assert_eq!(edit_distance("abc", "acb"), 2);
        assert_eq!(edit_distance("", "ab"), 2);
    }

    #[test]
    fn missing_definitions_name_close_and_cxx_spellings() {
        let dir = std::env::temp_dir().join(format!("nvptx-host-symbols-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("functions.cu");
        std::fs::write(
            &src,
            "// helpers\n\nextern \"C\" __device__ int mul_f32_f32(float* r, float a) { return 0; }\n\
             __device__ int scale(float* r, float a) { return 0; }\n",
        )
        .unwrap();
        let defined = [
            "mul_f32_f32".to_owned(),
            "_Z5scalePff".to_owned(),
            "gpukernel_sim_thread_idx".to_owned(),
        ];
        let (typo, cxx, fine, unrelated) = (
            decl("mul_f32_f3"),
            decl("scale"),
            decl("mul_f32_f32"),
            decl("completely_else"),
        );
        let missing = missing_definitions(
            &[&typo, &cxx, &fine, &unrelated],
            &defined,
            std::slice::from_ref(&src),
        );
        let symbols: Vec<&str> = missing.iter().map(|m| m.symbol.as_str()).collect();
        assert_eq!(symbols, ["mul_f32_f3", "scale", "completely_else"]);
        assert_eq!(
            missing[0].similar,
            [format!("mul_f32_f32 ({}:3)", src.display())]
        );
        assert_eq!(
            missing[1].cxx.as_deref(),
            Some(format!("_Z5scalePff ({}:4)", src.display()).as_str())
        );
        assert!(missing[2].similar.is_empty() && missing[2].cxx.is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn declarations_belong_to_the_crate_whose_files_hold_them() {
        let root = std::env::temp_dir().join(format!("nvptx-declared-in-{}", std::process::id()));
        let kernels = root.join("kernels");
        std::fs::create_dir_all(kernels.join("src")).unwrap();
        std::fs::create_dir_all(root.join("other/src")).unwrap();
        std::fs::write(kernels.join("src/ffi.rs"), "").unwrap();
        std::fs::write(root.join("other/src/lib.rs"), "").unwrap();
        // `file!()` is relative to the workspace root (here `root`), or to the crate itself.
        assert!(declared_in(&kernels, "kernels/src/ffi.rs:12"));
        assert!(declared_in(&kernels, "src/ffi.rs:12"));
        assert!(declared_in(
            &kernels,
            &format!("{}:3", kernels.join("src/ffi.rs").display())
        ));
        assert!(!declared_in(&kernels, "other/src/lib.rs:3"));
        assert!(!declared_in(&kernels, "/nonexistent/registry/src/lib.rs:3"));
        let _ = std::fs::remove_dir_all(&root);
    }
}

//! Link inputs as the linker holds them: the bytes, their kind and the name errors use, read
//! from files or memory and checked against their kind (`format::check_input`) before any
//! compiler or driver sees them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::Error;
use crate::format::{self, InputKind};

/// A checked input, ready for a backend.
#[derive(Debug, Clone)]
pub(crate) struct Input {
    pub(crate) kind: InputKind,
    /// The name used in logs and errors: the path as given, or the caller's name.
    pub(crate) name: String,
    /// The file it came from, canonicalized (for deduplication and `#include` resolution).
    pub(crate) path: Option<PathBuf>,
    /// The exact bytes (PTX and CUDA sources without a trailing NUL).
    pub(crate) bytes: Arc<[u8]>,
    /// Added as unchecked: it may define declared foreign functions whose types cannot be
    /// read (see `link/foreign.rs`).
    pub(crate) unchecked: bool,
    /// Relocatable machine code of this PTX's kernels (`Linker::add_ptx_with_sass`), linked
    /// instead of the PTX where it suits the link (`link/machine.rs`).
    pub(crate) machine: Option<Arc<[u8]>>,
}

/// Reads a file input; the kind comes from `kind` or else from the extension.
pub(crate) fn read_file(path: &Path, kind: Option<InputKind>) -> Result<Input, Error> {
    let kind = match kind {
        Some(kind) => kind,
        None => InputKind::from_path(path).ok_or_else(|| Error::UnsupportedLinkInput {
            path: path.to_path_buf(),
            extension: path
                .extension()
                .map(|e| format!(".{}", e.to_string_lossy()))
                .unwrap_or_else(|| "(none)".into()),
            supported: InputKind::supported_list(),
        })?,
    };
    let bytes = std::fs::read(path).map_err(|source| unreadable(path, source))?;
    let canonical = std::fs::canonicalize(path).ok();
    let input = Input {
        kind,
        name: path.display().to_string(),
        path: canonical,
        bytes: bytes.into(),
        unchecked: false,
        machine: None,
    };
    check_shape(&input)?;
    Ok(input)
}

/// The error for a file that could not be read: a relative path is shown resolved, with what it
/// was resolved against and the way that does not depend on the current directory.
fn unreadable(path: &Path, source: std::io::Error) -> Error {
    if path.is_absolute() {
        return Error::LinkInputRead {
            path: path.to_path_buf(),
            source,
        };
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let hint = if InputKind::from_path(path) == Some(InputKind::Cuda) {
        format!(
            "; hint: embed it at compile time with `.add_cuda(include_cuda!(\"{}\"))`, a path relative to the crate",
            path.display()
        )
    } else {
        "; hint: build the path from `env!(\"CARGO_MANIFEST_DIR\")` or embed the file with `include_bytes!`".to_owned()
    };
    Error::LinkInputRead {
        path: cwd.join(path),
        source: std::io::Error::new(
            source.kind(),
            format!(
                "{source} (the relative path `{}` was resolved against the current directory, {}){hint}",
                path.display(),
                cwd.display()
            ),
        ),
    }
}

/// Checks that an input's bytes have the shape its kind promises.
pub(crate) fn check_shape(input: &Input) -> Result<(), Error> {
    format::check_input(input.kind, &input.bytes).map_err(|found| Error::LinkInputMismatch {
        name: input.name.clone(),
        kind: input.kind,
        found,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_relative_path_says_what_it_was_resolved_against() {
        let e = read_file(Path::new("cuda/no_such_file.cu"), None)
            .unwrap_err()
            .to_string();
        let cwd = std::env::current_dir().unwrap();
        assert!(
            e.contains(&cwd.join("cuda/no_such_file.cu").display().to_string())
                && e.contains("resolved against the current directory")
                && e.contains("include_cuda!(\"cuda/no_such_file.cu\")"),
            "{e}"
        );
    }

    #[test]
    fn mismatches_name_the_input_and_its_kind() {
        let input = Input {
            kind: InputKind::Cubin,
            name: "lib.cubin".into(),
            path: None,
            bytes: b"!<arch>\nxxxx".as_slice().into(),
            unchecked: false,
            machine: None,
        };
        let e = check_shape(&input).unwrap_err().to_string();
        assert!(
            e.starts_with(
                "link input lib.cubin is given as cubin, but its bytes are an ar archive"
            ),
            "{e}"
        );
    }
}

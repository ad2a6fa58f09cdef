//! Reading a host compiler's preprocessed output (`-E`, with GCC's line markers `# 12
//! "file.cu" 2 3`): which files a source includes, and where the code that the user owns
//! holds inline assembly.
//!
//! Inline assembly in a foreign `.cu` is PTX: it cannot run in the simulator. System headers
//! use `asm`/`__asm__` for the host (glibc's symbol redirections, `x86intrin.h`), which is
//! fine, so the check cannot be a macro that turns the keyword into an error: it reads the
//! preprocessed text and reports only the `asm` tokens whose line marker names a file that
//! is neither a system header (flag 3) nor under a library include directory
//! (`Builder::include_dir`, whose host code paths are written for the host). Code removed by
//! the preprocessor (`#ifdef __CUDA_ARCH__`) is not there to report.

use std::path::{Path, PathBuf};

/// Inline assembly found in the user's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InlineAsm {
    /// The file, as the line marker names it.
    pub(crate) file: String,
    /// Its 1-based line.
    pub(crate) line: usize,
    /// The keyword as written (`asm`, `__asm__`, `__asm`).
    pub(crate) keyword: String,
}

/// What a preprocessed translation unit says.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The first inline assembly in the user's code, if any.
    pub(crate) inline_asm: Option<InlineAsm>,
    /// The files included that are not system headers (the source itself, its local headers
    /// and those of the include directories), in order of first appearance.
    pub(crate) local_files: Vec<String>,
}

/// A line marker `# 12 "path" 1 3`: the line of the next line, the file, whether it is a
/// system header.
fn line_marker(line: &str) -> Option<(usize, String, bool)> {
    let rest = line.strip_prefix("# ")?;
    let (number, rest) = rest.split_once(' ')?;
    let number: usize = number.parse().ok()?;
    let rest = rest.strip_prefix('"')?;
    let mut file = String::new();
    let mut chars = rest.char_indices();
    let mut end = None;
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, e)) = chars.next() {
                    file.push(e);
                }
            }
            '"' => {
                end = Some(i);
                break;
            }
            _ => file.push(c),
        }
    }
    let flags = &rest[end? + 1..];
    let system = flags.split_whitespace().any(|f| f == "3");
    Some((number, file, system))
}

/// Scans the preprocessed text `pre`; files under any of `library_dirs` are not checked for
/// inline assembly.
pub(crate) fn scan(pre: &str, library_dirs: &[PathBuf]) -> Scan {
    let mut out = Scan::default();
    let mut file = String::new();
    let mut line_no = 0usize;
    let mut checked = false;
    let mut raw_end: Option<String> = None;
    for text in pre.lines() {
        if raw_end.is_none()
            && let Some((number, name, system)) = line_marker(text)
        {
            line_no = number;
            let pseudo = name.starts_with('<') && name.ends_with('>');
            checked = !system && !pseudo && !under_any(&name, library_dirs);
            if !system && !pseudo && !out.local_files.contains(&name) {
                out.local_files.push(name.clone());
            }
            file = name;
            continue;
        }
        let this_line = line_no;
        line_no += 1;
        if raw_end.is_none() && text.trim_start().starts_with('#') {
            // `#pragma` and other directives the preprocessor keeps.
            continue;
        }
        let (keyword, still_raw) = asm_keyword(text, raw_end.take());
        raw_end = still_raw;
        if checked
            && out.inline_asm.is_none()
            && let Some(keyword) = keyword
        {
            out.inline_asm = Some(InlineAsm {
                file: file.clone(),
                line: this_line,
                keyword,
            });
        }
    }
    out
}

/// Whether `file` is inside one of `dirs`.
fn under_any(file: &str, dirs: &[PathBuf]) -> bool {
    let path = Path::new(file);
    let canonical = path.canonicalize().ok();
    dirs.iter().any(|d| {
        path.starts_with(d)
            || d.canonicalize()
                .ok()
                .zip(canonical.as_ref())
                .is_some_and(|(d, p)| p.starts_with(d))
    })
}

/// The first `asm`, `__asm` or `__asm__` token of a line outside string and character
/// literals. `raw` is the closing delimiter of a raw string literal still open from the line
/// before; the one still open at the end of this line is returned.
fn asm_keyword(line: &str, mut raw: Option<String>) -> (Option<String>, Option<String>) {
    let b = line.as_bytes();
    let mut i = 0;
    let mut found = None;
    while i < b.len() {
        if let Some(end) = &raw {
            match line[i..].find(end.as_str()) {
                Some(at) => {
                    i += at + end.len();
                    raw = None;
                    continue;
                }
                None => return (found, raw),
            }
        }
        let c = b[i];
        if c == b'"' || c == b'\'' {
            // A string or character literal, with escapes.
            i += 1;
            while i < b.len() && b[i] != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c.is_ascii_digit() {
            // A pp-number, digit separators (`1'000`) included.
            while i < b.len()
                && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'_' | b'.' | b'\''))
            {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &line[start..i];
            if found.is_none() && matches!(word, "asm" | "__asm" | "__asm__") {
                found = Some(word.to_owned());
            }
            if word.ends_with('R')
                && matches!(word, "R" | "LR" | "uR" | "UR" | "u8R")
                && b.get(i) == Some(&b'"')
            {
                // A raw string literal: R"delim( ... )delim".
                let open = line[i + 1..].find('(').map(|p| i + 1 + p);
                match open {
                    Some(p) => {
                        raw = Some(format!("){}\"", &line[i + 1..p]));
                        i = p + 1;
                    }
                    None => i += 1,
                }
            }
        } else {
            i += 1;
        }
    }
    (found, raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRE: &str = "# 0 \"k.cu\"\n\
# 0 \"<built-in>\"\n\
# 1 \"/usr/include/wchar.h\" 1 3 4\n\
extern wchar_t *wcschr (const wchar_t *__wcs, wchar_t __wc) noexcept (true) __asm (\"wcschr\");\n\
# 1 \"/k/lib/rng.h\" 1\n\
static inline unsigned long long rd() { unsigned lo, hi; __asm__ __volatile__(\"rdtsc\" : \"=a\"(lo), \"=d\"(hi)); return lo; }\n\
# 2 \"k.cu\" 2\n\
const char* s = \"asm(\\\"x\\\")\"; char c = 'a'; int n = 1'000;\n\
const char* r = R\"x(asm\n\
still asm )x\";\n\
\n\
int f() { int x; asm(\"mov.u32 %0, 1;\" : \"=r\"(x)); return x; }\n";

    #[test]
    fn only_the_users_inline_assembly_is_reported() {
        let s = scan(PRE, &[PathBuf::from("/k/lib")]);
        assert_eq!(
            s.inline_asm,
            Some(InlineAsm {
                file: "k.cu".into(),
                line: 6,
                keyword: "asm".into()
            })
        );
        assert_eq!(s.local_files, ["k.cu", "/k/lib/rng.h"]);
        // Without the library directory, the library's host assembly is the user's.
        let s = scan(PRE, &[]);
        assert_eq!(s.inline_asm.unwrap().file, "/k/lib/rng.h");
    }

    #[test]
    fn literals_and_system_headers_hide_nothing_else() {
        assert_eq!(asm_keyword("x = \"asm\"; y = 'a';", None), (None, None));
        assert_eq!(
            asm_keyword("__asm__ volatile(\"nop\");", None).0.as_deref(),
            Some("__asm__")
        );
        assert_eq!(asm_keyword("int asmx = 1;", None), (None, None));
        let (k, raw) = asm_keyword("auto s = R\"(asm", None);
        assert_eq!((k, raw.as_deref()), (None, Some(")\"")));
        let (k, raw) = asm_keyword(")\"; asm(\"nop\");", raw);
        assert_eq!((k.as_deref(), raw), (Some("asm"), None));
        assert_eq!(
            line_marker("# 12 \"a \\\"b\\\".cu\" 2 3 4"),
            Some((12, "a \"b\".cu".into(), true))
        );
    }
}

//! The `declare_device!` declarations recorded in a kernels crate's PTX (the globals
//! `__gpukernel_foreign_*`, one per entry; the format and the checks made of them are
//! `gpukernel-ffi-check`'s), read back so that the build-time paths can check the definitions
//! against them (see [`crate::host_cc::HostCc::declarations`] and `lto`).

use std::path::Path;

use crate::Error;
use gpukernel_ffi_check::check;
pub use gpukernel_ffi_check::record::RECORD_PREFIX;
/// One declaration (`gpukernel-ffi-check`'s: the run-time Linker reads the same records).
pub use gpukernel_ffi_check::{
    CHECK_HEADER, CHECK_HEADER_NAME, Declaration as ForeignDeclaration, FieldLayout, ForeignAbi,
    StructLayout, reserved_symbol,
};

/// What the check of one source's definitions found ([`check_definitions`]).
#[derive(Debug, Default)]
pub(crate) struct CheckOutcome {
    /// The log of a compile that failed for another reason than a check (the source's own
    /// error, or the checks' text): the caller reports it as a compile of the source.
    pub(crate) log: Option<String>,
    /// The symbols whose check was left out because the source does not name them at global
    /// scope: another source defines them, or this one defines them where the check cannot see
    /// them (inside a namespace, beside C++ overloads); the caller refuses the latter
    /// ([`unseen_definition`]).
    pub(crate) unchecked: Vec<String>,
}

/// Checks the definitions in the source `src` against `declarations`: `syntax_log` compiles
/// (syntax only) the text it is given, a file that includes the source and then the checks
/// (`gpukernel-ffi-check`'s text, the one NVRTC compiles in the run-time Linker), and returns
/// the compiler's log if it failed. A declaration that the source does not declare at global
/// scope is left out and the rest compiled again.
pub(crate) fn check_definitions(
    src: &Path,
    declarations: &[ForeignDeclaration],
    mut syntax_log: impl FnMut(&str) -> Result<Option<String>, Error>,
) -> Result<CheckOutcome, Error> {
    let mut decls: Vec<&ForeignDeclaration> = declarations
        .iter()
        .filter(|d| check::c_check(d).is_some())
        .collect();
    let included = src
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    let mut outcome = CheckOutcome::default();
    while !decls.is_empty() {
        let text = format!("#include \"{included}\"\n{}", check::checks_text(&decls));
        let Some(log) = syntax_log(&text)? else {
            return Ok(outcome);
        };
        let verdict = check::read_log(&log, &decls);
        if let Some((symbol, failed)) = verdict.mismatch
            && let Some(decl) = decls.iter().find(|d| d.symbol == symbol)
        {
            let text = std::fs::read_to_string(src).unwrap_or_default();
            let line = check::definition_line(&text, &decl.symbol);
            return Err(mismatch(
                decl,
                src,
                line,
                check::mismatch_detail(&failed, &text, line),
            ));
        }
        if verdict.undeclared.is_empty() {
            outcome.log = Some(log);
            return Ok(outcome);
        }
        decls.retain(|d| !verdict.undeclared.contains(&d.symbol));
        outcome.unchecked.extend(verdict.undeclared);
    }
    Ok(outcome)
}

/// `ForeignSignatureMismatch` for `decl`, defined in `src` at `line`.
fn mismatch(decl: &ForeignDeclaration, src: &Path, line: Option<usize>, detail: String) -> Error {
    Error::ForeignSignatureMismatch {
        symbol: decl.symbol.clone(),
        declared_at: decl.declared_at.clone(),
        expected: decl.c_declaration(),
        defined_at: match line {
            Some(l) => format!("{}:{l}", src.display()),
            None => src.display().to_string(),
        },
        detail,
    }
}

/// Refuses a definition in `src` of one of `unchecked` (symbols the check could not see at
/// global scope after the source, [`CheckOutcome::unchecked`]) when `defines` says the source
/// defines it: a definition inside a namespace, or an `extern "C"` function beside C++
/// overloads of its name, which no check would otherwise judge (the LLVM types and the host
/// library's symbols show neither signedness nor pointees). The run-time Linker refuses the
/// same definitions with the same words.
pub(crate) fn unseen_definition(
    src: &Path,
    declarations: &[ForeignDeclaration],
    unchecked: &[String],
    defines: impl Fn(&str) -> bool,
) -> Result<(), Error> {
    for decl in declarations
        .iter()
        .filter(|d| unchecked.contains(&d.symbol))
    {
        if !defines(&decl.symbol) {
            continue;
        }
        let text = std::fs::read_to_string(src).unwrap_or_default();
        let line = check::definition_line(&text, &decl.symbol);
        let detail = check::mismatch_detail(
            &[check::unseen_definition_detail(&decl.symbol)],
            &text,
            line,
        );
        return Err(mismatch(decl, src, line, detail));
    }
    Ok(())
}

/// The declarations recorded in a PTX text (in order; records that do not parse are skipped).
pub fn declarations_in_ptx(ptx: &str) -> Vec<ForeignDeclaration> {
    let mut out: Vec<ForeignDeclaration> = Vec::new();
    for line in ptx.lines() {
        let Some(at) = line.find(RECORD_PREFIX) else {
            continue;
        };
        if !line.trim_start().starts_with(".visible .global") {
            continue;
        }
        let Some(inner) = line[at..]
            .split_once('{')
            .and_then(|(_, rest)| rest.split_once('}'))
            .map(|(inner, _)| inner)
        else {
            continue;
        };
        let bytes: Option<Vec<u8>> = inner.split(',').map(|b| b.trim().parse().ok()).collect();
        if let Some(decl) = bytes
            .and_then(|b| String::from_utf8(b).ok())
            .and_then(|t| ForeignDeclaration::parse(&t))
            && !out.contains(&decl)
        {
            out.push(decl);
        }
    }
    out
}

/// The declarations recorded in an LLVM IR text (the kernels' linked module, before `llc`):
/// the `@__gpukernel_foreign_* = constant [N x i8] c"..."` globals, in order.
pub fn declarations_in_ir(ir: &str) -> Vec<ForeignDeclaration> {
    let mut out: Vec<ForeignDeclaration> = Vec::new();
    for line in ir.lines() {
        if !line.starts_with(&format!("@{RECORD_PREFIX}")) {
            continue;
        }
        let Some(text) = line
            .split_once("c\"")
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(inner, _)| unescape_ir_string(inner))
        else {
            continue;
        };
        if let Some(decl) = String::from_utf8(text)
            .ok()
            .and_then(|t| ForeignDeclaration::parse(&t))
            && !out.contains(&decl)
        {
            out.push(decl);
        }
    }
    out
}

/// Refuses declarations that name no function of the user's foreign code, in the kernels'
/// linked IR before the `foreign_cuda` sources join it: a reserved name ([`reserved_symbol`]),
/// or a symbol the IR already defines (a Rust `#[no_mangle]` function, the compiler's builtins
/// or libdevice), which the declaration would call instead of a foreign definition.
pub fn check_declared_symbols(ir: &str) -> Result<(), crate::Error> {
    for decl in declarations_in_ir(ir) {
        let defined_by = match reserved_symbol(&decl.symbol) {
            Some(why) => why.to_owned(),
            None if ir_defines(ir, &decl.symbol) => {
                "a function that the kernels' own code defines (Rust code, the compiler's builtins or libdevice)"
                    .to_owned()
            }
            None => continue,
        };
        return Err(crate::Error::ForeignSymbolNotForeign {
            symbol: decl.symbol,
            declared_at: decl.declared_at,
            defined_by,
        });
    }
    Ok(())
}

/// Whether an LLVM IR text defines function `symbol` (`define ... @symbol(`).
fn ir_defines(ir: &str, symbol: &str) -> bool {
    let at = format!("@{symbol}(");
    let quoted = format!("@\"{symbol}\"(");
    ir.lines()
        .filter(|l| l.starts_with("define "))
        .any(|l| l.contains(&at) || l.contains(&quoted))
}

/// The bytes of an LLVM IR string constant's body (`\XX` hex escapes, `\\`).
fn unescape_ir_string(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            if b.get(i + 1) == Some(&b'\\') {
                out.push(b'\\');
                i += 2;
                continue;
            }
            if let Some(v) = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_read_from_ptx() {
        let text =
            "gpukernel-foreign-v1\nsymbol=f\nabi=numba\nat=src/a.rs:3\nret=float\narg=int32_t\n";
        let bytes: Vec<String> = text.bytes().map(|b| b.to_string()).collect();
        let ptx = format!(
            ".visible .global .align 1 .b8 __gpukernel_foreign_f_1[{}] = {{{}}};\n",
            bytes.len(),
            bytes.join(", ")
        );
        let decls = declarations_in_ptx(&ptx);
        assert_eq!(decls.len(), 1);
        assert_eq!(
            decls[0].c_declaration(),
            "extern \"C\" __device__ int f(float*, int32_t)"
        );
        assert!(check::c_check(&decls[0]).is_some());
        assert_eq!(decls[0].declared_at, "src/a.rs:3");
    }

    #[test]
    fn declared_symbols_must_be_foreign() {
        let record = |symbol: &str| {
            format!(
                "@__gpukernel_foreign_{symbol}_aa = constant [1 x i8] c\"gpukernel-foreign-v1\\0Asymbol={symbol}\\0Aabi=c\\0Aat=src/lib.rs:7\\0Aret=void\\0Aarg=uint64_t\\0A\", align 1\n"
            )
        };
        let ok = format!("{}declare void @mine(i64)\n", record("mine"));
        assert!(check_declared_symbols(&ok).is_ok());
        let ir = format!("{}define void @memset(ptr %0) {{\n}}\n", record("memset"));
        let e = check_declared_symbols(&ir).unwrap_err().to_string();
        assert!(e.contains("`memset` declared at src/lib.rs:7"), "{e}");
        assert!(e.contains("C library"), "{e}");
        let ir = format!(
            "{}define internal void @helper(i64 %0) {{\n}}\n",
            record("helper")
        );
        let e = check_declared_symbols(&ir).unwrap_err().to_string();
        assert!(e.contains("kernels' own code defines"), "{e}");
    }

    #[test]
    fn records_are_read_from_ir() {
        let ir = "@__gpukernel_foreign_add_in_place_aa = constant [95 x i8] c\"gpukernel-foreign-v1\\0Asymbol=add_in_place\\0Aabi=numba\\0Aat=src/ffi.rs:42\\0Aret=void\\0Aarg=float*\\0Aarg=float\\0A\", align 1\n@other = constant [1 x i8] c\"x\"\n";
        let decls = declarations_in_ir(ir);
        assert_eq!(decls.len(), 1, "{decls:?}");
        assert_eq!(decls[0].symbol, "add_in_place");
        assert_eq!(decls[0].args, ["float*", "float"]);
        assert_eq!(unescape_ir_string("a\\22\\\\b"), b"a\"\\b");
    }
}

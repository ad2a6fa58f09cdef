//! The `declare_device!` declarations recorded in a kernels crate's PTX (the globals
//! `__gpukernel_foreign_*`, one per entry; the format is `gpukernel-macros`'
//! `foreign/manifest.rs`), read back so that the host compile of the foreign `.cu` files can
//! check the definitions against them (see [`crate::host_cc::HostCc::declarations`]).

use std::path::Path;

use crate::Error;

/// The prefix of the record globals.
pub const RECORD_PREFIX: &str = "__gpukernel_foreign_";

/// One declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignDeclaration {
    /// The foreign symbol.
    pub symbol: String,
    /// `true` for a plain C function (`extern "C" fn`), `false` for Numba's ABI.
    pub c_abi: bool,
    /// The Rust declaration, `file:line`.
    pub declared_at: String,
    /// The C return type (`void` for none); `struct Name` where the C name is unknown.
    pub ret: String,
    /// The C argument types.
    pub args: Vec<String>,
}

impl ForeignDeclaration {
    /// Parses one record's text.
    pub fn parse(record: &str) -> Option<ForeignDeclaration> {
        let mut lines = record.lines();
        if lines.next()? != "gpukernel-foreign-v1" {
            return None;
        }
        let (mut symbol, mut c_abi, mut at, mut ret) = (None, None, None, None);
        let mut args = Vec::new();
        for line in lines {
            let (key, value) = line.split_once('=')?;
            match key {
                "symbol" => symbol = Some(value.to_owned()),
                "abi" => c_abi = Some(value == "c"),
                "at" => at = Some(value.to_owned()),
                "ret" => ret = Some(value.to_owned()),
                "arg" => args.push(value.to_owned()),
                _ => {}
            }
        }
        Some(ForeignDeclaration {
            symbol: symbol?,
            c_abi: c_abi?,
            declared_at: at?,
            ret: ret?,
            args,
        })
    }

    /// The C declaration, e.g. `extern "C" __device__ int f(float*, float)`.
    pub fn c_declaration(&self) -> String {
        let (ret, mut params) = if self.c_abi {
            (self.ret.clone(), Vec::new())
        } else {
            ("int".to_owned(), vec![format!("{}*", self.ret)])
        };
        params.extend(self.args.iter().cloned());
        format!(
            "extern \"C\" __device__ {ret} {}({})",
            self.symbol,
            params.join(", ")
        )
    }

    /// The C++ check of a definition of this declaration, compiled after the source (see
    /// [`CHECK_HEADER`]): one `static_assert` per property, under a `#line` at the Rust
    /// declaration; `None` when a type has no description (a record from another version of
    /// the macro). The run-time Linker (`gpukernel-runtime`'s `link/foreign.rs`) generates the
    /// same text for NVRTC.
    pub fn c_check(&self) -> Option<String> {
        let ns = "::__gpukernel_ffi";
        let sym = &self.symbol;
        let fn_ty = format!("{ns}::k_fn<decltype({sym})>");
        let (file, line) = self
            .declared_at
            .rsplit_once(':')
            .unwrap_or((self.declared_at.as_str(), "1"));
        // A macro of the symbol's name (defined after the definition) would make the check
        // judge another function: the check names the function the source defined.
        let mut out = format!(
            "#ifdef {sym}\n#undef {sym}\n#endif\n#line {line} \"{}\"\n",
            escape(file)
        );
        let mut assert = |cond: String, message: String| {
            out.push_str(&format!(
                "static_assert({cond}, \"[gpukernel] {sym}: {}\");\n",
                escape(&message)
            ));
        };
        let mut params: Vec<(String, String)> = Vec::new();
        let ret = if self.c_abi {
            (
                descriptor(&self.ret)?,
                format!(
                    "the definition must return '{}' ({})",
                    self.ret,
                    meaning(&self.ret)
                ),
            )
        } else {
            let slot = format!("{}*", self.ret);
            params.push((
                // The slot is written by the definition: a `void*` there would accept any
                // pointee, so only a `()` return (declared `void*`) keeps it.
                format!("{ns}::k_slot<{} >", descriptor(&slot)?),
                format!(
                    "parameter 1, the return slot, must be '{slot}' ({})",
                    meaning(&slot)
                ),
            ));
            (
                descriptor("int")?,
                "the definition must return 'int' (the status, 0 for success)".to_owned(),
            )
        };
        let first = params.len();
        for (i, ty) in self.args.iter().enumerate() {
            params.push((
                descriptor(ty)?,
                format!(
                    "parameter {} must be '{ty}' ({}), as the argument {} of the declaration",
                    first + i + 1,
                    meaning(ty),
                    i + 1
                ),
            ));
        }
        assert(
            format!("{fn_ty}::function"),
            "the name is declared, but not as a function".to_owned(),
        );
        assert(
            format!("{fn_ty}::params == {}", params.len()),
            format!(
                "the definition must take {} parameter(s): {}",
                params.len(),
                self.c_declaration()
            ),
        );
        assert(
            format!("{ns}::k_fits<{}, {fn_ty}::ret>::value", ret.0),
            ret.1,
        );
        for (i, (desc, message)) in params.into_iter().enumerate() {
            assert(
                format!("{ns}::k_fits<{desc}, {fn_ty}::param<{i}>::type>::value"),
                message,
            );
        }
        Some(out)
    }
}

/// The C++ text that checks definitions against declarations, compiled after a foreign
/// source (by clang for [`crate::Builder::foreign_cuda`], by the host compiler for the
/// simulator; the run-time Linker compiles the same file with NVRTC). It needs no header: each
/// type is reduced to what the ABI sees (bool, a signed or unsigned integer or a float of N
/// bytes, a pointer to such a type, a class), so `int`, `int32_t` and `std::int32_t`, or `long`
/// and `long long` (LP64), all fit a declared `i32` or `i64`.
pub const CHECK_HEADER: &str = include_str!("../include/gpukernel_ffi_check.h");

/// The name the check's own lines carry in compiler messages.
pub const CHECK_HEADER_NAME: &str = "gpukernel_ffi_check.h";

/// The checks of `decls` that can be made (see [`ForeignDeclaration::c_check`]), after the
/// header; empty when there are none.
pub(crate) fn checks_text(decls: &[&ForeignDeclaration]) -> String {
    let checks: Vec<String> = decls.iter().filter_map(|d| d.c_check()).collect();
    if checks.is_empty() {
        return String::new();
    }
    let mut out = format!("\n#line 1 \"{CHECK_HEADER_NAME}\"\n{CHECK_HEADER}");
    for check in checks {
        out.push_str(&check);
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The description of a declared C type for the check (the header's `k_*` types), from the
/// record's spelling (this version's builtin types, or an earlier one's `int32_t` & co.).
pub(crate) fn descriptor(ty: &str) -> Option<String> {
    let ty = ty.trim();
    if let Some(pointee) = ty.strip_suffix('*') {
        return Some(format!(
            "::__gpukernel_ffi::k_ptr<{} >",
            descriptor(pointee)?
        ));
    }
    let ty = ty.strip_prefix("const ").unwrap_or(ty).trim();
    let scalar = |kind: u8, size: u8| Some(format!("::__gpukernel_ffi::k_scalar<{kind}, {size}>"));
    match ty {
        "void" => Some("::__gpukernel_ffi::k_none".to_owned()),
        "bool" => scalar(1, 1),
        "signed char" | "int8_t" => scalar(2, 1),
        "short" | "int16_t" => scalar(2, 2),
        "int" | "int32_t" => scalar(2, 4),
        "long long" | "int64_t" | "ptrdiff_t" => scalar(2, 8),
        "unsigned char" | "uint8_t" => scalar(3, 1),
        "unsigned short" | "uint16_t" => scalar(3, 2),
        "unsigned int" | "uint32_t" => scalar(3, 4),
        "unsigned long long" | "uint64_t" | "size_t" => scalar(3, 8),
        "float" => scalar(4, 4),
        "double" => scalar(4, 8),
        "struct f16" | "struct bf16" => Some("::__gpukernel_ffi::k_half".to_owned()),
        _ if ty.starts_with("struct ") => Some("::__gpukernel_ffi::k_any_class".to_owned()),
        _ => None,
    }
}

/// What a declared C type is, in words, for messages.
pub(crate) fn meaning(ty: &str) -> String {
    let ty = ty.trim();
    if let Some(pointee) = ty.strip_suffix('*') {
        let pointee = pointee.trim();
        return if pointee == "void" || pointee == "const void" {
            "a pointer to anything".to_owned()
        } else {
            format!("a pointer to {}", meaning(pointee))
        };
    }
    let ty = ty.strip_prefix("const ").unwrap_or(ty).trim();
    let int = |signed: bool, bits: u8| {
        format!(
            "{} {bits}-bit integer",
            if signed { "a signed" } else { "an unsigned" }
        )
    };
    match ty {
        "void" => "nothing".to_owned(),
        "bool" => "a C++ bool".to_owned(),
        "signed char" | "int8_t" => int(true, 8),
        "short" | "int16_t" => int(true, 16),
        "int" | "int32_t" => int(true, 32),
        "long long" | "int64_t" | "ptrdiff_t" => int(true, 64),
        "unsigned char" | "uint8_t" => int(false, 8),
        "unsigned short" | "uint16_t" => int(false, 16),
        "unsigned int" | "uint32_t" => int(false, 32),
        "unsigned long long" | "uint64_t" | "size_t" => int(false, 64),
        "float" => "a 32-bit float".to_owned(),
        "double" => "a 64-bit float".to_owned(),
        "struct f16" => {
            "a 16-bit float, by value its bits: 'unsigned short' ('__half_as_ushort'); \
                          pointed to, '__half'"
                .to_owned()
        }
        "struct bf16" => {
            "a bfloat16, by value its bits: 'unsigned short' ('__bfloat16_as_ushort'); \
                           pointed to, '__nv_bfloat16'"
                .to_owned()
        }
        _ => "a struct passed by value".to_owned(),
    }
}

/// A failed check in a compiler log (clang's or gcc's, `file:line:col: error: ...
/// [gpukernel] <symbol>: <what>`): the declaration and what failed, in order of the log.
pub(crate) fn failed_check<'a>(
    log: &str,
    decls: &[&'a ForeignDeclaration],
) -> Option<(&'a ForeignDeclaration, Vec<String>)> {
    for &decl in decls {
        let marker = format!("[gpukernel] {}: ", decl.symbol);
        let mut failed: Vec<String> = Vec::new();
        for line in log.lines().filter(|l| l.contains("error")) {
            if let Some(at) = line.find(&marker) {
                let message = line[at + marker.len()..].trim_end_matches('"').trim();
                if !failed.iter().any(|f| f == message) {
                    failed.push(message.to_owned());
                }
            }
        }
        if !failed.is_empty() {
            return Some((decl, failed));
        }
    }
    None
}

/// The symbols whose check failed for another reason than a mismatch: an error on the check's
/// line (`file:line:`) that names the symbol (the source does not declare it).
pub(crate) fn undeclared_in_log(log: &str, decls: &[&ForeignDeclaration]) -> Vec<String> {
    let mut out = Vec::new();
    for decl in decls {
        let at = format!("{}:", decl.declared_at);
        let named = |line: &str| {
            line.match_indices(decl.symbol.as_str()).any(|(i, _)| {
                let before = line[..i].chars().next_back();
                let after = line[i + decl.symbol.len()..].chars().next();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        };
        if log.lines().any(|l| {
            l.starts_with(&at) && l.contains("error") && !l.contains("[gpukernel]") && named(l)
        }) {
            out.push(decl.symbol.clone());
        }
    }
    out
}

/// Checks the definitions in the source `src` against `declarations`: `syntax_log` compiles
/// (syntax only) the text it is given, a file that includes the source and then the checks,
/// and returns the compiler's log if it failed. A declaration that the source does not
/// declare (another source defines it) is left out and the rest compiled again. `Ok(None)`:
/// every definition fits; `Ok(Some(log))`: the compile failed for another reason (the
/// source's own error: the caller reports it as it reports a compile of the source).
pub(crate) fn check_definitions(
    src: &Path,
    declarations: &[ForeignDeclaration],
    mut syntax_log: impl FnMut(&str) -> Result<Option<String>, Error>,
) -> Result<Option<String>, Error> {
    let mut decls: Vec<&ForeignDeclaration> = declarations
        .iter()
        .filter(|d| d.c_check().is_some())
        .collect();
    let included = src
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    while !decls.is_empty() {
        let text = format!("#include \"{included}\"\n{}", checks_text(&decls));
        let Some(log) = syntax_log(&text)? else {
            return Ok(None);
        };
        // A symbol the source does not declare fails its assertions too: not a mismatch.
        let undeclared = undeclared_in_log(&log, &decls);
        let declared: Vec<&ForeignDeclaration> = decls
            .iter()
            .copied()
            .filter(|d| !undeclared.contains(&d.symbol))
            .collect();
        if let Some((decl, failed)) = failed_check(&log, &declared) {
            let text = std::fs::read_to_string(src).unwrap_or_default();
            let line = definition_line(&text, &decl.symbol);
            let defined_at = match line {
                Some(l) => format!("{}:{l}", src.display()),
                None => src.display().to_string(),
            };
            let mut detail = failed.join("; ");
            if let Some(def) = line.and_then(|l| text.lines().nth(l - 1)) {
                detail.push_str(&format!("\n  the definition: {}", def.trim()));
            }
            return Err(Error::ForeignSignatureMismatch {
                symbol: decl.symbol.clone(),
                declared_at: decl.declared_at.clone(),
                expected: decl.c_declaration(),
                defined_at,
                detail,
            });
        }
        if undeclared.is_empty() {
            return Ok(Some(log));
        }
        decls.retain(|d| !undeclared.contains(&d.symbol));
    }
    Ok(None)
}

/// The first line of `text` (1-based) where `name(` starts something that is followed by a
/// `{` before the next `;` (the definition, roughly), else the first that is followed by a
/// `;` and is not a call (a declaration); for messages only.
pub(crate) fn definition_line(text: &str, name: &str) -> Option<usize> {
    let mut declaration = None;
    let mut offset = 0;
    while let Some(found) = text[offset..].find(name) {
        let at = offset + found;
        offset = at + name.len();
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        if text[line_start..at].contains("//") {
            continue;
        }
        let after = &text[at + name.len()..];
        if !after.trim_start().starts_with('(') {
            continue;
        }
        let line = text[..at].matches('\n').count() + 1;
        let brace = after.find('{');
        let semi = after.find(';');
        if matches!((brace, semi), (Some(b), Some(s)) if b < s)
            || (brace.is_some() && semi.is_none())
        {
            return Some(line);
        }
        let prefix = text[line_start..at].trim_end();
        let call = prefix.is_empty()
            || prefix.ends_with(['=', '(', ',', '+', '-', '!', '&', '|', '?', ':'])
            || prefix.ends_with("return");
        if !call && declaration.is_none() {
            declaration = Some(line);
        }
    }
    declaration
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

/// Why `symbol` cannot name a function of the user's foreign code, if it cannot (the same
/// rule as `declare_device!`'s, which refuses these names at compile time): a PTX system
/// call, a C library or compiler-builtins function, a libdevice function, a CUDA runtime
/// function or a symbol gpukernel generates.
pub fn reserved_symbol(symbol: &str) -> Option<&'static str> {
    const SYSTEM_CALLS: [&str; 6] = [
        "vprintf",
        "malloc",
        "free",
        "__assertfail",
        "__nvvm_reflect",
        "__assert_fail",
    ];
    const C_LIBRARY: [&str; 14] = [
        "memset", "memcpy", "memmove", "memcmp", "bcmp", "strlen", "strcmp", "strcpy", "printf",
        "calloc", "realloc", "abort", "exit", "assert",
    ];
    if SYSTEM_CALLS.contains(&symbol) {
        Some("a PTX system call that the CUDA driver provides")
    } else if C_LIBRARY.contains(&symbol) {
        Some("a C library function (the Rust compiler's builtins define the memory functions)")
    } else if symbol.starts_with("__nv_") {
        Some("a libdevice function")
    } else if ["__nvvm_", "__cuda", "__nvptx"]
        .iter()
        .any(|p| symbol.starts_with(p))
    {
        Some("a name reserved by the CUDA compilers")
    } else if symbol.starts_with("cuda")
        && symbol[4..].starts_with(|c: char| c.is_ascii_uppercase())
    {
        Some("a function of the CUDA runtime or device runtime")
    } else if symbol.starts_with("__gpukernel_") || symbol.starts_with("gpukernel_sim_") {
        Some("a symbol that gpukernel itself generates")
    } else if symbol.strip_prefix("__").is_some_and(|rest| {
        rest.strip_suffix(|c: char| c.is_ascii_digit())
            .is_some_and(|stem| !stem.is_empty() && stem.chars().all(|c| c.is_ascii_lowercase()))
    }) {
        Some("a helper of the compiler's builtins (libgcc / compiler-rt naming)")
    } else {
        None
    }
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
        assert!(decls[0].c_check().is_some());
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
        assert!(reserved_symbol("free").is_some() && reserved_symbol("__nv_expf").is_some());
        assert!(reserved_symbol("__udivti3").is_some() && reserved_symbol("__my_fn2").is_none());
        assert!(reserved_symbol("cuda_scale").is_none() && reserved_symbol("cudaFree").is_some());
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

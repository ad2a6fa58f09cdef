//! Foreign declarations checked against their definitions.
//!
//! A kernels crate's PTX carries one record per `declare_device!` entry (the globals
//! `__gpukernel_foreign_*`, see [`ForeignDecl`]). A link checks the declarations that the
//! selected kernels use (those whose symbol the selected PTX still declares `.extern .func`):
//!
//! * `.cu` sources: a C++ check is compiled *after* the source (`ffi_check.h`, then one
//!   `static_assert` per parameter under a `#line` naming the Rust declaration): it takes the
//!   definition's type with `decltype` and compares what each parameter and the return value
//!   are (bool, signed or unsigned integer, float, of how many bytes; pointers by their
//!   pointee; structs as classes), never their spelling. So `int`, `int32_t` and
//!   `std::int32_t`, `long` and `long long` (LP64), `float*` and `const float*` all fit their
//!   declaration, with or without `<cstdint>`, while `unsigned` for `i32`, `uint32_t*` for the
//!   return slot of `-> u64` or `float` for `f64` fail, as
//!   [`Error::ForeignSignatureMismatch`] naming the Rust declaration, the definition's line
//!   and the parameter. A source that does not declare a used symbol is compiled again
//!   without its check (another input defines it). The same check text is compiled by the
//!   build-time paths (`nvptx-builder`: clang for `foreign_cuda`, the host compiler for the
//!   simulator), and on the simulator the Linker compiles each `.cu` input with NVRTC for it.
//! * PTX (given, or compiled from `.cu`): the definition's `.func` parameter list (return
//!   value, count, widths) must equal the declaration's, as the kernels' PTX declares it.
//! * cubins, fatbins, objects, archives, LTO-IR: the types are gone. Such an input that may
//!   define a declared function must be added as unchecked (`unsafe`), else
//!   [`Error::UncheckedForeignDefinitions`].

use crate::error::{Error, Result, SignatureMismatch};
use crate::format::ptx::{FuncParams, ParamSlot, Ptx};
use crate::format::{self, InputKind};
use crate::link::input::Input;
use crate::link::nvrtc;

/// The ABI of a foreign function.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// # let record = DECL_RECORD;
/// let decl = ForeignDecl::parse(record).unwrap();
/// match decl.abi {
///     ForeignAbi::Numba => println!("int {}(float* ret, ...)", decl.symbol),
///     ForeignAbi::C => println!("float {}(...)", decl.symbol),
///     _ => {}
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ForeignAbi {
    /// Numba's: `extern "C" __device__ int f(T* ret, args...)`, 0 meaning success.
    Numba,
    /// A plain C function: `extern "C" __device__ T f(args...)`.
    C,
}

/// One `declare_device!` declaration, as recorded in a kernels crate's PTX.
///
/// ```
/// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
/// # fn main() -> gpukernel_runtime::Result<()> {
/// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
/// # use gpukernel_runtime::link::*;
/// # let record = DECL_RECORD;
/// // `record` as `declare_device!` exports it beside the kernels.
/// let decl = ForeignDecl::parse(record).unwrap();
/// assert_eq!((decl.symbol.as_str(), decl.declared_at.as_str()), ("mul_f32_f32", "src/ffi.rs:12"));
/// assert_eq!(decl.args, ["float", "float"]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ForeignDecl {
    /// The foreign symbol.
    pub symbol: String,
    /// Its ABI.
    pub abi: ForeignAbi,
    /// The Rust declaration: `file:line`.
    pub declared_at: String,
    /// The C return type (`void` for none); `struct Name` where the C name is not known.
    pub ret: String,
    /// The C argument types (after the return slot, for Numba's ABI).
    pub args: Vec<String>,
}

impl ForeignDecl {
    /// Parses one record (see `gpukernel-macros`' `foreign/manifest.rs` for the format).
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let record = DECL_RECORD;
    /// assert_eq!(ForeignDecl::parse(record).unwrap().ret, "float");
    /// assert!(ForeignDecl::parse("not a record").is_none());
    /// # Ok(()) }
    /// ```
    pub fn parse(record: &str) -> Option<ForeignDecl> {
        let mut lines = record.lines();
        if lines.next()? != "gpukernel-foreign-v1" {
            return None;
        }
        let (mut symbol, mut abi, mut at, mut ret) = (None, None, None, None);
        let mut args = Vec::new();
        for line in lines {
            let (key, value) = line.split_once('=')?;
            match key {
                "symbol" => symbol = Some(value.to_owned()),
                "abi" => {
                    abi = Some(match value {
                        "numba" => ForeignAbi::Numba,
                        "c" => ForeignAbi::C,
                        _ => return None,
                    })
                }
                "at" => at = Some(value.to_owned()),
                "ret" => ret = Some(value.to_owned()),
                "arg" => args.push(value.to_owned()),
                _ => {}
            }
        }
        Some(ForeignDecl {
            symbol: symbol?,
            abi: abi?,
            declared_at: at?,
            ret: ret?,
            args,
        })
    }

    /// The declarations recorded in a PTX text.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// // What the kernels of a PTX declare with `declare_device!`, to list or check them.
    /// for decl in ForeignDecl::from_ptx(&kernels_ptx()) {
    ///     println!("{} at {}", decl.c_declaration(), decl.declared_at);
    /// }
    /// assert!(ForeignDecl::from_ptx(&kernels_ptx()).is_empty()); // these kernels call none
    /// # Ok(()) }
    /// ```
    pub fn from_ptx(ptx: &str) -> Vec<ForeignDecl> {
        Ptx::parse(ptx)
            .foreign_records()
            .iter()
            .filter_map(|r| ForeignDecl::parse(r))
            .collect()
    }

    /// The C declaration this declaration stands for, e.g.
    /// `extern "C" __device__ int mul_f32_f32(float*, float, float)`.
    ///
    /// ```
    /// # include!(concat!(env!("CARGO_MANIFEST_DIR"), "/doc/setup.rs"));
    /// # fn main() -> gpukernel_runtime::Result<()> {
    /// # let (ctx, module) = doc_setup(); let stream = ctx.default_stream();
    /// # use gpukernel_runtime::link::*;
    /// # let record = DECL_RECORD;
    /// let decl = ForeignDecl::parse(record).unwrap();
    /// let c = decl.c_declaration();
    /// assert_eq!(c, "extern \"C\" __device__ int mul_f32_f32(float*, float, float)");
    /// # Ok(()) }
    /// ```
    pub fn c_declaration(&self) -> String {
        let (ret, mut params) = match self.abi {
            ForeignAbi::Numba => ("int".to_owned(), vec![format!("{}*", self.ret)]),
            ForeignAbi::C => (self.ret.clone(), Vec::new()),
        };
        params.extend(self.args.iter().cloned());
        format!(
            "extern \"C\" __device__ {ret} {}({})",
            self.symbol,
            params.join(", ")
        )
    }

    /// The C++ check of a definition of this declaration (see the module's documentation):
    /// one `static_assert` per property, under a `#line` at the Rust declaration; `None` when
    /// a type has no description (a record from another version of the macro).
    pub(crate) fn c_check(&self) -> Option<String> {
        let ns = "::__gpukernel_ffi";
        let sym = &self.symbol;
        let fn_ty = format!("{ns}::k_fn<decltype({sym})>");
        let (file, line) = self.file_and_line();
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
        // (declared C type, what it is) for the return value and each parameter.
        let mut params: Vec<(String, String)> = Vec::new();
        let ret = match self.abi {
            ForeignAbi::Numba => {
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
                descriptor("int").map(|d| {
                    (
                        d,
                        "the definition must return 'int' (the status, 0 for success)".to_owned(),
                    )
                })?
            }
            ForeignAbi::C => (
                descriptor(&self.ret)?,
                format!(
                    "the definition must return '{}' ({})",
                    self.ret,
                    meaning(&self.ret)
                ),
            ),
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

    /// The Rust declaration's file and line, for a `#line` directive.
    fn file_and_line(&self) -> (&str, u32) {
        match self.declared_at.rsplit_once(':') {
            Some((file, line)) => (file, line.parse().unwrap_or(1)),
            None => (&self.declared_at, 1),
        }
    }
}

/// A declaration the selected kernels use, with the parameter list the kernels' PTX gives it.
#[derive(Debug, Clone)]
pub(crate) struct UsedDecl {
    pub(crate) decl: ForeignDecl,
    /// The `.extern .func` declaration's parameters in the kernels' PTX.
    pub(crate) params: Option<FuncParams>,
}

/// The declarations the PTX inputs use: recorded in a PTX input and still declared
/// `.extern .func` there (after kernel selection).
pub(crate) fn used_declarations(inputs: &[Input]) -> Vec<UsedDecl> {
    let mut used: Vec<UsedDecl> = Vec::new();
    for input in inputs.iter().filter(|i| i.kind == InputKind::Ptx) {
        let text = String::from_utf8_lossy(&input.bytes);
        let ptx = Ptx::parse(&text);
        let externs = ptx.extern_functions();
        for record in ptx.foreign_records() {
            let Some(decl) = ForeignDecl::parse(&record) else {
                continue;
            };
            if externs.contains(&decl.symbol) && !used.iter().any(|u| u.decl == decl) {
                let params = ptx.function_params(&decl.symbol);
                used.push(UsedDecl { decl, params });
            }
        }
    }
    used
}

/// The C++ text that checks definitions of declared functions (see the module's
/// documentation); `nvptx-builder` compiles the same file on the build-time paths.
pub(crate) const CHECK_HEADER: &str = include_str!("ffi_check.h");

/// The name the check's own lines carry in compiler messages.
const CHECK_HEADER_NAME: &str = "gpukernel_ffi_check.h";

/// The description of a declared C type for the check (`ffi_check.h`'s `k_*` types), from the
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

/// The source handed to the compiler: the source itself (its own lines under its own name),
/// then the check of each of `decls` (see the module's documentation).
pub(crate) fn with_checks(source: &str, decls: &[&ForeignDecl]) -> String {
    let checks: Vec<String> = decls.iter().filter_map(|d| d.c_check()).collect();
    if checks.is_empty() {
        return source.to_owned();
    }
    let mut out = format!("{source}\n");
    out.push_str(&format!("#line 1 \"{CHECK_HEADER_NAME}\"\n{CHECK_HEADER}"));
    for check in checks {
        out.push_str(&check);
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The declarations checked with a `.cu` source: those whose types all have a description.
pub(crate) fn checkable(used: &[UsedDecl]) -> Vec<&ForeignDecl> {
    used.iter()
        .map(|u| &u.decl)
        .filter(|d| d.c_check().is_some())
        .collect()
}

/// What a failed compilation of a source with checks says about them.
pub(crate) enum Conflict {
    /// The source does not declare these symbols (another input defines them, or it
    /// declares an overload set): compile again without their checks, and let the PTX
    /// check judge.
    Retry(Vec<String>),
    /// A mismatch.
    Mismatch(Error),
}

/// Reads a compiler log (NVRTC's, clang's or gcc's) for the checks' verdict: a failed
/// `[gpukernel]` assertion is a mismatch; another error on a check's line that names its
/// symbol means that the source does not declare it.
pub(crate) fn conflict_in_log(
    log: &str,
    decls: &[&ForeignDecl],
    source: &str,
    source_name: &str,
) -> Option<Conflict> {
    let mut retry: Vec<String> = Vec::new();
    for decl in decls {
        let marker = format!("[gpukernel] {}: ", decl.symbol);
        let mut failed: Vec<String> = Vec::new();
        for line in log.lines().filter(|l| l.contains("error")) {
            if let Some(at) = line.find(&marker) {
                let message = line[at + marker.len()..].trim_end_matches('"').trim();
                if !failed.iter().any(|f| f == message) {
                    failed.push(message.to_owned());
                }
            } else if location(line).as_deref() == Some(decl.declared_at.as_str())
                && mentions_name(line, &decl.symbol)
                && !retry.contains(&decl.symbol)
            {
                retry.push(decl.symbol.clone());
            }
        }
        // A symbol the source does not declare fails its assertions too: not a mismatch.
        if failed.is_empty() || retry.contains(&decl.symbol) {
            continue;
        }
        let line = definition_line(source, &decl.symbol);
        let defined_at = match line {
            Some(l) => format!("{source_name}:{l}"),
            None => source_name.to_owned(),
        };
        let mut detail = failed.join("; ");
        if let Some(text) = line.and_then(|l| source.lines().nth(l - 1)) {
            detail.push_str(&format!("\n  the definition: {}", text.trim()));
        }
        return Some(Conflict::Mismatch(Error::ForeignSignatureMismatch(
            Box::new(SignatureMismatch {
                symbol: decl.symbol.clone(),
                declared_at: decl.declared_at.clone(),
                expected: decl.c_declaration(),
                defined_at,
                detail,
            }),
        )));
    }
    (!retry.is_empty()).then_some(Conflict::Retry(retry))
}

/// Compiles `source` (named `name`) with the checks of the used declarations, through
/// `compile` (NVRTC, on the GPU path and the simulator's); a failed check becomes
/// [`Error::ForeignSignatureMismatch`], any other error is the compiler's. Also returns the
/// symbols whose check was left out because the source does not name them at global scope:
/// the caller must make sure that the output does not define them
/// ([`refuse_unchecked_definitions`]).
pub(crate) fn compile_checked<T>(
    source: &str,
    name: &str,
    used: &[UsedDecl],
    mut compile: impl FnMut(&str) -> Result<T>,
) -> Result<(T, Vec<String>)> {
    let mut checked = checkable(used);
    let mut unchecked: Vec<String> = Vec::new();
    loop {
        let text = with_checks(source, &checked);
        match compile(&text) {
            Err(Error::NvrtcCompile { file, options, log }) => {
                match conflict_in_log(&log, &checked, source, name) {
                    Some(Conflict::Mismatch(e)) => return Err(e),
                    Some(Conflict::Retry(symbols)) => {
                        checked.retain(|d| !symbols.contains(&d.symbol));
                        unchecked.extend(symbols);
                    }
                    None => return Err(Error::NvrtcCompile { file, options, log }),
                }
            }
            Err(e) => return Err(e),
            Ok(out) => return Ok((out, unchecked)),
        }
    }
}

/// Refuses a definition, in the PTX compiled from the `.cu` source `input_name`, of one of
/// `unchecked`: symbols whose C-level check could not see them at global scope (a definition
/// inside a namespace, or an `extern "C"` function that shares its name with C++ overloads).
/// Retrying without a symbol's check is right only when another input defines it; the PTX
/// check alone compares sizes, not kinds (`int` for `float` would pass).
pub(crate) fn refuse_unchecked_definitions(
    ptx_text: &str,
    input_name: &str,
    source: &str,
    used: &[UsedDecl],
    unchecked: &[String],
) -> Result<()> {
    if unchecked.is_empty() {
        return Ok(());
    }
    let defined = Ptx::parse(ptx_text).defined_functions();
    for u in used {
        let symbol = &u.decl.symbol;
        if !unchecked.contains(symbol) || !defined.contains(symbol) {
            continue;
        }
        let line = definition_line(source, symbol);
        let defined_at = match line {
            Some(l) => format!("{input_name}:{l}"),
            None => input_name.to_owned(),
        };
        let mut detail = format!(
            "the definition could not be checked: '{symbol}' is not visible at global scope \
             after the source (it is defined inside a namespace, or shares its name with C++ \
             overloads); define it at global scope as one `extern \"C\"` function, with no \
             overload of the same name"
        );
        if let Some(text) = line.and_then(|l| source.lines().nth(l - 1)) {
            detail.push_str(&format!("\n  the definition: {}", text.trim()));
        }
        return Err(Error::ForeignSignatureMismatch(Box::new(
            SignatureMismatch {
                symbol: symbol.clone(),
                declared_at: u.decl.declared_at.clone(),
                expected: u.decl.c_declaration(),
                defined_at,
                detail,
            },
        )));
    }
    Ok(())
}

/// The simulator's check of `.cu` inputs: nothing is compiled for the device there (the
/// foreign code it runs was compiled into the program), but each `.cu` input that may define a
/// used declaration is compiled by NVRTC with the checks, and the PTX it produced is checked
/// as on a GPU, so that a link refuses the same definitions on every backend.
pub(crate) fn check_sources_on_simulator(
    inputs: &[Input],
    used: &[UsedDecl],
    headers: &[(String, String)],
    mut options: impl FnMut(&Input) -> Vec<String>,
) -> Result<()> {
    if checkable(used).is_empty() {
        return Ok(());
    }
    for input in inputs.iter().filter(|i| i.kind == InputKind::Cuda) {
        let source = std::str::from_utf8(&input.bytes).unwrap_or_default();
        let options = options(input);
        let ((ptx, _), unchecked) = compile_checked(source, &input.name, used, |text| {
            nvrtc::compile(text, &input.name, headers, &options, false)
        })?;
        let ptx = String::from_utf8_lossy(&ptx);
        refuse_unchecked_definitions(&ptx, &input.name, source, used, &unchecked)?;
        check_ptx_definitions(&ptx, &input.name, used)?;
    }
    Ok(())
}

/// Whether `text` names `name` as a whole identifier.
fn mentions_name(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
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

/// `file(12): error: ...` (NVRTC) or `file:12:5: error: ...` (gcc, clang) → `file:12`.
fn location(line: &str) -> Option<String> {
    if let Some((file, rest)) = line.split_once('(')
        && let Some((number, _)) = rest.split_once(')')
        && number.bytes().all(|c| c.is_ascii_digit())
        && !number.is_empty()
    {
        return Some(format!("{file}:{number}"));
    }
    let mut parts = line.splitn(3, ':');
    let (file, number) = (parts.next()?, parts.next()?);
    (!number.is_empty() && number.bytes().all(|c| c.is_ascii_digit()))
        .then(|| format!("{file}:{number}"))
}

/// Compares every definition of a used declaration in a PTX unit (given or compiled from a
/// `.cu` named `input_name`) with the declaration.
pub(crate) fn check_ptx_definitions(
    ptx_text: &str,
    input_name: &str,
    used: &[UsedDecl],
) -> Result<()> {
    let ptx = Ptx::parse(ptx_text);
    let defined = ptx.defined_functions();
    for u in used {
        if !defined.contains(&u.decl.symbol) {
            continue;
        }
        let (Some(expected), Some(found)) = (&u.params, ptx.function_params(&u.decl.symbol)) else {
            continue;
        };
        if normalize(expected) != normalize(&found) {
            return Err(Error::ForeignSignatureMismatch(Box::new(
                SignatureMismatch {
                    symbol: u.decl.symbol.clone(),
                    declared_at: u.decl.declared_at.clone(),
                    expected: u.decl.c_declaration(),
                    defined_at: input_name.to_owned(),
                    detail: format!(
                        "the definition's PTX parameters are {}, the declaration's are {}",
                        describe(&found),
                        describe(expected)
                    ),
                },
            )));
        }
    }
    Ok(())
}

/// Scalars narrower than 32 bits travel in 32-bit parameters on either side.
fn normalize(params: &FuncParams) -> FuncParams {
    let slot = |s: ParamSlot| match s {
        ParamSlot::Scalar(bits) => ParamSlot::Scalar(bits.max(32)),
        other => other,
    };
    FuncParams {
        ret: params.ret.map(slot),
        params: params.params.iter().copied().map(slot).collect(),
    }
}

fn describe(params: &FuncParams) -> String {
    let slot = |s: &ParamSlot| match s {
        ParamSlot::Scalar(bits) => format!("{bits}-bit"),
        ParamSlot::Bytes(n) => format!("{n}-byte aggregate"),
    };
    let ret = params.ret.as_ref().map_or_else(
        || "no return value".to_owned(),
        |r| format!("returning {}", slot(r)),
    );
    let list: Vec<String> = params.params.iter().map(slot).collect();
    format!("({}) {ret}", list.join(", "))
}

/// Refuses inputs whose definitions cannot be checked when they may define a used
/// declaration and were not added as unchecked: a cubin that defines one; a fatbin, object,
/// archive or LTO-IR input when some used declaration is defined by no PTX input and
/// mentioned by no `.cu` source.
pub(crate) fn check_unchecked_inputs(inputs: &[Input], used: &[UsedDecl]) -> Result<()> {
    if used.is_empty() {
        return Ok(());
    }
    let symbols: Vec<&str> = used.iter().map(|u| u.decl.symbol.as_str()).collect();
    let mut checked_defs: Vec<String> = Vec::new();
    let mut sources: Vec<String> = Vec::new();
    for input in inputs {
        match input.kind {
            InputKind::Ptx => checked_defs
                .extend(format::defined_symbols(input.kind, &input.bytes).unwrap_or_default()),
            InputKind::Cuda => sources.push(String::from_utf8_lossy(&input.bytes).into_owned()),
            _ => {}
        }
    }
    let elsewhere: Vec<&str> = symbols
        .iter()
        .copied()
        .filter(|s| !checked_defs.iter().any(|d| d == s) && !sources.iter().any(|t| mentions(t, s)))
        .collect();
    let mut bad_inputs = Vec::new();
    let mut bad_symbols: Vec<String> = Vec::new();
    for input in inputs.iter().filter(|i| !i.unchecked) {
        let may_define: Vec<&str> = match input.kind {
            InputKind::Cuda | InputKind::Ptx => continue,
            InputKind::Cubin => {
                let defs = format::defined_symbols(input.kind, &input.bytes).unwrap_or_default();
                symbols
                    .iter()
                    .copied()
                    .filter(|s| defs.iter().any(|d| d == s))
                    .collect()
            }
            _ => elsewhere.clone(),
        };
        if !may_define.is_empty() {
            bad_inputs.push(input.name.clone());
            for s in may_define {
                if !bad_symbols.iter().any(|b| b == s) {
                    bad_symbols.push(s.to_owned());
                }
            }
        }
    }
    if bad_inputs.is_empty() {
        Ok(())
    } else {
        Err(Error::UncheckedForeignDefinitions {
            inputs: bad_inputs,
            symbols: bad_symbols,
        })
    }
}

/// Refuses used declarations whose symbol is not the user's foreign code: a PTX system call
/// or device-runtime function (the link exempts those from needing a definition, so the
/// driver's `free` or `vprintf` would be called with the declaration's arguments), or a
/// libdevice, C library or compiler-builtins name ([`reserved_symbol`]). `declare_device!`
/// and the build refuse these names too; this holds for records made by any means.
pub(crate) fn check_declared_symbols_are_foreign(used: &[UsedDecl]) -> Result<()> {
    for u in used {
        let symbol = u.decl.symbol.as_str();
        let provider = if format::ptx::is_system_call(symbol) {
            Some("a PTX system call or device-runtime function that the CUDA driver provides")
        } else {
            reserved_symbol(symbol)
        };
        if let Some(provider) = provider {
            return Err(Error::ForeignSymbolNotForeign {
                symbol: symbol.to_owned(),
                declared_at: u.decl.declared_at.clone(),
                provider,
            });
        }
    }
    Ok(())
}

/// Why `symbol` names no function of the user's foreign code (the rule of `declare_device!`
/// and the build): a C library or compiler-builtins function, a libdevice function, a name
/// of the CUDA compilers or runtime, or a symbol gpukernel generates.
pub(crate) fn reserved_symbol(symbol: &str) -> Option<&'static str> {
    const C_LIBRARY: [&str; 16] = [
        "memset",
        "memcpy",
        "memmove",
        "memcmp",
        "bcmp",
        "strlen",
        "strcmp",
        "strcpy",
        "printf",
        "calloc",
        "realloc",
        "abort",
        "exit",
        "assert",
        "__assert_fail",
        "__nvvm_reflect",
    ];
    if C_LIBRARY.contains(&symbol) {
        Some("a C library function or compiler intrinsic")
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

/// Whether `text` mentions `name(` as a whole identifier.
pub(crate) fn mentions(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].trim_start();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && after.starts_with('(')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = "gpukernel-foreign-v1\nsymbol=mul_f32_f32\nabi=numba\nat=src/ffi.rs:32\nret=float\narg=float\narg=float\n";

    #[test]
    fn records_parse_into_c_declarations() {
        let d = ForeignDecl::parse(RECORD).unwrap();
        assert_eq!(d.declared_at, "src/ffi.rs:32");
        assert_eq!(
            d.c_declaration(),
            "extern \"C\" __device__ int mul_f32_f32(float*, float, float)"
        );
        let c = ForeignDecl::parse(&RECORD.replace("abi=numba", "abi=c")).unwrap();
        assert_eq!(
            c.c_declaration(),
            "extern \"C\" __device__ float mul_f32_f32(float, float)"
        );
        assert!(ForeignDecl::parse("other\nsymbol=x").is_none());
        assert!(ForeignDecl::parse(&RECORD.replace("at=src/ffi.rs:32\n", "")).is_none());
    }

    #[test]
    fn declared_system_calls_and_reserved_names_are_refused() {
        let used = |symbol: &str| UsedDecl {
            decl: ForeignDecl::parse(&RECORD.replace("mul_f32_f32", symbol)).unwrap(),
            params: None,
        };
        assert!(check_declared_symbols_are_foreign(&[used("mul_f32_f32")]).is_ok());
        for (symbol, provider) in [
            ("free", "PTX system call"),
            ("vprintf", "PTX system call"),
            ("cudaGraphSetConditional", "PTX system call"),
            ("memset", "C library"),
            ("__nv_expf", "libdevice"),
            ("__udivti3", "compiler's builtins"),
        ] {
            let e = check_declared_symbols_are_foreign(&[used("mul_f32_f32"), used(symbol)])
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("`{symbol}` declared at src/ffi.rs:32")),
                "{e}"
            );
            assert!(e.contains(provider), "{e}");
        }
    }

    #[test]
    fn checks_come_after_the_source_under_line_directives() {
        let d = ForeignDecl::parse(RECORD).unwrap();
        let src = with_checks("int x;\n", &[&d]);
        assert!(
            src.starts_with("int x;\n\n#line 1 \"gpukernel_ffi_check.h\"\n"),
            "{src}"
        );
        assert!(src.contains("namespace __gpukernel_ffi"), "{src}");
        assert!(src.contains("#line 32 \"src/ffi.rs\"\nstatic_assert(::__gpukernel_ffi::k_fn<decltype(mul_f32_f32)>::function"), "{src}");
        assert!(
            src.contains("k_fn<decltype(mul_f32_f32)>::params == 3"),
            "{src}"
        );
        assert!(src.contains("k_fits<::__gpukernel_ffi::k_slot<::__gpukernel_ffi::k_ptr<::__gpukernel_ffi::k_scalar<4, 4> > >, ::__gpukernel_ffi::k_fn<decltype(mul_f32_f32)>::param<0>::type>::value, \"[gpukernel] mul_f32_f32: parameter 1, the return slot, must be 'float*'"), "{src}");
        assert_eq!(with_checks("int x;\n", &[]), "int x;\n");
    }

    #[test]
    fn types_are_described_by_what_they_are() {
        for (old, new) in [
            ("int32_t", "int"),
            ("uint64_t", "unsigned long long"),
            ("size_t", "unsigned long long"),
            ("int8_t", "signed char"),
            ("const uint8_t*", "const unsigned char*"),
        ] {
            assert_eq!(descriptor(old), descriptor(new), "{old}");
            assert_eq!(meaning(old), meaning(new), "{old}");
        }
        assert_ne!(descriptor("int"), descriptor("unsigned int"));
        assert_ne!(descriptor("float*"), descriptor("int*"));
        assert_eq!(descriptor("const float*"), descriptor("float*"));
        assert_eq!(
            descriptor("struct Pair"),
            Some("::__gpukernel_ffi::k_any_class".to_owned())
        );
        assert_eq!(descriptor("long double"), None);
        assert_eq!(
            meaning("unsigned int*"),
            "a pointer to an unsigned 32-bit integer"
        );
    }

    #[test]
    fn compiler_messages_name_the_definition() {
        let d = ForeignDecl::parse(RECORD).unwrap();
        let source = "// f\nextern \"C\" __device__ int mul_f32_f32(double* r, float a, float b) { return 0; }\n";
        for log in [
            "src/ffi.rs(32): error: static assertion failed with \"[gpukernel] mul_f32_f32: parameter 1, the return slot, must be 'float*' (a pointer to a 32-bit float)\"\n",
            "src/ffi.rs:32:1: error: static assertion failed due to requirement 'x': [gpukernel] mul_f32_f32: parameter 1, the return slot, must be 'float*' (a pointer to a 32-bit float)\n",
        ] {
            let Some(Conflict::Mismatch(Error::ForeignSignatureMismatch(m))) =
                conflict_in_log(log, &[&d], source, "cuda/f.cu")
            else {
                panic!("no mismatch found in {log}");
            };
            assert_eq!(m.defined_at, "cuda/f.cu:2");
            assert_eq!(m.declared_at, "src/ffi.rs:32");
            assert!(
                m.detail
                    .starts_with("parameter 1, the return slot, must be 'float*'"),
                "{}",
                m.detail
            );
            assert!(m.detail.contains("the definition: extern"), "{}", m.detail);
        }
        assert_eq!(location("f.cu:3:5: error: x"), Some("f.cu:3".into()));
        // The source does not declare the symbol: compiled again without its check.
        let undeclared = "src/ffi.rs(32): error: identifier \"mul_f32_f32\" is undefined\n";
        assert!(matches!(
            conflict_in_log(undeclared, &[&d], "", "f.cu"),
            Some(Conflict::Retry(s)) if s == ["mul_f32_f32"]
        ));
        // Errors of the source itself are the compiler's.
        assert!(conflict_in_log("f.cu(1): error: other\n", &[&d], "", "f.cu").is_none());
        let unrelated = "f.cu(4): error: identifier \"y\" is undefined\n  float r = mul_f32_f32(&r, y, 1.0f);\n";
        assert!(conflict_in_log(unrelated, &[&d], "", "f.cu").is_none());
    }

    #[test]
    fn definition_lines_prefer_bodies_then_declarations() {
        let text =
            "int f(int);\n// f(x) {\nint g() { return f(1); }\nint f(int x) {\n return x; }\n";
        assert_eq!(definition_line(text, "f"), Some(4));
        assert_eq!(
            definition_line("int f(int);\nint g() { return f(1); }\n", "f"),
            Some(1)
        );
        assert_eq!(definition_line("int g() { return f(1); }\n", "f"), None);
    }
}

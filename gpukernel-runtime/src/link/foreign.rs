//! Foreign declarations checked against their definitions.
//!
//! A kernels crate's PTX carries one record per `declare_device!` entry (the globals
//! `__gpukernel_foreign_*`, see [`ForeignDecl`]). A link checks the declarations that the
//! selected kernels use (those whose symbol the selected PTX still declares `.extern .func`):
//!
//! * `.cu` sources: each declaration's C prototype is compiled together with the source (put
//!   first, under a `#line` naming the Rust declaration), so NVRTC itself rejects a
//!   conflicting definition; its message becomes [`Error::ForeignSignatureMismatch`]. Where
//!   the C spellings may differ for one ABI type (`unsigned long long` for `uint64_t`,
//!   `float*` for `const float*`), a conflict is compiled again without that prototype and
//!   judged by the PTX check below.
//! * PTX (given, or compiled from `.cu`): the definition's `.func` parameter list (return
//!   value, count, widths) must equal the declaration's, as the kernels' PTX declares it.
//! * cubins, fatbins, objects, archives, LTO-IR: the types are gone. Such an input that may
//!   define a declared function must be added as unchecked (`unsafe`), else
//!   [`Error::UncheckedForeignDefinitions`].

use crate::error::{Error, Result, SignatureMismatch};
use crate::format::ptx::{FuncParams, ParamSlot, Ptx};
use crate::format::{self, InputKind};
use crate::link::input::Input;

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

    /// Whether every type has a known C spelling (no `struct Name`), so that the C
    /// prototype can be compiled with a source.
    fn has_prototype(&self) -> bool {
        !std::iter::once(&self.ret)
            .chain(&self.args)
            .any(|t| t.contains("struct "))
    }

    /// Whether a C definition may spell one of the types differently for the same ABI.
    fn spelling_may_differ(&self) -> bool {
        std::iter::once(&self.ret).chain(&self.args).any(|t| {
            t.contains('*')
                || matches!(
                    t.as_str(),
                    "int64_t" | "uint64_t" | "size_t" | "ptrdiff_t" | "int8_t" | "uint8_t"
                )
        })
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

/// The source handed to NVRTC: the prototypes of `decls` (each under a `#line` naming its Rust
/// declaration), then the source itself, from its line 1 under its own name.
pub(crate) fn with_prototypes(source: &str, name: &str, decls: &[&ForeignDecl]) -> String {
    if decls.is_empty() {
        return source.to_owned();
    }
    let mut out = String::new();
    for decl in decls {
        let (file, line) = decl.file_and_line();
        out.push_str(&format!(
            "#line {line} \"{}\"\n{};\n",
            escape(file),
            decl.c_declaration()
        ));
    }
    out.push_str(&format!("#line 1 \"{}\"\n", escape(name)));
    out.push_str(source);
    out
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The prototypes compiled with a `.cu` source: of the used declarations whose types all
/// have a C spelling.
pub(crate) fn prototyped(used: &[UsedDecl]) -> Vec<&ForeignDecl> {
    used.iter()
        .map(|u| &u.decl)
        .filter(|d| d.has_prototype())
        .collect()
}

/// What a failed compilation of a source with prototypes says about them.
pub(crate) enum Conflict {
    /// The compiler rejected the definition of a declared symbol: retry without its
    /// prototype (the C spelling may differ for one ABI type) and let the PTX check judge.
    Retry(String),
    /// A mismatch.
    Mismatch(Error),
}

/// Reads a compiler log for an error about one of the prototyped symbols: an error whose
/// message or quoted source line names it.
pub(crate) fn conflict_in_log(log: &str, decls: &[&ForeignDecl]) -> Option<Conflict> {
    let lines: Vec<&str> = log.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if !line.contains("error") || location(line).is_none() || !is_conflict(line) {
            continue;
        }
        // The message and the source excerpt after it, up to the next located line.
        let block: Vec<&str> = std::iter::once(*line)
            .chain(
                lines[i + 1..]
                    .iter()
                    .copied()
                    .take_while(|l| location(l).is_none()),
            )
            .collect();
        let text = block.join("\n");
        for decl in decls {
            let named = text.contains(&format!("\"{}\"", decl.symbol))
                || text.contains(&format!("'{}'", decl.symbol))
                || mentions(&text, &decl.symbol);
            if !named {
                continue;
            }
            if decl.spelling_may_differ() {
                return Some(Conflict::Retry(decl.symbol.clone()));
            }
            let defined_at = location(line).unwrap_or_else(|| "a `.cu` source".to_owned());
            return Some(Conflict::Mismatch(Error::ForeignSignatureMismatch(
                Box::new(SignatureMismatch {
                    symbol: decl.symbol.clone(),
                    declared_at: decl.declared_at.clone(),
                    expected: decl.c_declaration(),
                    defined_at,
                    detail: text.trim().to_owned(),
                }),
            )));
        }
    }
    None
}

/// Whether a compiler's error message is about two declarations of one function (NVRTC's,
/// gcc's and clang's wordings).
fn is_conflict(message: &str) -> bool {
    [
        "linkage",
        "incompatible",
        "overload",
        "conflicting",
        "previous declaration",
        "redeclar",
    ]
    .iter()
    .any(|w| message.contains(w))
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
    fn prototypes_come_first_under_line_directives() {
        let d = ForeignDecl::parse(RECORD).unwrap();
        let src = with_prototypes("int x;\n", "cuda/f.cu", &[&d]);
        assert_eq!(
            src,
            "#line 32 \"src/ffi.rs\"\nextern \"C\" __device__ int mul_f32_f32(float*, float, float);\n#line 1 \"cuda/f.cu\"\nint x;\n"
        );
    }

    #[test]
    fn compiler_messages_name_the_definition() {
        let d = ForeignDecl::parse(RECORD).unwrap();
        let log = "cuda/f.cu(9): error: more than one instance of overloaded function \"mul_f32_f32\" has \"C\" linkage\n";
        let Some(Conflict::Mismatch(Error::ForeignSignatureMismatch(m))) =
            conflict_in_log(log, &[&d])
        else {
            panic!("no mismatch found");
        };
        assert_eq!(m.defined_at, "cuda/f.cu:9");
        assert_eq!(location("f.cu:3:5: error: x"), Some("f.cu:3".into()));
        let u64_decl =
            ForeignDecl::parse(&RECORD.replace("arg=float\narg", "arg=uint64_t\narg")).unwrap();
        assert!(matches!(
            conflict_in_log(log, &[&u64_decl]),
            Some(Conflict::Retry(_))
        ));
        assert!(conflict_in_log("f.cu(1): error: other\n", &[&d]).is_none());
        // An unrelated error on a line that calls the function is not a mismatch.
        let unrelated = "f.cu(4): error: identifier \"y\" is undefined\n  float r = mul_f32_f32(&r, y, 1.0f);\n";
        assert!(conflict_in_log(unrelated, &[&d]).is_none());
    }
}

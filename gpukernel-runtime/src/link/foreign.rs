//! Foreign declarations checked against their definitions.
//!
//! A kernels crate's PTX carries one record per `declare_device!` entry (the globals
//! `__gpukernel_foreign_*`, see [`ForeignDecl`]). A link checks the declarations that the
//! selected kernels use (those whose symbol the selected PTX still declares `.extern .func`):
//!
//! * `.cu` sources: a C++ check is compiled *after* the source (`gpukernel-ffi-check`'s text,
//!   the one every path compiles: its header, then one `static_assert` per property under a
//!   `#line` naming the Rust declaration): it takes the definition's type with `decltype` and
//!   compares what each parameter and the return value are (bool, signed or unsigned integer,
//!   float, of how many bytes; pointers by their pointee; structs as classes; a struct whose
//!   layout the record carries, a `#[derive(DeviceCopy)]` one, by `sizeof`, `alignof` and each
//!   named field's offset and type), never their spelling. So `int`, `int32_t` and
//!   `std::int32_t`, `long` and `long long` (LP64), `float*` and `const float*` all fit their
//!   declaration, with or without `<cstdint>`, while `unsigned` for `i32`, `uint32_t*` for the
//!   return slot of `-> u64` or `float` for `f64` fail, as
//!   [`Error::ForeignSignatureMismatch`] naming the Rust declaration, the definition's line
//!   and the parameter. A source that does not declare a used symbol at global scope is
//!   compiled again without its check (another input defines it), and refused if its PTX
//!   defines the symbol after all (a namespace, C++ overloads). The same check text is compiled by the
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
use gpukernel_ffi_check::check::{self, definition_line};
use gpukernel_ffi_check::{Declaration, reserved_symbol};

pub use gpukernel_ffi_check::{FieldLayout, ForeignAbi, StructLayout};

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
    /// The layouts of the `#[repr(C)]` structs it passes, as the Rust compiler laid them out
    /// (empty in records of earlier versions, and for none).
    pub structs: Vec<StructLayout>,
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
        let d = Declaration::parse(record)?;
        Some(ForeignDecl {
            symbol: d.symbol,
            abi: d.abi,
            declared_at: d.declared_at,
            ret: d.ret,
            args: d.args,
            structs: d.structs,
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
        self.shared().c_declaration()
    }

    /// The same declaration as `gpukernel-ffi-check` describes it (the checks' text is made
    /// there, for every path).
    pub(crate) fn shared(&self) -> Declaration {
        Declaration {
            symbol: self.symbol.clone(),
            abi: self.abi,
            declared_at: self.declared_at.clone(),
            ret: self.ret.clone(),
            args: self.args.clone(),
            structs: self.structs.clone(),
        }
    }

    /// The C++ check of a definition of this declaration (see the module's documentation):
    /// one `static_assert` per property, under a `#line` at the Rust declaration; `None` when
    /// a type has no description (a record from another version of the macro).
    pub(crate) fn c_check(&self) -> Option<String> {
        check::c_check(&self.shared())
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

/// The source handed to the compiler: the source itself (its own lines under its own name),
/// then the check of each of `decls` (see the module's documentation).
pub(crate) fn with_checks(source: &str, decls: &[&ForeignDecl]) -> String {
    let shared: Vec<Declaration> = decls.iter().map(|d| d.shared()).collect();
    let refs: Vec<&Declaration> = shared.iter().collect();
    format!("{source}{}", check::checks_text(&refs))
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
    let shared: Vec<Declaration> = decls.iter().map(|d| d.shared()).collect();
    let refs: Vec<&Declaration> = shared.iter().collect();
    let verdict = check::read_log(log, &refs);
    if let Some((symbol, failed)) = verdict.mismatch {
        let decl = decls.iter().find(|d| d.symbol == symbol)?;
        let line = definition_line(source, &decl.symbol);
        let defined_at = match line {
            Some(l) => format!("{source_name}:{l}"),
            None => source_name.to_owned(),
        };
        return Some(Conflict::Mismatch(Error::ForeignSignatureMismatch(
            Box::new(SignatureMismatch {
                symbol: decl.symbol.clone(),
                declared_at: decl.declared_at.clone(),
                expected: decl.c_declaration(),
                defined_at,
                detail: check::mismatch_detail(&failed, source, line),
            }),
        )));
    }
    (!verdict.undeclared.is_empty()).then_some(Conflict::Retry(verdict.undeclared))
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
        let detail =
            check::mismatch_detail(&[check::unseen_definition_detail(symbol)], source, line);
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
}

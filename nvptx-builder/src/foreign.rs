//! The `declare_device!` declarations recorded in a kernels crate's PTX (the globals
//! `__gpukernel_foreign_*`, one per entry; the format is `gpukernel-macros`'
//! `foreign/manifest.rs`), read back so that the host compile of the foreign `.cu` files can
//! check the definitions against them (see [`crate::host_cc::HostCc::declarations`]).

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

    /// Whether the C prototype is compiled with the host sources: every type has a known C
    /// spelling, and none that a definition may spell differently for the same ABI (64- and
    /// 8-bit integers, pointers), which only the GPU link's PTX check can judge.
    pub(crate) fn host_prototype(&self) -> bool {
        std::iter::once(&self.ret).chain(&self.args).all(|t| {
            !t.contains("struct ")
                && !t.contains('*')
                && !matches!(
                    t.as_str(),
                    "int64_t" | "uint64_t" | "size_t" | "ptrdiff_t" | "int8_t" | "uint8_t"
                )
        })
    }
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
        assert!(decls[0].host_prototype());
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

//! The symbol names that cannot name a function of the user's foreign code: `declare_device!`
//! refuses them at compile time, `nvptx-builder` in the kernels' IR and the run-time Linker in
//! any record it is given.

/// PTX system calls the CUDA driver provides (and the C library's assertion helper, which
/// CUDA lowers to one).
const SYSTEM_CALLS: [&str; 6] = [
    "vprintf",
    "malloc",
    "free",
    "__assertfail",
    "__nvvm_reflect",
    "__assert_fail",
];

/// C library functions (the Rust compiler's builtins define the memory functions for nvptx64).
const C_LIBRARY: [&str; 14] = [
    "memset", "memcpy", "memmove", "memcmp", "bcmp", "strlen", "strcmp", "strcpy", "printf",
    "calloc", "realloc", "abort", "exit", "assert",
];

/// Why `symbol` cannot name a function of the user's foreign code, if it cannot: a PTX system
/// call, a C library or compiler-builtins function, a libdevice function, a name of the CUDA
/// compilers or runtime, or a symbol gpukernel generates.
///
/// ```
/// use gpukernel_ffi_check::reserved_symbol;
/// assert!(reserved_symbol("free").is_some() && reserved_symbol("__nv_expf").is_some());
/// assert!(reserved_symbol("__udivti3").is_some() && reserved_symbol("__my_fn2").is_none());
/// assert!(reserved_symbol("cuda_scale").is_none() && reserved_symbol("cudaFree").is_some());
/// ```
pub fn reserved_symbol(symbol: &str) -> Option<&'static str> {
    if SYSTEM_CALLS.contains(&symbol) {
        return Some("a PTX system call that the CUDA driver provides");
    }
    if C_LIBRARY.contains(&symbol) {
        return Some(
            "a C library function (the Rust compiler's builtins define the memory functions for nvptx64)",
        );
    }
    if symbol.starts_with("__nv_") {
        return Some("a libdevice function (CUDA's math library, which the build links in)");
    }
    if ["__nvvm_", "__cuda", "__nvptx"]
        .iter()
        .any(|p| symbol.starts_with(p))
    {
        return Some("a name reserved by the CUDA compilers");
    }
    if symbol.starts_with("cuda") && symbol[4..].starts_with(|c: char| c.is_ascii_uppercase()) {
        return Some("a function of the CUDA runtime or device runtime");
    }
    if symbol.starts_with("__gpukernel_") || symbol.starts_with("gpukernel_sim_") {
        return Some("a symbol that gpukernel itself generates");
    }
    // The compiler builtins' (libgcc's) helpers: `__udivti3`, `__muloti4`, `__floattidf`.
    if let Some(rest) = symbol.strip_prefix("__")
        && let Some(stem) = rest.strip_suffix(|c: char| c.is_ascii_digit())
        && !stem.is_empty()
        && stem.chars().all(|c| c.is_ascii_lowercase())
    {
        return Some("a helper of the compiler's builtins (libgcc / compiler-rt naming)");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_refused_and_user_names_pass() {
        for s in [
            "vprintf",
            "malloc",
            "__assertfail",
            "memcpy",
            "printf",
            "__nv_sinf",
            "__nvvm_reflect",
            "__cudaRegisterFunction",
            "__nvptx_x",
            "cudaGraphSetConditional",
            "__gpukernel_ffi_error",
            "gpukernel_sim_thread",
            "__muloti4",
        ] {
            assert!(reserved_symbol(s).is_some(), "{s}");
        }
        for s in [
            "scale",
            "cuda_scale",
            "cudascale",
            "__my_fn",
            "mul_f32_f32",
            "nv_expf",
        ] {
            assert!(reserved_symbol(s).is_none(), "{s}");
        }
    }
}

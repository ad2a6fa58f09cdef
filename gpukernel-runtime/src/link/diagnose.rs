//! Reading the linkers' logs: which symbol is undefined or defined twice, which input has no
//! code for the target.

/// The first symbol a linker log says is undefined.
///
/// Forms seen: nvJitLink / cuLink `error   : Undefined reference to 'f' in 'a.ptx'`,
/// ptxas `Unresolved extern function 'f'`.
pub(crate) fn undefined_symbol(log: &str) -> Option<String> {
    quoted_after(
        log,
        &[
            "Undefined reference to",
            "Unresolved extern function",
            "undefined reference to",
            "Unresolved extern variable",
        ],
    )
}

/// Every function a JIT or linker log says is an unresolved extern
/// (ptxas: `ptxas fatal   : Unresolved extern function 'f'`), in order, without duplicates.
/// Used by `Context::load_module` on a PTX that calls foreign functions.
pub(crate) fn unresolved_functions(log: &str) -> Vec<String> {
    all_quoted_after(log, &["Unresolved extern function"])
}

/// The first symbol a linker log says is defined more than once
/// (`error   : Multiple definition of 'f' in 'b', first defined in 'a'`).
pub(crate) fn duplicate_symbol(log: &str) -> Option<String> {
    quoted_after(
        log,
        &[
            "Multiple definition of",
            "multiple definition of",
            "Duplicate definition of",
        ],
    )
}

/// Whether a log says that an input has no code for `arch`
/// (`No code for sm_90 in '<input>'; continuing.` and similar), and for which input.
pub(crate) fn no_code_for_arch(log: &str, arch: &str) -> Option<String> {
    for line in log.lines() {
        let lower = line.to_ascii_lowercase();
        if lower.contains("no code for")
            || lower.contains("arch mismatch")
            || lower.contains("no compatible")
        {
            let input = quoted(line).unwrap_or_else(|| {
                line.split(" in ")
                    .nth(1)
                    .map(|s| s.trim_end_matches([';', '.']).trim().to_string())
                    .unwrap_or_default()
            });
            if lower.contains(&arch.to_ascii_lowercase()) || lower.contains("no code for") {
                return Some(input);
            }
        }
    }
    None
}

fn quoted_after(log: &str, markers: &[&str]) -> Option<String> {
    for line in log.lines() {
        for marker in markers {
            if let Some(pos) = line.find(marker)
                && let Some(symbol) = quoted(&line[pos + marker.len()..])
            {
                return Some(symbol);
            }
        }
    }
    None
}

fn all_quoted_after(log: &str, markers: &[&str]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in log.lines() {
        for marker in markers {
            for (pos, _) in line.match_indices(marker) {
                if let Some(symbol) = quoted(&line[pos + marker.len()..])
                    && !found.contains(&symbol)
                {
                    found.push(symbol);
                }
            }
        }
    }
    found
}

/// The first `'...'` (or `"..."`, or `` `...' ``) quoted word of a line.
fn quoted(s: &str) -> Option<String> {
    let start = s.find(['\'', '"', '`'])?;
    let rest = &s[start + 1..];
    let end = rest.find(['\'', '"'])?;
    let word = &rest[..end];
    (!word.is_empty()).then(|| word.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_log_lines() {
        assert_eq!(
            undefined_symbol("error   : Undefined reference to 'mul_f32_f32' in 'kernels.ptx'")
                .as_deref(),
            Some("mul_f32_f32")
        );
        assert_eq!(
            undefined_symbol("ptxas fatal   : Unresolved extern function 'cubin_add_one'")
                .as_deref(),
            Some("cubin_add_one")
        );
        assert_eq!(
            duplicate_symbol("error   : Multiple definition of 'mul_f32_f32' in 'b.ptx', first defined in 'a.ptx'")
                .as_deref(),
            Some("mul_f32_f32")
        );
        assert_eq!(
            no_code_for_arch(
                "info    : No code for sm_90 in 'old.fatbin'; continuing.",
                "sm_90"
            )
            .as_deref(),
            Some("old.fatbin")
        );
        assert_eq!(undefined_symbol("all good"), None);
    }

    #[test]
    fn collects_every_unresolved_function() {
        let log = "ptxas application ptx input, line 12; warning : something\n\
                   ptxas fatal   : Unresolved extern function 'mul_f32_f32'\n\
                   ptxas fatal   : Unresolved extern function 'add_one'\n\
                   ptxas fatal   : Unresolved extern function 'mul_f32_f32'";
        assert_eq!(unresolved_functions(log), ["mul_f32_f32", "add_one"]);
        assert!(unresolved_functions("ptxas error : syntax error at line 3").is_empty());
        assert!(unresolved_functions("").is_empty());
    }
}

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

/// The option nvJitLink says it does not know (`unrecognized option: -Werror`).
pub(crate) fn unrecognized_option(log: &str) -> Option<String> {
    let at = log.find("unrecognized option")?;
    let rest = log[at + "unrecognized option".len()..].trim_start_matches([':', ' ']);
    let option = rest.split_whitespace().next()?;
    Some(option.trim_matches(['\'', '"']).to_owned())
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
            // libNVVM, linking two LTO-IR modules: `Linking globals named 'f': symbol
            // multiply defined!`
            "Linking globals named",
        ],
    )
}

/// The inputs a linker log says define `symbol` (`Multiple definition of 'f' in 'b', first
/// defined in 'a'` → `a`, `b`), mapped from the linker's unit names to the inputs' names
/// (`unit_names[i]` is the name input `input_names[i]` was handed to the linker under; an
/// archive member `lib.a:x.o` maps to `lib.a`).
pub(crate) fn duplicate_inputs(
    log: &str,
    symbol: &str,
    unit_names: &[String],
    input_names: &[String],
) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in log.lines() {
        let Some(pos) = line.find(&format!("'{symbol}'")) else {
            continue;
        };
        if !line.to_ascii_lowercase().contains("definition") {
            continue;
        }
        let rest = &line[pos + symbol.len() + 2..];
        let mut names: Vec<String> = rest
            .split('\'')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect();
        // The first definition first.
        names.reverse();
        for name in names {
            let input = unit_names
                .iter()
                .position(|u| *u == name || name.starts_with(&format!("{u}:")))
                .and_then(|i| input_names.get(i).cloned())
                .unwrap_or(name);
            if !found.contains(&input) {
                found.push(input);
            }
        }
    }
    found
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
        assert_eq!(
            duplicate_symbol("b.ltoir: link error: error: Linking globals named 'dupfn': symbol multiply defined!")
                .as_deref(),
            Some("dupfn")
        );
        assert_eq!(
            unrecognized_option("unrecognized option: -Werror\n").as_deref(),
            Some("-Werror")
        );
        assert_eq!(unrecognized_option("ERROR 9: finish"), None);
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

    #[test]
    fn duplicate_definitions_name_their_inputs() {
        let log = "error   : Multiple definition of 'object_sub_one' in 'object_lib.o', first defined in 'libobject.a:object_lib.o'";
        let units = [
            "kernels.ptx".to_owned(),
            "libobject.a".to_owned(),
            "object_lib.o".to_owned(),
        ];
        let inputs = [
            "kernels.ptx".to_owned(),
            "/x/libobject.a".to_owned(),
            "/x/object_lib.o".to_owned(),
        ];
        assert_eq!(
            duplicate_inputs(log, "object_sub_one", &units, &inputs),
            ["/x/libobject.a", "/x/object_lib.o"]
        );
        assert!(duplicate_inputs("nothing", "f", &units, &inputs).is_empty());
        assert_eq!(
            crate::error::demangle("_Z3addff").as_deref(),
            Some("add(float, float)")
        );
        assert_eq!(crate::error::demangle("mul_f32_f32"), None);
    }
}

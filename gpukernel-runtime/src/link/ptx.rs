//! Selecting kernels out of a PTX module, so that a link needs only the foreign code those
//! kernels call (a kernels crate compiles to one PTX with every kernel, and each kernel's
//! `.extern .func` must otherwise be resolved by some input).
//!
//! Works on the regular PTX that LLVM's NVPTX back end writes: each function starts with a
//! line `[.visible|.weak] .entry|.func ...` at column 0 and its body ends with a `}` line at
//! column 0; declarations end with a `;` line.

/// One top-level item of a PTX module: a function (or declaration), or anything else.
#[derive(Debug)]
struct Item<'a> {
    lines: Vec<&'a str>,
    /// For functions and function declarations: the name, whether it is an entry, whether it
    /// has a body.
    function: Option<(String, bool, bool)>,
}

/// The names of the `.entry` functions of a PTX module.
pub(crate) fn entries(ptx: &str) -> Vec<String> {
    items(ptx)
        .into_iter()
        .filter_map(|i| i.function.filter(|f| f.1 && f.2).map(|f| f.0))
        .collect()
}

/// Keeps only the entries named in `keep`, then drops the declarations and internal
/// functions nothing references any more. Returns the names of `keep` that are not entries.
pub(crate) fn select_entries(ptx: &str, keep: &[&str]) -> Result<String, Vec<String>> {
    let mut items = items(ptx);
    let present: Vec<String> = entries(ptx);
    let missing: Vec<String> = keep
        .iter()
        .filter(|k| !present.iter().any(|p| p == *k))
        .map(|k| k.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(missing);
    }
    let dropped: Vec<String> = present
        .iter()
        .filter(|p| !keep.contains(&p.as_str()))
        .cloned()
        .collect();
    items.retain(|item| match &item.function {
        Some((name, true, _)) => keep.contains(&name.as_str()),
        _ => true,
    });
    // LLVM's `// .globl name` comments of the dropped kernels.
    for item in items.iter_mut().filter(|i| i.function.is_none()) {
        item.lines.retain(|l| {
            let t = l.trim();
            !t.strip_prefix("// .globl")
                .is_some_and(|n| dropped.iter().any(|d| d == n.trim()))
        });
    }
    // Drop unreferenced non-entry functions and declarations until nothing changes.
    loop {
        // (name of the item's function, if any; its text)
        let text: Vec<(Option<String>, String)> = items
            .iter()
            .map(|i| (i.function.as_ref().map(|f| f.0.clone()), i.lines.join("\n")))
            .collect();
        let before = items.len();
        items.retain(|item| {
            let Some((name, false, _)) = &item.function else {
                return true;
            };
            // Visible (exported) device functions stay: another module may call them.
            if item
                .lines
                .first()
                .is_some_and(|l| l.trim_start().starts_with(".visible"))
            {
                return true;
            }
            // Referenced by anything but its own declaration or definition.
            text.iter()
                .any(|(owner, t)| owner.as_deref() != Some(name) && mentions(t, name))
        });
        if items.len() == before {
            break;
        }
    }
    let mut out = items
        .iter()
        .map(|i| i.lines.join("\n"))
        .collect::<Vec<_>>()
        .join("\n");
    out.push('\n');
    Ok(out)
}

/// Whether `text` uses the identifier `name` (not as part of a longer identifier).
fn mentions(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// Splits a module into top-level items.
fn items(ptx: &str) -> Vec<Item<'_>> {
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out: Vec<Item<'_>> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some((name, entry)) = function_header(line) {
            // A declaration ends with `;` (possibly on its own line) before any `{`; a
            // definition ends at the `}` line at column 0.
            let start = i;
            let mut has_body = false;
            let mut j = i;
            while j < lines.len() {
                let l = lines[j];
                if l.starts_with('{') {
                    has_body = true;
                }
                if has_body && l.starts_with('}') {
                    break;
                }
                if !has_body && l.trim_end().ends_with(';') {
                    break;
                }
                j += 1;
            }
            let end = j.min(lines.len().saturating_sub(1));
            out.push(Item {
                lines: lines[start..=end].to_vec(),
                function: Some((name, entry, has_body)),
            });
            i = end + 1;
        } else {
            match out.last_mut() {
                Some(last) if last.function.is_none() => last.lines.push(line),
                _ => out.push(Item {
                    lines: vec![line],
                    function: None,
                }),
            }
            i += 1;
        }
    }
    out
}

/// `Some((name, is_entry))` when `line` starts a function or function declaration.
fn function_header(line: &str) -> Option<(String, bool)> {
    if line.starts_with(char::is_whitespace) || line.starts_with("//") {
        return None;
    }
    let mut rest = line;
    for prefix in [".visible", ".weak", ".extern"] {
        if let Some(r) = rest.strip_prefix(prefix) {
            rest = r.trim_start();
        }
    }
    let (entry, after) = if let Some(a) = rest.strip_prefix(".entry") {
        (true, a)
    } else if let Some(a) = rest.strip_prefix(".func") {
        (false, a)
    } else {
        return None;
    };
    let mut after = after.trim_start();
    if after.starts_with('(') {
        // `.func (.param .b32 func_retval0) name(`
        after = after[after.find(')')? + 1..].trim_start();
    }
    let end = after
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(after.len());
    (end > 0).then(|| (after[..end].to_string(), entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 7.8
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) foreign_a
(
\t.param .b64 foreign_a_param_0
)
;
.extern .func  (.param .b32 func_retval0) foreign_b
(
\t.param .b64 foreign_b_param_0
)
;
.func helper_b(
\t.param .b64 helper_b_param_0
)
;
.visible .global .align 4 .b8 __gpukernel_ffi_error[32];
\t// .globl\tk_a
.visible .entry k_a(
\t.param .u64 k_a_param_0
)
{
\tcall.uni (retval0), foreign_a, (param0);
\tret;
}
\t// .globl\tk_b
.visible .entry k_b(
\t.param .u64 k_b_param_0
)
{
\tcall.uni helper_b, (param0);
\tret;
}
.func helper_b(
\t.param .b64 helper_b_param_0
)
{
\tcall.uni (retval0), foreign_b, (param0);
\tret;
}
";

    #[test]
    fn finds_entries() {
        assert_eq!(entries(PTX), ["k_a", "k_b"]);
    }

    #[test]
    fn selecting_drops_the_other_kernels_foreign_needs() {
        let a = select_entries(PTX, &["k_a"]).unwrap();
        assert!(a.contains(".entry k_a") && a.contains("foreign_a"), "{a}");
        assert!(
            !a.contains("k_b") && !a.contains("foreign_b") && !a.contains("helper_b"),
            "{a}"
        );
        assert!(a.contains("__gpukernel_ffi_error"), "{a}");
        let b = select_entries(PTX, &["k_b"]).unwrap();
        assert!(
            b.contains("helper_b") && b.contains("foreign_b") && !b.contains("foreign_a"),
            "{b}"
        );
        assert_eq!(select_entries(PTX, &["nope"]).unwrap_err(), ["nope"]);
    }
}

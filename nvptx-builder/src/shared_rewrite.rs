//! Moves `shared_array!` storage into the `.shared` state space.
//!
//! Rust has no way to put a `static` in an LLVM address space, so on nvptx64
//! `gpukernel_device::shared_array!` declares its storage as an uninitialized `static` in the
//! link section [`SHARED_SECTION`]. After `llvm-link` (and before `opt`), this pass rewrites
//! the textual IR: each global of that section becomes an `addrspace(3)` global with an
//! `undef` initializer (ptxas rejects initialized `.shared` variables), and each use `ptr @g`
//! becomes `ptr addrspacecast (ptr addrspace(3) @g to ptr)`. `opt`'s address-space inference
//! then turns the accesses into `ld.shared` / `st.shared`.

use std::fmt;

/// The link section that `shared_array!` puts its storage in (same as
/// `gpukernel_device::shared::SHARED_SECTION`).
pub const SHARED_SECTION: &str = ".gpukernel.shared";

/// The IR could not be rewritten: names the global and what was unexpected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedRewriteError {
    /// The global's IR name (without `@`).
    pub global: String,
    /// What was wrong, with the offending IR line.
    pub reason: String,
}

impl fmt::Display for SharedRewriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot move shared-memory global @{} to the .shared state space: {}",
            self.global, self.reason
        )
    }
}

impl std::error::Error for SharedRewriteError {}

/// Rewrites the globals of section [`SHARED_SECTION`] in the textual LLVM IR module `ir` to
/// address space 3 (see the module documentation). Returns the IR unchanged when there is
/// none. The result is meant for `llvm-as` (or `opt` reading `.ll`).
pub fn rewrite_shared_statics(ir: &str) -> Result<String, SharedRewriteError> {
    let section_attr = format!("section \"{SHARED_SECTION}\"");
    let mut names = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for line in ir.lines() {
        if line.starts_with('@') && line.contains(&section_attr) {
            let (name, rewritten) = rewrite_definition(line, &section_attr)?;
            names.push(name);
            lines.push(rewritten);
        } else {
            lines.push(line.to_owned());
        }
    }
    if names.is_empty() {
        return Ok(ir.to_owned());
    }
    let mut out = String::with_capacity(ir.len() + 256);
    for line in &lines {
        if line.starts_with('@')
            && line.contains("addrspace(3) global")
            && names.iter().any(|n| line.starts_with(&format!("@{n} ")))
        {
            out.push_str(line);
        } else {
            let mut l = line.clone();
            for name in &names {
                l = rewrite_uses(&l, name)?;
            }
            out.push_str(&l);
        }
        out.push('\n');
    }
    Ok(out)
}

/// Parses `@name` at the start of `s`; returns the name as written after `@` (quoted names
/// keep their quotes) and the rest.
fn split_name(s: &str) -> Option<(&str, &str)> {
    let body = s.strip_prefix('@')?;
    let end = if let Some(q) = body.strip_prefix('"') {
        q.find('"')? + 2
    } else {
        body.find(|c: char| !is_ident_char(c)).unwrap_or(body.len())
    };
    (end > 0).then(|| body.split_at(end))
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '$' | '.' | '_')
}

/// Splits off one balanced IR item (a type or a constant) at the start of `s` (after
/// whitespace), stopping at a top-level `,` or the end.
fn split_item(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    let mut depth = 0i32;
    let mut in_str = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => in_str = !in_str,
            _ if in_str => {}
            '[' | '{' | '<' | '(' => depth += 1,
            ']' | '}' | '>' | ')' => depth -= 1,
            ',' if depth == 0 => return (s[..i].trim_end(), &s[i..]),
            _ => {}
        }
    }
    (s.trim_end(), "")
}

/// Splits a type off the start of `s`: a bracketed aggregate or one word.
fn split_type(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    if s.starts_with(['[', '{', '<']) {
        let mut depth = 0i32;
        for (i, c) in s.char_indices() {
            match c {
                '[' | '{' | '<' | '(' => depth += 1,
                ']' | '}' | '>' | ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return (&s[..=i], &s[i + 1..]);
                    }
                }
                _ => {}
            }
        }
        (s, "")
    } else {
        let end = s.find([' ', ',']).unwrap_or(s.len());
        s.split_at(end)
    }
}

/// Rewrites one global definition line; returns the name and the new line.
fn rewrite_definition(
    line: &str,
    section_attr: &str,
) -> Result<(String, String), SharedRewriteError> {
    let err = |global: &str, reason: &str| SharedRewriteError {
        global: global.to_owned(),
        reason: format!("{reason}: `{line}`"),
    };
    let (name, rest) = split_name(line).ok_or_else(|| err("?", "unrecognized global name"))?;
    let rest = rest
        .trim_start()
        .strip_prefix('=')
        .ok_or_else(|| err(name, "not a global definition"))?;
    // Prefix keywords (linkage, visibility, unnamed_addr, ...) up to `global` or `constant`.
    let mut prefix = Vec::new();
    let mut tail = rest.trim_start();
    loop {
        let (word, after) = tail.split_at(tail.find(' ').unwrap_or(tail.len()));
        match word {
            "global" | "constant" => {
                tail = after;
                break;
            }
            "" => return Err(err(name, "no `global` keyword")),
            w if w.starts_with("addrspace(") => {
                return Err(err(name, "already in an address space"));
            }
            "thread_local" => {
                return Err(err(name, "a thread-local static cannot be shared memory"));
            }
            w => prefix.push(w),
        }
        tail = after.trim_start();
    }
    let (ty, after_ty) = split_type(tail);
    let external = prefix
        .iter()
        .any(|w| *w == "external" || *w == "extern_weak");
    let after_init = if external {
        after_ty
    } else {
        let (init, after_init) = split_item(after_ty);
        if init.is_empty() {
            return Err(err(name, "no initializer"));
        }
        after_init
    };
    // Attributes: keep all but the section.
    let mut attrs = String::new();
    let mut rem = after_init;
    while let Some(r) = rem.trim_start().strip_prefix(',') {
        let (item, next) = split_item(r);
        if item != section_attr {
            attrs.push_str(", ");
            attrs.push_str(item);
        }
        rem = next;
    }
    let prefix = prefix.join(" ");
    let sep = if prefix.is_empty() { "" } else { " " };
    let init = if external {
        String::new()
    } else {
        " undef".to_owned()
    };
    Ok((
        name.to_owned(),
        format!("@{name} = {prefix}{sep}addrspace(3) global {ty}{init}{attrs}"),
    ))
}

/// `before` when it ends with `ptr` and parameter attributes (`noundef`, `nonnull`, `align 16`,
/// `dereferenceable(64)`, `captures(none)`, ...), each followed by a space.
fn ptr_with_attributes(before: &str) -> Option<&str> {
    let mut end = before.strip_suffix(' ')?;
    loop {
        let start = end.rfind(' ').map_or(0, |i| i + 1);
        let word = &end[start..];
        // `ptr` alone, or opening the argument list: `@f(ptr`.
        if word == "ptr" || word.ends_with("(ptr") {
            return Some(before);
        }
        let balanced = word.matches('(').count() == word.matches(')').count();
        let attribute = !word.is_empty()
            && balanced
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '(' | ')'));
        if !attribute || start == 0 {
            return None;
        }
        end = &end[..start - 1];
    }
}

/// Replaces every `ptr @name` in `line` by its generic-address cast; any other mention of
/// `@name` is an error (it would not type-check after the move).
fn rewrite_uses(line: &str, name: &str) -> Result<String, SharedRewriteError> {
    let at = format!("@{name}");
    if !line.contains(&at) {
        return Ok(line.to_owned());
    }
    let mut out = String::with_capacity(line.len() + 64);
    let mut rest = line;
    while let Some(pos) = rest.find(&at) {
        let after = &rest[pos + at.len()..];
        let whole = !name.starts_with('"') && after.starts_with(is_ident_char);
        if whole {
            // A longer name that starts with this one.
            out.push_str(&rest[..pos + at.len()]);
            rest = after;
            continue;
        }
        let before = &rest[..pos];
        // `ptr @g`, or a call argument with attributes: `ptr noundef nonnull align 16 @g`
        // (the storage passed to a function, a foreign one included).
        let Some(head) = before
            .strip_suffix("ptr ")
            .map(|h| format!("{h}ptr "))
            .or_else(|| ptr_with_attributes(before).map(str::to_owned))
        else {
            return Err(SharedRewriteError {
                global: name.to_owned(),
                reason: format!("a use that is not a `ptr` operand: `{line}`"),
            });
        };
        out.push_str(&head);
        out.push_str("addrspacecast (ptr addrspace(3) ");
        out.push_str(&at);
        out.push_str(" to ptr)");
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const IR: &str = r#"@other = internal global [4 x i8] zeroinitializer, align 4
@_RNvNv8k_reduce18___GPUKERNEL_SHARED = internal unnamed_addr global [1024 x i8] undef, section ".gpukernel.shared", align 4
@"quoted.name" = internal global <{ [8 x i8] }> <{ [8 x i8] undef }>, section ".gpukernel.shared", align 8, !dbg !3
@_RNvNv8k_reduce18___GPUKERNEL_SHAREDX = internal global [4 x i8] undef, align 4
@llvm.used = appending global [1 x ptr] [ptr @"quoted.name"], section "llvm.metadata"

define void @k(i64 %i) {
  %p = getelementptr inbounds nuw float, ptr @_RNvNv8k_reduce18___GPUKERNEL_SHARED, i64 %i
  %v = load float, ptr getelementptr inbounds nuw (i8, ptr @_RNvNv8k_reduce18___GPUKERNEL_SHARED, i64 4), align 4
  store float %v, ptr @"quoted.name", align 4
  store float %v, ptr @_RNvNv8k_reduce18___GPUKERNEL_SHAREDX, align 4
  ret void
}
"#;

    #[test]
    fn moves_section_globals_and_casts_their_uses() {
        let out = rewrite_shared_statics(IR).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "@other = internal global [4 x i8] zeroinitializer, align 4"
        );
        assert_eq!(
            lines[1],
            "@_RNvNv8k_reduce18___GPUKERNEL_SHARED = internal unnamed_addr addrspace(3) global [1024 x i8] undef, align 4"
        );
        assert_eq!(
            lines[2],
            "@\"quoted.name\" = internal addrspace(3) global <{ [8 x i8] }> undef, align 8, !dbg !3"
        );
        assert_eq!(
            lines[3],
            "@_RNvNv8k_reduce18___GPUKERNEL_SHAREDX = internal global [4 x i8] undef, align 4"
        );
        assert_eq!(
            lines[4],
            "@llvm.used = appending global [1 x ptr] [ptr addrspacecast (ptr addrspace(3) @\"quoted.name\" to ptr)], section \"llvm.metadata\""
        );
        assert_eq!(
            lines[7],
            "  %p = getelementptr inbounds nuw float, ptr addrspacecast (ptr addrspace(3) @_RNvNv8k_reduce18___GPUKERNEL_SHARED to ptr), i64 %i"
        );
        assert!(lines[8].contains("(i8, ptr addrspacecast (ptr addrspace(3) @_RNvNv8k_reduce18___GPUKERNEL_SHARED to ptr), i64 4)"));
        assert_eq!(
            lines[9],
            "  store float %v, ptr addrspacecast (ptr addrspace(3) @\"quoted.name\" to ptr), align 4"
        );
        // A different global whose name extends a shared one is untouched.
        assert_eq!(
            lines[10],
            "  store float %v, ptr @_RNvNv8k_reduce18___GPUKERNEL_SHAREDX, align 4"
        );
    }

    #[test]
    fn ir_without_shared_globals_is_unchanged() {
        let ir = "@x = global i32 0\n";
        assert_eq!(rewrite_shared_statics(ir).unwrap(), ir);
    }

    #[test]
    fn external_declarations_have_no_initializer() {
        let ir = "@s = external global [16 x i8], section \".gpukernel.shared\", align 4\n";
        assert_eq!(
            rewrite_shared_statics(ir).unwrap(),
            "@s = external addrspace(3) global [16 x i8], align 4\n"
        );
    }

    #[test]
    fn storage_passed_to_a_function_is_cast_with_its_attributes() {
        let ir = "@s = internal global [16 x float] undef, section \".gpukernel.shared\", align 16\n  %r = call i32 @vendor_block_sum(ptr noundef nonnull %5, float %x, ptr noundef nonnull align 16 dereferenceable(64) @s) #16\n";
        let out = rewrite_shared_statics(ir).unwrap();
        assert!(
            out.contains("float %x, ptr noundef nonnull align 16 dereferenceable(64) addrspacecast (ptr addrspace(3) @s to ptr)) #16"),
            "{out}"
        );
        assert_eq!(ptr_with_attributes("f(i32 0, "), None);
        assert_eq!(ptr_with_attributes("f(i32 noundef "), None);
        assert_eq!(
            ptr_with_attributes("(ptr captures(none) "),
            Some("(ptr captures(none) ")
        );
    }

    #[test]
    fn unexpected_uses_are_errors_naming_the_global() {
        let ir = "@s = internal global [16 x i8] undef, section \".gpukernel.shared\"\n  %x = ptrtoint ptr @s to i64\n  call void @f(i32 0) [ \"x\"(@s) ]\n";
        let e = rewrite_shared_statics(ir).unwrap_err();
        assert_eq!(e.global, "s");
        assert!(e.to_string().contains("not a `ptr` operand"), "{e}");
        let ir =
            "@s = internal addrspace(1) global [16 x i8] undef, section \".gpukernel.shared\"\n";
        assert!(
            rewrite_shared_statics(ir)
                .unwrap_err()
                .reason
                .contains("already in an address space")
        );
    }
}

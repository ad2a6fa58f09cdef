//! The kernel-name record costs nothing in a kernel that cannot fail a foreign call.
//!
//! Every `#[kernel]` entry calls `__gpukernel_enter_kernel(slot, name, len)` before its body
//! (`gpukernel_device::ffi::enter_kernel`), a function Rust declares and never defines: so
//! that a failing foreign call can name its kernel, the entry notes its name in the block's
//! shared slot `__gpukernel_current_kernel`, which only `report_foreign_failure` reads. On the
//! optimized module (foreign calls that cannot fail, inlined by LTO, are gone by then), this
//! pass keeps the call only in the functions whose calls can reach a reader of the slot (or an
//! indirect call, which might), deletes it everywhere else, and defines the function as two
//! block-scope relaxed stores to the slot, always inlined. A kernel without foreign calls
//! ends up with no instruction and no shared memory for the record.

use std::collections::{HashMap, HashSet};
use std::fmt;

/// The function each `#[kernel]` entry calls before its body.
pub const ENTER_KERNEL: &str = "__gpukernel_enter_kernel";
/// The block's shared slot that holds the running kernel's name (address, length).
pub const CURRENT_KERNEL: &str = "__gpukernel_current_kernel";

/// The IR could not be resolved: what was unexpected, with the IR line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelNameError(pub String);

impl fmt::Display for KernelNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot resolve the kernel-name record ({ENTER_KERNEL}): {}",
            self.0
        )
    }
}

impl std::error::Error for KernelNameError {}

/// What the pass did: the entries that note their name, and those that no longer do.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The rewritten IR.
    pub ir: String,
    /// The functions that keep the record (they can reach a foreign-call failure).
    pub recording: Vec<String>,
    /// The functions whose record was deleted.
    pub deleted: Vec<String>,
}

struct Function {
    /// The defined functions and globals its body names (calls or addresses).
    refs: HashSet<String>,
    /// Whether it reads the slot (names it other than in a call to [`ENTER_KERNEL`]).
    reads_slot: bool,
    /// Whether it makes an indirect call (through a function pointer).
    indirect: bool,
    /// The lines (indices into the module's lines) that call [`ENTER_KERNEL`].
    enter_calls: Vec<usize>,
}

/// Resolves [`ENTER_KERNEL`] in the textual LLVM IR module `ir` (see the module docs).
/// `None` when the module does not call it (nothing to do).
pub fn resolve(ir: &str) -> Result<Option<Resolved>, KernelNameError> {
    let callee = format!("@{ENTER_KERNEL}(");
    if !ir.contains(&callee) {
        return Ok(None);
    }
    let slot = format!("@{CURRENT_KERNEL}");
    let lines: Vec<&str> = ir.lines().collect();
    let mut functions: HashMap<String, Function> = HashMap::new();
    let mut order = Vec::new();
    let mut declare_line = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("declare ") && line.contains(&callee) {
            declare_line = Some(i);
        }
        if !line.starts_with("define ") {
            i += 1;
            continue;
        }
        let name = defined_name(line)
            .ok_or_else(|| KernelNameError(format!("a definition without a name: `{line}`")))?;
        let mut f = Function {
            refs: HashSet::new(),
            reads_slot: false,
            indirect: false,
            enter_calls: Vec::new(),
        };
        i += 1;
        while i < lines.len() && lines[i] != "}" {
            let body = lines[i];
            if body.contains(&callee) {
                f.enter_calls.push(i);
            } else {
                if names_symbol(body, &slot) {
                    f.reads_slot = true;
                }
                if is_indirect_call(body) {
                    f.indirect = true;
                }
                f.refs.extend(symbols(body));
            }
            i += 1;
        }
        order.push(name.clone());
        functions.insert(name, f);
        i += 1;
    }
    let any_reader = functions.values().any(|f| f.reads_slot);
    // Whether a function's calls can reach a reader of the slot: a reader, an indirect call
    // (when some reader exists), or a call (or address) of such a function.
    let mut reaches: HashMap<&str, bool> = HashMap::new();
    for name in &order {
        let mut seen = HashSet::new();
        let mut stack = vec![name.as_str()];
        let mut found = false;
        while let Some(n) = stack.pop() {
            if !seen.insert(n) {
                continue;
            }
            let Some(f) = functions.get(n) else { continue };
            if f.reads_slot || (any_reader && f.indirect) {
                found = true;
                break;
            }
            stack.extend(f.refs.iter().map(String::as_str));
        }
        reaches.insert(name, found);
    }
    let mut delete = HashSet::new();
    let (mut recording, mut deleted) = (Vec::new(), Vec::new());
    for name in &order {
        let f = &functions[name];
        if f.enter_calls.is_empty() {
            continue;
        }
        if reaches[name.as_str()] {
            recording.push(name.clone());
        } else {
            delete.extend(f.enter_calls.iter().copied());
            deleted.push(name.clone());
        }
    }
    if let Some(l) = declare_line {
        delete.insert(l);
    }
    let mut out = String::with_capacity(ir.len() + 512);
    for (k, line) in lines.iter().enumerate() {
        if !delete.contains(&k) {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !recording.is_empty() {
        let global = lines
            .iter()
            .find(|l| l.starts_with(&format!("{slot} ")))
            .ok_or_else(|| {
                KernelNameError(format!(
                    "{} call(s) it but the module does not define {slot}",
                    recording.join(", ")
                ))
            })?;
        if !global.contains("addrspace(3)") {
            return Err(KernelNameError(format!(
                "{slot} is not in the shared state space: `{global}`"
            )));
        }
        out.push_str(&format!(
            "\ndefine internal void @{ENTER_KERNEL}(ptr %slot, ptr %name, i64 %len) alwaysinline nounwind {{\n  \
             %addr = ptrtoint ptr %name to i64\n  \
             store atomic i64 %addr, ptr addrspace(3) {slot} syncscope(\"block\") monotonic, align 8\n  \
             %second = getelementptr inbounds i8, ptr addrspace(3) {slot}, i64 8\n  \
             store atomic i64 %len, ptr addrspace(3) %second syncscope(\"block\") monotonic, align 8\n  \
             ret void\n}}\n"
        ));
    }
    Ok(Some(Resolved {
        ir: out,
        recording,
        deleted,
    }))
}

/// The name a `define` line defines (quotes removed).
fn defined_name(line: &str) -> Option<String> {
    let at = line.find('@')?;
    let (name, _) = split_symbol(&line[at + 1..])?;
    Some(name)
}

/// Parses a symbol name at the start of `s` (after `@`): a quoted name, or name characters.
fn split_symbol(s: &str) -> Option<(String, &str)> {
    if let Some(q) = s.strip_prefix('"') {
        let end = q.find('"')?;
        return Some((q[..end].to_owned(), &q[end + 1..]));
    }
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '-')))
        .unwrap_or(s.len());
    (end > 0).then(|| (s[..end].to_owned(), &s[end..]))
}

/// Every `@symbol` a line names.
fn symbols(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find('@') {
        match split_symbol(&rest[at + 1..]) {
            Some((name, tail)) => {
                out.push(name);
                rest = tail;
            }
            None => rest = &rest[at + 1..],
        }
    }
    out
}

/// Whether `line` names `symbol` (`@name`, not a longer name that starts the same).
fn names_symbol(line: &str, symbol: &str) -> bool {
    let name = &symbol[1..];
    symbols(line).iter().any(|s| s == name)
}

/// Whether `line` is a call through a function pointer: the callee (the first `@name(` or
/// `%name(` after `call`) is a local value. Inline assembly is no call.
fn is_indirect_call(line: &str) -> bool {
    let t = line.trim_start();
    let Some(pos) = find_call(t) else {
        return false;
    };
    let rest = &t[pos..];
    if rest.contains(" asm ") {
        return false;
    }
    let bytes = rest.as_bytes();
    for (k, &b) in bytes.iter().enumerate() {
        if b != b'@' && b != b'%' {
            continue;
        }
        let Some((_, tail)) = split_symbol(&rest[k + 1..]) else {
            continue;
        };
        if tail.starts_with('(') {
            return b == b'%';
        }
    }
    false
}

/// Where the text after the `call` (or `invoke`) keyword starts, if `line` is a call.
fn find_call(line: &str) -> Option<usize> {
    for kw in ["call ", "invoke "] {
        let mut from = 0;
        while let Some(p) = line[from..].find(kw) {
            let at = from + p;
            let before = line[..at].chars().next_back();
            if before.is_none_or(|c| c == ' ') {
                return Some(at + kw.len());
            }
            from = at + kw.len();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const IR: &str = r#"@__gpukernel_current_kernel = internal addrspace(3) global [16 x i8] undef, align 8
@alloc_a = private unnamed_addr constant [4 x i8] c"fast", align 1
@alloc_b = private unnamed_addr constant [6 x i8] c"checks", align 1

declare void @__gpukernel_enter_kernel(ptr, ptr, i64) unnamed_addr

define void @fast(ptr %x) unnamed_addr #0 {
start:
  tail call void @__gpukernel_enter_kernel(ptr addrspacecast (ptr addrspace(3) @__gpukernel_current_kernel to ptr), ptr nonnull @alloc_a, i64 4)
  store float 1.0, ptr %x, align 4
  ret void
}

define void @checks(ptr %x) unnamed_addr #0 {
start:
  tail call void @__gpukernel_enter_kernel(ptr addrspacecast (ptr addrspace(3) @__gpukernel_current_kernel to ptr), ptr nonnull @alloc_b, i64 6)
  %s = call i32 @wrapper(ptr %x)
  ret void
}

define internal i32 @wrapper(ptr %x) unnamed_addr {
start:
  %s = call i32 @foreign(ptr %x)
  %bad = icmp ne i32 %s, 0
  br i1 %bad, label %fail, label %ok
fail:
  tail call void @report(i32 %s)
  br label %ok
ok:
  ret i32 %s
}

define internal void @report(i32 %s) unnamed_addr cold noinline {
start:
  %k = load atomic i64, ptr addrspace(3) @__gpukernel_current_kernel monotonic, align 8
  ret void
}

declare i32 @foreign(ptr)
"#;

    #[test]
    fn only_the_kernel_that_can_fail_keeps_its_record() {
        let r = resolve(IR).unwrap().unwrap();
        assert_eq!(r.recording, ["checks"]);
        assert_eq!(r.deleted, ["fast"]);
        let fast = r.ir.split("define void @fast").nth(1).unwrap();
        let fast = &fast[..fast.find('}').unwrap()];
        assert!(!fast.contains(ENTER_KERNEL), "{fast}");
        assert!(!r.ir.contains("declare void @__gpukernel_enter_kernel"));
        assert!(r.ir.contains("define internal void @__gpukernel_enter_kernel(ptr %slot"));
        assert!(r.ir.contains("syncscope(\"block\") monotonic"));
    }

    #[test]
    fn no_reader_deletes_every_record() {
        let ir = IR.replace(
            "%k = load atomic i64, ptr addrspace(3) @__gpukernel_current_kernel monotonic, align 8",
            "",
        );
        let r = resolve(&ir).unwrap().unwrap();
        assert!(r.recording.is_empty());
        assert_eq!(r.deleted, ["fast", "checks"]);
        assert!(!r.ir.contains(ENTER_KERNEL), "{}", r.ir);
    }

    #[test]
    fn an_indirect_call_keeps_the_record() {
        let ir = IR.replace(
            "  store float 1.0, ptr %x, align 4",
            "  %f = load ptr, ptr %x, align 8\n  call void %f(ptr %x)",
        );
        let r = resolve(&ir).unwrap().unwrap();
        assert_eq!(r.recording, ["fast", "checks"]);
    }

    #[test]
    fn inline_assembly_and_varargs_calls_are_direct() {
        assert!(!is_indirect_call(
            r#"  call void asm sideeffect "exit;", ""()"#
        ));
        assert!(!is_indirect_call(
            "  %r = call i32 (ptr, ...) @vprintf(ptr %fmt, ptr %args)"
        ));
        assert!(is_indirect_call("  %r = tail call float %7(float %x)"));
        assert!(!is_indirect_call("  %r = fadd float %a, %b"));
    }

    #[test]
    fn a_module_without_entries_is_untouched() {
        assert_eq!(
            resolve("define void @f() {\n  ret void\n}\n").unwrap(),
            None
        );
    }

    #[test]
    fn a_kept_record_needs_the_shared_slot() {
        let ir = IR.replace(
            "@__gpukernel_current_kernel = internal addrspace(3) global",
            "@__gpukernel_current_kernel = internal global",
        );
        let e = resolve(&ir).unwrap_err();
        assert!(e.to_string().contains("shared state space"), "{e}");
    }
}

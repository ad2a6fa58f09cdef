//! PTX text: the one reader of PTX modules.
//!
//! [`Ptx::parse`] splits a module into its top-level statements, skipping comments and
//! strings: a line directive (`.version`, `.target`, `.address_size`, `.file`) ends with its
//! line; any other statement ends with a `;` outside braces, or with the `}` closing its body
//! (a function's, a `.section`'s; an initializer `= { … }` still ends with its `;`). Each
//! statement is classified as a function (`.entry` or `.func`, with its linkage, name and
//! whether it has a body), a variable (with its state space and name) or something else.
//! Everything the runtime asks of a PTX text is answered from those statements: the kernels
//! ([`Ptx::entries`]), the foreign functions it declares ([`Ptx::extern_functions`]), the
//! symbols it defines ([`Ptx::definitions`]), and a copy with only some kernels
//! ([`Ptx::select_entries`]).

use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// Functions that the PTX JIT provides itself (system calls), so an `.extern .func` of them
/// needs no definition.
pub(crate) const SYSTEM_CALLS: [&str; 4] = ["vprintf", "malloc", "free", "__assertfail"];

/// Functions of the CUDA device runtime that the driver resolves when it loads a module:
/// `ptxas` and the linker leave them undefined (a relocation the driver fills), so no input
/// defines them and none is needed. `cudaGraphSetConditional` is what
/// `gpukernel_device::graph::ConditionalHandle` calls.
pub(crate) const DRIVER_PROVIDED: [&str; 1] = ["cudaGraphSetConditional"];

/// Whether `name` needs no definition from an input: a system call the PTX JIT provides
/// ([`SYSTEM_CALLS`]) or a device-runtime function the driver resolves at load
/// ([`DRIVER_PROVIDED`]).
pub(crate) fn is_system_call(name: &str) -> bool {
    SYSTEM_CALLS.contains(&name) || DRIVER_PROVIDED.contains(&name)
}

/// A PTX integer literal: decimal, `0x` hexadecimal, `0b` binary, with an optional `U` suffix.
fn parse_integer(s: &str) -> Option<u64> {
    let s = s.strip_suffix('U').unwrap_or(s);
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()
    } else if let Some(n) = s.strip_prefix('-') {
        n.parse::<u64>().ok().map(u64::wrapping_neg)
    } else {
        s.parse().ok()
    }
}

/// The largest global [`Ptx::global_bytes`] reads (a kernel's signature global is 24 bytes
/// and 16 per parameter).
pub(crate) const MAX_GLOBAL_BYTES: usize = 1 << 16;

/// The names of the kernels (`.entry` functions with a body) of a PTX text, in order.
pub(crate) fn entries(text: &str) -> Vec<String> {
    Ptx::parse(text).entries()
}

/// The functions a PTX text declares `.extern .func` (defined elsewhere), in order, once each.
pub(crate) fn extern_functions(text: &str) -> Vec<String> {
    Ptx::parse(text).extern_functions()
}

/// The linkage directive of a function or variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Linkage {
    /// None: visible in this module only.
    Internal,
    /// `.visible`: defined here, visible to other modules.
    Visible,
    /// `.extern`: defined in another module.
    Extern,
    /// `.weak`.
    Weak,
    /// `.common`.
    Common,
}

/// What a top-level statement is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// A function definition or declaration.
    Function {
        name: String,
        /// `.entry` (a kernel) rather than `.func`.
        entry: bool,
        linkage: Linkage,
        /// A definition (with a `{ … }` body) rather than a declaration.
        body: bool,
    },
    /// A variable in a state space.
    Variable {
        name: String,
        linkage: Linkage,
        /// `.global` or `.const` (rather than `.shared` or `.local`).
        global_or_const: bool,
    },
    /// Anything else: directives, `.section`s, statements this reader does not know.
    Other,
}

/// The size of a `.shared` variable declaration (`.shared .align 4 .b8 name[40960];`,
/// `.shared .u32 x;`, `.shared .align 16 .f32 m[4][8];`) rounded up to its alignment; `None`
/// for an unsized array (`name[]`) or a type this reader does not know.
fn shared_variable_bytes(clean: &str) -> Option<u64> {
    let declaration = clean.split(['=', ';']).next()?;
    let mut align = 1u64;
    let mut element = None;
    let mut lanes = 1u64;
    let mut words = declaration.split_whitespace();
    while let Some(word) = words.next() {
        if word == ".align" {
            align = parse_integer(words.next()?)?;
        } else if let Some(ty) = word.strip_prefix('.') {
            let bits = ty
                .trim_start_matches(['b', 'u', 's', 'f'])
                .parse::<u64>()
                .ok()
                .filter(|_| ty.starts_with(['b', 'u', 's', 'f']));
            if let Some(bits) = bits {
                element = Some(bits.div_ceil(8));
            } else if ty == "pred" {
                element = Some(1);
            } else if let Some(n) = ty.strip_prefix('v').and_then(|n| n.parse::<u64>().ok()) {
                lanes = n;
            }
        }
    }
    let mut bytes = element?.checked_mul(lanes)?;
    let mut rest = declaration;
    while let Some(open) = rest.find('[') {
        let close = open + rest[open..].find(']')?;
        let count = parse_integer(rest[open + 1..close].trim())?;
        bytes = bytes.checked_mul(count)?;
        rest = &rest[close + 1..];
    }
    bytes.div_ceil(align.max(1)).checked_mul(align.max(1))
}

/// One top-level statement.
#[derive(Debug, Clone)]
struct Statement {
    /// Its bytes in the text, from its first character to its terminator.
    range: Range<usize>,
    /// Its text with comments replaced by spaces.
    clean: String,
    item: Item,
}

impl Statement {
    /// The function this statement declares or defines.
    fn function(&self) -> Option<&str> {
        match &self.item {
            Item::Function { name, .. } => Some(name),
            _ => None,
        }
    }

    fn is_entry(&self) -> bool {
        matches!(self.item, Item::Function { entry: true, .. })
    }

    fn is_visible(&self) -> bool {
        matches!(
            self.item,
            Item::Function {
                linkage: Linkage::Visible,
                ..
            }
        )
    }
}

/// A PTX module split into top-level statements.
#[derive(Debug, Clone)]
pub(crate) struct Ptx<'a> {
    text: &'a str,
    statements: Vec<Statement>,
    /// LLVM's `// .globl name` comments between statements: their bytes and the name.
    globl_comments: Vec<(Range<usize>, String)>,
}

/// Identifier characters of PTX (`%` only leads an identifier; this reader need not care).
fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'%'
}

/// The identifier at the start of `s`, if any.
fn leading_ident(s: &str) -> Option<&str> {
    let end = s.bytes().position(|c| !is_ident(c)).unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// The directive word (`.entry`) at the start of `s`, if any.
fn leading_directive(s: &str) -> Option<&str> {
    let rest = s.strip_prefix('.')?;
    let end = rest
        .bytes()
        .position(|c| !is_ident(c))
        .unwrap_or(rest.len());
    (end > 0).then(|| &s[..end + 1])
}

/// Directives that end with their line rather than with `;`.
const LINE_DIRECTIVES: [&str; 4] = [".version", ".target", ".address_size", ".file"];

/// The end of a string literal starting at `start` (a `"`): after its closing quote, or at the
/// end of its line.
fn skip_string(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            b'\n' => return i,
            _ => i += 1,
        }
    }
    b.len()
}

/// The end of a comment starting at `start` (`//` or `/*`): the newline ending a line comment
/// (not included), or after the `*/` of a block comment; the end of the text when unclosed.
fn skip_comment(text: &str, start: usize) -> usize {
    let rest = &text[start..];
    if rest.starts_with("//") {
        rest.find('\n').map_or(text.len(), |i| start + i)
    } else {
        rest[2..]
            .find("*/")
            .map_or(text.len(), |i| start + 2 + i + 2)
    }
}

fn starts_comment(b: &[u8], i: usize) -> bool {
    b[i] == b'/' && matches!(b.get(i + 1), Some(b'/' | b'*'))
}

impl<'a> Ptx<'a> {
    /// Splits `text` into statements. Never fails: text that is not PTX yields statements of
    /// no known kind.
    pub(crate) fn parse(text: &'a str) -> Ptx<'a> {
        let b = text.as_bytes();
        let mut statements = Vec::new();
        let mut globl_comments = Vec::new();
        let mut pos = 0;
        while pos < b.len() {
            if b[pos].is_ascii_whitespace() || b[pos] == 0 {
                pos += 1;
                continue;
            }
            if starts_comment(b, pos) {
                let end = skip_comment(text, pos);
                if let Some(name) = text[pos..end]
                    .strip_prefix("//")
                    .and_then(|c| c.trim_start().strip_prefix(".globl"))
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                {
                    globl_comments.push((pos..end, name.to_string()));
                }
                pos = end;
                continue;
            }
            let line =
                leading_directive(&text[pos..]).is_some_and(|d| LINE_DIRECTIVES.contains(&d));
            let (end, clean, body) = scan_statement(text, pos, line);
            let item = classify(&clean, body);
            statements.push(Statement {
                range: pos..end,
                clean,
                item,
            });
            pos = end;
        }
        Ptx {
            text,
            statements,
            globl_comments,
        }
    }

    /// Whether the PTX declares a global (or `.const`) variable `symbol`.
    /// The global (or `.const`) variables the module defines with `.visible` linkage, in
    /// order.
    pub(crate) fn visible_globals(&self) -> Vec<String> {
        self.statements
            .iter()
            .filter_map(|s| match &s.item {
                Item::Variable {
                    name,
                    linkage: Linkage::Visible,
                    global_or_const: true,
                } => Some(name.clone()),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn has_global(&self, symbol: &str) -> bool {
        self.statements.iter().any(|s| {
            matches!(&s.item, Item::Variable { name, global_or_const: true, .. } if name == symbol)
        })
    }

    /// The bytes of the initialized global (or `.const`) variable `symbol`, as the device
    /// holds them: a scalar or an array of `.b8`/`.u8`/`.s8`, 16-, 32- or 64-bit elements
    /// (`.b64 NAME[3] = {1, 2, 3};`, `.b8 NAME[8] = {..};`, `.u64 NAME = 5;`), little-endian,
    /// the elements not listed zero. `None` when there is no such variable, its type is
    /// another, the initializer does not parse, or it is larger than [`MAX_GLOBAL_BYTES`].
    pub(crate) fn global_bytes(&self, symbol: &str) -> Option<Vec<u8>> {
        let s = self.statements.iter().find(|s| {
            matches!(&s.item, Item::Variable { name, global_or_const: true, .. } if name == symbol)
        })?;
        let t = s.clean.trim().trim_end_matches(';');
        let (decl, init) = match t.split_once('=') {
            Some((d, i)) => (d, Some(i.trim())),
            None => (t, None),
        };
        let element = decl.split_whitespace().find_map(|w| match w {
            ".b8" | ".u8" | ".s8" => Some(1usize),
            ".b16" | ".u16" | ".s16" => Some(2),
            ".b32" | ".u32" | ".s32" => Some(4),
            ".b64" | ".u64" | ".s64" => Some(8),
            _ => None,
        })?;
        let count = match decl.split_once('[') {
            Some((_, rest)) => parse_integer(rest.split_once(']')?.0.trim())?,
            None => 1,
        };
        let len = usize::try_from(count).ok()?.checked_mul(element)?;
        if len > MAX_GLOBAL_BYTES {
            return None;
        }
        let mut bytes = vec![0u8; len];
        if let Some(init) = init {
            let list = init.trim_start_matches('{').trim_end_matches('}');
            for (i, v) in list
                .split(',')
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .enumerate()
            {
                let v = parse_integer(v)?;
                if element < 8
                    && v >> (8 * element) != 0
                    && v.wrapping_neg() >> (8 * element - 1) != 0
                {
                    return None;
                }
                let at = i.checked_mul(element)?;
                bytes
                    .get_mut(at..at + element)?
                    .copy_from_slice(&v.to_le_bytes()[..element]);
            }
        }
        Some(bytes)
    }

    /// The kernels: `.entry` functions with a body, in order.
    pub(crate) fn entries(&self) -> Vec<String> {
        self.statements
            .iter()
            .filter_map(|s| match &s.item {
                Item::Function {
                    name,
                    entry: true,
                    body: true,
                    ..
                } => Some(name.clone()),
                _ => None,
            })
            .collect()
    }

    /// The functions declared `.extern .func`, in order, once each.
    pub(crate) fn extern_functions(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for s in &self.statements {
            if let Item::Function {
                name,
                entry: false,
                linkage: Linkage::Extern,
                ..
            } = &s.item
                && !names.contains(name)
            {
                names.push(name.clone());
            }
        }
        names
    }

    /// The `.global` and `.const` variables declared `.extern` (defined in another module), in
    /// order, once each. (An `.extern .shared` array is the launch's dynamic shared memory,
    /// defined by no module.)
    pub(crate) fn extern_globals(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for s in &self.statements {
            if let Item::Variable {
                name,
                linkage: Linkage::Extern,
                global_or_const: true,
            } = &s.item
                && !names.contains(name)
            {
                names.push(name.clone());
            }
        }
        names
    }

    /// The names the module defines with external linkage: `.visible` functions, kernels, and
    /// `.visible` `.global`/`.const` variables (in order; a name may repeat).
    pub(crate) fn definitions(&self) -> Vec<String> {
        self.statements
            .iter()
            .filter_map(|s| match &s.item {
                Item::Function {
                    name,
                    linkage: Linkage::Visible,
                    ..
                }
                | Item::Function {
                    name,
                    entry: true,
                    linkage: Linkage::Internal,
                    ..
                }
                | Item::Variable {
                    name,
                    linkage: Linkage::Visible,
                    global_or_const: true,
                } => Some(name.clone()),
                _ => None,
            })
            .collect()
    }

    /// The texts of the `declare_device!` records in the module: the initializers of the
    /// `.global .b8 __gpukernel_foreign_*[N] = {..}` variables, decoded as UTF-8 (records that
    /// are not text are skipped).
    pub(crate) fn foreign_records(&self) -> Vec<String> {
        self.records(FOREIGN_RECORD_PREFIX)
    }

    /// The texts of the records nvptx-builder leaves for each source it linked in at build
    /// time (`__gpukernel_lto_*`; see `format::lto`).
    pub(crate) fn lto_records(&self) -> Vec<String> {
        self.records(crate::format::lto::RECORD_PREFIX)
    }

    /// The initializers of the `.global .b8 <prefix>*[N] = {..}` variables, as UTF-8.
    fn records(&self, prefix: &str) -> Vec<String> {
        self.statements
            .iter()
            .filter_map(|s| match &s.item {
                Item::Variable { name, .. } if name.starts_with(prefix) => {
                    let init = s.clean.split_once('=')?.1;
                    let inner = init.split_once('{')?.1.split_once('}')?.0;
                    let bytes: Option<Vec<u8>> = inner
                        .split(',')
                        .map(|b| b.trim().parse::<u8>().ok())
                        .collect();
                    String::from_utf8(bytes?).ok()
                }
                _ => None,
            })
            .collect()
    }

    /// The parameter list of function `name`: of its definition (a `.func` with a body) if
    /// the module has one, else of its declaration.
    pub(crate) fn function_params(&self, name: &str) -> Option<FuncParams> {
        let mut found = None;
        for s in &self.statements {
            if let Item::Function {
                name: n,
                entry: false,
                body,
                ..
            } = &s.item
                && n == name
            {
                let params = parse_func_params(&s.clean)?;
                if *body {
                    return Some(params);
                }
                found = Some(params);
            }
        }
        found
    }

    /// The `.func`s the module defines (with a body) with external linkage.
    pub(crate) fn defined_functions(&self) -> Vec<String> {
        self.statements
            .iter()
            .filter_map(|s| match &s.item {
                Item::Function {
                    name,
                    entry: false,
                    body: true,
                    linkage: Linkage::Visible | Linkage::Weak,
                } => Some(name.clone()),
                _ => None,
            })
            .collect()
    }

    /// The most threads a block of kernel `entry` may have by its performance directives:
    /// the product of `.maxntid x[, y[, z]]` or of `.reqntid x[, y[, z]]` (the smaller when
    /// both are given), between its parameter list and its body (what nvptx-builder's
    /// `launch_bounds` and CUDA C's `__launch_bounds__` write). `None` without either, or when
    /// `entry` is no kernel of the module.
    pub(crate) fn entry_max_threads(&self, entry: &str) -> Option<u64> {
        let s = self
            .statements
            .iter()
            .find(|s| s.is_entry() && s.function() == Some(entry))?;
        // The header: up to the body's brace (the parameter list holds no brace).
        let header = s.clean.split('{').next().unwrap_or_default();
        let product = |directive: &str| -> Option<u64> {
            let at = header.find(directive)? + directive.len();
            let mut product = 1u64;
            for (i, word) in header[at..].split(',').enumerate() {
                let word = word.trim();
                // The next directive, or the end of the header: the last extent was before.
                let digits: String = word
                    .chars()
                    .take_while(char::is_ascii_alphanumeric)
                    .collect();
                let n = parse_integer(&digits)?;
                product = product.saturating_mul(n);
                if i == 2 || digits.len() != word.len() {
                    break;
                }
            }
            Some(product)
        };
        match (product(".maxntid"), product(".reqntid")) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The bytes of `.shared` variables that kernel `entry` reaches (its body names them, or
    /// a function it calls does, transitively), each rounded up to its alignment, as `ptxas`
    /// counts a kernel's static shared memory; `None` when `entry` is no kernel of the module.
    /// `.extern .shared` arrays (the launch-sized dynamic shared memory) count nothing.
    pub(crate) fn static_shared_bytes(&self, entry: &str) -> Option<u64> {
        let start = self
            .statements
            .iter()
            .position(|s| s.is_entry() && s.function() == Some(entry))?;
        let mut shared: HashMap<&str, u64> = HashMap::new();
        let mut functions: HashMap<&str, usize> = HashMap::new();
        for (i, s) in self.statements.iter().enumerate() {
            match &s.item {
                Item::Function {
                    name, body: true, ..
                } => {
                    functions.insert(name, i);
                }
                Item::Variable {
                    name,
                    linkage,
                    global_or_const: false,
                } if *linkage != Linkage::Extern => {
                    if let Some(bytes) = shared_variable_bytes(&s.clean) {
                        shared.insert(name, bytes);
                    }
                }
                _ => {}
            }
        }
        let mut seen_functions = HashSet::from([start]);
        let mut seen_shared: HashSet<&str> = HashSet::new();
        let mut queue = vec![start];
        let mut total = 0u64;
        while let Some(i) = queue.pop() {
            let s = &self.statements[i];
            // LLVM moves a `.shared` variable that one function uses into that function's
            // body ("demoted variable"); it counts for every kernel reaching the function.
            if let Some(open) = s.clean.find('{') {
                total = s.clean[open + 1..]
                    .lines()
                    .map(str::trim_start)
                    .filter(|l| l.starts_with(".shared"))
                    .filter_map(shared_variable_bytes)
                    .fold(total, u64::saturating_add);
            }
            for token in s.clean.split(|c: char| !c.is_ascii() || !is_ident(c as u8)) {
                if let Some(&bytes) = shared.get(token) {
                    if seen_shared.insert(token) {
                        total = total.saturating_add(bytes);
                    }
                } else if let Some(&f) = functions.get(token)
                    && seen_functions.insert(f)
                {
                    queue.push(f);
                }
            }
        }
        Some(total)
    }

    /// The module with only the kernels named in `keep`: the other kernels, their `// .globl`
    /// comments, and the declarations and internal functions nothing references any more are
    /// removed (visible functions stay: another module may call them). Returns the names of
    /// `keep` that are not kernels of the module.
    pub(crate) fn select_entries(&self, keep: &[&str]) -> Result<String, Vec<String>> {
        let present = self.entries();
        let missing: Vec<String> = keep
            .iter()
            .filter(|k| !present.iter().any(|p| p == *k))
            .map(|k| k.to_string())
            .collect();
        if !missing.is_empty() {
            return Err(missing);
        }
        let dropped: HashSet<&str> = present
            .iter()
            .map(String::as_str)
            .filter(|p| !keep.contains(p))
            .collect();
        let mut removed: Vec<bool> = self
            .statements
            .iter()
            .map(|s| s.is_entry() && s.function().is_some_and(|n| !keep.contains(&n)))
            .collect();

        // Device functions and declarations that may go: not kernels, not visible.
        let removable = |s: &Statement| !s.is_entry() && !s.is_visible();
        let candidates: HashSet<&str> = self
            .statements
            .iter()
            .filter(|s| removable(s))
            .filter_map(Statement::function)
            .collect();
        // For each candidate, how many kept statements other than its own mention it.
        let mentions: Vec<HashSet<&str>> = self
            .statements
            .iter()
            .map(|s| {
                s.clean
                    .split(|c: char| !c.is_ascii() || !is_ident(c as u8))
                    .filter(|t| candidates.contains(t) && Some(*t) != s.function())
                    .collect()
            })
            .collect();
        let mut references: HashMap<&str, usize> = candidates.iter().map(|&c| (c, 0)).collect();
        for (i, names) in mentions.iter().enumerate() {
            if !removed[i] {
                for name in names {
                    *references.entry(name).or_default() += 1;
                }
            }
        }
        let mut unreferenced: Vec<&str> = references
            .iter()
            .filter(|&(_, &n)| n == 0)
            .map(|(&name, _)| name)
            .collect();
        while let Some(name) = unreferenced.pop() {
            for (i, s) in self.statements.iter().enumerate() {
                if removed[i] || !removable(s) || s.function() != Some(name) {
                    continue;
                }
                removed[i] = true;
                for other in &mentions[i] {
                    if let Some(count) = references.get_mut(other)
                        && *count > 0
                    {
                        *count -= 1;
                        if *count == 0 {
                            unreferenced.push(other);
                        }
                    }
                }
            }
        }

        let mut cuts: Vec<Range<usize>> = self
            .statements
            .iter()
            .zip(&removed)
            .filter(|(_, removed)| **removed)
            .map(|(s, _)| s.range.clone())
            .chain(
                self.globl_comments
                    .iter()
                    .filter(|(_, name)| dropped.contains(name.as_str()))
                    .map(|(range, _)| range.clone()),
            )
            .map(|r| self.whole_lines(r))
            .collect();
        cuts.sort_by_key(|r| r.start);
        let mut out = String::with_capacity(self.text.len());
        let mut at = 0;
        for cut in cuts {
            if cut.start > at {
                out.push_str(&self.text[at..cut.start]);
            }
            at = at.max(cut.end);
        }
        out.push_str(&self.text[at..]);
        if !out.ends_with('\n') {
            out.push('\n');
        }
        Ok(out)
    }

    /// `range` widened to whole lines where only blanks share its first and last lines.
    fn whole_lines(&self, range: Range<usize>) -> Range<usize> {
        let text = self.text;
        let line_start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
        let start = if text[line_start..range.start].trim().is_empty() {
            line_start
        } else {
            range.start
        };
        let line_end = text[range.end..]
            .find('\n')
            .map_or(text.len(), |i| range.end + i + 1);
        let end = if text[range.end..line_end].trim().is_empty() {
            line_end
        } else {
            range.end
        };
        start..end
    }
}

/// The prefix of the globals that hold `declare_device!`'s declaration records.
pub(crate) const FOREIGN_RECORD_PREFIX: &str = "__gpukernel_foreign_";

/// One parameter (or the return value) of a PTX function, as the ABI passes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParamSlot {
    /// A scalar of this many bits (`.b32`, `.f64`, `.u64`, ...).
    Scalar(u32),
    /// An aggregate of this many bytes (`.align A .b8 name[N]`).
    Bytes(u32),
}

/// A PTX function's return value and parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FuncParams {
    /// The return parameter, if any.
    pub(crate) ret: Option<ParamSlot>,
    /// The parameters, in order.
    pub(crate) params: Vec<ParamSlot>,
}

/// Parses `.func (ret) name(params)` from a statement's clean text.
fn parse_func_params(clean: &str) -> Option<FuncParams> {
    let after = clean.split_once(".func")?.1.trim_start();
    let (ret, after) = if let Some(rest) = after.strip_prefix('(') {
        let close = rest.find(')')?;
        (
            parse_param_list(&rest[..close])?.into_iter().next(),
            &rest[close + 1..],
        )
    } else {
        (None, after)
    };
    let open = after.find('(');
    let params = match open {
        // A body or `;` before any `(`: no parameter list.
        Some(open) if !after[..open].contains(['{', ';']) => {
            let rest = &after[open + 1..];
            parse_param_list(&rest[..rest.find(')')?])?
        }
        _ => Vec::new(),
    };
    Some(FuncParams { ret, params })
}

/// `.param .b32 a, .param .align 4 .b8 b[8]` → the slots.
fn parse_param_list(list: &str) -> Option<Vec<ParamSlot>> {
    list.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let words: Vec<&str> = p.split_whitespace().collect();
            let ty = words.iter().find(|w| {
                w.starts_with('.')
                    && w.len() > 2
                    && matches!(w.as_bytes()[1], b'b' | b'u' | b's' | b'f')
                    && w[2..].bytes().all(|c| c.is_ascii_digit())
            })?;
            let bits: u32 = ty[2..].parse().ok()?;
            let last = words.last()?;
            match last.split_once('[') {
                Some((_, n)) => {
                    let n: u32 = n.trim_end_matches(']').parse().ok()?;
                    Some(ParamSlot::Bytes(n * bits / 8))
                }
                None => Some(ParamSlot::Scalar(bits)),
            }
        })
        .collect()
}

/// Scans the statement starting at `start`: returns where it ends, its text without comments,
/// and whether it has a body (a `{` at its top level, not after `=`).
fn scan_statement(text: &str, start: usize, line: bool) -> (usize, String, bool) {
    let b = text.as_bytes();
    let mut clean = String::new();
    let mut segment = start;
    let mut depth = 0usize;
    let mut initializer = false;
    let mut body = false;
    let mut i = start;
    while i < b.len() {
        if starts_comment(b, i) {
            let line_comment = b[i + 1] == b'/';
            clean.push_str(&text[segment..i]);
            if line && line_comment {
                return (i, clean, false);
            }
            i = skip_comment(text, i);
            if !line_comment {
                clean.push(' ');
            }
            segment = i;
            continue;
        }
        match b[i] {
            b'"' => {
                i = skip_string(b, i);
                continue;
            }
            b'\n' if line => break,
            b'{' if !line => {
                if depth == 0 && !initializer {
                    body = true;
                }
                depth += 1;
            }
            b'}' if !line && depth > 0 => {
                depth -= 1;
                if depth == 0 && body {
                    i += 1;
                    break;
                }
            }
            b'=' if depth == 0 => initializer = true,
            b';' if !line && depth == 0 => {
                i += 1;
                break;
            }
            _ => {}
        }
        i += 1;
    }
    let end = i.min(b.len());
    clean.push_str(&text[segment..end]);
    (end, clean, body)
}

/// Classifies a statement from its comment-free text.
fn classify(clean: &str, body: bool) -> Item {
    let mut rest = clean.trim_start();
    let mut linkage = Linkage::Internal;
    while let Some(word) = leading_directive(rest) {
        linkage = match word {
            ".visible" => Linkage::Visible,
            ".extern" => Linkage::Extern,
            ".weak" => Linkage::Weak,
            ".common" => Linkage::Common,
            _ => break,
        };
        rest = rest[word.len()..].trim_start();
    }
    let Some(keyword) = leading_directive(rest) else {
        return Item::Other;
    };
    let after = &rest[keyword.len()..];
    match keyword {
        ".entry" | ".func" => {
            let mut after = after.trim_start();
            if after.starts_with('(') {
                // The return parameter list: `.func (.param .b32 func_retval0) name(`.
                let Some(close) = after.find(')') else {
                    return Item::Other;
                };
                after = after[close + 1..].trim_start();
            }
            match leading_ident(after) {
                Some(name) => Item::Function {
                    name: name.to_string(),
                    entry: keyword == ".entry",
                    linkage,
                    body,
                },
                None => Item::Other,
            }
        }
        ".global" | ".const" | ".shared" | ".local" => {
            // `.global .align 4 .b8 name[16];` or `.const .u32 name = 1;`
            let declaration = rest.split(['[', '=', ';', '{']).next().unwrap_or("");
            match declaration
                .split_whitespace()
                .last()
                .filter(|n| !n.starts_with('.'))
            {
                Some(name) => Item::Variable {
                    name: name.to_string(),
                    linkage,
                    global_or_const: matches!(keyword, ".global" | ".const"),
                },
                None => Item::Other,
            }
        }
        _ => Item::Other,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A module as LLVM's NVPTX back end writes it, with kernels calling foreign functions.
    const LLVM: &str = "\
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

    /// Hand-written PTX with comments in the way.
    pub(crate) const COMMENTED: &str = r#"
//
// Generated by hand
//
.version 7.8
.target sm_90
.address_size 64

// .entry commented_out(
/* .entry also_commented( */
.visible .entry saxpy(
    .param .f32 saxpy_param_0
)
{
    ret;
}
.func helper()
{
    ret;
}
.entry empty_kernel()
{
    ret;
}
"#;

    /// What a kernels crate's PTX looks like when it calls foreign functions.
    pub(crate) const WITH_EXTERNS: &str = r#"
.version 8.0
.target sm_90
.address_size 64

.extern .func  (.param .b32 func_retval0) mul_f32_f32
(
	.param .b64 mul_f32_f32_param_0,
	.param .b32 mul_f32_f32_param_1
)
;
// .extern .func commented_out(
.extern .func add_one(.param .b64 add_one_param_0);
.extern .func  (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0,
	.param .b64 vprintf_param_1
)
;
.extern .global .align 4 .u32 some_global;
.visible .entry uses_foreign(.param .u64 p)
{
	ret;
}
.visible .entry a_kernel()
{
	ret;
}
"#;

    #[test]
    fn function_parameter_lists() {
        let text = "\
.extern .func  (.param .b32 func_retval0) mul
(
\t.param .b64 mul_param_0,
\t.param .b32 mul_param_1,
\t.param .align 4 .b8 mul_param_2[8]
)
;
.visible .func  (.param .b32 func_retval0) mul(
\t.param .b64 mul_param_0,
\t.param .f64 mul_param_1
)
{
\tret;
}
.func noargs
{
\tret;
}
.visible .global .align 1 .b8 __gpukernel_foreign_mul_1[3] = {97, 61, 98};
";
        let m = Ptx::parse(text);
        assert_eq!(
            m.function_params("mul"),
            Some(FuncParams {
                ret: Some(ParamSlot::Scalar(32)),
                params: vec![ParamSlot::Scalar(64), ParamSlot::Scalar(64)],
            })
        );
        assert_eq!(
            m.function_params("noargs"),
            Some(FuncParams {
                ret: None,
                params: vec![]
            })
        );
        let decl = Ptx::parse(&text[..text.find(".visible .func").unwrap()]);
        assert_eq!(
            decl.function_params("mul").unwrap().params,
            [
                ParamSlot::Scalar(64),
                ParamSlot::Scalar(32),
                ParamSlot::Bytes(8)
            ]
        );
        assert_eq!(m.foreign_records(), ["a=b"]);
        assert_eq!(m.defined_functions(), ["mul"]);
        assert_eq!(m.function_params("absent"), None);
    }

    #[test]
    fn static_shared_bytes_count_what_each_kernel_reaches() {
        let text = "\
.version 8.0
.target sm_90
.address_size 64
.shared .align 4 .b8 _ZN1k6TILE_A17h0E[40960];
.shared .align 16 .f32 tile_b[4][8];
.shared .u32 flag;
.extern .shared .align 16 .b8 dynamic_smem[];
.func helper()
{
\tst.shared.u32 [flag], 1;
\tret;
}
.visible .entry big()
{
\tmov.u64 %rd1, _ZN1k6TILE_A17h0E;
\tmov.u64 %rd2, dynamic_smem;
\tcall.uni helper, ();
\tcall.uni helper, ();
\tret;
}
.visible .entry small()
{
\tmov.u64 %rd1, tile_b;
\tret;
}
.visible .entry demoted()
{
\t.reg .b64 %rd<2>;
\t.shared .align 4 .b8 local_tile[1000];
\tmov.b64 %rd1, local_tile;
\tst.shared.u32 [%rd1], 1;
\tcall.uni helper, ();
\tret;
}
.visible .entry none()
{
\tret;
}
";
        let ptx = Ptx::parse(text);
        assert_eq!(ptx.static_shared_bytes("big"), Some(40960 + 4));
        assert_eq!(ptx.static_shared_bytes("small"), Some(128));
        assert_eq!(ptx.static_shared_bytes("demoted"), Some(1000 + 4));
        assert_eq!(ptx.static_shared_bytes("none"), Some(0));
        assert_eq!(ptx.static_shared_bytes("helper"), None);
        assert_eq!(shared_variable_bytes(".shared .align 8 .b8 x[3]"), Some(8));
        assert_eq!(shared_variable_bytes(".shared .align 8 .b8 x[]"), None);
    }

    #[test]
    fn finds_entries() {
        assert_eq!(entries(LLVM), ["k_a", "k_b"]);
        assert_eq!(entries(COMMENTED), ["saxpy", "empty_kernel"]);
    }

    #[test]
    fn extern_functions_are_found() {
        assert_eq!(
            extern_functions(WITH_EXTERNS),
            ["mul_f32_f32", "add_one", "vprintf"]
        );
        assert!(extern_functions(COMMENTED).is_empty());
        assert_eq!(Ptx::parse(WITH_EXTERNS).extern_globals(), ["some_global"]);
        assert!(Ptx::parse(COMMENTED).extern_globals().is_empty());
        let dynamic = ".extern .shared .align 16 .b8 gpu_launch_sized_workgroup_mem[];\n";
        assert!(Ptx::parse(dynamic).extern_globals().is_empty());
        assert!(is_system_call("vprintf") && !is_system_call("add_one"));
        assert!(is_system_call("cudaGraphSetConditional"));
    }

    #[test]
    fn definitions_are_visible_functions_kernels_and_globals() {
        let mut defs = Ptx::parse(LLVM).definitions();
        defs.sort();
        assert_eq!(defs, ["__gpukernel_ffi_error", "k_a", "k_b"]);
        let defs = Ptx::parse(
            ".version 8.0\n.visible .func (.param .b32 r) f(.param .b32 a)\n{\nret;\n}\n\
             .visible .const .u32 c = 1;\n.weak .func w()\n{\nret;\n}\n\
             .global .u32 internal;\n.entry e()\n{\nret;\n}\n",
        )
        .definitions();
        assert_eq!(defs, ["f", "c", "e"]);
    }

    #[test]
    fn selecting_drops_the_other_kernels_foreign_needs() {
        let ptx = Ptx::parse(LLVM);
        let a = ptx.select_entries(&["k_a"]).unwrap();
        assert!(a.contains(".entry k_a") && a.contains("foreign_a"), "{a}");
        assert!(
            !a.contains("k_b") && !a.contains("foreign_b") && !a.contains("helper_b"),
            "{a}"
        );
        assert!(a.contains("__gpukernel_ffi_error"), "{a}");
        let b = ptx.select_entries(&["k_b"]).unwrap();
        assert!(
            b.contains("helper_b") && b.contains("foreign_b") && !b.contains("foreign_a"),
            "{b}"
        );
        assert_eq!(ptx.select_entries(&["nope"]).unwrap_err(), ["nope"]);
        // Keeping every kernel keeps the text.
        assert_eq!(ptx.select_entries(&["k_a", "k_b"]).unwrap(), LLVM);
        // The result is PTX with exactly the kernels kept.
        assert_eq!(entries(&a), ["k_a"]);
        assert_eq!(extern_functions(&a), ["foreign_a"]);
    }

    #[test]
    fn launch_bounds_of_each_entry() {
        let text = ".version 8.0\n.target sm_90\n.address_size 64\n\
                    .visible .entry a(\n\t.param .u64 a_param_0\n)\n.maxntid 384, 1, 1\n.minnctapersm 1\n{\nret;\n}\n\
                    .visible .entry b() .maxntid 16, 4 // two extents\n{\nret;\n}\n\
                    .visible .entry c() .reqntid 32, 2, 2 .maxntid 1024\n{\nret;\n}\n\
                    .visible .entry d()\n{\n.reg .b32 %r<2>;\nret;\n}\n";
        let ptx = Ptx::parse(text);
        assert_eq!(ptx.entry_max_threads("a"), Some(384));
        assert_eq!(ptx.entry_max_threads("b"), Some(64));
        assert_eq!(ptx.entry_max_threads("c"), Some(128));
        assert_eq!(ptx.entry_max_threads("d"), None);
        assert_eq!(ptx.entry_max_threads("nope"), None);
    }

    #[test]
    fn strings_braces_and_line_directives() {
        let text = ".version 8.0 // a comment\n.target sm_90\n.file 1 \"a//b;{.c\"\n\
                    .global .u32 table[2] = {1, 2};\n\
                    .section .debug_str { .b8 0 }\n\
                    .visible .entry k() .maxntid 32, 1, 1\n{\nret;\n}\n";
        let ptx = Ptx::parse(text);
        assert_eq!(ptx.entries(), ["k"]);
        assert_eq!(ptx.statements.len(), 6, "{:#?}", ptx.statements);
        assert!(matches!(
            &ptx.statements[3].item,
            Item::Variable { name, .. } if name == "table"
        ));
    }

    #[test]
    fn anything_parses() {
        for text in [
            "", "{", "}", ";", "/*", "//", "\"", ".func (", ".entry", "{{}}}}", "\0\0",
        ] {
            let ptx = Ptx::parse(text);
            let _ = (ptx.entries(), ptx.extern_functions(), ptx.definitions());
            let _ = ptx.select_entries(&[]);
        }
    }

    #[test]
    fn globals_are_read_as_bytes() {
        let text = "
.version 8.0
.target sm_90
.address_size 64
.visible .global .align 8 .b64 __gpukernel_sig_k[3] = {1, 18446744073709551615, 0x10};
.visible .global .align 8 .b8 bytes[8] = {32, 21, 168};
.visible .global .align 8 .u64 one = 1234;
.visible .global .align 4 .u32 words[2] = {7};
.visible .global .align 4 .u32 zero[2];
.visible .global .align 1 .b8 too_wide[1] = {256};
.visible .global .align 1 .b8 huge[99999999999];
.visible .global .align 8 .f64 float = 0d3FF0000000000000;
.visible .entry k() { ret; }
";
        let p = Ptx::parse(text);
        let words = |v: &[u64]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
        assert_eq!(
            p.global_bytes("__gpukernel_sig_k"),
            Some(words(&[1, u64::MAX, 16]))
        );
        assert_eq!(
            p.global_bytes("bytes"),
            Some(vec![32, 21, 168, 0, 0, 0, 0, 0])
        );
        assert_eq!(p.global_bytes("one"), Some(1234u64.to_le_bytes().to_vec()));
        assert_eq!(p.global_bytes("words"), Some(vec![7, 0, 0, 0, 0, 0, 0, 0]));
        assert_eq!(p.global_bytes("zero"), Some(vec![0; 8]));
        assert_eq!(p.global_bytes("too_wide"), None);
        assert_eq!(p.global_bytes("huge"), None);
        assert_eq!(p.global_bytes("float"), None);
        assert_eq!(p.global_bytes("k"), None);
        assert_eq!(p.global_bytes("missing"), None);
    }

    /// The 8-byte globals of a PTX as `u64`s.
    struct U64<'a>(Ptx<'a>);
    impl U64<'_> {
        fn global_u64(&self, symbol: &str) -> Option<u64> {
            let b: [u8; 8] = self.0.global_bytes(symbol)?.try_into().ok()?;
            Some(u64::from_le_bytes(b))
        }
    }

    #[test]
    fn eight_byte_globals_are_read_in_both_forms() {
        let text = "
.version 8.0
.target sm_90
.address_size 64
.visible .global .align 8 .b8 __gpukernel_sig_saxpy[8] = {32, 21, 168, 89, 107, 103, 94, 22};
.visible .global .align 8 .b8 __gpukernel_sig_dot[8] = {249, 12, 224, 184, 146, 4, 85};
.visible .global .align 8 .b8 __gpukernel_sig_zero[8];
.visible .global .align 8 .u64 __gpukernel_sig_scalar = 1234;
.visible .global .align 8 .u64 hex = 0xFFU;
.visible .global .align 4 .b8 short[4] = {1, 2, 3, 4};
.visible .entry saxpy() { ret; }
";
        let p = Ptx::parse(text);
        let p = U64(p);
        assert_eq!(
            p.global_u64("__gpukernel_sig_saxpy"),
            Some(u64::from_le_bytes([32, 21, 168, 89, 107, 103, 94, 22]))
        );
        assert_eq!(
            p.global_u64("__gpukernel_sig_dot"),
            Some(u64::from_le_bytes([249, 12, 224, 184, 146, 4, 85, 0]))
        );
        assert_eq!(p.global_u64("__gpukernel_sig_zero"), Some(0));
        assert_eq!(p.global_u64("__gpukernel_sig_scalar"), Some(1234));
        assert_eq!(p.global_u64("hex"), Some(255));
        assert_eq!(p.global_u64("short"), None);
        assert_eq!(p.global_u64("missing"), None);
        assert_eq!(p.global_u64("saxpy"), None);
    }
}

//! `cargo xtask book`: the user guide in `book/` (an mdBook), and the check that keeps the
//! guide's code compiled.
//!
//! The guide holds no code of its own: every ```` ```rust ```` block (and every block of
//! another compiled language: CUDA C, C++, TOML) is one or more mdBook includes,
//! `{{#include ../../path/file.rs:anchor}}`, of a region between `// ANCHOR: anchor` and
//! `// ANCHOR_END: anchor` in a file that the test suite compiles (an example, a test, a
//! kernels crate). A block that cannot be one is marked `ignore` and says why on the line
//! before it (`<!-- ignore: reason -->`). Shell blocks are free text, but every
//! `cargo xtask <command>` they show must be one of [`crate::COMMANDS`] (and an `example`
//! must exist). README.md's Rust blocks are copies of anchored regions, each named on the
//! line before it (`<!-- from path:anchor -->`, path from the workspace root), and must
//! match them.
//!
//! The check runs in `cargo test -p xtask` (so in `cargo xtask test`, CI's command), and as
//! `cargo xtask book --check`; `cargo xtask book` runs it, then `mdbook build book`.

use std::path::{Component, Path, PathBuf};
use std::process::Command;

use crate::{COMMANDS, root, run};

/// Languages whose blocks must be includes of anchored regions of compiled files.
const COMPILED: &[&str] = &["rust", "cuda", "c", "cpp", "c++", "toml"];
/// Languages of commands: free text, but `cargo xtask` commands must exist.
const SHELL: &[&str] = &["sh", "bash", "console", "shell"];
/// Languages of output and listings: free text.
const TEXT: &[&str] = &["text", "ptx", "sass"];

/// `cargo xtask book [--check]`.
pub(crate) fn book(args: &[String]) -> Result<(), String> {
    let root = root();
    let checked = check(&root)?;
    eprintln!("book: {checked} code blocks in book/src and README.md checked");
    if args.iter().any(|a| a == "--check") {
        return Ok(());
    }
    let found = Command::new("mdbook")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        return Err(
            "`mdbook` is not installed (or not on PATH): install it with \
             `cargo install mdbook --version ^0.5` (a few minutes), then run `cargo xtask book` \
             again; the guide's code is checked without it by `cargo xtask book --check`"
                .into(),
        );
    }
    run(Command::new("mdbook")
        .current_dir(&root)
        .args(["build", "book"]))?;
    eprintln!(
        "book: open {}",
        root.join("target/book/index.html").display()
    );
    Ok(())
}

/// Checks `book/src/**/*.md` and README.md; returns how many code blocks were checked, or
/// every problem found (`file:line: what`).
pub(crate) fn check(root: &Path) -> Result<usize, String> {
    let src = root.join("book/src");
    let mut pages = Vec::new();
    markdown_files(&src, &mut pages)?;
    pages.sort();
    if pages.is_empty() {
        return Err(format!("{}: no .md files", src.display()));
    }
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page)
            .map_err(|e| format!("reading {}: {e}", page.display()))?;
        let shown = page
            .strip_prefix(root)
            .unwrap_or(page)
            .display()
            .to_string();
        checked += check_page(root, page, &text, &shown, &mut problems);
        check_links(page, &text, &shown, &mut problems);
    }
    let readme = root.join("README.md");
    let text = std::fs::read_to_string(&readme)
        .map_err(|e| format!("reading {}: {e}", readme.display()))?;
    checked += check_readme(root, &text, &mut problems);
    check_links(&readme, &text, "README.md", &mut problems);
    if problems.is_empty() {
        Ok(checked)
    } else {
        Err(format!(
            "the guide's code is not what CI compiles ({} problems):\n  {}",
            problems.len(),
            problems.join("\n  ")
        ))
    }
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            markdown_files(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "md") {
            out.push(path);
        }
    }
    Ok(())
}

/// One fenced code block of a Markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    /// 1-based line of the opening fence.
    pub(crate) line: usize,
    /// The info string after the fence (`rust,ignore`).
    pub(crate) info: String,
    /// The lines between the fences.
    pub(crate) body: Vec<String>,
    /// The last non-blank line before the fence.
    pub(crate) before: String,
}

impl Block {
    /// The language: the info string's first word (`rust` for `rust,ignore`).
    pub(crate) fn lang(&self) -> &str {
        self.info.split([',', ' ', '\t', '{']).next().unwrap_or("")
    }

    fn has_attr(&self, attr: &str) -> bool {
        self.info.split([',', ' ', '\t']).skip(1).any(|a| a == attr)
    }
}

/// The fenced code blocks of a Markdown text (``` or ~~~ fences, up to three spaces of
/// indentation, closed by a fence of the same character at least as long).
pub(crate) fn blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize, Block)> = None;
    let mut before = String::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let fence = |c: char| {
            let n = trimmed.chars().take_while(|&x| x == c).count();
            (indent <= 3 && n >= 3).then_some(n)
        };
        match &mut open {
            Some((c, n, block)) => {
                if fence(*c).is_some_and(|m| m >= *n)
                    && trimmed.trim_start_matches(*c).trim().is_empty()
                {
                    let (_, _, block) = open.take().expect("open");
                    out.push(block);
                } else {
                    block.body.push(line.to_string());
                }
            }
            None => {
                let found = ['`', '~']
                    .into_iter()
                    .find_map(|c| fence(c).map(|n| (c, n)));
                if let Some((c, n)) = found {
                    let info = trimmed[n..].trim().to_string();
                    open = Some((
                        c,
                        n,
                        Block {
                            line: i + 1,
                            info,
                            body: Vec::new(),
                            before: before.clone(),
                        },
                    ));
                } else if !line.trim().is_empty() {
                    before = line.trim().to_string();
                }
            }
        }
    }
    match open {
        Some((_, _, block)) => Err(format!(
            "the code block at line {} is never closed",
            block.line
        )),
        None => Ok(out),
    }
}

/// An mdBook include directive: `{{#include PATH}}` or `{{#include PATH:ANCHOR}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Include {
    pub(crate) path: String,
    pub(crate) anchor: Option<String>,
}

/// Every `{{#...}}` directive of a text: includes, or an error for the forms the check does
/// not accept (line ranges, `rustdoc_include`, `playground`).
pub(crate) fn directives(text: &str) -> Vec<Result<Include, String>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{#") {
        let after = &rest[start + 3..];
        let Some(end) = after.find("}}") else {
            out.push(Err(format!(
                "`{{{{#` without `}}}}`: {}",
                after.lines().next().unwrap_or("")
            )));
            break;
        };
        let inner = after[..end].trim();
        rest = &after[end + 2..];
        let (name, arg) = inner.split_once(char::is_whitespace).unwrap_or((inner, ""));
        if name != "include" {
            out.push(Err(format!(
                "`{{{{#{name}}}}}` is not checked: show code with `{{{{#include path:anchor}}}}`"
            )));
            continue;
        }
        let arg = arg.trim();
        let mut parts = arg.splitn(2, ':');
        let path = parts.next().unwrap_or("").to_string();
        let anchor = parts.next().map(str::to_string);
        match anchor {
            Some(a) if a.is_empty() || a.starts_with(|c: char| c.is_ascii_digit()) => {
                out.push(Err(format!(
                    "`{{{{#include {arg}}}}}`: name an anchor (`// ANCHOR: name` in the file), not lines, which move"
                )));
            }
            anchor => out.push(Ok(Include { path, anchor })),
        }
    }
    out
}

/// The lines of `file` between `ANCHOR: anchor` and `ANCHOR_END: anchor`, without the
/// lines of other anchors (as mdBook shows them), or why there are none.
pub(crate) fn anchored(text: &str, anchor: &str) -> Result<Vec<String>, String> {
    let marks = |line: &str, key: &str| {
        line.split(key)
            .nth(1)
            .map(|rest| {
                rest.trim_start()
                    .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                    .next()
                    .unwrap_or("")
                    == anchor
            })
            .unwrap_or(false)
    };
    let is_anchor_line = |line: &str| line.contains("ANCHOR:") || line.contains("ANCHOR_END:");
    let mut lines = text.lines();
    let mut starts = 0;
    let mut body = None;
    while let Some(line) = lines.next() {
        if marks(line, "ANCHOR:") {
            starts += 1;
            if body.is_some() {
                continue;
            }
            let mut taken = Vec::new();
            let mut closed = false;
            for l in lines.by_ref() {
                if marks(l, "ANCHOR_END:") {
                    closed = true;
                    break;
                }
                if !is_anchor_line(l) {
                    taken.push(l.to_string());
                }
            }
            if !closed {
                return Err(format!("anchor `{anchor}` has no `ANCHOR_END: {anchor}`"));
            }
            body = Some(taken);
        }
    }
    match (body, starts) {
        (None, _) => Err(format!("no `ANCHOR: {anchor}` in the file")),
        (Some(_), n) if n > 1 => Err(format!("anchor `{anchor}` is opened {n} times")),
        (Some(b), _) if b.iter().all(|l| l.trim().is_empty()) => {
            Err(format!("anchor `{anchor}` is empty"))
        }
        (Some(b), _) => Ok(b),
    }
}

/// Removes the indentation all non-blank lines share, and blank lines at both ends.
pub(crate) fn dedent(lines: &[String]) -> Vec<String> {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<String> = lines
        .iter()
        .map(|l| {
            if l.trim().is_empty() {
                String::new()
            } else {
                l[indent..].trim_end().to_string()
            }
        })
        .collect();
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    while out.first().is_some_and(String::is_empty) {
        out.remove(0);
    }
    out
}

/// Resolves an include's path from `base` (the including file's folder): the file must lie
/// in the workspace, outside `book/` and `target/`.
fn resolve(root: &Path, base: &Path, path: &str) -> Result<PathBuf, String> {
    let mut full = base.to_path_buf();
    for c in Path::new(path).components() {
        match c {
            Component::ParentDir => {
                full.pop();
            }
            Component::Normal(p) => full.push(p),
            Component::CurDir => {}
            _ => return Err(format!("`{path}`: give a relative path")),
        }
    }
    let inside = full
        .strip_prefix(root)
        .map_err(|_| format!("`{path}` is outside the workspace ({})", full.display()))?;
    let first = inside.components().next();
    if first.is_some_and(|c| c.as_os_str() == "book" || c.as_os_str() == "target") {
        return Err(format!(
            "`{path}` is under {}: include code from a file the tests compile",
            inside.display()
        ));
    }
    if !full.is_file() {
        return Err(format!("`{path}`: no such file ({})", full.display()));
    }
    Ok(full)
}

/// Reads an include's text: the anchored region, or the whole file.
fn included(root: &Path, base: &Path, inc: &Include) -> Result<Vec<String>, String> {
    let file = resolve(root, base, &inc.path)?;
    let text = std::fs::read_to_string(&file).map_err(|e| format!("`{}`: {e}", inc.path))?;
    match &inc.anchor {
        Some(a) => anchored(&text, a).map_err(|e| format!("`{}`: {e}", inc.path)),
        None => Ok(text.lines().map(str::to_string).collect()),
    }
}

/// Checks one page; returns how many code blocks it has.
fn check_page(
    root: &Path,
    page: &Path,
    text: &str,
    shown: &str,
    problems: &mut Vec<String>,
) -> usize {
    let base = page.parent().unwrap_or(root);
    // Every directive, in code blocks or not, must resolve.
    for (n, line) in text.lines().enumerate() {
        for d in directives(line) {
            match d {
                Ok(inc) => {
                    if let Err(e) = included(root, base, &inc) {
                        problems.push(format!("{shown}:{}: {e}", n + 1));
                    }
                }
                Err(e) => problems.push(format!("{shown}:{}: {e}", n + 1)),
            }
        }
    }
    let blocks = match blocks(text) {
        Ok(b) => b,
        Err(e) => {
            problems.push(format!("{shown}: {e}"));
            return 0;
        }
    };
    for b in &blocks {
        let at = format!("{shown}:{}", b.line);
        let lang = b.lang();
        if COMPILED.contains(&lang) {
            if b.has_attr("ignore") {
                let reason = b
                    .before
                    .strip_prefix("<!-- ignore:")
                    .and_then(|r| r.strip_suffix("-->"))
                    .map(str::trim)
                    .unwrap_or("");
                if reason.is_empty() {
                    problems.push(format!(
                        "{at}: an `ignore`d {lang} block says why on the line before it: `<!-- ignore: reason -->`"
                    ));
                }
                continue;
            }
            let lines: Vec<&String> = b.body.iter().filter(|l| !l.trim().is_empty()).collect();
            if lines.is_empty() {
                problems.push(format!("{at}: an empty {lang} block"));
            }
            for l in lines {
                let d = directives(l);
                let whole = l.trim().starts_with("{{#") && l.trim().ends_with("}}") && d.len() == 1;
                match d.first() {
                    Some(Ok(inc)) if whole => {
                        if lang == "rust" && inc.anchor.is_none() {
                            problems.push(format!(
                                "{at}: a rust block includes an anchored region (`{}:name`), not a whole file",
                                inc.path
                            ));
                        } else if lang == "rust" && !inc.path.ends_with(".rs") {
                            problems.push(format!("{at}: a rust block includes a `.rs` file, not `{}`", inc.path));
                        }
                    }
                    Some(Err(_)) if whole => {} // reported above
                    _ => problems.push(format!(
                        "{at}: a {lang} block holds only `{{{{#include path:anchor}}}}` lines (code from a file CI compiles), \
                         or is marked `{lang},ignore` with `<!-- ignore: reason -->` before it; found `{}`",
                        l.trim()
                    )),
                }
            }
        } else if SHELL.contains(&lang) {
            for (k, l) in b.body.iter().enumerate() {
                if let Err(e) = check_command(root, l) {
                    problems.push(format!("{shown}:{}: {e}", b.line + 1 + k));
                }
            }
        } else if !TEXT.contains(&lang) {
            problems.push(format!(
                "{at}: code block language `{lang}`: use one of {} (includes), {} (commands) or {} (output)",
                COMPILED.join(", "),
                SHELL.join(", "),
                TEXT.join(", ")
            ));
        }
    }
    blocks.len()
}

/// A heading's id as mdBook makes it: lower case, spaces as `-`, other punctuation dropped.
pub(crate) fn heading_id(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c.to_ascii_lowercase())
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The ids of a Markdown text's headings (outside code blocks).
fn heading_ids(text: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut fence: Option<char> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(c) = fence {
            if t.starts_with(&c.to_string().repeat(3)) {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            fence = t.chars().next();
        } else if let Some(h) = t.strip_prefix('#') {
            ids.push(heading_id(h.trim_start_matches('#')));
        }
    }
    ids
}

/// Every relative link `](path)` or `](path#id)` of a page names a file that exists, and a
/// heading of that page when it has an `#id`.
fn check_links(page: &Path, text: &str, shown: &str, problems: &mut Vec<String>) {
    let base = page.parent().unwrap_or(Path::new("."));
    for (n, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = &after[..end];
            rest = &after[end..];
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            let (path, id) = target.split_once('#').unwrap_or((target, ""));
            let file = if path.is_empty() {
                page.to_path_buf()
            } else {
                base.join(path)
            };
            if !file.exists() {
                problems.push(format!(
                    "{shown}:{}: link to `{target}`: no such file",
                    n + 1
                ));
                continue;
            }
            if !id.is_empty() && file.extension().is_some_and(|x| x == "md") {
                let ids = std::fs::read_to_string(&file)
                    .map(|t| heading_ids(&t))
                    .unwrap_or_default();
                if !ids.iter().any(|h| h == id) {
                    problems.push(format!(
                        "{shown}:{}: link to `{target}`: no heading with the id `{id}` there",
                        n + 1
                    ));
                }
            }
        }
    }
}

/// Every `cargo xtask <command>` in a shell line names a command that exists.
pub(crate) fn check_command(root: &Path, line: &str) -> Result<(), String> {
    let code = line.split('#').next().unwrap_or("");
    let mut rest = code;
    while let Some(at) = rest.find("cargo xtask") {
        let mut words = rest[at + "cargo xtask".len()..].split_whitespace();
        let Some(cmd) = words.next() else {
            return Err(format!("`{}`: `cargo xtask` needs a command", line.trim()));
        };
        if !COMMANDS.contains(&cmd) {
            return Err(format!(
                "`cargo xtask {cmd}` is not a command (the commands: {})",
                COMMANDS.join(", ")
            ));
        }
        if cmd == "example"
            && let Some(name) = words
                .next()
                .filter(|w| !w.starts_with('-') && !w.starts_with('&') && !w.starts_with(';'))
        {
            let file = root
                .join("ffi-examples/examples")
                .join(format!("{name}.rs"));
            if !file.is_file() {
                return Err(format!(
                    "`cargo xtask example {name}`: no {}",
                    file.display()
                ));
            }
        }
        rest = &rest[at + "cargo xtask".len()..];
    }
    Ok(())
}

/// README.md: each Rust block is a copy of the anchored region named on the line before it.
fn check_readme(root: &Path, text: &str, problems: &mut Vec<String>) -> usize {
    let blocks = match blocks(text) {
        Ok(b) => b,
        Err(e) => {
            problems.push(format!("README.md: {e}"));
            return 0;
        }
    };
    for b in &blocks {
        let at = format!("README.md:{}", b.line);
        if SHELL.contains(&b.lang()) {
            for (k, l) in b.body.iter().enumerate() {
                if let Err(e) = check_command(root, l) {
                    problems.push(format!("README.md:{}: {e}", b.line + 1 + k));
                }
            }
            continue;
        }
        if b.lang() != "rust" {
            continue;
        }
        let Some(from) = b
            .before
            .strip_prefix("<!-- from ")
            .and_then(|r| r.strip_suffix("-->"))
            .map(str::trim)
        else {
            problems.push(format!(
                "{at}: a rust block is a copy of tested code, named on the line before it: `<!-- from path/file.rs:anchor -->`"
            ));
            continue;
        };
        let Some((path, anchor)) = from.rsplit_once(':') else {
            problems.push(format!("{at}: `{from}`: give `path:anchor`"));
            continue;
        };
        let inc = Include {
            path: path.to_string(),
            anchor: Some(anchor.to_string()),
        };
        match included(root, root, &inc) {
            Ok(want) => {
                let (want, got) = (dedent(&want), dedent(&b.body));
                if want != got {
                    let k = want.iter().zip(&got).take_while(|(w, g)| w == g).count();
                    problems.push(format!(
                        "{at}: the block differs from {from} at its line {}: `{}` there, `{}` here (copy the region again)",
                        k + 1,
                        want.get(k).map(String::as_str).unwrap_or("(end)"),
                        got.get(k).map(String::as_str).unwrap_or("(end)"),
                    ));
                }
            }
            Err(e) => problems.push(format!("{at}: {e}")),
        }
    }
    blocks.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guide and README as they are in this checkout: every code block compiled by CI.
    #[test]
    fn the_guide_shows_only_compiled_code() {
        let root = crate::root();
        match check(&root) {
            Ok(n) => assert!(
                n > 20,
                "only {n} code blocks found in book/src and README.md"
            ),
            Err(e) => panic!("{e}"),
        }
    }

    fn page_problems(md: &str) -> Vec<String> {
        let root = crate::root();
        let page = root.join("book/src/test-page.md");
        let mut problems = Vec::new();
        check_page(&root, &page, md, "page.md", &mut problems);
        problems
    }

    #[test]
    fn a_rust_block_with_code_is_refused() {
        let p = page_problems("Text.\n\n```rust\nfn main() {}\n```\n");
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(
            p[0].starts_with("page.md:3: a rust block holds only"),
            "{p:?}"
        );
    }

    #[test]
    fn a_missing_anchor_or_file_is_refused() {
        let p = page_problems(
            "```rust\n{{#include ../../ffi-examples/examples/multiply_vectors.rs:no_such_anchor}}\n```\n\
             ```rust\n{{#include ../../ffi-examples/examples/no_such_file.rs:host}}\n```\n",
        );
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].contains("no `ANCHOR: no_such_anchor`"), "{p:?}");
        assert!(p[1].contains("no such file"), "{p:?}");
    }

    #[test]
    fn an_existing_anchor_is_accepted_and_line_ranges_are_not() {
        let ok =
            "```rust\n{{#include ../../ffi-examples/examples/multiply_vectors.rs:host}}\n```\n";
        assert_eq!(page_problems(ok), Vec::<String>::new());
        let lines =
            "```rust\n{{#include ../../ffi-examples/examples/multiply_vectors.rs:3:9}}\n```\n";
        let p = page_problems(lines);
        assert!(p.iter().any(|e| e.contains("not lines")), "{p:?}");
    }

    #[test]
    fn ignore_needs_a_reason() {
        let p = page_problems("```rust,ignore\nlet x = 1;\n```\n");
        assert!(p[0].contains("says why"), "{p:?}");
        let ok = "<!-- ignore: a sketch of two processes -->\n```rust,ignore\nlet x = 1;\n```\n";
        assert_eq!(page_problems(ok), Vec::<String>::new());
    }

    #[test]
    fn unknown_xtask_commands_and_examples_are_refused() {
        let root = crate::root();
        assert!(check_command(&root, "cargo xtask test   # all of it").is_ok());
        assert!(check_command(&root, "cargo xtask example multiply_vectors").is_ok());
        assert!(check_command(&root, "cargo xtask tset").is_err());
        assert!(check_command(&root, "cargo xtask example no_such_example").is_err());
        let p = page_problems("```sh\ncargo xtask bench\n```\n");
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("page.md:2:"), "{p:?}");
    }

    #[test]
    fn blocks_need_a_known_language_and_a_closing_fence() {
        let p = page_problems("```\nplain\n```\n");
        assert!(p[0].contains("language ``"), "{p:?}");
        assert!(blocks("```rust\nx\n").is_err());
        let b = blocks("intro\n\n````md\n```rust\ninner\n```\n````\n").unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].body.len(), 3);
        assert_eq!(b[0].before, "intro");
    }

    #[test]
    fn links_name_files_and_headings_that_exist() {
        let root = crate::root();
        let page = root.join("book/src/test-page.md");
        let mut p = Vec::new();
        let text = "See [a](graphs.md#building-a-graph), [b](graphs.md#no-such), [c](nothing.md), \
                    [d](https://example.org/x.md).";
        check_links(&page, text, "page.md", &mut p);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p[0].contains("no heading with the id `no-such`"), "{p:?}");
        assert!(p[1].contains("no such file"), "{p:?}");
        assert_eq!(
            heading_id(" What is checked, on each path"),
            "what-is-checked-on-each-path"
        );
    }

    #[test]
    fn anchors_drop_other_markers_and_must_close() {
        let text =
            "a\n// ANCHOR: x\nb\n  // ANCHOR: y\n  c\n  // ANCHOR_END: y\n// ANCHOR_END: x\n";
        assert_eq!(anchored(text, "x").unwrap(), vec!["b", "  c"]);
        assert_eq!(anchored(text, "y").unwrap(), vec!["  c"]);
        assert!(
            anchored("// ANCHOR: z\nq\n", "z")
                .unwrap_err()
                .contains("no `ANCHOR_END")
        );
        assert!(anchored(text, "xy").is_err());
        assert_eq!(dedent(&anchored(text, "y").unwrap()), vec!["c"]);
    }
}

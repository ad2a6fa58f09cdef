//! `cargo xtask doc-check`: every public item of the library crates has a doc example.
//!
//! For each crate in [`CRATES`] it runs the pinned nightly's rustdoc with
//! `--output-format json` and walks the public API from the crate root: public modules,
//! re-exports (`pub use`, globs included) and the items they reach. An item needs an example
//! (a fenced code block in its docs) when it is a free function, struct, enum, union, trait,
//! macro or type alias, a public inherent method of a public type, or a method of a public
//! trait. Fields, variants, constants and the items of trait impls are not checked; items
//! marked `#[doc(hidden)]` are not in rustdoc's output and so not checked either.
//! The check fails naming `file:line` and the path of each item that lacks an example, and on
//! any broken or private intra-doc link (rustdoc's own error, with its location).

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::fuzz::nightly_cargo;
use crate::{root, run};

/// The packages checked, with their crate (library) names.
const CRATES: &[(&str, &str)] = &[
    ("gpukernel-device", "gpukernel_device"),
    ("gpukernel-runtime", "gpukernel_runtime"),
];

/// One public item whose docs have no code block.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Missing {
    /// Source file, relative to the workspace root.
    pub(crate) file: String,
    /// Line of the item's first token.
    pub(crate) line: u64,
    /// `crate::path::Item` (methods: `Type::method`).
    pub(crate) path: String,
    /// `function`, `struct`, `method`, `trait method`, …
    pub(crate) kind: &'static str,
}

pub(crate) fn doc_check() -> Result<(), String> {
    // Absolute, so that the nightly cargo (run from the workspace root) and the reader agree.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| std::env::current_dir().map(|d| d.join(&t)).unwrap_or(t))
        .unwrap_or_else(|| root().join("target"));
    let mut missing = Vec::new();
    let mut checked = 0;
    for (package, krate) in CRATES {
        run(nightly_cargo()
            .current_dir(root())
            .env("CARGO_TARGET_DIR", &target)
            .args(["rustdoc", "--quiet", "--lib", "-p", package])
            .args(["--", "-Z", "unstable-options", "--output-format", "json"])
            // A link to nothing, or to an item users cannot see, is a broken doc too.
            .args(["-D", "rustdoc::broken_intra_doc_links"])
            .args(["-D", "rustdoc::private_intra_doc_links"]))?;
        let path = target.join("doc").join(format!("{krate}.json"));
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let json: Value =
            serde_json::from_str(&text).map_err(|e| format!("parsing {}: {e}", path.display()))?;
        let (n, m) = items_without_examples(&json)
            .map_err(|e| format!("{}: {e} (rustdoc JSON format changed?)", path.display()))?;
        checked += n;
        missing.extend(m);
    }
    if missing.is_empty() {
        eprintln!("doc-check: all {checked} public items have a doc example");
        return Ok(());
    }
    missing.sort();
    let mut report = format!(
        "{} of {checked} public items have no doc example (a ``` block in their docs):\n",
        missing.len()
    );
    for m in &missing {
        report.push_str(&format!(
            "  {}:{}: {} `{}`\n",
            m.file, m.line, m.kind, m.path
        ));
    }
    Err(report)
}

/// Walks the public API of one crate's rustdoc JSON; returns how many items were checked
/// and those without a code block in their docs.
pub(crate) fn items_without_examples(json: &Value) -> Result<(usize, Vec<Missing>), String> {
    let index = json
        .get("index")
        .and_then(Value::as_object)
        .ok_or("no `index`")?;
    let root_id = json.get("root").ok_or("no `root`")?;
    let key = |id: &Value| match id {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    };
    let item = |id: &Value| key(id).and_then(|k| index.get(&k));
    let kind_of = |it: &Value| {
        it.get("inner")
            .and_then(Value::as_object)
            .and_then(|o| o.keys().next().cloned())
            .unwrap_or_default()
    };
    let is_local = |it: &Value| it.get("crate_id").and_then(Value::as_u64) == Some(0);

    // (item, path, kind) to check; ids seen, so re-exports and cycles count once.
    let mut needs: Vec<(&Value, String, &'static str)> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let crate_name = item(root_id)
        .and_then(|r| r.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("crate")
        .to_string();
    let mut stack = vec![(root_id.clone(), crate_name)];
    while let Some((id, path)) = stack.pop() {
        let Some(k) = key(&id) else { continue };
        if !seen.insert(k) {
            continue;
        }
        let Some(it) = item(&id) else { continue };
        if !is_local(it) {
            continue;
        }
        let kind = kind_of(it);
        let inner = &it["inner"][kind.as_str()];
        match kind.as_str() {
            "module" => {
                for child in inner["items"].as_array().into_iter().flatten() {
                    let Some(c) = item(child) else { continue };
                    if c.get("visibility").and_then(Value::as_str) != Some("public") {
                        continue;
                    }
                    let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                    if kind_of(c) == "use" {
                        let u = &c["inner"]["use"];
                        let target = &u["id"];
                        if target.is_null() {
                            continue;
                        }
                        let name = u["name"].as_str().unwrap_or(name);
                        if u["is_glob"].as_bool() == Some(true) {
                            // A glob re-exports the module's items under its own path.
                            if let Some(m) = item(target) {
                                for g in m["inner"]["module"]["items"]
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                {
                                    let gname = item(g)
                                        .and_then(|x| x.get("name"))
                                        .and_then(Value::as_str)
                                        .unwrap_or("");
                                    stack.push((g.clone(), format!("{path}::{gname}")));
                                }
                            }
                        } else {
                            stack.push((target.clone(), format!("{path}::{name}")));
                        }
                    } else {
                        stack.push((child.clone(), format!("{path}::{name}")));
                    }
                }
            }
            "function" => needs.push((it, path, "function")),
            "macro" | "proc_macro" => needs.push((it, path, "macro")),
            "type_alias" => needs.push((it, path, "type alias")),
            "struct" | "enum" | "union" => {
                needs.push((
                    it,
                    path.clone(),
                    match kind.as_str() {
                        "struct" => "struct",
                        "enum" => "enum",
                        _ => "union",
                    },
                ));
                for imp in inner["impls"].as_array().into_iter().flatten() {
                    let Some(imp) = item(imp) else { continue };
                    let imp = &imp["inner"]["impl"];
                    if !imp["trait"].is_null()
                        || imp["is_synthetic"].as_bool() == Some(true)
                        || !imp["blanket_impl"].is_null()
                    {
                        continue;
                    }
                    for m in imp["items"].as_array().into_iter().flatten() {
                        let Some(m) = item(m) else { continue };
                        if m.get("visibility").and_then(Value::as_str) == Some("public")
                            && kind_of(m) == "function"
                            && seen.insert(key(&m["id"]).unwrap_or_default())
                        {
                            let name = m["name"].as_str().unwrap_or("");
                            needs.push((m, format!("{path}::{name}"), "method"));
                        }
                    }
                }
            }
            "trait" => {
                needs.push((it, path.clone(), "trait"));
                for m in inner["items"].as_array().into_iter().flatten() {
                    let Some(m) = item(m) else { continue };
                    if kind_of(m) == "function" {
                        let name = m["name"].as_str().unwrap_or("");
                        needs.push((m, format!("{path}::{name}"), "trait method"));
                    }
                }
            }
            _ => {}
        }
    }

    let checked = needs.len();
    let mut missing: BTreeSet<Missing> = BTreeSet::new();
    for (it, path, kind) in needs {
        let docs = it.get("docs").and_then(Value::as_str).unwrap_or("");
        if has_code_block(docs) {
            continue;
        }
        let span = &it["span"];
        missing.insert(Missing {
            file: span["filename"].as_str().unwrap_or("?").to_string(),
            line: span["begin"][0].as_u64().unwrap_or(0),
            path,
            kind,
        });
    }
    Ok((checked, missing.into_iter().collect()))
}

/// Whether markdown docs hold a fenced code block (``` or ~~~ at the start of a line).
fn has_code_block(docs: &str) -> bool {
    docs.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("```") || l.starts_with("~~~")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn it(id: u64, name: &str, inner: Value, docs: &str) -> (String, Value) {
        (
            id.to_string(),
            serde_json::json!({
                "id": id, "crate_id": 0, "name": name, "visibility": "public",
                "docs": docs, "inner": inner,
                "span": {"filename": "src/lib.rs", "begin": [id, 1], "end": [id, 2]},
            }),
        )
    }

    #[test]
    fn walks_modules_reexports_and_methods() {
        let example = "Does it.\n\n```\nlet x = 1;\n```";
        let index: serde_json::Map<String, Value> = [
            it(0, "k", serde_json::json!({"module": {"items": [1, 2, 7]}}), ""),
            it(1, "documented", serde_json::json!({"function": {}}), example),
            it(2, "m", serde_json::json!({"module": {"items": [3]}}), ""),
            it(3, "S", serde_json::json!({"struct": {"impls": [4, 6]}}), example),
            it(4, "", serde_json::json!({"impl": {"trait": null, "blanket_impl": null, "items": [5]}}), ""),
            it(5, "method", serde_json::json!({"function": {}}), "No example."),
            // A trait impl: its items are not checked.
            it(6, "", serde_json::json!({"impl": {"trait": {"path": "Clone"}, "blanket_impl": null, "items": [8]}}), ""),
            // `pub use m::S as T;` re-exports an item already reached: counted once.
            it(7, "", serde_json::json!({"use": {"id": 3, "name": "T", "is_glob": false}}), ""),
            it(8, "clone", serde_json::json!({"function": {}}), ""),
        ]
        .into_iter()
        .collect();
        let json = serde_json::json!({"root": 0, "index": index});
        let (checked, missing) = items_without_examples(&json).unwrap();
        assert_eq!(checked, 3, "documented, S and S::method");
        assert_eq!(missing.len(), 1);
        assert_eq!(missing[0].kind, "method");
        assert!(missing[0].path.ends_with("::method"), "{}", missing[0].path);
        assert_eq!(missing[0].line, 5);
    }

    #[test]
    fn code_block_detection() {
        assert!(has_code_block("text\n```rust\nx\n```"));
        assert!(has_code_block("  ```no_run\n```"));
        assert!(!has_code_block("inline `code` only"));
    }
}

//! Linking for the simulator: nothing is compiled (the foreign code the simulator runs is the
//! host-compiled `.cu` linked into the program), but the inputs are checked as a GPU link
//! would check them, and the image is the PTX inputs, whose kernel names make the module.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::format::{self, InputKind, ptx};
use crate::link::input::Input;
use crate::link::{CacheStatus, LinkInput, LinkTimings, LinkedImage, foreign, stages};

/// The simulator's link of checked inputs: refuses what a GPU link would refuse (undefined
/// foreign functions), and makes the image of the PTX inputs.
pub(super) fn link(
    inputs: &[Input],
    headers: &[(String, String)],
    used: &[foreign::UsedDecl],
    infos: Vec<LinkInput>,
    start: Instant,
) -> Result<LinkedImage> {
    check_symbols(inputs, headers, used)?;
    let mut image = Vec::new();
    for input in inputs.iter().filter(|i| i.kind == InputKind::Ptx) {
        image.extend_from_slice(&input.bytes);
        image.push(b'\n');
    }
    Ok(LinkedImage {
        cubin: Vec::new(),
        simulator_image: image,
        arch: None,
        linker: None,
        info_log: String::new(),
        compile_logs: Vec::new(),
        cache: CacheStatus::Disabled,
        timings: LinkTimings {
            total: start.elapsed(),
            ..LinkTimings::default()
        },
        inputs: infos,
        options: crate::link::LinkOptions::default(),
        linker_options: Vec::new(),
        compiled: Vec::new(),
    })
}

/// On the simulator nothing is linked (foreign code is compiled into the host binary), but a
/// foreign function the selected kernels call and no input defines would fail on a GPU, so it
/// fails here too, as [`Error::UndefinedSymbol`]. Conservative: a symbol counts as defined if
/// a PTX or cubin input defines it, or if its name followed by `(` appears in a CUDA source or
/// an in-memory header; inputs whose symbols cannot be read here (fatbins, objects, archives,
/// LTO-IR, or a source with a quoted `#include`) turn the check off rather than guess.
fn check_symbols(
    inputs: &[Input],
    headers: &[(String, String)],
    used: &[foreign::UsedDecl],
) -> Result<()> {
    let mut needed: Vec<String> = Vec::new();
    let mut defined: Vec<String> = Vec::new();
    let mut sources: Vec<&str> = headers.iter().map(|(_, text)| text.as_str()).collect();
    for input in inputs {
        match input.kind {
            InputKind::Ptx | InputKind::Cubin => {
                if input.kind == InputKind::Ptx {
                    let text = std::str::from_utf8(&input.bytes).unwrap_or("");
                    needed.extend(ptx::extern_functions(text));
                }
                match format::defined_symbols(input.kind, &input.bytes) {
                    Some(names) => defined.extend(names),
                    None => return Ok(()),
                }
            }
            InputKind::Cuda => {
                let text = std::str::from_utf8(&input.bytes).unwrap_or("");
                if text
                    .lines()
                    .any(|l| l.trim_start().starts_with("#include \""))
                {
                    return Ok(());
                }
                sources.push(text);
            }
            _ => return Ok(()),
        }
    }
    let mentioned = |name: &str| {
        sources.iter().any(|text| {
            text.match_indices(name).any(|(at, _)| {
                let before = text[..at].chars().next_back();
                let after = text[at + name.len()..].trim_start();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && after.starts_with('(')
            })
        })
    };
    let missing = needed.iter().find(|name| {
        !ptx::is_system_call(name) && !defined.iter().any(|d| d == *name) && !mentioned(name)
    });
    match missing {
        None => Ok(()),
        Some(symbol) => Err(Error::UndefinedSymbol {
            declared_at: stages::declared_at(used, symbol),
            symbol: symbol.clone(),
            inputs: inputs.iter().map(|i| i.name.clone()).collect(),
            error_log: format!(
                "simulator: no input defines the foreign function `{symbol}` that the kernels call \
                 (a GPU link would fail with \"Unresolved extern function '{symbol}'\")"
            ),
            info_log: String::new(),
        }),
    }
}

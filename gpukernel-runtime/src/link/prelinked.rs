//! Sources linked into a Rust PTX at build time (nvptx-builder's `foreign_cuda`), recognised
//! when they are added to a link again.
//!
//! Their functions are internal to the PTX (inlined where called), so a second copy would not
//! clash at the driver: it would be compiled by NVRTC for nothing, or, if it differs from the
//! build-time copy, silently not be the code that runs. Both are refused with
//! [`Error::LinkedAtBuildTime`], on every backend: a `.cu` input whose bytes are those the
//! PTX's record hashed, before anything is compiled; any input whose readable symbols (PTX,
//! compiled `.cu`, cubin) include a function the record lists, before the link. Inputs whose
//! symbols cannot be read (fatbins, objects, archives, LTO-IR) are not checked.

use crate::error::{Error, Result};
use crate::format::lto::LtoRecord;
use crate::format::{self, InputKind, ptx::Ptx};
use crate::link::input::Input;
use crate::link::stages::Unit;

/// A record, and the index of the PTX input that holds it.
#[derive(Debug, Clone)]
pub(super) struct Prelinked {
    ptx: usize,
    record: LtoRecord,
}

/// The records of every PTX input.
pub(super) fn records(inputs: &[Input]) -> Vec<Prelinked> {
    inputs
        .iter()
        .enumerate()
        .filter(|(_, i)| i.kind == InputKind::Ptx)
        .flat_map(|(index, input)| {
            Ptx::parse(&String::from_utf8_lossy(&input.bytes))
                .lto_records()
                .into_iter()
                .filter_map(|text| LtoRecord::parse(&text))
                .map(move |record| Prelinked { ptx: index, record })
        })
        .collect()
}

/// Refuses a `.cu` input that is a source the PTX already holds.
pub(super) fn check_sources(inputs: &[Input], prelinked: &[Prelinked]) -> Result<()> {
    for input in inputs.iter().filter(|i| i.kind == InputKind::Cuda) {
        if let Some(p) = prelinked.iter().find(|p| p.record.is_source(&input.bytes)) {
            return Err(refused(input, inputs, p, p.record.defines.clone()));
        }
    }
    Ok(())
}

/// Refuses an input (a `.cu` as compiled, PTX or a cubin) that defines a function a PTX
/// already holds. `units[i]` is what `inputs[i]` became.
pub(super) fn check_units(units: &[Unit], inputs: &[Input], prelinked: &[Prelinked]) -> Result<()> {
    let kinds_and_bytes = units.iter().map(|u| (u.kind, &u.bytes[..]));
    check_defined(kinds_and_bytes, inputs, prelinked)
}

/// As [`check_units`] for inputs as they are (the simulator compiles nothing).
pub(super) fn check_inputs(inputs: &[Input], prelinked: &[Prelinked]) -> Result<()> {
    let kinds_and_bytes = inputs.iter().map(|i| (i.kind, &i.bytes[..]));
    check_defined(kinds_and_bytes, inputs, prelinked)
}

fn check_defined<'a>(
    items: impl Iterator<Item = (InputKind, &'a [u8])>,
    inputs: &[Input],
    prelinked: &[Prelinked],
) -> Result<()> {
    if prelinked.is_empty() {
        return Ok(());
    }
    for (index, ((kind, bytes), input)) in items.zip(inputs).enumerate() {
        let Some(defined) = format::defined_symbols(kind, bytes) else {
            continue;
        };
        for p in prelinked.iter().filter(|p| p.ptx != index) {
            let both: Vec<String> = p
                .record
                .defines
                .iter()
                .filter(|d| defined.contains(d))
                .cloned()
                .collect();
            if !both.is_empty() {
                return Err(refused(input, inputs, p, both));
            }
        }
    }
    Ok(())
}

fn refused(input: &Input, inputs: &[Input], p: &Prelinked, symbols: Vec<String>) -> Error {
    Error::LinkedAtBuildTime {
        input: input.name.clone(),
        ptx: inputs[p.ptx].name.clone(),
        source_file: p.record.source.clone(),
        symbols,
    }
}

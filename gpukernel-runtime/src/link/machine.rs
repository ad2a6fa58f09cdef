//! Linking machine code: a kernels crate's PTX given with its relocatable SASS
//! ([`Linker::add_ptx_with_sass`](crate::link::Linker::add_ptx_with_sass)) is linked as that
//! machine code, not JIT-compiled, where the link allows it; with foreign inputs that hold
//! SASS for the same architecture, the link compiles nothing.
//!
//! [`choice`] decides for one input (a pure function of the input, the target architecture and
//! the link's options); [`summary`] tells the whole link's story for
//! [`LoadPath`](crate::link::LoadPath).

use crate::format::{InputKind, elf, fatbin};
use crate::link::input::Input;
use crate::link::{Arch, LinkOptions};

/// Whether `input`'s relocatable machine code is linked instead of its PTX, for a link
/// compiled for `arch`: `None` when it has none, else `Ok`, or why not (a sentence naming the
/// input and what to change).
pub(super) fn choice(
    input: &Input,
    arch: Arch,
    lto: bool,
    options: LinkOptions,
) -> Option<Result<(), String>> {
    let machine = input.machine.as_ref()?;
    let name = &input.name;
    if lto {
        return Some(Err(format!(
            "`{name}` is linked as PTX: link-time optimisation (`Linker::lto`, or an LTO-IR \
             input) takes its code as PTX"
        )));
    }
    if options != LinkOptions::default() {
        return Some(Err(format!(
            "`{name}` is linked as PTX: the link's code generation options ({options:?}) apply \
             to PTX only (its machine code was compiled by `ptxas -c -O3`); leave them at their \
             defaults to link the machine code"
        )));
    }
    let sms = fatbin::Fatbin::read(machine)
        .map(|f| f.relocatable_elf_sms())
        .unwrap_or_default();
    if sms.is_empty() {
        return Some(Err(format!(
            "`{name}` is linked as PTX: the machine code given with it holds no relocatable \
             object (the kernels crate was built without ptxas and fatbinary, or without SASS \
             architectures: run `cargo xtask doctor` and rebuild it)"
        )));
    }
    if !sms.contains(&arch.sm()) {
        let held: Vec<String> = sms.iter().map(|sm| format!("sm_{sm}")).collect();
        return Some(Err(format!(
            "`{name}` is linked as PTX: its machine code is for {}, not for the link's {arch} \
             (add `{arch}` to the kernels crate's `Builder::sass_archs`)",
            held.join(", ")
        )));
    }
    if let Err(why) = of_this_ptx(input, machine, arch) {
        return Some(Err(format!(
            "`{name}` is linked as PTX: the machine code given with it is not this PTX's \
             ({why}); pass the `PTX` and `RELOCATABLE` of one build of one kernels crate"
        )));
    }
    Some(Ok(()))
}

/// The records every kernels crate's PTX defines: kernel signatures and foreign declarations
/// (named with a hash of the declaration), which the PTX's checks read.
const RECORD_PREFIX: &str = "__gpukernel_";

/// Whether the relocatable object for `arch` in `machine` was compiled from `input`'s PTX, as
/// far as its symbols tell: the same kernels, and the same records of kernel signatures and
/// foreign declarations (whose names carry the declaration's hash). Every check of the link
/// reads the PTX, so machine code of another crate or another build would be linked
/// unchecked; else why not, naming the first difference.
fn of_this_ptx(input: &Input, machine: &[u8], arch: Arch) -> Result<(), String> {
    let elf = fatbin::Fatbin::read(machine)
        .ok()
        .and_then(|f| f.relocatable_elf_for(arch.sm()))
        .ok_or_else(|| format!("no relocatable object for {arch} can be read"))?;
    let text = String::from_utf8_lossy(crate::format::trim_nul(&input.bytes));
    let ptx = crate::format::ptx::Ptx::parse(&text);
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v.dedup();
        v
    };
    let ptx_entries = sorted(ptx.entries());
    let elf_entries = sorted(
        elf::cubin_functions(&elf)?
            .into_iter()
            .filter_map(|(f, entry)| entry.then_some(f))
            .collect(),
    );
    let ptx_records = sorted(
        ptx.visible_globals()
            .into_iter()
            .filter(|g| g.starts_with(RECORD_PREFIX))
            .collect(),
    );
    let elf_records = sorted(
        elf::defined_globals(&elf)?
            .into_iter()
            .filter(|g| g.starts_with(RECORD_PREFIX))
            .collect(),
    );
    let differ = |what: &str, ours: &[String], theirs: &[String]| -> Result<(), String> {
        if let Some(k) = ours.iter().find(|k| !theirs.contains(k)) {
            return Err(format!("its {what} `{k}` is not in the machine code"));
        }
        if let Some(k) = theirs.iter().find(|k| !ours.contains(k)) {
            return Err(format!("the machine code's {what} `{k}` is not in it"));
        }
        Ok(())
    };
    differ("kernel", &ptx_entries, &elf_entries)?;
    differ("record", &ptx_records, &elf_records)
}

/// Whether `input` is linked as machine code for `arch` (nothing of it JIT-compiled): our
/// PTX whose machine code is chosen, a cubin for `arch`, or a fatbin, host object or archive
/// holding an ELF image for `arch` (the driver's linker takes an image for the exact
/// architecture before PTX).
fn is_machine_code(input: &Input, arch: Arch, lto: bool, options: LinkOptions) -> bool {
    match input.kind {
        InputKind::Ptx => matches!(choice(input, arch, lto, options), Some(Ok(()))),
        InputKind::Cubin => elf::cubin_arch(&input.bytes) == Some(arch.sm()),
        InputKind::Fatbin => {
            fatbin::Fatbin::read(&input.bytes).is_ok_and(|f| f.has_elf_for(arch.sm()))
        }
        InputKind::Object | InputKind::Library => {
            let found = fatbin::embedded(&input.bytes);
            !found.is_empty() && found.iter().all(|f| f.has_elf_for(arch.sm()))
        }
        _ => false,
    }
}

/// How a link compiled for `arch` treats its inputs: `Ok(())` when every input is machine code
/// for `arch` and at least one is our PTX's machine code (nothing is JIT-compiled), else a
/// sentence for each input given with machine code, and each input compiled, saying so.
pub(super) fn summary(
    inputs: &[Input],
    arch: Arch,
    lto: bool,
    options: LinkOptions,
) -> Option<Result<(), String>> {
    if !inputs.iter().any(|i| i.machine.is_some()) {
        return None;
    }
    if inputs
        .iter()
        .all(|i| is_machine_code(i, arch, lto, options))
    {
        return Some(Ok(()));
    }
    let mut notes = Vec::new();
    for input in inputs {
        match choice(input, arch, lto, options) {
            Some(Ok(())) => notes.push(format!("`{}` is linked as machine code", input.name)),
            Some(Err(why)) => notes.push(why),
            None if !is_machine_code(input, arch, lto, options) => notes.push(format!(
                "`{}` ({}) holds no machine code for {arch}: it is compiled",
                input.name,
                input.kind.extension()
            )),
            None => {}
        }
    }
    Some(Err(notes.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::fatbin::{build_for_tests, elf_for_tests};

    const PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n.extern .func (.param .b32 r) mul(.param .b32 a);\n.visible .entry k() { ret; }\n";

    /// The PTX of the test objects (whose symbol tables are empty): no kernel, no record.
    const OURS: &str = ".version 8.0\n.target sm_90\n.address_size 64\n.extern .func (.param .b32 r) mul(.param .b32 a);\n";

    fn ours(machine: Vec<u8>) -> Input {
        ours_with(OURS, machine)
    }

    fn ours_with(ptx: &str, machine: Vec<u8>) -> Input {
        Input {
            kind: InputKind::Ptx,
            name: "kernels.ptx".into(),
            path: None,
            bytes: ptx.as_bytes().into(),
            unchecked: false,
            machine: Some(machine.into()),
        }
    }

    fn foreign(kind: InputKind, bytes: Vec<u8>) -> Input {
        Input {
            kind,
            name: format!("functions.{}", kind.extension()),
            path: None,
            bytes: bytes.into(),
            unchecked: false,
            machine: None,
        }
    }

    /// Relocatable objects for each of `sms`.
    fn relocatable(sms: &[u32]) -> Vec<u8> {
        let entries: Vec<(u16, u32, Vec<u8>)> =
            sms.iter().map(|&sm| (2, sm, elf_for_tests(1))).collect();
        build_for_tests(&entries)
    }

    fn sm(major: u32, minor: u32) -> Arch {
        Arch::from_compute_capability(major, minor)
    }

    #[test]
    fn machine_code_for_the_link_s_architecture_is_chosen() {
        let input = ours(relocatable(&[80, 90]));
        let default = LinkOptions::default();
        assert_eq!(choice(&input, sm(9, 0), false, default), Some(Ok(())));
        assert_eq!(choice(&input, sm(8, 0), false, default), Some(Ok(())));
        // No object for sm_86: the PTX, naming what the machine code holds.
        let e = choice(&input, sm(8, 6), false, default)
            .unwrap()
            .unwrap_err();
        assert!(
            e.contains("`kernels.ptx`") && e.contains("sm_80, sm_90") && e.contains("sm_86"),
            "{e}"
        );
        // An input without machine code has no choice to make.
        assert_eq!(
            choice(
                &foreign(InputKind::Ptx, PTX.into()),
                sm(9, 0),
                false,
                default
            ),
            None
        );
    }

    #[test]
    fn lto_options_and_missing_objects_fall_back_to_the_ptx_with_the_reason() {
        let default = LinkOptions::default();
        let input = ours(relocatable(&[90]));
        let lto = choice(&input, sm(9, 0), true, default)
            .unwrap()
            .unwrap_err();
        assert!(lto.contains("link-time optimisation"), "{lto}");
        let options = LinkOptions {
            max_registers: Some(32),
            ..LinkOptions::default()
        };
        let opts = choice(&input, sm(9, 0), false, options)
            .unwrap()
            .unwrap_err();
        assert!(opts.contains("code generation options"), "{opts}");
        // The PTX written in its place when the tools were missing, an executable image, and
        // no bytes at all: no relocatable object.
        for machine in [
            PTX.as_bytes().to_vec(),
            build_for_tests(&[(2, 90, elf_for_tests(2))]),
            Vec::new(),
        ] {
            let e = choice(&ours(machine), sm(9, 0), false, default)
                .unwrap()
                .unwrap_err();
            assert!(e.contains("no relocatable object"), "{e}");
        }
    }

    #[test]
    fn machine_code_of_another_ptx_falls_back_to_the_ptx_naming_the_difference() {
        let default = LinkOptions::default();
        // The PTX has kernel `k`, the object none.
        let e = choice(
            &ours_with(PTX, relocatable(&[90])),
            sm(9, 0),
            false,
            default,
        )
        .unwrap()
        .unwrap_err();
        assert!(
            e.contains("`kernels.ptx` is linked as PTX")
                && e.contains("not this PTX's")
                && e.contains("kernel `k` is not in the machine code"),
            "{e}"
        );
        // A record (a foreign declaration's, named by its hash) the object lacks.
        let record = format!(
            "{OURS}.visible .global .align 1 .b8 __gpukernel_foreign_mul_0123456789abcdef[1] = {{1}};\n"
        );
        let e = choice(
            &ours_with(&record, relocatable(&[90])),
            sm(9, 0),
            false,
            default,
        )
        .unwrap()
        .unwrap_err();
        assert!(
            e.contains("record `__gpukernel_foreign_mul_0123456789abcdef`"),
            "{e}"
        );
        assert!(!is_machine_code(
            &ours_with(PTX, relocatable(&[90])),
            sm(9, 0),
            false,
            default
        ));
    }

    #[test]
    fn the_summary_says_whether_anything_is_compiled() {
        let default = LinkOptions::default();
        let with = ours(relocatable(&[90]));
        let sass = build_for_tests(&[(2, 90, elf_for_tests(1)), (1, 90, b"ptx".to_vec())]);
        // Ours and a foreign fatbin with sm_90 SASS: nothing compiled.
        let all = [with.clone(), foreign(InputKind::Fatbin, sass.clone())];
        assert_eq!(summary(&all, sm(9, 0), false, default), Some(Ok(())));
        // A foreign source is compiled; ours is still machine code.
        let cu = foreign(
            InputKind::Cuda,
            b"__device__ int f() { return 1; }".to_vec(),
        );
        let e = summary(&[with.clone(), cu], sm(9, 0), false, default)
            .unwrap()
            .unwrap_err();
        assert!(
            e.contains("`kernels.ptx` is linked as machine code")
                && e.contains("`functions.cu` (cu)"),
            "{e}"
        );
        // A foreign fatbin with PTX only for this architecture: compiled.
        let ptx_only = foreign(
            InputKind::Fatbin,
            build_for_tests(&[(1, 90, b"ptx".to_vec())]),
        );
        let e = summary(&[with.clone(), ptx_only], sm(9, 0), false, default)
            .unwrap()
            .unwrap_err();
        assert!(e.contains("holds no machine code for sm_90"), "{e}");
        // On another architecture, ours falls back too.
        let e = summary(&all, sm(8, 0), false, default)
            .unwrap()
            .unwrap_err();
        assert!(e.contains("not for the link's sm_80"), "{e}");
        // Without machine code given, nothing to say.
        assert_eq!(
            summary(
                &[foreign(InputKind::Fatbin, sass)],
                sm(9, 0),
                false,
                default
            ),
            None
        );
    }
}

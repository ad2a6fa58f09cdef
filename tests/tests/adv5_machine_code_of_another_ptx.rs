//! `Linker::add_ptx_with_sass` given the machine code of another kernels crate (or another
//! build) than its PTX: every check of the link (foreign declarations, definitions) reads the
//! PTX, so linking that machine code would link kernels nothing checked. The link must take the
//! PTX instead, and `load_path` say why, naming the input. Offline (no GPU): reads the inputs
//! only.

use gpukernel_runtime::link::{Arch, Linker, LoadPath};

#[test]
fn machine_code_of_another_crate_is_not_linked_for_this_ptx() {
    let mut linker = Linker::for_arch("sm_90").expect("an offline linker");
    linker.add_ptx_with_sass(
        gpukernel_tests_misuse_kernels::PTX,
        ffi_examples_kernels::RELOCATABLE,
        "misuse.ptx",
    );
    match linker.load_path().expect("the load path") {
        LoadPath::Linked { reason } => assert!(
            reason.contains("`misuse.ptx` is linked as PTX")
                && reason.contains("not this PTX's")
                && reason.contains("RELOCATABLE"),
            "{reason}"
        ),
        other => panic!("the machine code of another crate would be linked: {other:?}"),
    }
}

#[test]
fn the_machine_code_of_the_same_build_is_still_linked() {
    let mut linker = Linker::for_arch("sm_90").expect("an offline linker");
    linker.add_ptx_with_sass(
        ffi_examples_kernels::PTX,
        ffi_examples_kernels::RELOCATABLE,
        "kernels.ptx",
    );
    let path = linker.load_path().expect("the load path");
    if ffi_examples_kernels::RELOCATABLE.starts_with(b".version")
        || ffi_examples_kernels::RELOCATABLE.is_empty()
    {
        // Built without ptxas: no machine code at all (the reason says so).
        println!("no machine code in this build: {path:?}");
        return;
    }
    assert_eq!(
        path,
        LoadPath::LinkedMachineCode {
            arch: Arch::from_compute_capability(9, 0)
        }
    );
}

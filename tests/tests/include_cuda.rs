//! `include_cuda!` + `Linker::add_cuda`: the README's link line works from any current
//! directory, its `#include`s found in the source's folder. Needs NVRTC and nvJitLink (what
//! `cargo xtask doctor` installs); without them the test fails, saying so.

use ffi_examples_kernels::PTX;
use gpukernel_runtime::link::{CachePolicy, Linker};
use gpukernel_runtime::{Error, include_cuda};

#[test]
fn an_embedded_source_links_from_another_directory() {
    // Another current directory than the crate's: a relative `add_file` would fail here.
    std::env::set_current_dir(std::env::temp_dir()).unwrap();
    let mut linker = Linker::for_arch("sm_90").unwrap();
    linker.cache(CachePolicy::Disabled);
    // ANCHOR: link
    let image = linker
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_cuda(include_cuda!("../ffi-examples/kernels/cuda/functions.cu"))
        .link()
        .unwrap_or_else(|e| panic!("{e}"));
    // ANCHOR_END: link
    assert!(!image.cubin().is_empty());

    let e = Linker::for_arch("sm_90")
        .unwrap()
        .add_ptx_kernels(PTX, "kernels.ptx", &["multiply_vectors"])
        .add_file("cuda/functions.cu")
        .link()
        .unwrap_err();
    assert!(matches!(e, Error::LinkInputRead { .. }), "{e}");
    let text = format!("{e:?}");
    assert!(
        text.contains("resolved against the current directory")
            && text.contains("include_cuda!(\"cuda/functions.cu\")"),
        "{text}"
    );
}

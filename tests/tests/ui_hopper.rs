//! The Hopper APIs' compile-time refusals (`ui/fail/hopper_*.rs`; regenerate the `.stderr`
//! files with `TRYBUILD=overwrite`, then read the diff): a programmatic dependent launch needs
//! `unsafe`, and the TMA element types are the library's own (a wider `DATA_TYPE` than the Rust
//! type would let `tma::load` write past the box).

#[test]
fn hopper_misuse_does_not_compile() {
    trybuild::TestCases::new().compile_fail("ui/fail/hopper_*.rs");
}

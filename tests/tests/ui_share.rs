//! Sharing's compile-time refusals: opening or importing another side's memory needs
//! `unsafe`, and a view of a mapped buffer cannot outlive it (`ui/fail/share_*.rs`; regenerate
//! the `.stderr` files with `TRYBUILD=overwrite`, then read the diff).

#[test]
fn sharing_misuse_does_not_compile() {
    trybuild::TestCases::new().compile_fail("ui/fail/share_*.rs");
}

//! The macros' UI tests: every misuse of `#[kernel]` and `declare_device!` must fail with the
//! message in the `.stderr` file next to it (regenerate with `TRYBUILD=overwrite`, then read
//! the diff), and the well-formed uses in `ui/pass` must compile.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/fail/kernel_*.rs");
    cases.compile_fail("ui/fail/declare_*.rs");
    cases.compile_fail("ui/fail/print_*.rs");
    cases.compile_fail("ui/fail/derive_*.rs");
    cases.pass("ui/pass/*.rs");
}

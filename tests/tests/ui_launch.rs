//! Typed launches check the arguments against the kernel's parameters at compile time: each
//! mismatch in `ui/fail/launch_*.rs` must fail with the message in its `.stderr` file
//! (regenerate with `TRYBUILD=overwrite`, then read the diff).

#[test]
fn launch_argument_mismatches_do_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/fail/launch_*.rs");
    // Safe byte fills cannot make invalid values (`bool`).
    cases.compile_fail("ui/fail/memset_*.rs");
    // Collectives: a group's buffers outlive it; a communicator is not shared across threads.
    cases.compile_fail("ui/fail/collective_*.rs");
}

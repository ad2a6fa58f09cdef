//! Graph lifetimes are checked at compile time: each misuse in `ui/fail/graph_*.rs` (a buffer
//! dropped, read or written by the host while a graph or an instantiation that uses it can
//! still run, a `Capture` leaving its closure, a host node borrowing a local, a child graph
//! borrowing less long than its parent, an event node's event dropped, a forged
//! conditional handle) must fail with the message in its `.stderr` file (regenerate with
//! `TRYBUILD=overwrite`, then read the diff).

#[test]
fn graph_lifetime_misuse_does_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/fail/graph_*.rs");
}

//! Compile-time checks of the macros: each failing case is one diagnostic,
//! compared with its `.stderr` snapshot; the `pass` cases must compile.

#[test]
fn macro_diagnostics() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}

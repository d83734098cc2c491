//! Compile-time behaviour of the kernel macros: every rejected construct is a spanned
//! error (snapshots in `ui/fail/*.stderr`), and the accepted language compiles and runs
//! (`ui/pass`). One `TestCases` run, so trybuild builds the dependencies once.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}

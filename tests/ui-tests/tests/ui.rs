//! Compile-time behaviour of the kernel macros: every rejected construct is a spanned
//! error (snapshots in `ui/fail/*.stderr`). The accepted language is `tests/accepted.rs`,
//! an ordinary test: with `compile_fail` cases alone, trybuild checks them all in one
//! `cargo check` (no code generated, no binary linked), where a single `pass` case made it
//! build every dependency and check each case in a cargo run of its own.

#[test]
fn ui() {
    trybuild::TestCases::new().compile_fail("tests/ui/fail/*.rs");
}

//! The compile-time tests of tang's kernel macros: `tests/ui.rs` (trybuild) checks that
//! every rejected construct in `tests/ui/fail/` is a spanned error, and `tests/accepted.rs`
//! compiles and runs the accepted language (`tests/accepted/`). A package of their own
//! keeps what trybuild compiles to tang-runtime and tang-nn.

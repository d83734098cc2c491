//! The compile-time tests of tang's kernel macros live in `tests/ui.rs` (trybuild) and
//! `tests/ui/`: every rejected construct is a spanned error, the accepted language compiles
//! and runs. A package of their own keeps what trybuild compiles to tang-runtime and
//! tang-nn.

//! The accepted language: each case in `accepted/` is a module of this test, compiled by
//! the workspace's test build, and its `main` runs as a test. (They were trybuild `pass`
//! cases; a trybuild run with any `pass` case builds every dependency and links a binary
//! per case, and checks each `compile_fail` case in a cargo run of its own, where with
//! `compile_fail` cases alone it runs one `cargo check` over all of them.) Each case file
//! still compiles on its own as a program, so it reads as a user's program does.

// A case may use a kernel only through the items its macro generates (`items::grad`), as
// a program would; the plain function is then never called.
#![allow(dead_code)]
// The cases write what the macros must accept (a late `let` initialised in both branches,
// `!(a < b)` whose NaN behaviour the kernel must keep, a launcher's full type spelled
// out), not what clippy would rewrite them to.
#![allow(
    clippy::needless_late_init,
    clippy::neg_cmp_op_on_partial_ord,
    clippy::type_complexity
)]

#[path = "accepted/basic_kernel.rs"]
mod basic_kernel;
#[path = "accepted/control_flow.rs"]
mod control_flow;
// Included rather than a module file: rustfmt, which formats module files, ran for 40
// minutes on its 1,000 nested parentheses without finishing; it leaves included files alone.
#[allow(unused_parens)]
mod deep_expressions {
    include!("accepted/deep_expressions.rs");
}
#[path = "accepted/deferred_init.rs"]
mod deferred_init;
#[path = "accepted/derive_module.rs"]
mod derive_module;
#[path = "accepted/fused_wrt.rs"]
mod fused_wrt;
#[path = "accepted/hygiene.rs"]
mod hygiene;
#[path = "accepted/in_place.rs"]
mod in_place;
#[path = "accepted/kernels_mod.rs"]
mod kernels_mod;
#[path = "accepted/via_tang_nn.rs"]
mod via_tang_nn;
#[path = "accepted/via_tang_runtime.rs"]
mod via_tang_runtime;

#[test]
fn basic_kernel() {
    basic_kernel::main();
}

#[test]
fn control_flow() {
    control_flow::main();
}

#[test]
fn deep_expressions() {
    deep_expressions::main();
}

#[test]
fn deferred_init() {
    deferred_init::main();
}

#[test]
fn derive_module() {
    derive_module::main();
}

#[test]
fn fused_wrt() {
    fused_wrt::main();
}

#[test]
fn hygiene() {
    hygiene::main();
}

#[test]
fn in_place() {
    in_place::main();
}

#[test]
fn kernels_mod() {
    kernels_mod::main();
}

#[test]
fn via_tang_nn() {
    via_tang_nn::main();
}

#[test]
fn via_tang_runtime() {
    via_tang_runtime::main();
}

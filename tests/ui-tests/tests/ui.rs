//! Compile-time behaviour of the kernel macros: every rejected construct is a spanned
//! error (snapshots in `ui/fail/*.stderr`), and the accepted language compiles and runs
//! (`ui/pass`). One `TestCases` run, so trybuild builds the dependencies once.

use std::path::Path;

/// Cargo settings for trybuild's own build, which runs in `<target>/tests/trybuild` with
/// cargo's default dev profile (the workspace's profiles are not copied into its
/// project): full debug information for every dependency, which only makes that second
/// build of wgpu and naga slower and its ten linked `pass` binaries several hundred
/// megabytes each. Cargo reads a `.cargo/config.toml` found above the directory it runs
/// in, so this one reaches trybuild's build alone.
const TRYBUILD_CONFIG: &str = "\
# Written by tests/ui-tests/tests/ui.rs for trybuild's build of the UI cases.
[profile.dev]
debug = false
";

#[test]
fn ui() {
    // `CARGO_TARGET_TMPDIR` is `<target>/tmp`; trybuild builds in `<target>/tests/trybuild`.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory");
    let config_dir = target.join("tests").join("trybuild").join(".cargo");
    std::fs::create_dir_all(&config_dir).expect("create trybuild's .cargo directory");
    std::fs::write(config_dir.join("config.toml"), TRYBUILD_CONFIG)
        .expect("write trybuild's cargo config");

    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}

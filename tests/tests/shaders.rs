//! Every dense kernel the runtime can produce passes naga: the registry of
//! `tang-runtime/src/ops/mod.rs` lists them (every module that holds kernels must list
//! its own). The elementwise kernels are validated when the macros expand them, and again
//! by their own tests.

#[test]
fn every_dense_kernel_passes_naga() {
    let all = tang_runtime::__testing::dense_kernels();
    let mut failures = Vec::new();
    for (name, src) in &all {
        if let Err(e) = tang_runtime::tang_expr::validate(src) {
            failures.push(format!("{name}: {e}"));
        }
    }
    println!("validated {} dense kernels", all.len());
    assert!(all.len() > 400, "only {} kernels listed", all.len());
    // The kernels that draw random numbers are also listed in their 64-bit form: the
    // portable product's text was found and replaced.
    let int64 = all
        .iter()
        .filter(|(n, _)| n.ends_with("(SHADER_INT64)"))
        .count();
    assert!(
        int64 >= 10,
        "only {int64} kernels in their SHADER_INT64 form"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Writes every registered kernel's WGSL, name then text, to the file named by
/// `TANG_WGSL_DUMP`: run it before and after a refactor of kernel text generation and
/// `diff` the two files to show the change emits the same text (and so the same speed):
/// `TANG_WGSL_DUMP=/tmp/before.wgsl cargo test -p tang-tests --test shaders -- --ignored dump`.
#[test]
#[ignore = "writes a file for a before/after diff; run by hand with TANG_WGSL_DUMP set"]
fn dump_every_kernel_text() {
    let path = std::env::var("TANG_WGSL_DUMP").expect("set TANG_WGSL_DUMP to the output file");
    let mut all = tang_runtime::__testing::dense_kernels();
    all.sort();
    let text: String = all
        .iter()
        .map(|(name, src)| format!("// ==== {name}\n{src}\n"))
        .collect();
    std::fs::write(&path, text).expect("write the dump");
    println!("wrote {} kernels to {path}", all.len());
}

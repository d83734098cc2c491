//! Every dense kernel the runtime can produce passes naga: the registry of
//! `tang-runtime/src/dense/mod.rs` lists them (every module that holds kernels must list
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
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

//! Every shader in the workspace passes naga: the dense kernels' hand-written and
//! generated WGSL (the elementwise kernels are validated when the macros expand them, and
//! again by their own tests).

use tang_runtime::dense::{
    attention, cross_entropy, embedding, matmul, norm, reduce, rows_team, shape, softmax,
};

fn owned<'a>(v: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<(String, String)> {
    v.into_iter()
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect()
}

#[test]
fn every_dense_shader_passes_naga() {
    let mut all: Vec<(String, String)> = Vec::new();
    all.extend(owned(attention::shaders()));
    all.extend(owned(cross_entropy::shaders()));
    all.extend(owned(embedding::shaders()));
    all.extend(owned(norm::shaders()));
    all.extend(owned(reduce::shaders()));
    all.extend(owned(reduce::backward_shaders()));
    all.extend(owned(softmax::shaders()));
    all.extend(rows_team::shaders());
    all.extend(matmul::shaders());
    all.extend(
        shape::shaders()
            .into_iter()
            .enumerate()
            .map(|(i, s)| (format!("shape_{i}"), s)),
    );
    let mut failures = Vec::new();
    for (name, src) in &all {
        if let Err(e) = tang_runtime::tang_expr::validate(src) {
            failures.push(format!("{name}: {e}"));
        }
    }
    println!("validated {} dense shaders", all.len());
    assert!(all.len() > 400, "only {} shaders listed", all.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

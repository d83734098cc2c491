//! The GPT against PyTorch (`../shared/fixtures/torch/gpt*.safetensors`, nanoGPT's model):
//! the fixture's weights loaded strictly into a tang GPT built from the fixture's config
//! give its logits, loss and every parameter's gradient; names, shapes and the parameter
//! count are PyTorch's.

mod attention_common;

use std::collections::BTreeMap;

use attention_common::fixture;
use tang_nn::models::gpt::{Gpt, GptConfig};
use tang_nn::nn::functional::{class_indices_from_i64, cross_entropy};
use tang_nn::safetensors::{load_model, read_file};
use tang_nn::tang_runtime::Device;
use tang_nn::{Module, Tensor};

/// The fixture GPT: built from the config in the file's metadata, weights loaded strictly.
pub fn fixture_gpt(dev: &Device) -> Gpt {
    let ck = read_file(fixture("gpt.safetensors")).unwrap();
    let config = GptConfig::from_json(&ck.metadata["config"]).unwrap();
    let gpt = Gpt::new(dev, &config, 0).unwrap();
    let report = load_model(&gpt, fixture("gpt.safetensors"), true).unwrap();
    assert!(report.is_empty());
    gpt.eval();
    gpt
}

fn keys_json() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture("keys.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The largest `|a - b|`.
fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// The largest `|a|`.
fn max_abs(a: &[f32]) -> f32 {
    a.iter().map(|x| x.abs()).fold(0.0, f32::max)
}

#[test]
fn names_shapes_and_parameter_count_are_nanogpts() {
    let dev = tang_testing::device();
    let keys = keys_json();
    let config = GptConfig::from_json(&keys["gpt_config"].to_string()).unwrap();
    let gpt = Gpt::new(&dev, &config, 0).unwrap();
    let want: BTreeMap<String, Vec<usize>> = serde_json::from_value(keys["gpt"].clone()).unwrap();
    let got: BTreeMap<String, Vec<usize>> = gpt.state_dict().shapes().into_iter().collect();
    assert_eq!(got, want);
    let order: Vec<String> = serde_json::from_value(keys["gpt_named_parameters"].clone()).unwrap();
    let names: Vec<String> = gpt.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names, order,
        "named_parameters: the tied head once, as transformer.wte.weight"
    );
    assert_eq!(
        gpt.num_params() as u64,
        keys["gpt_num_params"].as_u64().unwrap()
    );
    assert_eq!(
        gpt.lm_head.weight.id(),
        gpt.transformer.wte.weight.id(),
        "lm_head.weight is transformer.wte.weight's leaf"
    );
}

#[test]
fn logits_loss_and_gradients_equal_pytorchs() {
    let dev = tang_testing::device();
    let gpt = fixture_gpt(&dev);
    let io = read_file(fixture("gpt_io.safetensors")).unwrap().tensors;
    let idx = Tensor::constant(io.u32_tensor("idx", &dev).unwrap());
    // nanoGPT's loss: logits.view(-1, V) against targets.view(-1), PyTorch's ignore
    // index -100 (kept as its 32-bit wrap).
    let targets = io.i64_values("targets").unwrap();
    let targets = class_indices_from_i64(&dev, &targets, &[targets.len()]).unwrap();

    let logits = gpt.forward(&idx).unwrap();
    let want = io.f32_values("logits").unwrap();
    let diff = max_diff(&logits.to_vec().unwrap(), &want);
    println!(
        "logits: max |tang - torch| = {diff:.3e} over {} values",
        want.len()
    );
    assert!(diff <= 1e-4, "logits differ by {diff}");

    let vocab = gpt.config().vocab_size;
    let rows = logits.reshape(&[targets.numel(), vocab]).unwrap();
    let loss = cross_entropy(&rows, &targets).unwrap();
    let (got, want) = (loss.to_vec().unwrap()[0], io.f32_values("loss").unwrap()[0]);
    let rel = ((got - want) / want).abs();
    println!("loss: tang {got} torch {want} relative {rel:.3e}");
    assert!(rel <= 1e-5, "loss {got} vs {want}");

    let grads = loss.backward().unwrap();
    for (name, p) in gpt.named_parameters() {
        let got = grads
            .get(&p)
            .unwrap_or_else(|| panic!("no gradient for {name}"));
        let want = io.f32_values(&format!("grad.{name}")).unwrap();
        let (diff, scale) = (max_diff(&got.to_vec().unwrap(), &want), max_abs(&want));
        println!(
            "grad.{name}: max diff {diff:.3e}, max |g| {scale:.3e}, ratio {:.3e}",
            diff / scale
        );
        assert!(diff <= 1e-4 * scale, "grad.{name}: {diff} > 1e-4 * {scale}");
    }
}

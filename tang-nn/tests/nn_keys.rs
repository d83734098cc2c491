//! The state dict keys and shapes of tang's layers equal PyTorch's (`keys.json` of the
//! fixtures): Sequential, LayerNorm without bias, RMSNorm, Embedding.

mod safetensors_common;

use std::collections::BTreeMap;

use safetensors_common::fixture;
use tang_nn::Module;
use tang_nn::nn::{Embedding, LayerNorm, Linear, RMSNorm, ReLU, Sequential};
use tang_nn::rng::SplitMix64;

/// `keys.json`'s entry `name`: key to shape.
fn torch_keys(name: &str) -> BTreeMap<String, Vec<usize>> {
    let text = std::fs::read_to_string(fixture("keys.json")).unwrap();
    let all: serde_json::Value = serde_json::from_str(&text).unwrap();
    serde_json::from_value(all[name].clone()).unwrap()
}

fn tang_keys(m: &dyn Module) -> BTreeMap<String, Vec<usize>> {
    m.state_dict()
        .iter()
        .map(|(k, t)| (k.to_string(), t.shape().to_vec()))
        .collect()
}

#[test]
fn layer_state_dicts_have_pytorch_keys_and_shapes() {
    let dev = tang_testing::device();
    let mut rng = SplitMix64::new(0);
    let mlp = Sequential::new()
        .append(Linear::new(&dev, 64, 128, true, &mut rng).unwrap())
        .append(ReLU)
        .append(Linear::new(&dev, 128, 10, true, &mut rng).unwrap());
    assert_eq!(tang_keys(&mlp), torch_keys("mlp_sequential"));
    // Sequential's order is PyTorch's too.
    let order: Vec<String> = mlp.state_dict().names().map(str::to_string).collect();
    assert_eq!(order, ["0.weight", "0.bias", "2.weight", "2.bias"]);

    let ln = LayerNorm::new(&dev, 64, 1e-5, false).unwrap();
    assert_eq!(tang_keys(&ln), torch_keys("layer_norm_64_no_bias"));
    let rms = RMSNorm::new(&dev, 64, None).unwrap();
    assert_eq!(tang_keys(&rms), torch_keys("rms_norm_64"));
    let emb = Embedding::new(&dev, 81, 64, &mut rng).unwrap();
    assert_eq!(tang_keys(&emb), torch_keys("embedding_81_64"));
}

#[test]
fn initialisation_follows_pytorch_distributions() {
    let dev = tang_testing::device();
    let mut rng = SplitMix64::new(5);
    let fc = Linear::new(&dev, 256, 64, true, &mut rng).unwrap();
    let bound = 1.0 / 16.0;
    for t in [&fc.weight, fc.bias.as_ref().unwrap()] {
        let v = t.to_vec().unwrap();
        assert!(
            v.iter().all(|x| x.abs() <= bound),
            "uniform within ±1/sqrt(in)"
        );
        // Uniform on ±b has variance b²/3.
        let var = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>() / v.len() as f64;
        let want = f64::from(bound).powi(2) / 3.0;
        assert!((var - want).abs() < 0.2 * want, "variance {var} vs {want}");
    }
    let emb = Embedding::new(&dev, 100, 100, &mut rng).unwrap();
    let v = emb.weight.to_vec().unwrap();
    let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / 1e4;
    let var = v
        .iter()
        .map(|&x| (f64::from(x) - mean).powi(2))
        .sum::<f64>()
        / 1e4;
    assert!(
        mean.abs() < 0.05 && (var - 1.0).abs() < 0.05,
        "N(0,1): {mean} {var}"
    );
    let ln = LayerNorm::new(&dev, 8, 1e-5, true).unwrap();
    assert_eq!(ln.weight.to_vec().unwrap(), vec![1.0; 8]);
    assert_eq!(ln.bias.as_ref().unwrap().to_vec().unwrap(), vec![0.0; 8]);
    assert!(LayerNorm::new(&dev, 8, -1.0, true).is_err());
    // Seeded: the same seed gives the same parameters.
    let a = Linear::new(&dev, 3, 2, true, &mut SplitMix64::new(9)).unwrap();
    let b = Linear::new(&dev, 3, 2, true, &mut SplitMix64::new(9)).unwrap();
    assert_eq!(a.weight.to_vec().unwrap(), b.weight.to_vec().unwrap());
}

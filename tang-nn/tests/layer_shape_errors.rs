//! Each layer names itself in its shape errors, as `Linear(4 -> 3)` does, so a wrong
//! input points at the layer rather than at the kernel inside it.

use tang_nn::nn::AttnMask;
use tang_nn::nn::{
    CausalSelfAttention, CausalSelfAttentionConfig, Conv2d, Conv2dOptions, Embedding, LayerNorm,
    MultiheadAttention, RMSNorm,
};
use tang_nn::rng::SplitMix64;
use tang_nn::{Device, Tensor};

fn says(err: tang_nn::autograd::Error, name: &str) {
    let text = err.to_string();
    assert!(text.contains(name), "{text:?} should name {name}");
    assert!(
        format!("{err:?}").contains(name),
        "Debug shows the Display text"
    );
}

#[test]
fn every_layer_names_itself() {
    let dev = Device::new().unwrap();
    let rng = &mut SplitMix64::new(0);
    let conv = Conv2d::new(&dev, 3, 8, [3, 3], Conv2dOptions::default(), rng).unwrap();
    let gray = Tensor::zeros(&dev, &[1, 1, 5, 5]).unwrap();
    says(
        conv.forward(&gray).unwrap_err(),
        "Conv2d(3 -> 8, kernel [3, 3])",
    );
    let flat = Tensor::zeros(&dev, &[3, 5, 5]).unwrap();
    says(conv.forward(&flat).unwrap_err(), "[N, 3, H, W]");

    let wte = Embedding::new(&dev, 10, 4, rng).unwrap();
    let float_ids = Tensor::zeros(&dev, &[3]).unwrap();
    says(wte.forward(&float_ids).unwrap_err(), "Embedding(10, 4)");

    let x = Tensor::zeros(&dev, &[2, 6]).unwrap();
    let ln = LayerNorm::new(&dev, 8, 1e-5, true).unwrap();
    says(ln.forward(&x).unwrap_err(), "LayerNorm(8)");
    let rms = RMSNorm::new(&dev, 8, None).unwrap();
    says(rms.forward(&x).unwrap_err(), "RMSNorm(8)");

    let cfg = CausalSelfAttentionConfig::new(16, 4);
    let attn = CausalSelfAttention::new(&dev, &cfg, rng).unwrap();
    let narrow = Tensor::zeros(&dev, &[1, 5, 12]).unwrap();
    says(
        attn.forward(&narrow).unwrap_err(),
        "CausalSelfAttention(n_embd 16)",
    );

    let mha = MultiheadAttention::new(&dev, 16, 4, 0.0, true, true, rng).unwrap();
    let err = mha
        .forward(&narrow, &narrow, &narrow, AttnMask::None)
        .unwrap_err();
    says(err, "MultiheadAttention(embed_dim 16)");
}

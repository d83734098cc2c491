//! Scaled dot-product attention (fused and composed paths, grouped-query heads, masks)
//! against an f64 reference, gradients against central differences.

mod attention_common;

use attention_common::reference::attention;
use attention_common::{gradcheck, param};
use tang_nn::autograd::{RawTensor, Tensor};
use tang_nn::nn::{AttnMask, scaled_dot_product_attention};
use tang_nn::tang_runtime::Device;
use tang_testing::Rng;

/// q `[b, h, l, d]`, k and v `[b, hkv, s, d]` as named parameters.
fn qkv(dev: &Device, seed: u64, [b, h, hkv, l, s, d]: [usize; 6]) -> Vec<(String, Tensor)> {
    let mut rng = Rng::new(seed);
    vec![
        ("q".into(), param(dev, &mut rng, &[b, h, l, d], 1.0)),
        ("k".into(), param(dev, &mut rng, &[b, hkv, s, d], 1.0)),
        ("v".into(), param(dev, &mut rng, &[b, hkv, s, d], 1.0)),
    ]
}

fn identity(t: &Tensor) -> Result<Tensor, tang_nn::autograd::Error> {
    Ok(t.clone())
}

#[test]
fn causal_attention_fused_and_composed_with_grouped_heads() {
    // [b, h, hkv, l, s, d]: ordinary heads, grouped heads, a length of 17, one head of one.
    let cases = [
        [1, 2, 2, 3, 3, 4],
        [2, 4, 2, 5, 5, 3],
        [1, 3, 1, 17, 17, 2],
        [1, 1, 1, 1, 1, 1],
    ];
    let dev = tang_testing::device();
    for (n, [b, h, hkv, l, s, d]) in cases.into_iter().enumerate() {
        let params = qkv(&dev, n as u64, [b, h, hkv, l, s, d]);
        let cpu = |x: &[Vec<f64>]| attention(&x[0], &x[1], &x[2], [b, h, hkv, l, s], None, true);
        let t = |i: usize| params[i].1.clone();
        // Without dropout the fused kernel runs; a dropout hook forces the composed path.
        let fused = || scaled_dot_product_attention(&t(0), &t(1), &t(2), AttnMask::Causal, None);
        gradcheck(
            &format!("fused causal {:?}", [b, h, hkv, l, d]),
            &params,
            &fused,
            &cpu,
            1,
        );
        let composed =
            || scaled_dot_product_attention(&t(0), &t(1), &t(2), AttnMask::Causal, Some(&identity));
        gradcheck(
            &format!("composed causal {:?}", [b, h, hkv, l, d]),
            &params,
            &composed,
            &cpu,
            2,
        );
    }
}

#[test]
fn cross_attention_unmasked_causal_and_additive() {
    let dev = tang_testing::device();
    let [b, h, hkv, l, s, d] = [2, 4, 2, 3, 5, 4];
    let params = qkv(&dev, 7, [b, h, hkv, l, s, d]);
    let t = |i: usize| params[i].1.clone();
    let none = || scaled_dot_product_attention(&t(0), &t(1), &t(2), AttnMask::None, None);
    let cpu_none = |x: &[Vec<f64>]| attention(&x[0], &x[1], &x[2], [b, h, hkv, l, s], None, false);
    gradcheck("unmasked L3 S5", &params, &none, &cpu_none, 3);
    // Causal with L != S is aligned at the top left, as PyTorch's `is_causal`.
    let causal = || scaled_dot_product_attention(&t(0), &t(1), &t(2), AttnMask::Causal, None);
    let cpu_causal = |x: &[Vec<f64>]| attention(&x[0], &x[1], &x[2], [b, h, hkv, l, s], None, true);
    gradcheck("causal L3 S5", &params, &causal, &cpu_causal, 4);
    let mut rng = Rng::new(9);
    let mut m: Vec<f32> = rng.vec(l * s, 2.0);
    m[1] = f32::NEG_INFINITY;
    let mask = Tensor::constant(RawTensor::from_slice(&dev, &m, &[l, s]).unwrap());
    let m64: Vec<f64> = m.iter().map(|&x| f64::from(x)).collect();
    let additive =
        || scaled_dot_product_attention(&t(0), &t(1), &t(2), AttnMask::Additive(&mask), None);
    let cpu_additive =
        |x: &[Vec<f64>]| attention(&x[0], &x[1], &x[2], [b, h, hkv, l, s], Some(&m64), false);
    gradcheck("additive L3 S5", &params, &additive, &cpu_additive, 5);
}

#[test]
fn mismatched_heads_are_a_typed_error() {
    let dev = tang_testing::device();
    let params = qkv(&dev, 11, [1, 3, 3, 2, 2, 4]);
    let k2 = qkv(&dev, 12, [1, 2, 2, 2, 2, 4]);
    let err = scaled_dot_product_attention(&params[0].1, &k2[1].1, &k2[2].1, AttnMask::None, None)
        .unwrap_err();
    assert!(err.to_string().contains("Hkv dividing H=3"), "{err}");
}

#[test]
fn exact_gelu_of_the_feed_forward_layers() {
    let dev = tang_testing::device();
    let mut rng = Rng::new(21);
    let x = param(&dev, &mut rng, &[3, 17], 4.0);
    let params = vec![("x".to_string(), x.clone())];
    let cpu = |v: &[Vec<f64>]| {
        v[0].iter()
            .map(|&x| attention_common::reference::gelu_erf(x))
            .collect()
    };
    gradcheck("gelu_erf [3, 17]", &params, &|| x.gelu_erf(), &cpu, 6);
}

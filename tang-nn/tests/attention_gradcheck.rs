//! Scaled dot-product attention (fused and composed paths, grouped-query heads, masks)
//! against an f64 reference, gradients against central differences.

mod attention_common;

use attention_common::reference::attention;
use attention_common::{gradcheck, param};
use tang_nn::autograd::{RawTensor, Tensor};
use tang_nn::nn::{AttnMask, Dropout, manual_seed, scaled_dot_product_attention};
use tang_nn::tang_runtime::Device;
use tang_testing::{Rng, assert_close};

/// q `[b, h, l, d]`, k and v `[b, hkv, s, d]` as named parameters.
fn qkv(dev: &Device, seed: u64, [b, h, hkv, l, s, d]: [usize; 6]) -> Vec<(String, Tensor)> {
    let mut rng = Rng::new(seed);
    vec![
        ("q".into(), param(dev, &mut rng, &[b, h, l, d], 1.0)),
        ("k".into(), param(dev, &mut rng, &[b, hkv, s, d], 1.0)),
        ("v".into(), param(dev, &mut rng, &[b, hkv, s, d], 1.0)),
    ]
}

/// The causal mask `[l, l]` as an additive one, which takes the composed path.
fn causal_additive(dev: &Device, l: usize) -> Tensor {
    additive(dev, l, true)
}

/// The causal mask `[l, l]` (or no mask: zeros) as an additive one.
fn additive(dev: &Device, l: usize, causal: bool) -> Tensor {
    let m: Vec<f32> = (0..l * l)
        .map(|e| {
            if !causal || e % l <= e / l {
                0.0
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect();
    Tensor::constant(RawTensor::from_slice(dev, &m, &[l, l]).unwrap())
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
        // The causal mask runs the fused kernel; the same mask as an additive one, the
        // composed path.
        let fused = || scaled_dot_product_attention(&t(0), &t(1), &t(2), AttnMask::Causal, None);
        gradcheck(
            &format!("fused causal {:?}", [b, h, hkv, l, d]),
            &params,
            &fused,
            &cpu,
            1,
        );
        let mask = causal_additive(&dev, l);
        let composed =
            || scaled_dot_product_attention(&t(0), &t(1), &t(2), AttnMask::Additive(&mask), None);
        gradcheck(
            &format!("composed causal {:?}", [b, h, hkv, l, d]),
            &params,
            &composed,
            &cpu,
            2,
        );
        // No mask at equal lengths: the fused kernel without the causal mask.
        let cpu_none =
            |x: &[Vec<f64>]| attention(&x[0], &x[1], &x[2], [b, h, hkv, l, s], None, false);
        let unmasked = || scaled_dot_product_attention(&t(0), &t(1), &t(2), AttnMask::None, None);
        gradcheck(
            &format!("fused unmasked {:?}", [b, h, hkv, l, d]),
            &params,
            &unmasked,
            &cpu_none,
            6,
        );
    }
}

/// With dropout on the weights the fused kernel (causal mask) and the composed path (the
/// same mask, additive) draw the same mask from the same seed: the same output and the
/// same gradients, grouped heads included (T 17 and 64: the row-per-thread and the
/// register-blocked kernels, and the materialized backward).
#[test]
fn dropout_fused_and_composed_agree() {
    let dev = tang_testing::device();
    let drop = Dropout::new(0.2).unwrap();
    for (n, [b, h, hkv, l, d]) in [[1, 4, 2, 17, 8], [2, 2, 2, 64, 32]]
        .into_iter()
        .enumerate()
    {
        let params = qkv(&dev, 30 + n as u64, [b, h, hkv, l, l, d]);
        let t = |i: usize| params[i].1.clone();
        let g = RawTensor::from_slice(&dev, &Rng::new(40).vec(b * h * l * d, 1.0), &[b, h, l, d])
            .unwrap();
        let run = |mask: AttnMask<'_>| -> Vec<Vec<f32>> {
            manual_seed(123);
            let y = scaled_dot_product_attention(&t(0), &t(1), &t(2), mask, Some(&drop)).unwrap();
            let grads = y.backward_with(g.clone()).unwrap();
            let mut out = vec![y.to_vec().unwrap()];
            out.extend((0..3).map(|i| grads.get(&t(i)).unwrap().to_vec().unwrap()));
            out
        };
        for causal in [true, false] {
            let fused = run(if causal {
                AttnMask::Causal
            } else {
                AttnMask::None
            });
            let mask = additive(&dev, l, causal);
            let composed = run(AttnMask::Additive(&mask));
            // Some weights were dropped: the output differs from the dropout-free one.
            let plain =
                scaled_dot_product_attention(&t(0), &t(1), &t(2), AttnMask::Additive(&mask), None);
            assert_ne!(plain.unwrap().to_vec().unwrap(), fused[0]);
            for ((name, a), c) in ["y", "dq", "dk", "dv"].iter().zip(&fused).zip(&composed) {
                let c64: Vec<f64> = c.iter().map(|&x| f64::from(x)).collect();
                let label = format!("{name} causal {causal} {:?}", [b, h, hkv, l, d]);
                assert_close(&label, a, &c64, 1e-5, 1e-4);
            }
        }
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

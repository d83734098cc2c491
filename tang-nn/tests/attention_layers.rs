//! The attention layers against f64 references written from PyTorch's definitions
//! (forward, and every parameter's and the input's gradient by central differences), their
//! `state_dict` keys and shapes against PyTorch's (`keys.json`), and the KV cache against
//! full recomputation.

mod attention_common;

use std::collections::BTreeMap;

use attention_common::reference::{
    add, attention, gelu_erf, layer_norm, linear, relu, swap01, swap12,
};
use attention_common::{fixture, gradcheck, param, randomize};
use tang_nn::Module;
use tang_nn::autograd::{Tensor, no_grad};
use tang_nn::nn::{
    Activation, AttnMask, CausalSelfAttention, CausalSelfAttentionConfig, MultiheadAttention,
    TransformerEncoderLayer, TransformerEncoderLayerConfig,
};
use tang_nn::rng::SplitMix64;
use tang_testing::{Rng, assert_close};

/// The values of parameter `name` among `params` / `values` (same order).
fn by_name<'a>(params: &[(String, Tensor)], values: &'a [Vec<f64>], name: &str) -> &'a [f64] {
    let i = params
        .iter()
        .position(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no parameter {name}"));
    &values[i]
}

/// The input `x` followed by the module's parameters, as the gradient check takes them.
fn with_input(x: &Tensor, m: &impl Module) -> Vec<(String, Tensor)> {
    let mut params = vec![("x".to_string(), x.clone())];
    params.extend(m.named_parameters());
    params
}

/// nanoGPT's attention in f64: `x [B, T, C]`, fused or separate projections.
fn causal_self_attention_ref(
    p: &[(String, Tensor)],
    v: &[Vec<f64>],
    [b, t, c, h, hkv]: [usize; 5],
    bias: bool,
) -> Vec<f64> {
    let x = by_name(p, v, "x");
    let d = c / h;
    let get = |n: &str| by_name(p, v, n);
    let bias_of = |n: &str| bias.then(|| get(&format!("{n}.bias")));
    let (q, k, vv) = if hkv == h {
        let qkv = linear(x, get("c_attn.weight"), bias_of("c_attn"), 3 * c);
        let part = |j: usize| -> Vec<f64> {
            qkv.chunks(3 * c)
                .flat_map(|r| r[j * c..(j + 1) * c].to_vec())
                .collect()
        };
        (part(0), part(1), part(2))
    } else {
        let lin = |n: &str, out: usize| linear(x, get(&format!("{n}.weight")), bias_of(n), out);
        (
            lin("q_proj", c),
            lin("k_proj", hkv * d),
            lin("v_proj", hkv * d),
        )
    };
    let q = swap12(&q, [b, t, h, d]);
    let k = swap12(&k, [b, t, hkv, d]);
    let vv = swap12(&vv, [b, t, hkv, d]);
    let y = attention(&q, &k, &vv, [b, h, hkv, t, t], None, true);
    let y = swap12(&y, [b, h, t, d]);
    linear(&y, get("c_proj.weight"), bias_of("c_proj"), c)
}

#[test]
fn causal_self_attention_gradients_with_and_without_grouped_heads() {
    let dev = tang_testing::device();
    // [b, t, c, h, hkv], bias
    let cases = [
        ([2, 3, 8, 2, 2], true),
        ([1, 5, 8, 4, 2], false),
        ([1, 17, 4, 2, 1], true),
    ];
    for (n, ([b, t, c, h, hkv], bias)) in cases.into_iter().enumerate() {
        let cfg = CausalSelfAttentionConfig {
            n_kv_head: hkv,
            bias,
            ..CausalSelfAttentionConfig::new(c, h)
        };
        let attn = CausalSelfAttention::new(&dev, &cfg, &mut SplitMix64::new(n as u64)).unwrap();
        randomize(&attn, 40 + n as u64);
        let x = param(&dev, &mut Rng::new(n as u64), &[b, t, c], 1.0);
        let params = with_input(&x, &attn);
        let cpu = |v: &[Vec<f64>]| causal_self_attention_ref(&params, v, [b, t, c, h, hkv], bias);
        gradcheck(
            &format!("CausalSelfAttention {:?}", [b, t, c, h, hkv]),
            &params,
            &|| attn.forward(&x),
            &cpu,
            n as u64,
        );
    }
}

/// PyTorch's multi-head attention in f64 for `batch_first` inputs `[N, L, E]`.
fn mha_ref(
    p: &[(String, Tensor)],
    v: &[Vec<f64>],
    prefix: &str,
    (q_in, kv_in): (&[f64], &[f64]),
    [n, l, s, e, h]: [usize; 5],
    mask: Option<&[f64]>,
) -> Vec<f64> {
    let get = |name: &str| by_name(p, v, &format!("{prefix}{name}"));
    let w = get("in_proj_weight");
    let bias = get("in_proj_bias");
    let proj = |x: &[f64], part: usize, len: usize| {
        let y = linear(
            x,
            &w[part * e * e..(part + 1) * e * e],
            Some(&bias[part * e..(part + 1) * e]),
            e,
        );
        swap12(&y, [n, len, h, e / h])
    };
    let y = attention(
        &proj(q_in, 0, l),
        &proj(kv_in, 1, s),
        &proj(kv_in, 2, s),
        [n, h, h, l, s],
        mask,
        false,
    );
    let y = swap12(&y, [n, h, l, e / h]);
    linear(&y, get("out_proj.weight"), Some(get("out_proj.bias")), e)
}

#[test]
fn multihead_attention_gradients_batch_first_or_not_self_and_cross() {
    let dev = tang_testing::device();
    let [n, l, s, e, h] = [2, 3, 5, 8, 2];
    for batch_first in [true, false] {
        let mha =
            MultiheadAttention::new(&dev, e, h, 0.0, true, batch_first, &mut SplitMix64::new(3))
                .unwrap();
        randomize(&mha, 5);
        let mut rng = Rng::new(6);
        let shape = |len: usize| {
            if batch_first {
                [n, len, e]
            } else {
                [len, n, e]
            }
        };
        let q = param(&dev, &mut rng, &shape(l), 1.0);
        let kv = param(&dev, &mut rng, &shape(s), 1.0);
        let mut params = vec![("q".to_string(), q.clone()), ("kv".to_string(), kv.clone())];
        params.extend(mha.named_parameters());
        let mut m: Vec<f32> = rng.vec(l * s, 1.0);
        m[2] = f32::NEG_INFINITY;
        let mask =
            Tensor::constant(tang_nn::autograd::RawTensor::from_slice(&dev, &m, &[l, s]).unwrap());
        let m64: Vec<f64> = m.iter().map(|&x| f64::from(x)).collect();
        let cpu = |v: &[Vec<f64>]| {
            // The reference takes batch-first inputs; swap in and out otherwise.
            let to_bf = |x: &[f64], len: usize| {
                if batch_first {
                    x.to_vec()
                } else {
                    swap01(x, len, n)
                }
            };
            let y = mha_ref(
                &params,
                v,
                "",
                (&to_bf(&v[0], l), &to_bf(&v[1], s)),
                [n, l, s, e, h],
                Some(&m64),
            );
            if batch_first { y } else { swap01(&y, n, l) }
        };
        gradcheck(
            &format!("MultiheadAttention cross batch_first={batch_first}"),
            &params,
            &|| mha.forward(&q, &kv, &kv, AttnMask::Additive(&mask)),
            &cpu,
            7,
        );
    }
}

/// PyTorch's encoder layer in f64, batch-first `[N, S, E]`.
fn encoder_ref(
    p: &[(String, Tensor)],
    v: &[Vec<f64>],
    [n, s, e, h, f]: [usize; 5],
    norm_first: bool,
    act: Activation,
) -> Vec<f64> {
    let get = |name: &str| by_name(p, v, name);
    let x = get("x");
    let norm = |x: &[f64], i: u8| {
        layer_norm(
            x,
            get(&format!("norm{i}.weight")),
            Some(get(&format!("norm{i}.bias"))),
            1e-5,
        )
    };
    let sa = |x: &[f64]| mha_ref(p, v, "self_attn.", (x, x), [n, s, s, e, h], None);
    let ff = |x: &[f64]| {
        let a: Vec<f64> = linear(x, get("linear1.weight"), Some(get("linear1.bias")), f)
            .into_iter()
            .map(|z| match act {
                Activation::Relu => relu(z),
                Activation::Gelu => gelu_erf(z),
            })
            .collect();
        linear(&a, get("linear2.weight"), Some(get("linear2.bias")), e)
    };
    if norm_first {
        let x = add(x, &sa(&norm(x, 1)));
        add(&x, &ff(&norm(&x, 2)))
    } else {
        let x = norm(&add(x, &sa(x)), 1);
        norm(&add(&x, &ff(&x)), 2)
    }
}

#[test]
fn transformer_encoder_layer_gradients_pre_and_post_norm_relu_and_gelu() {
    let dev = tang_testing::device();
    let [n, s, e, h, f] = [2, 3, 8, 2, 12];
    for (k, (norm_first, activation)) in [(true, Activation::Relu), (false, Activation::Gelu)]
        .into_iter()
        .enumerate()
    {
        let cfg = TransformerEncoderLayerConfig {
            dim_feedforward: f,
            dropout: 0.0,
            activation,
            batch_first: true,
            norm_first,
            ..TransformerEncoderLayerConfig::new(e, h)
        };
        let layer =
            TransformerEncoderLayer::new(&dev, &cfg, &mut SplitMix64::new(k as u64)).unwrap();
        randomize(&layer, 10 + k as u64);
        let x = param(&dev, &mut Rng::new(k as u64), &[n, s, e], 1.0);
        let params = with_input(&x, &layer);
        let cpu = |v: &[Vec<f64>]| encoder_ref(&params, v, [n, s, e, h, f], norm_first, activation);
        gradcheck(
            &format!("TransformerEncoderLayer norm_first={norm_first} {activation:?}"),
            &params,
            &|| layer.forward(&x, AttnMask::None),
            &cpu,
            k as u64,
        );
    }
}

/// keys.json's `name` entry: PyTorch's `state_dict` keys and shapes.
fn torch_keys(name: &str) -> BTreeMap<String, Vec<usize>> {
    let text = std::fs::read_to_string(fixture("keys.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    serde_json::from_value(json[name].clone()).unwrap()
}

fn tang_keys(m: &impl Module) -> BTreeMap<String, Vec<usize>> {
    m.state_dict().shapes().into_iter().collect()
}

#[test]
fn state_dict_keys_and_shapes_equal_pytorchs() {
    let dev = tang_testing::device();
    let mut rng = SplitMix64::new(0);
    let mha = MultiheadAttention::new(&dev, 64, 4, 0.0, true, false, &mut rng).unwrap();
    assert_eq!(tang_keys(&mha), torch_keys("multihead_attention_64_4"));
    let cfg = TransformerEncoderLayerConfig {
        dim_feedforward: 256,
        norm_first: true,
        batch_first: true,
        ..TransformerEncoderLayerConfig::new(64, 4)
    };
    let layer = TransformerEncoderLayer::new(&dev, &cfg, &mut rng).unwrap();
    assert_eq!(
        tang_keys(&layer),
        torch_keys("transformer_encoder_layer_64_4_256_norm_first")
    );
    // PyTorch's registration order too (the order a state_dict lists).
    let names: Vec<String> = layer.state_dict().names().map(str::to_string).collect();
    assert_eq!(
        names[..4],
        [
            "self_attn.in_proj_weight",
            "self_attn.in_proj_bias",
            "self_attn.out_proj.weight",
            "self_attn.out_proj.bias"
        ]
    );
    assert_eq!(
        names[4..],
        [
            "linear1.weight",
            "linear1.bias",
            "linear2.weight",
            "linear2.bias",
            "norm1.weight",
            "norm1.bias",
            "norm2.weight",
            "norm2.bias"
        ]
    );
    let gqa = CausalSelfAttention::new(
        &dev,
        &CausalSelfAttentionConfig {
            n_kv_head: 2,
            bias: false,
            ..CausalSelfAttentionConfig::new(64, 8)
        },
        &mut rng,
    )
    .unwrap();
    assert_eq!(
        gqa.state_dict().shapes(),
        [
            ("q_proj.weight".to_string(), vec![64, 64]),
            ("k_proj.weight".to_string(), vec![16, 64]),
            ("v_proj.weight".to_string(), vec![16, 64]),
            ("c_proj.weight".to_string(), vec![64, 64]),
        ]
    );
}

#[test]
fn the_kv_cache_gives_the_last_positions_of_full_recomputation() {
    let dev = tang_testing::device();
    for (n, hkv) in [4usize, 2].into_iter().enumerate() {
        let (b, t, c, h) = (2, 9, 16, 4);
        let cfg = CausalSelfAttentionConfig {
            n_kv_head: hkv,
            ..CausalSelfAttentionConfig::new(c, h)
        };
        let attn = CausalSelfAttention::new(&dev, &cfg, &mut SplitMix64::new(n as u64)).unwrap();
        attn.eval();
        let x = param(&dev, &mut Rng::new(9), &[b, t, c], 1.0);
        let full = no_grad(|| attn.forward(&x)).unwrap();
        let mut cache = attn.new_cache(&dev, b, 12).unwrap();
        // A prefill of 4 positions, then one at a time, then 2 at once.
        let mut start = 0;
        for len in [4, 1, 1, 1, 2] {
            let chunk = x.narrow(1, start, len).unwrap();
            let got = attn.forward_with_cache(&chunk, &mut cache).unwrap();
            let want = full.narrow(1, start, len).unwrap().to_vec().unwrap();
            let want: Vec<f64> = want.into_iter().map(f64::from).collect();
            assert_close(
                &format!("hkv {hkv} positions {start}..{}", start + len),
                &got.to_vec().unwrap(),
                &want,
                1e-5,
                1e-4,
            );
            start += len;
            assert_eq!(cache.len(), start);
        }
        // Three more positions do not fit in 12.
        let err = attn
            .forward_with_cache(&x.narrow(1, 0, 4).unwrap(), &mut cache)
            .unwrap_err();
        assert!(err.to_string().contains("exceed the capacity 12"), "{err}");
    }
}

#[test]
fn dropout_acts_in_training_only_and_gradients_still_reach_every_parameter() {
    let dev = tang_testing::device();
    let cfg = CausalSelfAttentionConfig {
        dropout: 0.5,
        ..CausalSelfAttentionConfig::new(8, 2)
    };
    let attn = CausalSelfAttention::new(&dev, &cfg, &mut SplitMix64::new(1)).unwrap();
    let enc_cfg = TransformerEncoderLayerConfig {
        dim_feedforward: 16,
        ..TransformerEncoderLayerConfig::new(8, 2)
    };
    let enc = TransformerEncoderLayer::new(&dev, &enc_cfg, &mut SplitMix64::new(2)).unwrap();
    let x = param(&dev, &mut Rng::new(3), &[2, 5, 8], 1.0);
    let runs: [(&dyn Module, &dyn Fn() -> Tensor); 2] = [
        (&attn, &|| attn.forward(&x).unwrap()),
        (&enc, &|| enc.forward(&x, AttnMask::Causal).unwrap()),
    ];
    for (module, forward) in runs {
        module.eval();
        let (a, b) = (forward().to_vec().unwrap(), forward().to_vec().unwrap());
        assert_eq!(a, b, "evaluation is deterministic");
        module.train();
        let y = forward();
        assert_ne!(y.to_vec().unwrap(), a, "training applies dropout");
        let grads = y.sum_all().unwrap().backward().unwrap();
        for (name, p) in module.named_parameters() {
            assert!(grads.get(&p).is_some(), "no gradient for {name}");
        }
    }
}

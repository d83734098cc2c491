//! Dropout inside the fused attention kernels on the software adapter: forward and
//! backward against the f64 reference of the explicit formula (softmax, the mask of
//! `dropout` over the `[B, H, T, T]` weights, times V), the mask itself against the one
//! `dropout` draws from the same seed, its keep rate, and the backward against finite
//! differences.

use tang_runtime::ops::{
    AttentionOptions, DropoutState, Generator, attention, attention_backward, dropout,
};
use tang_runtime::{Device, Error, Tensor};
use tang_testing::{assert_close, devices, numeric_gradient};

mod attention_support;
use attention_support::{Cfg, cfg, check, drop_factor, inputs, ref_forward, upload};

/// The dropout of the tests: probability 0.2 (nanoGPT's) from `seed`'s first stream.
fn state(seed: u64) -> DropoutState {
    DropoutState {
        stream: Generator::new(seed).next_stream(),
        p: 0.2,
    }
}

/// T in {1, 3, 17, 64, 257} and D in {16, 64, 80, 128}, causal or not, grouped heads or not:
/// every kernel family (row-per-thread at D 16, 80, 128; register-blocked at D 24 and 64,
/// both tile shapes; the materialized backward at equal heads, T and D multiples of 4).
#[test]
fn fused_dropout_matches_the_reference() {
    for dev in devices() {
        check(&dev, cfg(1, 2, 1, 1, 16), 1, 1.0, true, Some(&state(1)));
        check(&dev, cfg(2, 2, 2, 3, 64), 2, 1.0, true, Some(&state(2)));
        check(&dev, cfg(1, 4, 2, 17, 80), 3, 1.0, true, Some(&state(3)));
        check(&dev, cfg(1, 2, 2, 17, 24), 4, 1.0, true, Some(&state(4)));
        check(&dev, cfg(2, 2, 2, 64, 64), 5, 1.0, true, Some(&state(5)));
        check(&dev, cfg(1, 2, 1, 64, 128), 6, 1.0, true, Some(&state(6)));
        check(&dev, cfg(1, 2, 1, 257, 64), 7, 1.0, true, Some(&state(7)));
        check(&dev, cfg(1, 2, 2, 257, 16), 8, 1.0, true, Some(&state(8)));
        check(&dev, cfg(1, 2, 1, 61, 24), 9, 1.0, true, Some(&state(9)));
        // Without the causal mask: row-per-thread, register-blocked, materialized.
        for (c, seed) in [
            (cfg(1, 4, 2, 17, 16), 10),
            (cfg(1, 2, 1, 70, 64), 11),
            (cfg(1, 2, 2, 64, 32), 12),
        ] {
            check(
                &dev,
                Cfg { causal: false, ..c },
                seed,
                1.0,
                true,
                Some(&state(seed)),
            );
        }
    }
}

/// The mask the fused forward applies, read back through `q = k = 0` (row `i`'s weights
/// are all `1 / (i + 1)`) and `v` the identity (`D = T`): `o[i][j] (i + 1)` is the factor
/// of weight `(i, j)`. Returns the factors of the causal weights, row by row, and the
/// same weights from `dropout` over ones `[B, H, T, T]` with the same seed.
fn masks(dev: &Device, b: usize, h: usize, t: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let q = Tensor::zeros(dev, &[b, h, t, t]).unwrap();
    let eye: Vec<f32> = (0..b * h * t * t)
        .map(|e| f32::from(u8::from(e % (t * t) / t == e % t)))
        .collect();
    let v = Tensor::from_slice(dev, &eye, &[b, h, t, t]).unwrap();
    let drop = state(seed);
    let (o, _) = attention(
        &q,
        &q,
        &v,
        &AttentionOptions {
            dropout: Some(&drop),
            ..AttentionOptions::CAUSAL
        },
    )
    .unwrap();
    let ones = Tensor::from_slice(dev, &vec![1.0; b * h * t * t], &[b, h, t, t]).unwrap();
    let (explicit, _) = dropout(&ones, 0.2, &mut Generator::new(seed)).unwrap();
    let (o, explicit) = (o.to_vec().unwrap(), explicit.to_vec().unwrap());
    let mut fused = Vec::new();
    let mut want = Vec::new();
    for row in 0..b * h * t {
        let i = row % t;
        for j in 0..=i {
            fused.push(o[row * t + j] * (i + 1) as f32);
            want.push(explicit[row * t + j]);
        }
    }
    (fused, want)
}

/// One seed gives the fused kernels and `dropout` the same mask: at T = 128 over 124
/// heads (the row-per-thread forward at D = 128; 1,023,744 weights, whose keep rate must
/// be within 3 sigma of 0.8), and at T = 64 and 61 (the register-blocked forward, with
/// rows that start inside a Philox block).
#[test]
fn fused_mask_is_the_dropout_mask() {
    let dev = tang_testing::device();
    for (b, h, t, seed) in [(4, 31, 128, 31), (1, 3, 64, 32), (2, 2, 61, 33)] {
        let (fused, want) = masks(&dev, b, h, t, seed);
        let want64: Vec<f64> = want.iter().map(|&w| f64::from(w)).collect();
        assert_close(&format!("mask T = {t}"), &fused, &want64, 1e-4, 1e-4);
        assert!(want.iter().all(|&w| w == 0.0 || w == 1.25));
        if fused.len() >= 1_000_000 {
            let n = fused.len() as f64;
            let kept = want.iter().filter(|&&w| w > 0.0).count() as f64;
            let sigma = (0.8 * 0.2 / n).sqrt();
            assert!(
                (kept / n - 0.8).abs() < 3.0 * sigma,
                "keep rate {}",
                kept / n
            );
        }
    }
}

/// The backward with dropout against central differences of the f64 reference (mask
/// fixed): grouped heads (the fused passes), equal heads at T = 8 (materialized), and
/// without the causal mask.
#[test]
fn backward_with_dropout_matches_finite_differences() {
    let dev = tang_testing::device();
    let not_causal = Cfg {
        causal: false,
        ..cfg(1, 2, 1, 6, 4)
    };
    for c in [cfg(1, 2, 1, 5, 4), cfg(1, 2, 2, 8, 4), not_causal] {
        let x = inputs(c, 12, 1.0);
        let drop = state(40);
        let scale = 0.5;
        let (q, k, v, go) = upload(&dev, c, &x);
        let options = AttentionOptions {
            scale: Some(scale as f32),
            ..c.options(Some(&drop))
        };
        let (o, lse) = attention(&q, &k, &v, &options).unwrap();
        let (dq, dk, dv) = attention_backward(&go, &q, &k, &v, &o, &lse, &options).unwrap();
        let as32 = |x: &[f64]| x.iter().map(|&a| a as f32).collect::<Vec<f32>>();
        let as64 = |x: &[f32]| x.iter().map(|&a| f64::from(a)).collect::<Vec<f64>>();
        let args = [as64(&x.q), as64(&x.k), as64(&x.v)];
        for (which, (name, got)) in [("dq", &dq), ("dk", &dk), ("dv", &dv)]
            .into_iter()
            .enumerate()
        {
            let loss = |arg: &[f64]| -> f64 {
                let mut a = [as32(&args[0]), as32(&args[1]), as32(&args[2])];
                a[which] = as32(arg);
                let (o, _, _) = ref_forward(c, &a[0], &a[1], &a[2], scale, Some(&drop));
                o.iter().zip(&x.go).map(|(a, &b)| a * f64::from(b)).sum()
            };
            let numeric = numeric_gradient(loss, &args[which], 1e-3);
            let label = format!("{name} {c:?} vs finite differences");
            assert_close(&label, &got.to_vec().unwrap(), &numeric, 1e-4, 1e-3);
        }
    }
}

/// p = 0 is the dropout-free kernel bit for bit, p = 1 drops every weight, and a
/// probability outside [0, 1] is an error that names the range.
#[test]
fn dropout_probability_edges() {
    let dev = tang_testing::device();
    let c = cfg(1, 2, 1, 17, 64);
    let x = inputs(c, 50, 1.0);
    let (q, k, v, _) = upload(&dev, c, &x);
    let (plain, _) = attention(&q, &k, &v, &AttentionOptions::CAUSAL).unwrap();
    let zero = DropoutState { p: 0.0, ..state(1) };
    let (none_dropped, _) = attention(
        &q,
        &k,
        &v,
        &AttentionOptions {
            dropout: Some(&zero),
            ..AttentionOptions::CAUSAL
        },
    )
    .unwrap();
    let (a, b) = (plain.to_vec().unwrap(), none_dropped.to_vec().unwrap());
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
    let one = DropoutState { p: 1.0, ..state(1) };
    let (all_dropped, _) = attention(
        &q,
        &k,
        &v,
        &AttentionOptions {
            dropout: Some(&one),
            ..AttentionOptions::CAUSAL
        },
    )
    .unwrap();
    assert!(all_dropped.to_vec().unwrap().iter().all(|&o| o == 0.0));
    let bad = DropoutState { p: 1.5, ..state(1) };
    let e = attention(
        &q,
        &k,
        &v,
        &AttentionOptions {
            dropout: Some(&bad),
            ..AttentionOptions::CAUSAL
        },
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("[0, 1]"),
        "{e}"
    );
    // The reference's factor agrees with the state's own decision.
    let s = state(1);
    assert_eq!(
        drop_factor(Some(&s), 4, 0, 3),
        if s.keeps(4, 3) { 1.25 } else { 0.0 }
    );
}

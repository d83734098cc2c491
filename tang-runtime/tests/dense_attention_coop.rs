//! Attention on the tensor cores (`attention/coop_fwd.rs`, `coop_bwd.rs`), which f16
//! tensors and f32 ones with `f16_inputs` (autocast) take on devices with them: forward
//! and backward against the f64 reference on the f16-rounded inputs, within what rounding
//! `P` and `dS` to f16 for their products allows; causal or not, grouped heads, odd lengths, every padded head
//! dim, dropout (the explicit path's mask). On a device without tensor cores (the software
//! adapter) `f16_inputs` leaves the forward as the f32 one, which is checked instead; the
//! tensor-core kernels run on the GPU machine (`scripts/gpu-tests.sh`).

use tang_runtime::ops::{
    AttentionOptions, DropoutState, Generator, attention, attention_backward, to_dtype,
};
use tang_runtime::{DType, Device, Tensor};
use tang_testing::{assert_close, devices};

mod attention_support;
use attention_support::{Cfg, Inputs, cfg, inputs, ref_backward, ref_forward, upload};

/// `x` rounded to f16 and back (round to nearest even).
fn rounded(x: &[f32]) -> Vec<f32> {
    x.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect()
}

/// One configuration on a device with tensor cores: f16 tensors and f32 ones with
/// `f16_inputs` against the f64 reference of the rounded inputs.
fn check_tensor_cores(dev: &Device, c: Cfg, x: &Inputs, drop: Option<&DropoutState>) {
    let (q, k, v, go) = upload(dev, c, x);
    let [qr, kr, vr] = [&x.q, &x.k, &x.v].map(|a| rounded(a));
    let scale = 1.0 / (c.d as f64).sqrt();
    let (o_ref, lse_ref, _) = ref_forward(c, &qr, &kr, &vr, scale, drop);
    // Each weight is rounded to f16 (relative 2^-11) before it meets v (|v| < 1); kept
    // weights are scaled by 1 / (1 - p); f16 outputs are rounded once more.
    let tol = if drop.is_some() { 4e-3 } else { 2e-3 };
    let options = AttentionOptions {
        f16_inputs: true,
        ..c.options(drop)
    };
    let (o, lse) = attention(&q, &k, &v, &options).unwrap();
    assert_eq!(o.dtype(), DType::F32);
    assert_close(
        &format!("autocast o {c:?}"),
        &o.to_vec().unwrap(),
        &o_ref,
        tol,
        tol,
    );
    assert_close(
        &format!("autocast lse {c:?}"),
        &lse.to_vec().unwrap(),
        &lse_ref,
        1e-4,
        1e-5,
    );
    let [q16, k16, v16, go16] = [&q, &k, &v, &go].map(|t| to_dtype(t, DType::F16).unwrap());
    let (o16, lse16) = attention(&q16, &k16, &v16, &c.options(drop)).unwrap();
    assert_eq!(o16.dtype(), DType::F16);
    let o16_wide = to_dtype(&o16, DType::F32).unwrap().to_vec().unwrap();
    assert_close(&format!("f16 o {c:?}"), &o16_wide, &o_ref, tol, tol);
    let lse16_host = lse16.to_vec().unwrap();
    assert_close(&format!("f16 lse {c:?}"), &lse16_host, &lse_ref, 1e-4, 1e-5);

    // The backward: dS is rounded to f16 for its products (relative 2^-11 each), the
    // gradients of f16 tensors once more; tolerances relative to the largest gradient.
    let gr = rounded(&x.go);
    let want = ref_backward(c, [&qr, &kr, &vr, &gr], scale, drop);
    let check = |what: &str, (dq, dk, dv): (Tensor, Tensor, Tensor)| {
        for (name, got, want) in [
            ("dq", dq, &want.0),
            ("dk", dk, &want.1),
            ("dv", dv, &want.2),
        ] {
            let got = to_dtype(&got, DType::F32).unwrap().to_vec().unwrap();
            let big = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let tol = if drop.is_some() { 8e-3 } else { 4e-3 };
            // An absolute floor: a gradient that is 0 exactly (one key) comes out as the
            // f32 rounding of dP - delta, about 1e-7 for inputs of size 1.
            let atol = tol * big + 1e-5;
            assert_close(&format!("{what} {name} {c:?}"), &got, want, atol, tol);
        }
    };
    let grads = attention_backward(&go16, &q16, &k16, &v16, &o16, &lse16, &c.options(drop));
    let grads = grads.unwrap();
    assert_eq!(grads.0.dtype(), DType::F16);
    check("f16", grads);
    let go = to_dtype(&go16, DType::F32).unwrap();
    let grads = attention_backward(&go, &q, &k, &v, &o, &lse, &options).unwrap();
    check("autocast", grads);
}

/// One configuration on a device without tensor cores: `f16_inputs` changes nothing in
/// the forward.
fn check_fallback(dev: &Device, c: Cfg, x: &Inputs, drop: Option<&DropoutState>) {
    let (q, k, v, _) = upload(dev, c, x);
    let options = AttentionOptions {
        f16_inputs: true,
        ..c.options(drop)
    };
    let (o, lse) = attention(&q, &k, &v, &options).unwrap();
    let (o32, lse32) = attention(&q, &k, &v, &c.options(drop)).unwrap();
    assert_eq!(o.to_vec().unwrap(), o32.to_vec().unwrap(), "o {c:?}");
    assert_eq!(lse.to_vec().unwrap(), lse32.to_vec().unwrap(), "lse {c:?}");
}

fn check(c: Cfg, seed: u64, drop: Option<&DropoutState>) {
    check_inputs(c, &inputs(c, seed, 1.0), drop);
}

fn check_inputs(c: Cfg, x: &Inputs, drop: Option<&DropoutState>) {
    for dev in devices() {
        if dev.info().tensor_cores {
            check_tensor_cores(&dev, c, x, drop);
        } else {
            check_fallback(&dev, c, x, drop);
        }
    }
}

/// The largest growth over any row of its maximum score (log2 units, as the forward keeps
/// it) from its first tile of 64 keys to the keys after.
fn largest_maximum_growth(c: Cfg, x: &Inputs) -> f64 {
    let scale = std::f64::consts::LOG2_E / (c.d as f64).sqrt();
    let mut largest = f64::NEG_INFINITY;
    for bh in 0..c.b * c.h {
        let kv = (bh / c.h) * c.hkv + (bh % c.h) / (c.h / c.hkv);
        for i in 0..c.t {
            let keys = if c.causal { i + 1 } else { c.t };
            let score = |j: usize| {
                let q = &x.q[(bh * c.t + i) * c.d..][..c.d];
                let k = &x.k[(kv * c.t + j) * c.d..][..c.d];
                q.iter().zip(k).map(|(a, b)| f64::from(a * b)).sum::<f64>() * scale
            };
            let first = (0..keys.min(64))
                .map(score)
                .fold(f64::NEG_INFINITY, f64::max);
            let later = (64..keys).map(score).fold(f64::NEG_INFINITY, f64::max);
            largest = largest.max(later - first);
        }
    }
    largest
}

/// Keys whose scores grow along the sequence: rows' maxima grow past the forward's
/// rescaling threshold (8 in log2 units) in later key tiles, so the output accumulators
/// are rescaled mid-walk (random inputs of one scale never take that path).
#[test]
fn a_row_maximum_growing_across_key_tiles_rescales_the_output() {
    let wide = Cfg {
        causal: false,
        ..cfg(1, 2, 2, 200, 32)
    };
    for (c, seed) in [(cfg(1, 2, 1, 257, 64), 40), (wide, 41)] {
        let mut x = inputs(c, seed, 1.0);
        // Key j of each head times 1 + j / 8.
        for (n, value) in x.k.iter_mut().enumerate() {
            let j = (n / c.d) % c.t;
            *value *= 1.0 + j as f32 / 8.0;
        }
        let growth = largest_maximum_growth(c, &x);
        assert!(
            growth > 12.0,
            "{c:?}: the inputs must move a row's maximum past the threshold (grew {growth})"
        );
        check_inputs(c, &x, None);
    }
}

/// Every padded head dim (16, 32, 48, 64), causal or not, grouped heads, lengths from one
/// row to past four key tiles and not a multiple of one.
#[test]
fn the_tensor_core_kernels_match_the_reference_of_the_rounded_inputs() {
    for (i, t) in [1, 3, 17, 64, 257].into_iter().enumerate() {
        check(cfg(1, 2, 1, t, 64), i as u64, None);
    }
    for (i, d) in [16, 20, 48, 64].into_iter().enumerate() {
        check(cfg(2, 4, 2, 70, d), 10 + i as u64, None);
    }
    for t in [5, 130] {
        let c = Cfg {
            causal: false,
            ..cfg(1, 3, 3, t, 32)
        };
        check(c, 20 + t as u64, None);
    }
    // One kv head per query head (the other cases share one), whole and partial tiles.
    for (i, (t, d)) in [(132, 64), (4, 16), (64, 48)].into_iter().enumerate() {
        check(cfg(2, 3, 3, t, d), 50 + i as u64, None);
    }
}

/// Dropout inside the tensor-core kernels draws the explicit path's mask.
#[test]
fn the_tensor_core_kernels_drop_the_explicit_paths_weights() {
    let drop = DropoutState {
        stream: Generator::new(31).next_stream(),
        p: 0.2,
    };
    check(cfg(2, 2, 1, 77, 64), 30, Some(&drop));
    let c = Cfg {
        causal: false,
        ..cfg(1, 2, 2, 45, 32)
    };
    check(c, 32, Some(&drop));
    // One kv head per query head, a partial last tile.
    check(cfg(1, 2, 2, 68, 64), 33, Some(&drop));
}

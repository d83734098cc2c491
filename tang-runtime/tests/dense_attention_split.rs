//! f32 attention at f32 accuracy over the range of f32: on devices with tensor cores the
//! f32 kernels split each operand into f16 high and low parts scaled into f16's range
//! (`attention/split.rs`), so inputs far outside that range (values past 65504, gradients
//! of 1e-6 whose f16 parts would be subnormal) must come out as accurate as inputs of
//! size one. Forward and backward against the f64 reference, causal or not, grouped
//! heads, odd lengths, every padded head dim, dropout. On the software adapter the same
//! cases check the f32 kernels of the FMA units; the split kernels run on the GPU machine
//! (`scripts/gpu-tests.sh`).

use tang_runtime::ops::{AttentionOptions, DropoutState, Generator, attention, attention_backward};
use tang_runtime::{Device, Tensor};
use tang_testing::{assert_close, devices};

mod attention_support;
use attention_support::{Cfg, cfg, inputs, ref_backward, ref_forward};

/// q and k times `qk`, v times `v`, the gradient of o times `go`: the reference's inputs
/// and the same on the device.
fn scaled_case(
    dev: &Device,
    c: Cfg,
    seed: u64,
    [qk, vs, gs]: [f32; 3],
    drop: Option<&DropoutState>,
) {
    let mut x = inputs(c, seed, qk);
    x.v.iter_mut().for_each(|a| *a *= vs);
    x.go.iter_mut().for_each(|a| *a *= gs);
    let upload =
        |a: &[f32], heads: usize| Tensor::from_slice(dev, a, &[c.b, heads, c.t, c.d]).unwrap();
    let (q, k, v, go) = (
        upload(&x.q, c.h),
        upload(&x.k, c.hkv),
        upload(&x.v, c.hkv),
        upload(&x.go, c.h),
    );
    let scale = 1.0 / (c.d as f64).sqrt();
    let options = AttentionOptions {
        scale: Some(scale as f32),
        ..c.options(drop)
    };
    let what = format!("{c:?} q, k x{qk} v x{vs} do x{gs}");
    let (o, lse) = attention(&q, &k, &v, &options).unwrap();
    let (o_ref, lse_ref, _) = ref_forward(c, &x.q, &x.k, &x.v, scale, drop);
    // Errors relative to the largest value of each result (f32's rounding of sums of T
    // terms), or to the size its inputs give it where every value is small (a gradient
    // that is 0 exactly, at T = 1, comes out as the rounding of dP - delta).
    let close = |name: &str, got: &Tensor, want: &[f64], rel: f64, size: f32| {
        let big = want.iter().fold(f64::from(size), |m, a| m.max(a.abs()));
        let got = got.to_vec().unwrap();
        assert_close(&format!("{name} {what}"), &got, want, rel * big, rel);
    };
    let tol = if drop.is_some() { 3e-5 } else { 2e-5 };
    close("o", &o, &o_ref, tol, 0.0);
    let lse_big = lse_ref.iter().fold(1.0f64, |m, a| m.max(a.abs()));
    assert_close(
        &format!("lse {what}"),
        &lse.to_vec().unwrap(),
        &lse_ref,
        2e-6 * lse_big,
        1e-5,
    );
    let (dq, dk, dv) = attention_backward(&go, &q, &k, &v, &o, &lse, &options).unwrap();
    let want = ref_backward(c, [&x.q, &x.k, &x.v, &x.go], scale, drop);
    let tol = 1e-4 * (1.0 + (c.t * c.h / c.hkv) as f64).sqrt() / 10.0;
    close("dq", &dq, &want.0, tol, gs * vs * qk);
    close("dk", &dk, &want.1, tol, gs * vs * qk);
    close("dv", &dv, &want.2, tol, gs);
}

/// Inputs of size 1, and of sizes f16 cannot hold: values past its largest (v at 1e5),
/// gradients whose f16 parts would be subnormal (1e-6), small scores (q and k at 1e-2).
#[test]
fn f32_attention_is_f32_accurate_at_any_magnitude() {
    for dev in devices() {
        for (n, sizes) in [
            [1.0, 1.0, 1.0],
            [1.0, 1e5, 1e-6],
            [1e-2, 1e-6, 1e3],
            [3.0, 2e4, 1.0],
        ]
        .into_iter()
        .enumerate()
        {
            scaled_case(&dev, cfg(1, 2, 1, 70, 64), 60 + n as u64, sizes, None);
        }
    }
}

/// Every padded head dim, causal or not, grouped heads, lengths from one row to past
/// several 32-key tiles, not multiples of one.
#[test]
fn f32_attention_matches_the_reference_on_every_shape() {
    for dev in devices() {
        for (i, t) in [1, 3, 17, 64, 257].into_iter().enumerate() {
            scaled_case(&dev, cfg(1, 2, 1, t, 64), 70 + i as u64, [1.0; 3], None);
        }
        for (i, d) in [16, 20, 48, 64].into_iter().enumerate() {
            scaled_case(&dev, cfg(2, 4, 2, 70, d), 80 + i as u64, [1.0; 3], None);
        }
        let c = Cfg {
            causal: false,
            ..cfg(1, 3, 3, 45, 32)
        };
        scaled_case(&dev, c, 90, [1.0, 10.0, 1e-3], None);
    }
}

/// Dropout inside the split kernels, with the explicit path's mask (the reference's).
#[test]
fn f32_attention_with_dropout_matches_the_reference() {
    let drop = DropoutState {
        stream: Generator::new(37).next_stream(),
        p: 0.2,
    };
    for dev in devices() {
        scaled_case(&dev, cfg(2, 2, 1, 77, 64), 95, [1.0; 3], Some(&drop));
        let c = Cfg {
            causal: false,
            ..cfg(1, 2, 2, 45, 32)
        };
        scaled_case(&dev, c, 96, [1.0, 1e4, 1e-5], Some(&drop));
    }
}

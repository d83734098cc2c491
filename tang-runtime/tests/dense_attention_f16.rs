//! Attention on f16 tensors on the software adapter: forward, KV-cache decode and backward
//! with f16 q, k, v (and o, grad_out) give f16 results equal to the f32 computation on the
//! same (f16) values rounded once, and an f32 logsumexp; mixed dtypes are an error. The
//! f32 computation itself is checked against the f64 reference in `dense_attention.rs`.
//! On a device with tensor cores the forward at head dims up to 64 runs there instead,
//! with the weights rounded to f16 (`dense_attention_coop.rs` checks it against the f64
//! reference), as the backward does with dS rounded to f16; here they are then compared
//! with the f32 computation within that rounding.

use tang_runtime::ops::{
    AttentionOptions, DropoutState, Generator, attention, attention_backward, attention_decode,
    to_dtype,
};
use tang_runtime::{DType, Error, Tensor};
use tang_testing::{assert_close, devices};

mod attention_support;
use attention_support::{Cfg, cfg, inputs, upload};

fn half(t: &Tensor) -> Tensor {
    to_dtype(t, DType::F16).unwrap()
}

fn wide(t: &Tensor) -> Tensor {
    to_dtype(t, DType::F32).unwrap()
}

/// `got` (f16) holds exactly `want` (f32) rounded to f16.
fn same(what: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.dtype(), DType::F16, "{what}: dtype");
    assert_eq!(
        got.to_vec_f16().unwrap(),
        half(want).to_vec_f16().unwrap(),
        "{what}"
    );
}

/// Forward and backward of `c` (with `drop`) in f16 against f32 on the f16 values.
fn check(c: Cfg, seed: u64, drop: Option<&DropoutState>) {
    for dev in devices() {
        let x = inputs(c, seed, 1.0);
        let (q, k, v, go) = upload(&dev, c, &x);
        let [q16, k16, v16, go16] = [&q, &k, &v, &go].map(half);
        let [q, k, v, go] = [&q16, &k16, &v16, &go16].map(wide);
        let options = c.options(drop);
        let (o16, lse16) = attention(&q16, &k16, &v16, &options).unwrap();
        let (o, lse) = attention(&q, &k, &v, &options).unwrap();
        assert_eq!(lse16.dtype(), DType::F32);
        let tensor_cores = dev.info().tensor_cores && c.d <= 64 && c.d.is_multiple_of(4);
        if tensor_cores {
            let got = wide(&o16).to_vec().unwrap();
            let want: Vec<f64> = o.to_vec().unwrap().into_iter().map(f64::from).collect();
            assert_close(&format!("o {c:?}"), &got, &want, 4e-3, 4e-3);
            let want: Vec<f64> = lse.to_vec().unwrap().into_iter().map(f64::from).collect();
            assert_close(
                &format!("lse {c:?}"),
                &lse16.to_vec().unwrap(),
                &want,
                1e-4,
                1e-5,
            );
        } else {
            same(&format!("o {c:?}"), &o16, &o);
            assert_eq!(lse16.to_vec().unwrap(), lse.to_vec().unwrap(), "lse {c:?}");
        }
        // The backward takes the f16 output and logsumexp; its f32 twin takes them widened.
        let grads16 = attention_backward(&go16, &q16, &k16, &v16, &o16, &lse16, &options).unwrap();
        let grads = attention_backward(&go, &q, &k, &v, &wide(&o16), &lse16, &options).unwrap();
        for (name, got, want) in [
            ("dq", &grads16.0, &grads.0),
            ("dk", &grads16.1, &grads.1),
            ("dv", &grads16.2, &grads.2),
        ] {
            if tensor_cores {
                // dS is rounded to f16 for the tensor cores' products.
                let got = wide(got).to_vec().unwrap();
                let want: Vec<f64> = want.to_vec().unwrap().into_iter().map(f64::from).collect();
                let big = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                // With an absolute floor for gradients that are 0 exactly (one key).
                let atol = 8e-3 * big + 1e-5;
                assert_close(&format!("{name} {c:?}"), &got, &want, atol, 8e-3);
            } else {
                same(&format!("{name} {c:?}"), got, want);
            }
        }
    }
}

/// The kernel families (row-per-thread at D 16 and 80, register-blocked at D 64, the
/// materialized backward at equal heads), causal or not, grouped heads, odd lengths.
#[test]
fn f16_attention_is_the_f32_computation_rounded_once() {
    check(cfg(1, 2, 1, 1, 16), 1, None);
    check(cfg(2, 2, 2, 17, 64), 2, None);
    check(cfg(1, 4, 2, 64, 80), 3, None);
    check(
        Cfg {
            causal: false,
            ..cfg(1, 2, 2, 33, 16)
        },
        4,
        None,
    );
    check(cfg(1, 2, 2, 257, 64), 5, None);
    let drop = DropoutState {
        stream: Generator::new(6).next_stream(),
        p: 0.2,
    };
    check(cfg(1, 2, 1, 40, 64), 6, Some(&drop));
}

#[test]
fn f16_decode_is_the_f32_decode_rounded_once() {
    for dev in devices() {
        let c = cfg(1, 2, 1, 24, 64);
        let x = inputs(c, 7, 1.0);
        let (_, k, v, _) = upload(&dev, c, &x);
        let q = Tensor::from_slice(&dev, &x.q[..2 * 3 * 64], &[1, 2, 3, 64]).unwrap();
        let [q16, k16, v16] = [&q, &k, &v].map(half);
        let got = attention_decode(&q16, &k16, &v16, 10, None).unwrap();
        let want = attention_decode(&wide(&q16), &wide(&k16), &wide(&v16), 10, None).unwrap();
        same("decode", &got, &want);
    }
}

#[test]
fn mixed_dtypes_are_an_error() {
    for dev in devices() {
        let c = cfg(1, 2, 2, 8, 16);
        let (q, k, v, _) = upload(&dev, c, &inputs(c, 8, 1.0));
        let err = attention(&half(&q), &k, &v, &AttentionOptions::CAUSAL).unwrap_err();
        assert!(matches!(err, Error::DType { .. }), "{err}");
    }
}

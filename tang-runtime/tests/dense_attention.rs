//! Causal attention (forward, backward, grouped-query heads, KV-cache decode) on the
//! software adapter against a naive CPU f64 implementation.

use tang_runtime::ops::{
    self, AttentionOptions, attention, attention_backward, attention_backward_dkv,
    attention_backward_dq, attention_decode, backward_tiles, forward_tiles,
};
use tang_runtime::{DType, Device, DeviceOptions, Error, Tensor};
use tang_testing::{assert_close, devices};

/// Causal attention at the default scale without dropout.
const CAUSAL: AttentionOptions<'static> = AttentionOptions::CAUSAL;

mod attention_support;
use attention_support::{Cfg, cfg, check, inputs, ref_backward, ref_forward, upload};

#[test]
fn forward_and_backward_match_reference() {
    for dev in devices() {
        // T in {1, 3, 7, 17, 64, 257}; heads 1, 4, 8 and grouped 8 -> 2 and 4 -> 2; D in
        // {16, 64, 80}.
        check(&dev, cfg(1, 1, 1, 1, 16), 1, 1.0, true, None);
        check(&dev, cfg(2, 4, 4, 7, 16), 2, 1.0, true, None);
        check(&dev, cfg(1, 8, 2, 64, 64), 3, 1.0, true, None);
        check(&dev, cfg(1, 1, 1, 257, 64), 4, 1.0, true, None);
        check(&dev, cfg(1, 8, 2, 257, 16), 5, 1.0, true, None);
        check(&dev, cfg(2, 4, 4, 64, 64), 6, 1.0, true, None);
        check(&dev, cfg(1, 8, 8, 7, 64), 17, 1.0, true, None);
        check(&dev, cfg(2, 8, 2, 1, 64), 18, 1.0, true, None);
        check(&dev, cfg(1, 2, 1, 3, 80), 23, 1.0, true, None);
        check(&dev, cfg(2, 4, 2, 17, 80), 24, 1.0, true, None);
    }
}

/// The large forward reads K and V four elements at a time where the head dim is a
/// multiple of 4 (24, 60) and one at a time elsewhere (30, 62): both against the
/// reference, with grouped heads and a key tile cut short. At padded dim 32 every device
/// runs the large forward; at 64 the devices with 48 KiB of workgroup memory do.
#[test]
fn the_large_forward_by_fours_and_by_ones_match_reference() {
    for dev in devices() {
        check(&dev, cfg(1, 4, 2, 70, 24), 25, 1.0, true, None);
        check(&dev, cfg(1, 4, 2, 70, 30), 26, 1.0, true, None);
        check(&dev, cfg(1, 2, 1, 65, 60), 27, 1.0, true, None);
        check(&dev, cfg(1, 2, 1, 65, 62), 28, 1.0, true, None);
    }
}

/// Without the causal mask every row sees every key: T = 1, a key tile's end mid-tile,
/// every kernel family (row-per-thread at D 16 and 128, register-blocked at D 24 and 64,
/// the materialized backward at equal heads with T and D multiples of 4).
#[test]
fn not_causal_matches_reference() {
    for dev in devices() {
        for (c, seed) in [
            (cfg(1, 2, 1, 1, 16), 60),
            (cfg(1, 4, 2, 70, 16), 61),
            (cfg(1, 2, 1, 45, 128), 62),
            (cfg(1, 4, 2, 130, 64), 63),
            (cfg(2, 2, 2, 64, 64), 64),
            (cfg(1, 2, 1, 100, 24), 65),
            (cfg(1, 2, 1, 3, 80), 66),
            (cfg(1, 4, 2, 17, 80), 67),
        ] {
            check(&dev, Cfg { causal: false, ..c }, seed, 1.0, true, None);
        }
    }
}

#[test]
fn other_head_dims_and_peaked_softmax() {
    for dev in devices() {
        // Padded variants (D not a multiple of 4, D between variants) and D = 128.
        check(&dev, cfg(1, 2, 1, 33, 5), 7, 1.0, true, None);
        check(&dev, cfg(1, 2, 2, 70, 48), 8, 1.0, true, None);
        check(&dev, cfg(1, 2, 1, 40, 128), 9, 1.0, true, None);
        check(&dev, cfg(1, 2, 2, 65, 32), 10, 1.0, true, None);
        // Large logits: softmax rows close to one-hot, exercising the online rescaling.
        check(&dev, cfg(1, 2, 2, 100, 16), 11, 6.0, true, None);
        check(&dev, cfg(1, 2, 2, 130, 64), 19, 6.0, true, None);
        check(&dev, cfg(1, 2, 1, 97, 32), 20, 6.0, true, None);
        // The large forward over several 64-key tiles, padded dims (24 of 32), grouped heads.
        check(&dev, cfg(2, 4, 2, 200, 24), 22, 2.0, false, None);
    }
}

/// The kernels guard their own indices; with wgpu's runtime checks back on the results
/// must not change (a guard that relied on a clamped read would show here).
#[test]
fn checked_mode_gives_the_same_results() {
    let dev = Device::with_options(DeviceOptions {
        checked: true,
        ..DeviceOptions::default()
    })
    .unwrap();
    assert!(dev.info().checked);
    check(&dev, cfg(1, 4, 2, 70, 64), 15, 1.0, true, None);
    check(&dev, cfg(1, 2, 1, 19, 5), 16, 1.0, true, None);
}

/// Gradient of sum(o * go) by central differences of the f64 reference forward, compared
/// to both the analytic reference and the GPU backward: grouped heads (the fused passes)
/// and equal heads at T = 8 (the materialized backward).
#[test]
fn backward_matches_finite_differences() {
    for (dev, c) in devices()
        .into_iter()
        .flat_map(|dev| [(dev.clone(), cfg(1, 2, 1, 5, 4)), (dev, cfg(1, 2, 2, 8, 4))])
    {
        let x = inputs(c, 12, 1.0);
        let scale = 0.5;
        let options = AttentionOptions {
            scale: Some(scale as f32),
            ..CAUSAL
        };
        let (q, k, v, go) = upload(&dev, c, &x);
        let (o, lse) = attention(&q, &k, &v, &options).unwrap();
        let (dq, dk, dv) = attention_backward(&go, &q, &k, &v, &o, &lse, &options).unwrap();
        let loss = |q: &[f32], k: &[f32], v: &[f32]| -> f64 {
            let (o, _, _) = ref_forward(c, q, k, v, scale, None);
            o.iter().zip(&x.go).map(|(a, &b)| a * b as f64).sum()
        };
        let eps = 1e-3f32;
        let fd = |which: usize| -> Vec<f64> {
            let n = [x.q.len(), x.k.len(), x.v.len()][which];
            (0..n)
                .map(|idx| {
                    let mut args = [x.q.clone(), x.k.clone(), x.v.clone()];
                    let base = args[which][idx];
                    args[which][idx] = base + eps;
                    let up = loss(&args[0], &args[1], &args[2]);
                    args[which][idx] = base - eps;
                    let down = loss(&args[0], &args[1], &args[2]);
                    // The perturbation actually applied, after f32 rounding.
                    let h = (base + eps) as f64 - (base - eps) as f64;
                    (up - down) / h
                })
                .collect()
        };
        let (rq, rk, rv) = ref_backward(c, [&x.q, &x.k, &x.v, &x.go], scale, None);
        for (name, got, analytic, which) in [
            ("dq", &dq, &rq, 0),
            ("dk", &dk, &rk, 1),
            ("dv", &dv, &rv, 2),
        ] {
            let numeric = fd(which);
            let analytic32: Vec<f32> = analytic.iter().map(|&a| a as f32).collect();
            assert_close(
                &format!("{name} reference vs finite differences"),
                &analytic32,
                &numeric,
                1e-4,
                1e-4,
            );
            assert_close(
                &format!("{name} gpu vs finite differences"),
                &got.to_vec().unwrap(),
                &numeric,
                1e-4,
                1e-3,
            );
        }
    }
}

#[test]
fn backward_is_deterministic_with_grouped_heads() {
    for dev in devices() {
        // D = 16: the row-per-thread kernels; D = 32 and 64: the register-blocked ones (on
        // lavapipe in the large and the small tile shape).
        deterministic_case(&dev, cfg(1, 8, 2, 70, 16));
        deterministic_case(&dev, cfg(1, 8, 2, 70, 32));
        deterministic_case(&dev, cfg(1, 8, 2, 70, 64));
    }
}

fn deterministic_case(dev: &Device, c: Cfg) {
    let x = inputs(c, 13, 1.0);
    let (q, k, v, go) = upload(dev, c, &x);
    let (o, lse) = attention(&q, &k, &v, &CAUSAL).unwrap();
    let first = attention_backward(&go, &q, &k, &v, &o, &lse, &CAUSAL).unwrap();
    let second = attention_backward(&go, &q, &k, &v, &o, &lse, &CAUSAL).unwrap();
    for (a, b) in [
        (&first.0, &second.0),
        (&first.1, &second.1),
        (&first.2, &second.2),
    ] {
        let (a, b) = (a.to_vec().unwrap(), b.to_vec().unwrap());
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}

/// The decode kernel over a cache equals the last rows of the full forward; cache rows
/// past the current length hold NaN, so reading one would show.
#[test]
fn decode_matches_full_forward() {
    // D = 16 runs the row-per-thread kernel, D = 64 the register-blocked one; T = 100
    // spans several key tiles and two query blocks.
    decode_case(2, 4, 2, 37, 16, 48);
    decode_case(1, 4, 1, 100, 64, 130);
    // D = 32: the large forward (64-key tiles) on every device; the past shifts the
    // diagonal off the tile boundaries.
    decode_case(1, 4, 2, 150, 32, 160);
}

fn decode_case(b: usize, h: usize, hkv: usize, t: usize, d: usize, tmax: usize) {
    for dev in devices() {
        let c = cfg(b, h, hkv, t, d);
        let x = inputs(c, 14, 1.0);
        let (q, k, v, _) = upload(&dev, c, &x);
        let (o_full, _) = attention(&q, &k, &v, &CAUSAL).unwrap();
        let o_full = o_full.to_vec().unwrap();
        let cache = |src: &[f32]| -> Tensor {
            let mut buf = vec![f32::NAN; b * hkv * tmax * d];
            for bh in 0..b * hkv {
                buf[bh * tmax * d..bh * tmax * d + t * d]
                    .copy_from_slice(&src[bh * t * d..(bh + 1) * t * d]);
            }
            Tensor::from_slice(&dev, &buf, &[b, hkv, tmax, d]).unwrap()
        };
        let (kc, vc) = (cache(&x.k), cache(&x.v));
        for q_len in [1, 7, 70].into_iter().filter(|&n| n <= t) {
            let past = t - q_len;
            let mut qn = Vec::new();
            let mut want = Vec::new();
            for bh in 0..b * h {
                let rows = bh * t * d + past * d..(bh + 1) * t * d;
                qn.extend_from_slice(&x.q[rows.clone()]);
                want.extend(o_full[rows].iter().map(|&y| y as f64));
            }
            let qn = Tensor::from_slice(&dev, &qn, &[b, h, q_len, d]).unwrap();
            let o = attention_decode(&qn, &kc, &vc, past, None).unwrap();
            assert_close(
                &format!("decode q_len={q_len}"),
                &o.to_vec().unwrap(),
                &want,
                1e-6,
                1e-5,
            );
        }
        let q1 = Tensor::from_slice(&dev, &x.q[..h * d], &[1, h, 1, d]).unwrap();
        let err = attention_decode(&q1, &kc, &vc, tmax, None).unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
    }
}

#[test]
fn bad_shapes_are_errors() {
    for dev in devices() {
        let z = |s: &[usize]| Tensor::zeros(&dev, s).unwrap();
        let (q, k) = (z(&[1, 4, 8, 16]), z(&[1, 3, 8, 16]));
        let e = attention(&q, &k, &k, &CAUSAL).unwrap_err();
        assert!(
            matches!(e, Error::ShapeMismatch { .. }) && e.to_string().contains("Hkv dividing H"),
            "{e}"
        );
        let e = attention(&q, &z(&[1, 4, 9, 16]), &z(&[1, 4, 9, 16]), &CAUSAL).unwrap_err();
        assert!(e.to_string().contains("attention_decode"), "{e}");
        let e = attention(
            &z(&[1, 1, 2, 129]),
            &z(&[1, 1, 2, 129]),
            &z(&[1, 1, 2, 129]),
            &CAUSAL,
        )
        .unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        let e = attention(&z(&[4, 8, 16]), &k, &k, &CAUSAL).unwrap_err();
        assert!(e.to_string().contains("[B, H, T, D]"), "{e}");
        let (o, lse) = attention(&q, &q, &q, &CAUSAL).unwrap();
        let e = attention_backward(&o, &q, &q, &q, &o, &z(&[1, 4, 9]), &CAUSAL).unwrap_err();
        assert!(e.to_string().contains("lse"), "{e}");
        drop(lse);
    }
}

/// The device the tests run on must take the register-blocked backward (or the tests
/// above would only cover the row-per-thread kernels), in the tile shape its workgroup
/// memory allows. At DP = 32 the large shape fits 32 KiB, so lavapipe runs it there and
/// the small one at DP = 64; with 48 KiB (NVIDIA) the large one runs at both. Every
/// shape's WGSL is validated by naga in `tests/tests/shaders.rs` (the registry).
#[test]
fn backward_uses_the_tile_shape_the_limits_allow() {
    for dev in devices() {
        let shared = dev.info().limits.max_compute_workgroup_storage_size;
        let (large, small) = (Some((64, 128)), Some((32, 64)));
        let at64 = if shared >= 48 * 1024 { large } else { small };
        eprintln!("workgroup memory {shared} bytes: backward tiles {at64:?} at D = 64");
        for (d, want) in [(20, large), (32, large), (48, at64), (64, at64)] {
            assert_eq!(backward_tiles(&dev, d), want, "D = {d}");
        }
        for d in [5, 16, 65, 128] {
            assert_eq!(backward_tiles(&dev, d), None, "D = {d}");
        }
    }
}

/// Likewise for the forward: 64-key tiles where the large shape fits (32 KiB at D <= 32,
/// so lavapipe runs it there; 48 KiB at D = 64), 32-key tiles elsewhere. Both shapes'
/// WGSL is validated by naga in `tests/tests/shaders.rs` (the registry), and every test above that runs
/// D = 17 to 32 runs the large shape here, D = 33 to 64 the small one.
#[test]
fn forward_uses_the_tile_shape_the_limits_allow() {
    for dev in devices() {
        let shared = dev.info().limits.max_compute_workgroup_storage_size;
        let at64 = if shared >= 48 * 1024 { 64 } else { 32 };
        eprintln!("workgroup memory {shared} bytes: forward key tiles {at64} at D = 64");
        for (d, want) in [(20, 64), (32, 64), (48, at64), (64, at64)] {
            assert_eq!(forward_tiles(&dev, d), Some(want), "D = {d}");
        }
        for d in [5, 16, 65, 128] {
            assert_eq!(forward_tiles(&dev, d), None, "D = {d}");
        }
    }
}

/// Where the backward runs materialized (equal heads, T <= 256, T and D multiples of 4:
/// matmuls and one row kernel), it agrees with the fused passes, which still run apart.
#[test]
fn materialized_backward_matches_the_fused_passes() {
    for dev in devices() {
        for (c, scale) in [
            (cfg(2, 3, 3, 64, 64), None),
            (cfg(1, 2, 2, 256, 16), Some(0.3)),
            (cfg(1, 1, 1, 4, 4), None),
        ] {
            let x = inputs(c, 23, 1.0);
            let options = AttentionOptions { scale, ..CAUSAL };
            let (q, k, v, go) = upload(&dev, c, &x);
            let (o, lse) = attention(&q, &k, &v, &options).unwrap();
            let (dq, dk, dv) = attention_backward(&go, &q, &k, &v, &o, &lse, &options).unwrap();
            let (dq2, delta) = attention_backward_dq(&go, &q, &k, &v, &o, &lse, &options).unwrap();
            let (dk2, dv2) =
                attention_backward_dkv(&go, &q, &k, &v, &lse, &delta, &options).unwrap();
            let atol = 1e-4 * (1.0 + c.t as f64).sqrt();
            for (name, a, b) in [("dq", &dq, &dq2), ("dk", &dk, &dk2), ("dv", &dv, &dv2)] {
                let fused: Vec<f64> = b.to_vec().unwrap().iter().map(|&v| f64::from(v)).collect();
                assert_close(
                    &format!("{name} {c:?}"),
                    &a.to_vec().unwrap(),
                    &fused,
                    atol,
                    1e-3,
                );
            }
        }
    }
}

/// The two passes run apart (as the benchmark times them) give the combined backward's
/// bits, and the dk/dv pass checks the shape of the delta it is given.
#[test]
fn backward_passes_apart_match_the_backward() {
    for dev in devices() {
        for c in [cfg(1, 4, 2, 70, 64), cfg(1, 2, 2, 33, 16)] {
            let x = inputs(c, 21, 1.0);
            let (q, k, v, go) = upload(&dev, c, &x);
            let (o, lse) = attention(&q, &k, &v, &CAUSAL).unwrap();
            let (dq, dk, dv) = attention_backward(&go, &q, &k, &v, &o, &lse, &CAUSAL).unwrap();
            let (dq2, delta) = attention_backward_dq(&go, &q, &k, &v, &o, &lse, &CAUSAL).unwrap();
            let (dk2, dv2) =
                attention_backward_dkv(&go, &q, &k, &v, &lse, &delta, &CAUSAL).unwrap();
            for (a, b) in [(&dq, &dq2), (&dk, &dk2), (&dv, &dv2)] {
                let (a, b) = (a.to_vec().unwrap(), b.to_vec().unwrap());
                assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
            }
            let e = attention_backward_dkv(&go, &q, &k, &v, &lse, &o, &CAUSAL).unwrap_err();
            assert!(e.to_string().contains("delta"), "{e}");
        }
    }
}

/// Token-major `o` (`AttentionOptions::token_major`, `[B, T, H, D]`) is the head-major
/// result permuted, forward and backward, bit for bit: f32 tensors, f16 tensors and f32
/// ones rounded on load (the tensor-core kernels where the device has them, which read and
/// write the layout themselves; elsewhere the op's copies), grouped heads, a partial tile.
#[test]
fn token_major_output_is_the_permuted_head_major_one() {
    let swap = |t: &Tensor| ops::permute(t, &[0, 2, 1, 3]).unwrap();
    for dev in devices() {
        for (c, seed) in [(cfg(2, 4, 2, 70, 64), 80), (cfg(1, 2, 2, 64, 32), 81)] {
            let x = inputs(c, seed, 1.0);
            let (q, k, v, go) = upload(&dev, c, &x);
            for (dtype, f16_inputs) in
                [(DType::F32, false), (DType::F16, false), (DType::F32, true)]
            {
                let cast = |t: &Tensor| ops::to_dtype(t, dtype).unwrap();
                let (q, k, v, go) = (cast(&q), cast(&k), cast(&v), cast(&go));
                let heads = AttentionOptions {
                    f16_inputs,
                    ..CAUSAL
                };
                let tokens = AttentionOptions {
                    token_major: true,
                    ..heads
                };
                let what = format!("{c:?} {dtype:?} f16_inputs {f16_inputs}");
                let (o, lse) = attention(&q, &k, &v, &heads).unwrap();
                let (ot, lset) = attention(&q, &k, &v, &tokens).unwrap();
                assert_eq!(ot.shape(), swap(&o).shape(), "{what}");
                assert_eq!(
                    ot.to_vec().unwrap(),
                    swap(&o).to_vec().unwrap(),
                    "{what}: o"
                );
                assert_eq!(lset.to_vec().unwrap(), lse.to_vec().unwrap(), "{what}: lse");
                let got = attention_backward(&swap(&go), &q, &k, &v, &ot, &lset, &tokens).unwrap();
                let want = attention_backward(&go, &q, &k, &v, &o, &lse, &heads).unwrap();
                for (name, g, w) in [
                    ("dq", &got.0, &want.0),
                    ("dk", &got.1, &want.1),
                    ("dv", &got.2, &want.2),
                ] {
                    assert_eq!(g.to_vec().unwrap(), w.to_vec().unwrap(), "{what}: {name}");
                }
                // The head-major shapes are refused for token-major options, and the passes
                // apart refuse the layout.
                let e = attention_backward(&go, &q, &k, &v, &o, &lse, &tokens).unwrap_err();
                assert!(e.to_string().contains("token-major"), "{e}");
                let e =
                    attention_backward_dq(&swap(&go), &q, &k, &v, &ot, &lset, &tokens).unwrap_err();
                assert!(e.to_string().contains("token_major: false"), "{e}");
            }
        }
    }
}

/// Attention read from a packed projection (`attention_packed`: the tensor-core kernels
/// read the heads in place where the device has them) equals the heads split out and
/// attended token-major, forward and backward, bit for bit; grouped heads, a partial tile.
#[test]
fn packed_heads_give_the_split_heads_result() {
    for dev in devices() {
        for (b, h, hkv, t, d, seed) in [(2, 4, 2, 70, 64, 90), (1, 2, 2, 64, 32, 91)] {
            let n = (h + 2 * hkv) * d;
            let x = tang_testing::Rng::new(seed).vec(b * t * n, 1.0);
            let packed = Tensor::from_slice(&dev, &x, &[b, t, n]).unwrap();
            let go = Tensor::from_slice(
                &dev,
                &tang_testing::Rng::new(seed + 1).vec(b * t * h * d, 1.0),
                &[b, t, h, d],
            )
            .unwrap();
            for (dtype, f16_inputs) in
                [(DType::F32, false), (DType::F16, false), (DType::F32, true)]
            {
                let cast = |t: &Tensor| ops::to_dtype(t, dtype).unwrap();
                let (qkv, go) = (cast(&packed), cast(&go));
                let options = AttentionOptions {
                    f16_inputs,
                    token_major: true,
                    ..CAUSAL
                };
                let what =
                    format!("[{b}, {t}, {n}] heads {h}/{hkv} {dtype:?} f16_inputs {f16_inputs}");
                let (q, k, v) = ops::split_qkv_heads(&qkv, h, hkv, d).unwrap();
                let (o, lse) = attention(&q, &k, &v, &options).unwrap();
                let (op, lsep) = ops::attention_packed(&qkv, h, hkv, &options).unwrap();
                assert_eq!(op.shape(), &[b, t, h, d], "{what}");
                assert_eq!(op.to_vec().unwrap(), o.to_vec().unwrap(), "{what}: o");
                assert_eq!(lsep.to_vec().unwrap(), lse.to_vec().unwrap(), "{what}: lse");
                let want = attention_backward(&go, &q, &k, &v, &o, &lse, &options).unwrap();
                let got = ops::attention_backward_packed(&go, &qkv, h, hkv, &op, &lsep, &options)
                    .unwrap();
                let want = ops::merge_heads(&[&want.0, &want.1, &want.2]).unwrap();
                assert_eq!(got.shape(), qkv.shape(), "{what}");
                assert_eq!(got.dtype(), qkv.dtype(), "{what}");
                assert_eq!(
                    got.to_vec().unwrap(),
                    want.to_vec().unwrap(),
                    "{what}: dqkv"
                );
            }
        }
        // A last dimension that is not a multiple of heads + 2 kv_heads.
        let bad = Tensor::zeros(&dev, &[1, 3, 10]).unwrap();
        let e = ops::attention_packed(&bad, 2, 1, &CAUSAL)
            .unwrap_err()
            .to_string();
        assert!(e.contains("heads + 2 * kv_heads"), "{e}");
    }
}

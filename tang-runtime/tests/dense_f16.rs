//! f16 products (the casts and conversions are `dense_f16_casts`): matmul with f16
//! operands, with f32 operands rounded to f16 (`f16_inputs`) and with an f16 result,
//! against an f64 reference of the f16-rounded inputs: every layout, batches, bias, edge
//! tiles. On an adapter with tensor cores the products run on them and are compared with
//! the f32 tile's (`DeviceOptions::tensor_cores` off) as well.

use half::f16;
use tang_runtime::ops::{
    CoopTile, Epilogue, MatmulOptions, matmul_backward, matmul_backward_with, matmul_with, to_dtype,
};
use tang_runtime::{DType, Device, DeviceOptions, Tensor};
use tang_testing::{Rng, devices};

/// Rounds through f16, as the kernels do with each operand.
fn r16(x: f32) -> f64 {
    f64::from(f16::from_f32(x).to_f32())
}

/// C[b] = op(A[b]) op(B[b]) of f16-rounded inputs in f64, and the sum of |products|.
fn reference(
    a: &[f32],
    b: &[f32],
    (m, n, k, batch): (usize, usize, usize, usize),
    (ta, tb): (bool, bool),
    b_batched: bool,
) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0.0; batch * m * n];
    let mut s = vec![0.0; batch * m * n];
    // Rounded once each, not once per product: this file's tests run unoptimised, where
    // the conversions inside the loop were most of their time.
    let (a, b): (Vec<f64>, Vec<f64>) = (
        a.iter().map(|&x| r16(x)).collect(),
        b.iter().map(|&x| r16(x)).collect(),
    );
    for bi in 0..batch {
        let sb = if b_batched { bi * k * n } else { 0 };
        for i in 0..m {
            for j in 0..n {
                let (mut acc, mut mag) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let x = a[bi * m * k + if ta { p * m + i } else { i * k + p }];
                    let y = b[sb + if tb { j * k + p } else { p * n + j }];
                    acc += x * y;
                    mag += (x * y).abs();
                }
                c[(bi * m + i) * n + j] = acc;
                s[(bi * m + i) * n + j] = mag;
            }
        }
    }
    (c, s)
}

/// How the operands reach the product.
#[derive(Clone, Copy, Debug)]
enum Operands {
    /// f32 tensors with `f16_inputs`.
    Rounded,
    /// f16 tensors.
    Half,
    /// A f32 rounded, B an f16 tensor.
    Mixed,
}

#[allow(clippy::too_many_arguments)]
fn check(
    dev: &Device,
    rng: &mut Rng,
    (m, n, k, batch): (usize, usize, usize, usize),
    (ta, tb): (bool, bool),
    operands: Operands,
    bias: bool,
    epilogue: Option<&Epilogue>,
    out: DType,
    coop_tile: Option<CoopTile>,
) {
    let what = format!(
        "{} m{m} n{n} k{k} batch{batch} ta{ta} tb{tb} {operands:?} bias{bias} epilogue{} out {out:?} {coop_tile:?}",
        dev.info().name,
        epilogue.is_some()
    );
    let a = rng.vec(batch * m * k, 1.0);
    let b_batched = batch > 1 && m % 2 == 0;
    let b = rng.vec(if b_batched { batch } else { 1 } * k * n, 1.0);
    let bias_v = rng.vec(n, 1.0);
    let lead = |rows: usize, cols: usize, batched: bool| -> Vec<usize> {
        let mut s = if batched && batch > 1 {
            vec![batch]
        } else {
            vec![]
        };
        s.extend([rows, cols]);
        s
    };
    let a_shape = if ta {
        lead(k, m, true)
    } else {
        lead(m, k, true)
    };
    let b_shape = if tb {
        lead(n, k, b_batched)
    } else {
        lead(k, n, b_batched)
    };
    let up = |x: &[f32], shape: &[usize], half: bool| {
        let t = Tensor::from_slice(dev, x, shape).unwrap();
        if half {
            to_dtype(&t, DType::F16).unwrap()
        } else {
            t
        }
    };
    let (ha, hb) = match operands {
        Operands::Rounded => (false, false),
        Operands::Half => (true, true),
        Operands::Mixed => (false, true),
    };
    let ta_t = up(&a, &a_shape, ha);
    let tb_t = up(&b, &b_shape, hb);
    let bias_t = Tensor::from_slice(dev, &bias_v, &[n]).unwrap();
    let o = MatmulOptions {
        transpose_a: ta,
        transpose_b: tb,
        bias: bias.then_some(&bias_t),
        epilogue,
        f16_inputs: matches!(operands, Operands::Rounded | Operands::Mixed),
        out_dtype: Some(out),
        coop_tile,
        ..MatmulOptions::default()
    };
    let c = matmul_with(&ta_t, &tb_t, &o).unwrap();
    assert_eq!(c.dtype(), out, "{what}");
    let got = c.to_vec().unwrap();
    let (mut want, scale) = reference(&a, &b, (m, n, k, batch), (ta, tb), b_batched);
    for (i, w) in want.iter_mut().enumerate() {
        if bias {
            *w += f64::from(bias_v[i % n]);
        }
        if let Some(e) = epilogue {
            *w = e.eval_f64(*w).unwrap();
        }
    }
    for (i, ((&g, &w), &s)) in got.iter().zip(&want).zip(&scale).enumerate() {
        // f32 accumulation of exact f16 products (their order differs), then the
        // result's own rounding when it is stored as f16.
        let mut tol = 1e-5 + 4e-7 * s * (k as f64).sqrt();
        if out == DType::F16 {
            tol += w.abs() * 2f64.powi(-11) + 6e-8;
        }
        assert!(
            (f64::from(g) - w).abs() <= tol,
            "{what}: element {i}: got {g}, want {w} (tol {tol})"
        );
    }
}

/// Shapes that cover whole blocks, edge blocks on each side, short and empty
/// reductions, contiguous extents that are and are not multiples of 4, and batches.
const SHAPES: &[(usize, usize, usize, usize)] = &[
    (1, 1, 1, 1),
    (5, 7, 3, 1),
    (37, 45, 70, 1),
    (128, 128, 64, 1),
    (130, 260, 96, 1),
    (64, 40, 33, 3),
    (66, 132, 32, 2),
    (9, 12, 0, 1),
];

#[test]
fn f16_products_match_the_rounded_reference_in_every_layout() {
    let mut rng = Rng::new(7);
    for dev in devices() {
        for &shape in SHAPES {
            for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
                check(
                    &dev,
                    &mut rng,
                    shape,
                    (ta, tb),
                    Operands::Rounded,
                    false,
                    None,
                    DType::F32,
                    None,
                );
            }
        }
        // The other operand kinds, the bias and the f16 result on a few shapes.
        for &shape in &SHAPES[2..6] {
            check(
                &dev,
                &mut rng,
                shape,
                (false, true),
                Operands::Half,
                true,
                None,
                DType::F32,
                None,
            );
            check(
                &dev,
                &mut rng,
                shape,
                (true, false),
                Operands::Mixed,
                false,
                None,
                DType::F16,
                None,
            );
            check(
                &dev,
                &mut rng,
                shape,
                (false, false),
                Operands::Half,
                true,
                None,
                DType::F16,
                None,
            );
        }
    }
}

/// Every tensor-core tile preset, forced, against the reference: edge blocks (a shape
/// smaller than every block, k not a multiple of 16), shapes every block divides with
/// one and three k tiles of 32 (odd: the double buffer's last tile is in its first
/// buffer) and a batch, every layout, f16 and
/// rounded operands, bias and f16 results. Where the device has no tensor cores a forced
/// tile does not apply, so only the default runs there.
#[test]
fn every_coop_tile_preset_matches_the_rounded_reference() {
    let mut rng = Rng::new(11);
    let shapes = [
        (37, 45, 70, 1),
        (130, 260, 96, 1),
        (300, 270, 128, 1),
        (66, 132, 32, 2),
    ];
    for dev in devices() {
        let tiles: &[CoopTile] = if dev.info().tensor_cores {
            &CoopTile::PRESETS
        } else {
            &CoopTile::PRESETS[..1]
        };
        for tile in tiles.iter().filter(|t| t.fits(&dev)) {
            for &shape in &shapes {
                for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
                    check(
                        &dev,
                        &mut rng,
                        shape,
                        (ta, tb),
                        Operands::Half,
                        false,
                        None,
                        DType::F32,
                        Some(*tile),
                    );
                }
                check(
                    &dev,
                    &mut rng,
                    shape,
                    (false, true),
                    Operands::Rounded,
                    true,
                    None,
                    DType::F16,
                    Some(*tile),
                );
            }
        }
    }
}

#[test]
fn f16_products_apply_bias_and_epilogue_on_store() {
    // The tanh GELU fused into the store, after the bias, with f32 and f16 results: on
    // the tensor cores where the device has them (their scratch-store path), else on the
    // f32 tile.
    let gelu =
        Epilogue::from_traced(&tang_runtime::tang_expr::trace(1, |v| v[0].gelu_tanh())).unwrap();
    let mut rng = Rng::new(13);
    for dev in devices() {
        for &(shape, out) in &[
            ((130, 260, 96, 1), DType::F32),
            ((37, 45, 70, 1), DType::F32),
            ((66, 132, 32, 2), DType::F16),
        ] {
            check(
                &dev,
                &mut rng,
                shape,
                (false, true),
                Operands::Rounded,
                true,
                Some(&gelu),
                out,
                None,
            );
        }
    }
}

#[test]
fn f16_weight_gradients_split_the_reduction() {
    // A long reduction with a small output takes the split-K path (slices, then a sum).
    let mut rng = Rng::new(11);
    let dev = &devices()[0];
    check(
        dev,
        &mut rng,
        (24, 20, 4096, 1),
        (true, false),
        Operands::Rounded,
        false,
        None,
        DType::F32,
        None,
    );
}

#[test]
fn the_backward_rounds_when_the_forward_did() {
    let dev = &devices()[0];
    let mut rng = Rng::new(3);
    let (m, n, k) = (19, 23, 29);
    let a = rng.vec(m * k, 1.0);
    let b = rng.vec(n * k, 1.0);
    let g = rng.vec(m * n, 1.0);
    let at = Tensor::from_slice(dev, &a, &[m, k]).unwrap();
    let bt = Tensor::from_slice(dev, &b, &[n, k]).unwrap();
    let gt = Tensor::from_slice(dev, &g, &[m, n]).unwrap();
    let o = MatmulOptions {
        transpose_b: true,
        f16_inputs: true,
        ..MatmulOptions::default()
    };
    let (ga, gb) = matmul_backward_with(&gt, &at, &bt, &o).unwrap();
    // grad_a = G B (all rounded), grad_b = G^T A.
    let mut want_a = vec![0.0f64; m * k];
    let mut want_b = vec![0.0f64; n * k];
    for i in 0..m {
        for j in 0..n {
            let gij = r16(g[i * n + j]);
            for p in 0..k {
                want_a[i * k + p] += gij * r16(b[j * k + p]);
                want_b[j * k + p] += gij * r16(a[i * k + p]);
            }
        }
    }
    tang_testing::assert_close("grad_a", &ga.to_vec().unwrap(), &want_a, 1e-5, 1e-5);
    tang_testing::assert_close("grad_b", &gb.to_vec().unwrap(), &want_b, 1e-5, 1e-5);
    // Without rounding the f32 backward differs from the rounded one.
    let (ga32, _) = matmul_backward(&gt, &at, &bt, false, true).unwrap();
    assert_ne!(ga32.to_vec().unwrap(), ga.to_vec().unwrap());
}

#[test]
fn tensor_cores_and_the_f32_tile_agree() {
    // Where the adapter has tensor cores, the same products with them switched off run
    // on the f32 tile: both must match the reference (and so each other).
    let on = &devices()[0];
    let off = Device::with_options(DeviceOptions {
        tensor_cores: false,
        ..DeviceOptions::default()
    })
    .unwrap();
    assert!(!off.info().tensor_cores);
    let mut rng = Rng::new(5);
    for dev in [on, &off] {
        check(
            dev,
            &mut rng,
            (200, 136, 80, 1),
            (false, true),
            Operands::Rounded,
            true,
            None,
            DType::F32,
            None,
        );
    }
    println!(
        "tensor cores on {}: {}",
        on.info().name,
        on.info().tensor_cores
    );
}

#[test]
fn attention_backward_in_f16_stays_within_f16_tolerance_of_f32() {
    // The materialized backward (T <= 256) with f16 products: the gradients differ from
    // the f32 ones by the operands' rounding (2^-11 relative each), not more.
    use tang_runtime::ops::{AttentionOptions, attention, attention_backward};
    let dev = &devices()[0];
    let mut rng = Rng::new(21);
    let (b, h, t, d) = (2, 3, 64, 32);
    let n = b * h * t * d;
    let up = |x: Vec<f32>| Tensor::from_slice(dev, &x, &[b, h, t, d]).unwrap();
    let (q, k, v, g) = (
        up(rng.vec(n, 1.0)),
        up(rng.vec(n, 1.0)),
        up(rng.vec(n, 1.0)),
        up(rng.vec(n, 1.0)),
    );
    let f32_opts = AttentionOptions::CAUSAL;
    let f16_opts = AttentionOptions {
        f16_inputs: true,
        ..AttentionOptions::CAUSAL
    };
    let (o, lse) = attention(&q, &k, &v, &f32_opts).unwrap();
    let full = attention_backward(&g, &q, &k, &v, &o, &lse, &f32_opts).unwrap();
    let half = attention_backward(&g, &q, &k, &v, &o, &lse, &f16_opts).unwrap();
    for (name, a, h16) in [
        ("dq", &full.0, &half.0),
        ("dk", &full.1, &half.1),
        ("dv", &full.2, &half.2),
    ] {
        let (a, h16) = (a.to_vec().unwrap(), h16.to_vec().unwrap());
        let scale = a.iter().fold(0f32, |m, x| m.max(x.abs()));
        let worst = a
            .iter()
            .zip(&h16)
            .fold(0f32, |m, (x, y)| m.max((x - y).abs()));
        assert!(
            worst <= 1e-2 * scale,
            "{name}: max diff {worst} against max |g| {scale}"
        );
        assert!(worst > 0.0, "{name}: the f16 products changed nothing");
    }
}

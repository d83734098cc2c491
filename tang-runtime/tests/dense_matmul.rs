//! Matmul on the software adapter against a CPU f64 reference: awkward shapes, every
//! transpose combination, every tile preset, batches and broadcasts, bias + epilogue,
//! shape errors, and the backward against central finite differences.

use tang_runtime::ops::{
    Epilogue, MatmulOptions, TileConfig, bias_backward, matmul, matmul_backward, matmul_tn_split,
    matmul_with,
};
use tang_runtime::{Device, Error, Tensor};
use tang_testing::{Rng, devices};

/// C[b] = op(A[b]) op(B[b]) in f64, plus for each element the sum of |products| (the
/// scale of its rounding error). A batch stride of 0 broadcasts.
#[allow(clippy::too_many_arguments)]
fn reference(
    a: &[f32],
    b: &[f32],
    (m, n, k, batch): (usize, usize, usize, usize),
    (ta, tb): (bool, bool),
    (sa, sb): (usize, usize),
) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0.0; batch * m * n];
    let mut s = vec![0.0; batch * m * n];
    for bi in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let (mut acc, mut mag) = (0.0f64, 0.0f64);
                for p in 0..k {
                    let x = a[bi * sa + if ta { p * m + i } else { i * k + p }] as f64;
                    let y = b[bi * sb + if tb { j * k + p } else { p * n + j }] as f64;
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

fn assert_close(got: &[f32], want: &[f64], scale: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, ((&g, &w), &s)) in got.iter().zip(want).zip(scale).enumerate() {
        let tol = 1e-5 + 2e-6 * s + 1e-5 * w.abs();
        assert!(
            (g as f64 - w).abs() <= tol,
            "{what}: element {i}: got {g}, want {w} (tol {tol})"
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn check(
    dev: &Device,
    rng: &mut Rng,
    m: usize,
    n: usize,
    k: usize,
    ta: bool,
    tb: bool,
    tile: Option<TileConfig>,
) {
    let a = rng.vec(m * k, 1.0);
    let b = rng.vec(k * n, 1.0);
    let ash = if ta { [k, m] } else { [m, k] };
    let bsh = if tb { [n, k] } else { [k, n] };
    let at = Tensor::from_slice(dev, &a, &ash).unwrap();
    let bt = Tensor::from_slice(dev, &b, &bsh).unwrap();
    let o = MatmulOptions {
        transpose_a: ta,
        transpose_b: tb,
        tile,
        ..Default::default()
    };
    let c = matmul_with(&at, &bt, &o).unwrap();
    assert_eq!(c.shape(), &[m, n]);
    let (want, scale) = reference(&a, &b, (m, n, k, 1), (ta, tb), (0, 0));
    assert_close(
        &c.to_vec().unwrap(),
        &want,
        &scale,
        &format!("{m}x{n}x{k} ta={ta} tb={tb} {tile:?}"),
    );
}

#[test]
fn awkward_shapes_all_transposes() {
    for dev in devices() {
        let mut rng = Rng::new(1);
        let shapes = [
            (1, 1, 1),
            (1, 17, 3),
            (17, 1, 5),
            (3, 5, 1),
            (33, 65, 17),
            (65, 33, 127),
            (127, 129, 33),
            (130, 140, 64),
        ];
        for (m, n, k) in shapes {
            for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
                check(&dev, &mut rng, m, n, k, ta, tb, None);
            }
        }
    }
}

/// `Aᵀ·B` with a small output and a long reduction (a weight gradient's shape) is cut
/// into slices of k summed afterwards; a k that does not split evenly runs whole.
#[test]
fn long_reductions_with_small_outputs_are_split() {
    for dev in devices() {
        let mut rng = Rng::new(11);
        for (m, n, k, split) in [
            (5, 7, 4096, true),
            (70, 65, 1024, true),
            (3, 9, 4099, false),
        ] {
            let before = dev.stats().launches;
            check(&dev, &mut rng, m, n, k, true, false, None);
            // The check's uploads are copies, not launches: one launch is the matmul
            // alone, more are the slices' product and their sum.
            let launches = dev.stats().launches - before;
            assert_eq!(launches > 1, split, "{m}x{n}x{k}: {launches} launches");
        }
    }
}

/// A forced slice count (the tuning entry point) gives `Aᵀ·B`, and one that does not
/// divide k is an error.
#[test]
fn forced_slice_counts_give_the_product() {
    for dev in devices() {
        let mut rng = Rng::new(13);
        let (m, n, k) = (6, 5, 64);
        let a = rng.vec(k * m, 1.0);
        let b = rng.vec(k * n, 1.0);
        let at = Tensor::from_slice(&dev, &a, &[k, m]).unwrap();
        let bt = Tensor::from_slice(&dev, &b, &[k, n]).unwrap();
        let (want, s) = reference(&a, &b, (m, n, k, 1), (true, false), (0, 0));
        for splits in [1, 2, 4, 16] {
            let c = matmul_tn_split(&at, &bt, splits).unwrap();
            assert_eq!(c.shape(), &[m, n]);
            assert_close(&c.to_vec().unwrap(), &want, &s, &format!("{splits} slices"));
        }
        for splits in [0, 3] {
            assert!(matches!(
                matmul_tn_split(&at, &bt, splits),
                Err(Error::InvalidArgument { .. })
            ));
        }
    }
}

/// The same kernels with wgpu's runtime bounds checks on give the same results.
#[test]
fn checked_mode_matches() {
    let dev = Device::with_options(tang_runtime::DeviceOptions {
        checked: true,
        ..Default::default()
    })
    .unwrap();
    assert!(dev.info().checked);
    let mut rng = Rng::new(7);
    check(&dev, &mut rng, 70, 45, 37, true, false, None);
    check(
        &dev,
        &mut rng,
        136,
        72,
        40,
        false,
        true,
        Some(TileConfig::LARGE),
    );
}

#[test]
fn more_row_blocks_than_one_grid_dimension() {
    for dev in devices() {
        let mut rng = Rng::new(6);
        // 2.1M rows in 32-row blocks: more than 65,535 workgroups.
        check(
            &dev,
            &mut rng,
            2_100_000,
            2,
            3,
            false,
            false,
            Some(TileConfig::SMALL),
        );
    }
}

#[test]
fn every_tile_preset_aligned_and_not() {
    for dev in devices() {
        let mut rng = Rng::new(2);
        for tile in TileConfig::PRESETS.into_iter().filter(|t| t.fits(&dev)) {
            // 136 x 72 x 40: vec4 everywhere, edges in m and n, a partial k tile of 16.
            check(&dev, &mut rng, 136, 72, 40, false, false, Some(tile));
            check(&dev, &mut rng, 136, 72, 40, true, true, Some(tile));
            // 70 x 45 x 37: nothing aligned.
            check(&dev, &mut rng, 70, 45, 37, false, true, Some(tile));
            check(&dev, &mut rng, 70, 45, 37, true, false, Some(tile));
        }
    }
}

#[test]
fn batches_and_broadcasts() {
    for dev in devices() {
        let mut rng = Rng::new(3);
        let (bt, m, n, k) = (3, 17, 13, 9);
        let a = rng.vec(bt * m * k, 1.0);
        let b = rng.vec(bt * k * n, 1.0);
        let a3 = Tensor::from_slice(&dev, &a, &[bt, m, k]).unwrap();
        let b3 = Tensor::from_slice(&dev, &b, &[bt, k, n]).unwrap();
        let c = matmul(&a3, &b3).unwrap();
        assert_eq!(c.shape(), &[bt, m, n]);
        let (want, s) = reference(&a, &b, (m, n, k, bt), (false, false), (m * k, k * n));
        assert_close(&c.to_vec().unwrap(), &want, &s, "batched");

        // rank-2 B broadcast over a [2, 3, ..] batch of A (a Linear layer), B transposed
        let a = rng.vec(6 * m * k, 1.0);
        let a4 = Tensor::from_slice(&dev, &a, &[2, 3, m, k]).unwrap();
        let w = Tensor::from_slice(&dev, &b[..n * k], &[n, k]).unwrap();
        let o = MatmulOptions {
            transpose_b: true,
            ..Default::default()
        };
        let c = matmul_with(&a4, &w, &o).unwrap();
        assert_eq!(c.shape(), &[2, 3, m, n]);
        let (want, s) = reference(&a, &b, (m, n, k, 6), (false, true), (m * k, 0));
        assert_close(&c.to_vec().unwrap(), &want, &s, "broadcast b");

        // rank-2 A broadcast over a batch of B
        let a2 = Tensor::from_slice(&dev, &a[..m * k], &[m, k]).unwrap();
        let c = matmul(&a2, &b3).unwrap();
        assert_eq!(c.shape(), &[bt, m, n]);
        let (want, s) = reference(&a, &b, (m, n, k, bt), (false, false), (0, k * n));
        assert_close(&c.to_vec().unwrap(), &want, &s, "broadcast a");
    }
}

#[test]
fn bias_and_epilogue_fused() {
    for dev in devices() {
        let mut rng = Rng::new(4);
        let gelu = Epilogue::from_traced(&tang_runtime::tang_expr::trace(1, |v| v[0].gelu_tanh()))
            .unwrap();
        for (m, n, k) in [(33, 20, 7), (19, 23, 16), (5, 3, 0)] {
            let a = rng.vec(m * k, 1.0);
            let b = rng.vec(k * n, 1.0);
            let bias = rng.vec(n, 1.0);
            let at = Tensor::from_slice(&dev, &a, &[m, k]).unwrap();
            let bt = Tensor::from_slice(&dev, &b, &[k, n]).unwrap();
            let biast = Tensor::from_slice(&dev, &bias, &[n]).unwrap();
            for with_epi in [false, true] {
                let o = MatmulOptions {
                    bias: Some(&biast),
                    epilogue: with_epi.then_some(&gelu),
                    ..Default::default()
                };
                let c = matmul_with(&at, &bt, &o).unwrap().to_vec().unwrap();
                let (mut want, s) = reference(&a, &b, (m, n, k, 1), (false, false), (0, 0));
                for (i, w) in want.iter_mut().enumerate() {
                    *w += bias[i % n] as f64;
                    if with_epi {
                        *w = gelu.eval_f64(*w).unwrap();
                    }
                }
                assert_close(
                    &c,
                    &want,
                    &s,
                    &format!("bias {m}x{n}x{k} epilogue={with_epi}"),
                );
            }
        }
    }
}

#[test]
fn shape_errors_say_what_was_expected() {
    for dev in devices() {
        let a = Tensor::zeros(&dev, &[4, 3]).unwrap();
        let b = Tensor::zeros(&dev, &[4, 5]).unwrap();
        let err = matmul(&a, &b).unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }));
        assert!(
            err.to_string().contains("expected b to have 3 rows"),
            "{err}"
        );
        // transpose_a makes it fit: [3, 4] · [4, 5]
        let o = MatmulOptions {
            transpose_a: true,
            ..Default::default()
        };
        assert_eq!(matmul_with(&a, &b, &o).unwrap().shape(), &[3, 5]);
        let v = Tensor::zeros(&dev, &[3]).unwrap();
        assert!(matches!(matmul(&v, &b), Err(Error::ShapeMismatch { .. })));
        let a3 = Tensor::zeros(&dev, &[2, 4, 4]).unwrap();
        let b3 = Tensor::zeros(&dev, &[3, 4, 5]).unwrap();
        let err = matmul(&a3, &b3).unwrap_err();
        assert!(err.to_string().contains("batch dimensions differ"), "{err}");
        let bias = Tensor::zeros(&dev, &[4]).unwrap();
        let o = MatmulOptions {
            bias: Some(&bias),
            ..Default::default()
        };
        let err = matmul_with(&a3.reshape(&[8, 4]).unwrap(), &b, &o).unwrap_err();
        assert!(err.to_string().contains("expected [5]"), "{err}");
        let ids = Tensor::from_u32(&dev, &[1, 2, 3, 4], &[2, 2]).unwrap();
        assert!(matches!(matmul(&ids, &b), Err(Error::DType { .. })));
        let bad = MatmulOptions {
            tile: Some(TileConfig {
                bm: 128,
                bn: 128,
                bk: 8,
                tm: 6,
                tn: 8,
            }),
            ..Default::default()
        };
        assert!(matches!(
            matmul_with(&a, &a.reshape(&[3, 4]).unwrap(), &bad),
            Err(Error::InvalidArgument { .. })
        ));
    }
}

/// Backward vs central differences of the GPU forward on `loss = sum(C * W)`.
#[test]
fn backward_matches_finite_differences() {
    for dev in devices() {
        let mut rng = Rng::new(5);
        let (m, n, k) = (5, 6, 7);
        // (a shape, b shape, ta, tb): plain, transposed, batched, broadcast either way.
        let cases: [(Vec<usize>, Vec<usize>, bool, bool); 6] = [
            (vec![m, k], vec![k, n], false, false),
            (vec![k, m], vec![n, k], true, true),
            (vec![2, m, k], vec![2, n, k], false, true),
            (vec![2, m, k], vec![k, n], false, false),
            (vec![2, k, m], vec![n, k], true, true),
            (vec![m, k], vec![2, k, n], false, false),
        ];
        for (sa, sb, ta, tb) in cases {
            let a = rng.vec(sa.iter().product(), 1.0);
            let b = rng.vec(sb.iter().product(), 1.0);
            let at = Tensor::from_slice(&dev, &a, &sa).unwrap();
            let bt = Tensor::from_slice(&dev, &b, &sb).unwrap();
            let o = MatmulOptions {
                transpose_a: ta,
                transpose_b: tb,
                ..Default::default()
            };
            let c = matmul_with(&at, &bt, &o).unwrap();
            let wv = rng.vec(c.len(), 1.0);
            let wt = Tensor::from_slice(&dev, &wv, c.shape()).unwrap();
            let (ga, gb) = matmul_backward(&wt, &at, &bt, ta, tb).unwrap();
            assert_eq!(ga.shape(), sa.as_slice());
            assert_eq!(gb.shape(), sb.as_slice());
            let loss = |a: &[f32], b: &[f32]| -> f64 {
                let at = Tensor::from_slice(&dev, a, &sa).unwrap();
                let bt = Tensor::from_slice(&dev, b, &sb).unwrap();
                let c = matmul_with(&at, &bt, &o).unwrap().to_vec().unwrap();
                c.iter().zip(&wv).map(|(&x, &y)| x as f64 * y as f64).sum()
            };
            let eps = 1e-2f32;
            let (ga, gb) = (ga.to_vec().unwrap(), gb.to_vec().unwrap());
            for (which, grad) in [(0, &ga), (1, &gb)] {
                let len = if which == 0 { a.len() } else { b.len() };
                for idx in [0, len / 3, len - 1] {
                    let (mut ap, mut am, mut bp, mut bm) =
                        (a.clone(), a.clone(), b.clone(), b.clone());
                    if which == 0 {
                        ap[idx] += eps;
                        am[idx] -= eps;
                    } else {
                        bp[idx] += eps;
                        bm[idx] -= eps;
                    }
                    let fd = (loss(&ap, &bp) - loss(&am, &bm)) / (2.0 * eps as f64);
                    let g = grad[idx] as f64;
                    assert!(
                        (fd - g).abs() < 2e-3 * (1.0 + g.abs()),
                        "{sa:?}x{sb:?} ta={ta} tb={tb} operand {which} [{idx}]: fd {fd} vs {g}"
                    );
                }
            }
        }
        // bias gradient = column sums
        let g = rng.vec(3 * 4 * 5, 1.0);
        let gt = Tensor::from_slice(&dev, &g, &[3, 4, 5]).unwrap();
        let gb = bias_backward(&gt).unwrap().to_vec().unwrap();
        for j in 0..5 {
            let want: f64 = (0..12).map(|r| g[r * 5 + j] as f64).sum();
            assert!((gb[j] as f64 - want).abs() < 1e-5, "bias grad {j}");
        }
    }
}

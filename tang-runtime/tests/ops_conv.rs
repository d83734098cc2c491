//! `conv2d` on the GPU against a direct f64 CPU convolution over strides, paddings,
//! dilations and groups (depthwise, 1x1 kernels, batch 1, odd sizes, an empty batch), its
//! backward against f64 finite differences of that convolution, and its shape errors.

mod ops_support;

use ops_support::{f64s, finite_diff};
use tang_runtime::ops::TileConfig;
use tang_runtime::ops::conv_gemm;
use tang_runtime::ops::{self, Conv2d};
use tang_runtime::{Error, Tensor};
use tang_testing::{assert_close, devices, random};

/// Output size along one axis (PyTorch's formula).
fn out_len(n: usize, k: usize, s: usize, p: usize, d: usize) -> usize {
    (n + 2 * p - d * (k - 1) - 1) / s + 1
}

/// Calls `visit(x_index, weight_index, out_index)` for every product of a direct NCHW
/// convolution of `x [n, c, h, w]` by `wt [co, c / groups, kh, kw]`, in output order.
fn for_each_tap(
    xs: [usize; 4],
    ws: [usize; 4],
    cv: &Conv2d,
    mut visit: impl FnMut(usize, usize, usize),
) {
    let [n, c, h, w] = xs;
    let [co, cg, kh, kw] = ws;
    let oh = out_len(h, kh, cv.stride[0], cv.padding[0], cv.dilation[0]);
    let ow = out_len(w, kw, cv.stride[1], cv.padding[1], cv.dilation[1]);
    let cog = co / cv.groups;
    for b in 0..n {
        for o in 0..co {
            let g = o / cog;
            for oy in 0..oh {
                for ox in 0..ow {
                    let oi = ((b * co + o) * oh + oy) * ow + ox;
                    for ci in 0..cg {
                        let ch = g * cg + ci;
                        for ky in 0..kh {
                            let y = (oy * cv.stride[0] + ky * cv.dilation[0]) as isize
                                - cv.padding[0] as isize;
                            for kx in 0..kw {
                                let xx = (ox * cv.stride[1] + kx * cv.dilation[1]) as isize
                                    - cv.padding[1] as isize;
                                if y < 0 || xx < 0 || y >= h as isize || xx >= w as isize {
                                    continue;
                                }
                                let xi = ((b * c + ch) * h + y as usize) * w + xx as usize;
                                let wi = ((o * cg + ci) * kh + ky) * kw + kx;
                                visit(xi, wi, oi);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The output `[n, co, oh, ow]` of [`for_each_tap`]'s convolution.
fn out_shape(xs: [usize; 4], ws: [usize; 4], cv: &Conv2d) -> [usize; 4] {
    [
        xs[0],
        ws[0],
        out_len(xs[2], ws[2], cv.stride[0], cv.padding[0], cv.dilation[0]),
        out_len(xs[3], ws[3], cv.stride[1], cv.padding[1], cv.dilation[1]),
    ]
}

/// Direct NCHW convolution in f64 of `x [n, c, h, w]` by `wt [co, c / groups, kh, kw]`,
/// plus `bias` when given.
fn cpu_conv(
    x: &[f64],
    xs: [usize; 4],
    wt: &[f64],
    ws: [usize; 4],
    bias: Option<&[f64]>,
    cv: &Conv2d,
) -> Vec<f64> {
    let os = out_shape(xs, ws, cv);
    let plane = os[2] * os[3];
    let mut out: Vec<f64> = (0..os.iter().product())
        .map(|i| bias.map_or(0.0, |b| b[(i / plane) % os[1]]))
        .collect();
    for_each_tap(xs, ws, cv, |xi, wi, oi| out[oi] += x[xi] * wt[wi]);
    out
}

/// The exact gradients of `Σ g · conv(x, wt)` with respect to `x` and `wt` in f64: each
/// product of the convolution sends `g · wt` to `x` and `g · x` to `wt`.
fn cpu_conv_grads(
    x: &[f64],
    xs: [usize; 4],
    wt: &[f64],
    ws: [usize; 4],
    g: &[f64],
    cv: &Conv2d,
) -> (Vec<f64>, Vec<f64>) {
    let mut gx = vec![0.0; x.len()];
    let mut gw = vec![0.0; wt.len()];
    for_each_tap(xs, ws, cv, |xi, wi, oi| {
        gx[xi] += g[oi] * wt[wi];
        gw[wi] += g[oi] * x[xi];
    });
    (gx, gw)
}

fn conv(s: [usize; 2], p: [usize; 2], d: [usize; 2], groups: usize) -> Conv2d {
    Conv2d {
        stride: s,
        padding: p,
        dilation: d,
        groups,
    }
}

#[test]
fn conv2d_matches_a_direct_cpu_convolution_and_finite_differences() {
    // (input, weight, bias?, window)
    let cases: [([usize; 4], [usize; 4], bool, Conv2d); 10] = [
        (
            [2, 4, 7, 6],
            [6, 2, 3, 2],
            true,
            conv([2, 1], [1, 0], [1, 1], 2),
        ),
        (
            [1, 3, 9, 8],
            [4, 3, 3, 3],
            true,
            conv([1, 2], [2, 1], [2, 1], 1),
        ),
        // Depthwise (groups = channels), and with a channel multiplier of 2.
        (
            [2, 3, 5, 5],
            [3, 1, 3, 3],
            false,
            conv([1, 1], [1, 1], [1, 1], 3),
        ),
        (
            [1, 2, 6, 5],
            [4, 1, 2, 2],
            true,
            conv([1, 1], [0, 1], [2, 2], 2),
        ),
        // 1x1 kernel, batch 1.
        ([1, 5, 3, 4], [2, 5, 1, 1], false, Conv2d::default()),
        // Odd sizes, a kernel as tall as the padded input.
        (
            [1, 1, 17, 3],
            [2, 1, 3, 5],
            true,
            conv([3, 1], [1, 1], [1, 1], 1),
        ),
        (
            [3, 2, 1, 1],
            [3, 2, 3, 3],
            true,
            conv([1, 1], [1, 1], [1, 1], 1),
        ),
        // An empty batch.
        (
            [0, 2, 4, 4],
            [3, 2, 3, 3],
            true,
            conv([1, 1], [1, 1], [1, 1], 1),
        ),
        // An empty image whose padding still gives outputs (the bias alone), and no
        // input channels (the reduction is empty).
        (
            [1, 2, 0, 3],
            [3, 2, 1, 2],
            true,
            conv([1, 1], [1, 0], [1, 1], 1),
        ),
        ([2, 0, 3, 3], [2, 0, 2, 2], true, Conv2d::default()),
    ];
    for dev in devices() {
        for (seed, (xs, ws, has_bias, cv)) in cases.iter().enumerate() {
            let seed = seed as u64;
            let (nx, nw): (usize, usize) = (xs.iter().product(), ws.iter().product());
            let xv = random(nx, 10 + seed);
            let wv = random(nw, 20 + seed);
            let bv = random(ws[0], 30 + seed);
            let x = Tensor::from_slice(&dev, &xv, xs).unwrap();
            let w = Tensor::from_slice(&dev, &wv, ws).unwrap();
            let b = Tensor::from_slice(&dev, &bv, &[ws[0]]).unwrap();
            let bias = has_bias.then_some(&b);
            let out = ops::conv2d(&x, &w, bias, cv).unwrap();
            let bias64 = has_bias.then(|| f64s(&bv));
            let want = cpu_conv(&f64s(&xv), *xs, &f64s(&wv), *ws, bias64.as_deref(), cv);
            let what = format!("conv2d {xs:?} * {ws:?} {cv:?}");
            assert_eq!(out.shape()[..2], [xs[0], ws[0]], "{what}");
            assert_close(&what, &out.to_vec().unwrap(), &want, 1e-5, 1e-5);

            // Backward: the gradient of Σ g · conv(x, w, b) over (x, w, b) at once.
            let gv = random(out.len(), 40 + seed);
            let g = Tensor::from_slice(&dev, &gv, out.shape()).unwrap();
            let grads = ops::conv2d_backward(&g, &x, &w, bias, cv).unwrap();
            let mut all = f64s(&xv);
            all.extend(f64s(&wv));
            if *has_bias {
                all.extend(f64s(&bv));
            }
            let fd = finite_diff(
                |p| {
                    let (px, rest) = p.split_at(nx);
                    let (pw, pb) = rest.split_at(nw);
                    cpu_conv(px, *xs, pw, *ws, has_bias.then_some(pb), cv)
                },
                &all,
                &f64s(&gv),
                1e-3,
            );
            let (fx, rest) = fd.split_at(nx);
            let (fw, fb) = rest.split_at(nw);
            assert_eq!(grads.grad_input.shape(), xs, "{what}");
            assert_eq!(grads.grad_weight.shape(), ws, "{what}");
            let got_x = grads.grad_input.to_vec().unwrap();
            assert_close(&format!("grad_input of {what}"), &got_x, fx, 1e-4, 1e-4);
            let got_w = grads.grad_weight.to_vec().unwrap();
            assert_close(&format!("grad_weight of {what}"), &got_w, fw, 1e-4, 1e-4);
            match (&grads.grad_bias, has_bias) {
                (Some(gb), true) => {
                    let got_b = gb.to_vec().unwrap();
                    assert_close(&format!("grad_bias of {what}"), &got_b, fb, 1e-4, 1e-4);
                }
                (None, false) => {}
                (gb, _) => panic!("{what}: grad_bias {gb:?} with bias = {has_bias}"),
            }
        }
    }
}

/// Input, weight and bias shapes, and the window, of a call that must fail.
type BadShapes = (
    &'static [usize],
    &'static [usize],
    Option<&'static [usize]>,
    Conv2d,
);

#[test]
fn conv2d_rejects_bad_shapes_and_arguments() {
    let dev = tang_testing::device();
    let t = |shape: &[usize]| {
        Tensor::from_slice(&dev, &vec![0.5; shape.iter().product()], shape).unwrap()
    };
    let x = t(&[1, 4, 5, 5]);
    let shape_errors: [BadShapes; 6] = [
        // Channels not divisible by groups.
        (
            &[1, 4, 5, 5],
            &[3, 2, 3, 3],
            None,
            conv([1, 1], [0, 0], [1, 1], 2),
        ),
        (
            &[1, 4, 5, 5],
            &[4, 1, 3, 3],
            None,
            conv([1, 1], [0, 0], [1, 1], 3),
        ),
        // Weight channels disagreeing with the input.
        (&[1, 4, 5, 5], &[2, 3, 3, 3], None, Conv2d::default()),
        // Kernel larger than the padded input (dilation counts).
        (&[1, 4, 5, 5], &[2, 4, 6, 3], None, Conv2d::default()),
        (
            &[1, 4, 5, 5],
            &[2, 4, 3, 3],
            None,
            conv([1, 1], [0, 0], [3, 1], 1),
        ),
        // A bias of the wrong length.
        (&[1, 4, 5, 5], &[2, 4, 3, 3], Some(&[3]), Conv2d::default()),
    ];
    for (xs, ws, bs, cv) in shape_errors {
        let b = bs.map(t);
        let e = ops::conv2d(&t(xs), &t(ws), b.as_ref(), &cv).unwrap_err();
        assert!(
            matches!(e, Error::ShapeMismatch { .. }),
            "{xs:?} {ws:?} {cv:?}: {e:?}"
        );
    }
    let w = t(&[2, 4, 3, 3]);
    for cv in [
        conv([0, 1], [0, 0], [1, 1], 1),
        conv([1, 1], [0, 0], [1, 0], 1),
        conv([1, 1], [0, 0], [1, 1], 0),
    ] {
        let e = ops::conv2d(&x, &w, None, &cv).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{cv:?}: {e:?}");
    }
    // Wrong ranks, and a grad_out that is not the output's shape.
    let e = ops::conv2d(&t(&[4, 5, 5]), &w, None, &Conv2d::default()).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    let e = ops::conv2d(&x, &t(&[2, 4, 9]), None, &Conv2d::default()).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    let g = t(&[1, 2, 4, 4]);
    let e = ops::conv2d_backward(&g, &x, &w, None, &Conv2d::default()).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    // Sizes past i32 in the window arithmetic: refused when they would reach the
    // gather, computed when they only multiply zero (one output per axis, a 1x1 kernel).
    let huge = 1usize << 40;
    let e = ops::conv2d(&x, &w, None, &conv([1, 1], [huge, 0], [1, 1], 1)).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
    let (xv, wv) = (random(100, 50), random(8, 51));
    let xr = Tensor::from_slice(&dev, &xv, &[1, 4, 5, 5]).unwrap();
    let w1 = Tensor::from_slice(&dev, &wv, &[2, 4, 1, 1]).unwrap();
    let cv = conv([huge, huge], [0, 0], [huge, huge], 1);
    let out = ops::conv2d(&xr, &w1, None, &cv).unwrap();
    let want = cpu_conv(
        &f64s(&xv),
        [1, 4, 5, 5],
        &f64s(&wv),
        [2, 4, 1, 1],
        None,
        &cv,
    );
    assert_close(
        "conv2d with huge stride",
        &out.to_vec().unwrap(),
        &want,
        1e-5,
        1e-5,
    );
    let g = Tensor::from_slice(&dev, &[1.0, -2.0], &[1, 2, 1, 1]).unwrap();
    let grads = ops::conv2d_backward(&g, &xr, &w1, None, &cv).unwrap();
    let (gx, gw) = cpu_conv_grads(
        &f64s(&xv),
        [1, 4, 5, 5],
        &f64s(&wv),
        [2, 4, 1, 1],
        &[1.0, -2.0],
        &cv,
    );
    assert_close(
        "grad_input, huge stride",
        &grads.grad_input.to_vec().unwrap(),
        &gx,
        1e-5,
        1e-5,
    );
    assert_close(
        "grad_weight, huge stride",
        &grads.grad_weight.to_vec().unwrap(),
        &gw,
        1e-5,
        1e-5,
    );
    // u32 where f32 belongs.
    let idx = Tensor::from_u32(&dev, &[0; 100], &[1, 4, 5, 5]).unwrap();
    let e = ops::conv2d(&idx, &w, None, &Conv2d::default()).unwrap_err();
    assert!(matches!(e, Error::DType { .. }), "{e:?}");
}

/// Layers large enough for every tile the convolution chooses (32, 64 and 128 output rows
/// per block), a reduction over positions split into pieces (grad_weight with 576
/// positions per image), strided and dilated gathers with groups, and edge blocks: the
/// forward against the direct f64 convolution, the backward against its exact adjoint
/// (finite differences of these sizes would be too slow for CI; the small cases above
/// check the backward against them).
#[test]
fn conv2d_layers_match_the_direct_convolution_and_its_adjoint() {
    let cases: [([usize; 4], [usize; 4], Conv2d); 4] = [
        // 64 output channels: 64-row blocks; 576 positions: grad_weight split in 2.
        (
            [2, 4, 24, 24],
            [64, 4, 3, 3],
            conv([1, 1], [1, 1], [1, 1], 1),
        ),
        // 72 output channels per group: 128-row blocks; stride 2 with groups.
        (
            [1, 6, 13, 11],
            [144, 3, 3, 2],
            conv([2, 1], [1, 0], [1, 2], 2),
        ),
        // Depthwise, dilated, strided along the width.
        (
            [2, 8, 33, 17],
            [8, 1, 5, 3],
            conv([1, 2], [2, 1], [2, 1], 8),
        ),
        // Stride larger than the kernel (some input pixels feed no output).
        ([1, 5, 10, 9], [7, 5, 2, 2], conv([3, 3], [0, 1], [1, 1], 1)),
    ];
    for dev in devices() {
        for (seed, (xs, ws, cv)) in cases.iter().enumerate() {
            let seed = 100 + seed as u64;
            let (nx, nw): (usize, usize) = (xs.iter().product(), ws.iter().product());
            let xv = random(nx, seed);
            let wv = random(nw, seed + 1);
            let x = Tensor::from_slice(&dev, &xv, xs).unwrap();
            let w = Tensor::from_slice(&dev, &wv, ws).unwrap();
            let out = ops::conv2d(&x, &w, None, cv).unwrap();
            let what = format!("conv2d {xs:?} * {ws:?} {cv:?}");
            assert_eq!(out.shape(), out_shape(*xs, *ws, cv), "{what}");
            let want = cpu_conv(&f64s(&xv), *xs, &f64s(&wv), *ws, None, cv);
            assert_close(&what, &out.to_vec().unwrap(), &want, 1e-4, 1e-4);

            let gv = random(out.len(), seed + 2);
            let g = Tensor::from_slice(&dev, &gv, out.shape()).unwrap();
            let grads = ops::conv2d_backward(&g, &x, &w, None, cv).unwrap();
            let (gx, gw) = cpu_conv_grads(&f64s(&xv), *xs, &f64s(&wv), *ws, &f64s(&gv), cv);
            let got_x = grads.grad_input.to_vec().unwrap();
            assert_close(&format!("grad_input of {what}"), &got_x, &gx, 1e-4, 1e-4);
            let got_w = grads.grad_weight.to_vec().unwrap();
            assert_close(&format!("grad_weight of {what}"), &got_w, &gw, 1e-4, 1e-4);
            assert!(grads.grad_bias.is_none(), "{what}");
        }
    }
}

/// Tiles the automatic choice does not take (the benchmark's tuning candidates) give the
/// same products when forced, and a tile the generator does not support is refused.
#[test]
fn conv2d_on_forced_tiles_matches_the_direct_convolution() {
    let dev = tang_testing::device();
    let (xs, ws) = ([2, 4, 9, 10], [6, 2, 3, 3]);
    let cv = conv([2, 1], [1, 1], [1, 2], 2);
    let (xv, wv) = (
        random(xs.iter().product(), 7),
        random(ws.iter().product(), 8),
    );
    let x = Tensor::from_slice(&dev, &xv, &xs).unwrap();
    let w = Tensor::from_slice(&dev, &wv, &ws).unwrap();
    let os = out_shape(xs, ws, &cv);
    let gv = random(os.iter().product(), 9);
    let g = Tensor::from_slice(&dev, &gv, &os).unwrap();
    let want = cpu_conv(&f64s(&xv), xs, &f64s(&wv), ws, None, &cv);
    let (gx, gw) = cpu_conv_grads(&f64s(&xv), xs, &f64s(&wv), ws, &f64s(&gv), &cv);
    for tile in [
        TileConfig {
            bm: 64,
            bn: 128,
            bk: 16,
            tm: 8,
            tn: 8,
        },
        TileConfig {
            bm: 128,
            bn: 64,
            bk: 8,
            tm: 8,
            tn: 8,
        },
    ] {
        let (out, grads) = conv_gemm::with_tile(tile, || {
            let out = ops::conv2d(&x, &w, None, &cv).unwrap();
            (out, ops::conv2d_backward(&g, &x, &w, None, &cv).unwrap())
        });
        let what = format!("conv2d on {tile:?}");
        assert_close(&what, &out.to_vec().unwrap(), &want, 1e-5, 1e-5);
        let got_x = grads.grad_input.to_vec().unwrap();
        assert_close(&format!("grad_input of {what}"), &got_x, &gx, 1e-5, 1e-5);
        let got_w = grads.grad_weight.to_vec().unwrap();
        assert_close(&format!("grad_weight of {what}"), &got_w, &gw, 1e-5, 1e-5);
    }
    // A tile the generator does not support is refused, not run.
    let bad = TileConfig {
        bm: 64,
        bn: 64,
        bk: 6,
        tm: 8,
        tn: 8,
    };
    let e = conv_gemm::with_tile(bad, || ops::conv2d(&x, &w, None, &cv)).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(e.to_string().contains("bk must be a multiple of 4"), "{e}");
}

//! `max_pool2d` and `avg_pool2d` on the GPU against a direct f64 CPU pooling over strides,
//! paddings and dilations, and their backwards against f64 finite differences.

mod ops_support;

use ops_support::{f64s, finite_diff};
use tang_runtime::ops::{self, Pool2d};
use tang_runtime::{DType, Error, Tensor};
use tang_testing::{Rng, assert_close, devices};

/// Output size along one axis (PyTorch, `ceil_mode = false`).
fn out_len(n: usize, k: usize, s: usize, p: usize, d: usize) -> usize {
    (n + 2 * p - d * (k - 1) - 1) / s + 1
}

/// Direct CPU pooling of NCHW `x`: max (value, first position; NaN wins) or average.
fn cpu_pool(
    x: &[f64],
    shape: [usize; 4],
    pool: &Pool2d,
    max: bool,
    include_pad: bool,
) -> (Vec<f64>, Vec<u32>) {
    let [n, c, h, w] = shape;
    let (oh, ow) = (
        out_len(
            h,
            pool.kernel_size[0],
            pool.stride[0],
            pool.padding[0],
            pool.dilation[0],
        ),
        out_len(
            w,
            pool.kernel_size[1],
            pool.stride[1],
            pool.padding[1],
            pool.dilation[1],
        ),
    );
    let (mut out, mut idx) = (Vec::new(), Vec::new());
    for plane in 0..n * c {
        for oy in 0..oh {
            for ox in 0..ow {
                let (mut best, mut at, mut sum, mut count) = (f64::NEG_INFINITY, 0, 0.0, 0);
                let mut found = false;
                for ky in 0..pool.kernel_size[0] {
                    let y = (oy * pool.stride[0] + ky * pool.dilation[0]) as isize
                        - pool.padding[0] as isize;
                    for kx in 0..pool.kernel_size[1] {
                        let xx = (ox * pool.stride[1] + kx * pool.dilation[1]) as isize
                            - pool.padding[1] as isize;
                        if y < 0 || xx < 0 || y >= h as isize || xx >= w as isize {
                            continue;
                        }
                        let pos = y as usize * w + xx as usize;
                        let v = x[plane * h * w + pos];
                        if !found || (!best.is_nan() && (v.is_nan() || v > best)) {
                            (best, at, found) = (v, pos, true);
                        }
                        sum += v;
                        count += 1;
                    }
                }
                let div = if include_pad {
                    (pool.kernel_size[0] * pool.kernel_size[1]) as f64
                } else {
                    count as f64
                };
                out.push(if max { best } else { sum / div });
                idx.push(at as u32);
            }
        }
    }
    (out, idx)
}

fn pool(k: [usize; 2], s: [usize; 2], p: [usize; 2], d: [usize; 2]) -> Pool2d {
    Pool2d {
        kernel_size: k,
        stride: s,
        padding: p,
        dilation: d,
    }
}

#[test]
fn pooling_matches_a_direct_cpu_pooling_and_finite_differences() {
    let cases: [([usize; 4], Pool2d); 6] = [
        ([2, 3, 7, 9], pool([3, 2], [2, 1], [1, 0], [1, 1])),
        ([1, 2, 17, 3], Pool2d::new([2, 2])),
        ([1, 1, 9, 11], pool([3, 3], [1, 2], [1, 1], [2, 1])),
        ([2, 1, 5, 5], pool([2, 3], [3, 1], [1, 1], [1, 1])),
        ([0, 3, 4, 4], Pool2d::new([2, 2])),
        ([1, 1, 1, 257], pool([1, 3], [1, 2], [0, 1], [1, 1])),
    ];
    for dev in devices() {
        for (seed, (shape, pl)) in cases.iter().enumerate() {
            let n: usize = shape.iter().product();
            // Distinct values: no ties, so finite differences never cross a switch of the max.
            let xv = Rng::new(seed as u64).distinct(n);
            let x = Tensor::from_slice(&dev, &xv, shape).unwrap();
            let (out, idx) = ops::max_pool2d(&x, pl).unwrap();
            let (want, want_idx) = cpu_pool(&f64s(&xv), *shape, pl, true, false);
            assert_close("max_pool2d", &out.to_vec().unwrap(), &want, 0.0, 0.0);
            assert_eq!(idx.dtype(), DType::U32);
            assert_eq!(idx.to_vec_u32().unwrap(), want_idx, "{shape:?} {pl:?}");
            let wv = tang_testing::random(out.len(), 90 + seed as u64);
            let w = Tensor::from_slice(&dev, &wv, out.shape()).unwrap();
            let g = ops::max_pool2d_backward(&w, &idx, shape, pl).unwrap();
            let step = 0.2 / n.max(1) as f64;
            let fd = finite_diff(
                |x| cpu_pool(x, *shape, pl, true, false).0,
                &f64s(&xv),
                &f64s(&wv),
                step,
            );
            assert_close("max_pool2d_backward", &g.to_vec().unwrap(), &fd, 1e-4, 1e-4);

            if pl.dilation != [1, 1] {
                continue;
            }
            for include_pad in [true, false] {
                let a = ops::avg_pool2d(&x, pl, include_pad).unwrap();
                let (want, _) = cpu_pool(&f64s(&xv), *shape, pl, false, include_pad);
                assert_close("avg_pool2d", &a.to_vec().unwrap(), &want, 1e-6, 1e-5);
                let g = ops::avg_pool2d_backward(&w, shape, pl, include_pad).unwrap();
                let fd = finite_diff(
                    |x| cpu_pool(x, *shape, pl, false, include_pad).0,
                    &f64s(&xv),
                    &f64s(&wv),
                    1e-3,
                );
                assert_close("avg_pool2d_backward", &g.to_vec().unwrap(), &fd, 1e-5, 1e-4);
            }
        }
    }
}

#[test]
fn pooling_ties_nan_and_errors() {
    let dev = tang_testing::device();
    let x = Tensor::from_slice(
        &dev,
        &[1.0, 1.0, f32::NAN, 0.0, 2.0, 2.0, 2.0, f32::NAN],
        &[1, 1, 2, 4],
    )
    .unwrap();
    let (out, idx) = ops::max_pool2d(&x, &Pool2d::new([1, 2])).unwrap();
    let o = out.to_vec().unwrap();
    assert_eq!((o[0], o[2]), (1.0, 2.0));
    assert!(o[1].is_nan() && o[3].is_nan());
    assert_eq!(idx.to_vec_u32().unwrap(), vec![0, 2, 4, 7]);
    let bad = [
        pool([0, 2], [1, 1], [0, 0], [1, 1]),
        pool([2, 2], [0, 1], [0, 0], [1, 1]),
        pool([2, 2], [1, 1], [2, 0], [1, 1]),
    ];
    for pl in bad {
        assert!(
            matches!(ops::max_pool2d(&x, &pl), Err(Error::InvalidArgument { .. })),
            "{pl:?}"
        );
    }
    assert!(matches!(
        ops::max_pool2d(&x, &Pool2d::new([3, 3])),
        Err(Error::ShapeMismatch { .. })
    ));
    let flat = Tensor::from_slice(&dev, &[0.0; 4], &[4]).unwrap();
    assert!(matches!(
        ops::avg_pool2d(&flat, &Pool2d::new([2, 2]), true),
        Err(Error::ShapeMismatch { .. })
    ));
    let dilated = pool([2, 2], [1, 1], [0, 0], [2, 1]);
    assert!(matches!(
        ops::avg_pool2d(&x, &dilated, true),
        Err(Error::InvalidArgument { .. })
    ));
}

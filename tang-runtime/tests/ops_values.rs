//! u32 tensors (arange, argmax/argmin, casts, comparisons), in-place ops and the random
//! generator on the GPU, against CPU references and the generator's CPU twin.

mod ops_support;

use ops_support::f64s;
use tang_runtime::ops::{self, Generator, PhiloxStream};
use tang_runtime::{DType, Error, Tensor};
use tang_testing::{assert_close, devices, random};

#[test]
fn arange_full_and_casts() {
    for dev in devices() {
        let a = ops::arange(&dev, 3, 20, 4).unwrap();
        assert_eq!(a.to_vec_u32().unwrap(), vec![3, 7, 11, 15, 19]);
        assert_eq!(
            ops::arange(&dev, 0, 257, 1).unwrap().to_vec_u32().unwrap(),
            (0..257).collect::<Vec<u32>>()
        );
        assert!(ops::arange(&dev, 5, 5, 1).unwrap().is_empty());
        let e = ops::arange(&dev, 5, 2, 1).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
        let e = ops::arange(&dev, 0, 5, 0).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");

        assert_eq!(
            ops::full_u32(&dev, &[17], 7).unwrap().to_vec_u32().unwrap(),
            vec![7; 17]
        );
        assert_eq!(
            ops::full(&dev, &[3, 1], -2.5).unwrap().to_vec().unwrap(),
            vec![-2.5; 3]
        );
        assert!(ops::full(&dev, &[0, 3], 1.0).unwrap().is_empty());

        let f = [
            0.0,
            0.99,
            1.0,
            2.7,
            -3.5,
            f32::NAN,
            4.5e9,
            f32::INFINITY,
            16_777_216.0,
            -0.0,
        ];
        let ft = Tensor::from_slice(&dev, &f, &[10]).unwrap();
        let u = ops::to_dtype(&ft, DType::U32).unwrap();
        assert_eq!(
            u.to_vec_u32().unwrap(),
            vec![0, 0, 1, 2, 0, 0, u32::MAX, u32::MAX, 16_777_216, 0]
        );
        let back = ops::to_dtype(&u, DType::F32).unwrap();
        let want: Vec<f64> = u
            .to_vec_u32()
            .unwrap()
            .iter()
            .map(|&v| f64::from(v as f32))
            .collect();
        // Exact below 2^24; u32::MAX rounds to one of the two nearest f32.
        assert_close("u32 -> f32", &back.to_vec().unwrap(), &want, 0.0, 1e-7);
        assert!(ft.to_dtype(DType::F32).unwrap().same_buffer(&ft));
    }
}

/// CPU argmax/argmin along `dim` of `[outer, len, inner]`: first index, NaN wins.
fn cpu_arg(x: &[f32], outer: usize, len: usize, inner: usize, min: bool) -> Vec<u32> {
    let mut out = Vec::new();
    for o in 0..outer {
        for c in 0..inner {
            let at = |a: usize| x[(o * len + a) * inner + c];
            let mut best = 0;
            for a in 1..len {
                if at(best).is_nan() {
                    break;
                }
                let (v, m) = (at(a), at(best));
                if v.is_nan() || (if min { v < m } else { v > m }) {
                    best = a;
                }
            }
            out.push(best as u32);
        }
    }
    out
}

#[test]
fn argmax_and_argmin_take_the_first_index_and_nan_wins() {
    for dev in devices() {
        for (seed, &(shape, dim)) in [
            (&[3, 17][..], 1),
            (&[257, 3][..], 0),
            (&[2, 3, 5][..], 1),
            (&[1][..], 0),
        ]
        .iter()
        .enumerate()
        {
            // Coarse values: ties are common.
            let mut xv: Vec<f32> = random(shape.iter().product(), seed as u64)
                .iter()
                .map(|v| (v * 3.0).round())
                .collect();
            if xv.len() > 20 {
                xv[7] = f32::NAN;
                xv[12] = f32::NAN;
            }
            let x = Tensor::from_slice(&dev, &xv, shape).unwrap();
            let outer: usize = shape[..dim].iter().product();
            let inner: usize = shape[dim + 1..].iter().product();
            for min in [false, true] {
                let got = if min { x.argmin(dim) } else { x.argmax(dim) }.unwrap();
                assert_eq!(got.dtype(), DType::U32);
                assert_eq!(
                    got.to_vec_u32().unwrap(),
                    cpu_arg(&xv, outer, shape[dim], inner, min),
                    "{shape:?} {min}"
                );
            }
        }
        let e = Tensor::zeros(&dev, &[3, 0]).unwrap();
        assert!(matches!(
            ops::argmax(&e, 1),
            Err(Error::ShapeMismatch { .. })
        ));
        assert_eq!(ops::argmax(&e, 0).unwrap().shape(), &[0]);
        let u = Tensor::from_u32(&dev, &[1, 2], &[2]).unwrap();
        assert!(matches!(ops::argmax(&u, 0), Err(Error::DType { .. })));
    }
}

#[test]
fn comparisons_give_u32_masks_with_ieee_nan_rules() {
    for dev in devices() {
        let a = [1.0, 2.0, f32::NAN, -0.0, 5.0, f32::INFINITY];
        let b = [1.0, 3.0, f32::NAN, 0.0, 4.0, 1.0];
        let (ta, tb) = (
            Tensor::from_slice(&dev, &a, &[2, 3]).unwrap(),
            Tensor::from_slice(&dev, &b, &[2, 3]).unwrap(),
        );
        type Cmp = fn(&f32, &f32) -> bool;
        type GpuCmp = fn(&Tensor, &Tensor) -> Result<Tensor, Error>;
        let cases: [(&str, GpuCmp, Cmp); 6] = [
            ("eq", ops::eq, |x, y| x == y),
            ("ne", ops::ne, |x, y| x != y),
            ("lt", ops::lt, |x, y| x < y),
            ("le", ops::le, |x, y| x <= y),
            ("gt", ops::gt, |x, y| x > y),
            ("ge", ops::ge, |x, y| x >= y),
        ];
        for (name, op, cpu) in cases {
            let m = op(&ta, &tb).unwrap();
            assert_eq!(m.dtype(), DType::U32);
            let want: Vec<u32> = a
                .iter()
                .zip(&b)
                .map(|(x, y)| u32::from(cpu(x, y)))
                .collect();
            assert_eq!(m.to_vec_u32().unwrap(), want, "{name}");
        }
        // Broadcasting: [2, 3] against [3] and against [2, 1].
        let row = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0], &[3]).unwrap();
        assert_eq!(
            ops::ge(&ta, &row).unwrap().to_vec_u32().unwrap(),
            vec![1, 1, 0, 0, 1, 1]
        );
        let col = Tensor::from_u32(&dev, &[4, 6], &[2, 1]).unwrap();
        let ids = Tensor::from_u32(&dev, &[4, 5, 6, 6, 7, 4], &[2, 3]).unwrap();
        assert_eq!(
            ids.eq(&col).unwrap().to_vec_u32().unwrap(),
            vec![1, 0, 0, 1, 0, 0]
        );
        let mask = ops::to_dtype(&ids.lt(&col).unwrap(), DType::F32).unwrap();
        assert_eq!(mask.to_vec().unwrap(), vec![0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
        assert!(matches!(ops::eq(&ta, &ids), Err(Error::DType { .. })));
        let wrong = Tensor::from_slice(&dev, &[0.0; 2], &[2]).unwrap();
        assert!(matches!(
            ops::eq(&ta, &wrong),
            Err(Error::ShapeMismatch { .. })
        ));
    }
}

#[test]
fn in_place_ops() {
    for dev in devices() {
        for (seed, n) in [0usize, 1, 3, 17, 257].into_iter().enumerate() {
            let (xv, yv) = (random(n, seed as u64), random(n, 9 + seed as u64));
            let x = Tensor::from_slice(&dev, &xv, &[n]).unwrap();
            let y = Tensor::from_slice(&dev, &yv, &[n]).unwrap();
            let alias = x.clone();
            x.add_(&y, -0.5).unwrap();
            let want: Vec<f64> = xv
                .iter()
                .zip(&yv)
                .map(|(&a, &b)| f64::from(a) - 0.5 * f64::from(b))
                .collect();
            assert_close("add_", &alias.to_vec().unwrap(), &want, 1e-6, 1e-6);
            x.mul_(3.0).unwrap();
            let want: Vec<f64> = want.iter().map(|v| v * 3.0).collect();
            assert_close("mul_", &x.to_vec().unwrap(), &want, 1e-5, 1e-6);
            x.copy_(&y).unwrap();
            assert_eq!(x.to_vec().unwrap(), yv);
            x.fill_(1.5).unwrap();
            assert_eq!(x.to_vec().unwrap(), vec![1.5; n]);
            x.zero_().unwrap();
            assert_eq!(x.to_vec().unwrap(), vec![0.0; n]);
        }
        // Broadcast `add_` (a bias gradient accumulated into every row) and `copy_`.
        let acc = Tensor::zeros(&dev, &[3, 2]).unwrap();
        let row = Tensor::from_slice(&dev, &[1.0, 2.0], &[2]).unwrap();
        acc.add_(&row, 1.0).unwrap();
        acc.add_(&acc.clone(), 1.0).unwrap();
        assert_eq!(acc.to_vec().unwrap(), vec![2.0, 4.0, 2.0, 4.0, 2.0, 4.0]);
        acc.copy_(&row).unwrap();
        assert_eq!(acc.to_vec().unwrap(), vec![1.0, 2.0, 1.0, 2.0, 1.0, 2.0]);
        let ids = Tensor::from_u32(&dev, &[5; 6], &[3, 2]).unwrap();
        ops::zero_(&ids).unwrap();
        assert_eq!(ids.to_vec_u32().unwrap(), vec![0; 6]);
        ops::fill_u32_(&ids, 9).unwrap();
        assert_eq!(ids.to_vec_u32().unwrap(), vec![9; 6]);
        assert!(matches!(ids.fill_(1.0), Err(Error::DType { .. })));
        assert!(matches!(acc.copy_(&ids), Err(Error::DType { .. })));
        let three = Tensor::zeros(&dev, &[3]).unwrap();
        assert!(matches!(
            acc.add_(&three, 1.0),
            Err(Error::ShapeMismatch { .. })
        ));
        let deep = ops::clone(&acc).unwrap();
        acc.zero_().unwrap();
        assert_eq!(deep.to_vec().unwrap(), vec![1.0, 2.0, 1.0, 2.0, 1.0, 2.0]);
    }
}

#[test]
fn uniform_bits_and_dropout_masks_are_bit_identical_to_the_cpu_twin() {
    let devs = devices();
    // The checked device runs the portable product (see `devices`).
    let int64 = wgpu::Features::SHADER_INT64;
    assert!(!devs[1].info().features.contains(int64));
    eprintln!(
        "64-bit products: {}",
        devs[0].info().features.contains(int64)
    );
    for dev in devs {
        for n in [0usize, 1, 3, 17, 257, 1000] {
            let mut g = Generator::new(0x1234_5678_9abc_def0);
            let bits = ops::rand_bits(&dev, &[n], &mut g).unwrap();
            let u = ops::rand(&dev, &[n], &mut g).unwrap();
            let s0 = PhiloxStream {
                seed: g.seed(),
                offset: 0,
            };
            let s1 = PhiloxStream {
                seed: g.seed(),
                offset: 1,
            };
            assert_eq!(g.offset(), 2);
            let want: Vec<u32> = (0..n as u64).map(|i| s0.bits(i)).collect();
            assert_eq!(bits.to_vec_u32().unwrap(), want);
            let want: Vec<u32> = (0..n as u64).map(|i| s1.uniform(i).to_bits()).collect();
            let got: Vec<u32> = u.to_vec().unwrap().iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "uniform bits, n = {n}");

            // A vector is one row; the matrices have odd row counts and row lengths that
            // are not multiples of 4 (the patches of two rows by four columns at the edges),
            // and row lengths that are (the vec4 kernel), one with an odd row count.
            let m = n / 3;
            let odd_rows = vec![5, 4 * (m % 5 + 1)];
            for shape in [vec![n], vec![3, m], vec![m, 3], vec![1, 2, m + 3], odd_rows] {
                let len: usize = shape.iter().product();
                let row_len = *shape.last().unwrap() as u64;
                let xv = random(len, 3);
                let x = Tensor::from_slice(&dev, &xv, &shape).unwrap();
                let (y, state) = ops::dropout(&x, 0.3, &mut g).unwrap();
                let scale = state.scale();
                let mask = |i: usize| {
                    if state.keeps(row_len, i as u64) {
                        scale
                    } else {
                        0.0
                    }
                };
                let want: Vec<f32> = (0..len).map(|i| xv[i] * mask(i)).collect();
                assert_eq!(y.to_vec().unwrap(), want, "dropout, shape {shape:?}");
                // The backward regenerates the same mask.
                let gv = random(len, 4);
                let go = Tensor::from_slice(&dev, &gv, &shape).unwrap();
                let gi = ops::dropout_backward(&go, &state).unwrap();
                let want: Vec<f32> = (0..len).map(|i| gv[i] * mask(i)).collect();
                assert_eq!(
                    gi.to_vec().unwrap(),
                    want,
                    "dropout backward, shape {shape:?}"
                );
                // An f16 tensor: the same mask, each product rounded once to f16.
                let x16 = ops::to_dtype(&x, DType::F16).unwrap();
                let y16 = ops::dropout_backward(&x16, &state).unwrap();
                assert_eq!(y16.dtype(), DType::F16);
                let want: Vec<f32> = x16
                    .to_vec()
                    .unwrap()
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| half::f16::from_f32(v * mask(i)).to_f32())
                    .collect();
                assert_eq!(y16.to_vec().unwrap(), want, "f16 dropout, shape {shape:?}");
            }
        }
        let x = Tensor::from_slice(&dev, &[1.0; 64], &[64]).unwrap();
        let mut g = Generator::new(7);
        let (all, _) = ops::dropout(&x, 1.0, &mut g).unwrap();
        assert_eq!(all.to_vec().unwrap(), vec![0.0; 64]);
        let (none, _) = ops::dropout(&x, 0.0, &mut g).unwrap();
        assert_eq!(none.to_vec().unwrap(), vec![1.0; 64]);
        for p in [-0.1, 1.5, f32::NAN] {
            assert!(matches!(
                ops::dropout(&x, p, &mut g),
                Err(Error::InvalidArgument { .. })
            ));
        }
    }
}

/// Chi-squared statistic of `values` in `[0, 1)` over `bins` equal bins.
fn chi_squared(values: &[f32], bins: usize) -> f64 {
    let mut counts = vec![0usize; bins];
    for &v in values {
        assert!((0.0..1.0).contains(&v), "{v} outside [0, 1)");
        counts[(v * bins as f32) as usize] += 1;
    }
    let expected = values.len() as f64 / bins as f64;
    counts
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum()
}

#[test]
fn uniform_passes_chi_squared_and_normal_matches_its_twin_and_the_normal_law() {
    let dev = tang_testing::device();
    let n = 1 << 16;
    let mut g = Generator::new(42);
    let u = ops::rand(&dev, &[n], &mut g).unwrap().to_vec().unwrap();
    // 256 bins, 255 degrees of freedom: the 0.999 quantile is 330.5.
    let chi = chi_squared(&u, 256);
    assert!(chi < 330.5, "chi-squared {chi} over 255 degrees of freedom");

    let stream = PhiloxStream {
        seed: 42,
        offset: g.offset(),
    };
    let z = ops::randn(&dev, &[n], &mut g).unwrap().to_vec().unwrap();
    // The Vulkan bounds: cos/sin within 2^-11 on [-pi, pi], times a radius of at most 5.8.
    let twin: Vec<f64> = (0..n as u64).map(|i| stream.normal(i)).collect();
    assert_close("randn vs its CPU twin", &z, &twin, 4e-3, 0.0);
    let z = f64s(&z);
    let mean = z.iter().sum::<f64>() / n as f64;
    let var = z.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    // Standard errors: 1/sqrt(n) = 0.0039 for the mean, sqrt(2/n) = 0.0055 for the variance.
    assert!(mean.abs() < 0.02, "mean {mean}");
    assert!((var - 1.0).abs() < 0.03, "variance {var}");
    // Kolmogorov-Smirnov against the normal CDF: at n = 65536 the 0.999 critical value is
    // 1.95 / sqrt(n) = 0.0076.
    let mut sorted = z.clone();
    sorted.sort_by(f64::total_cmp);
    let d = sorted
        .iter()
        .zip(normal_cdf_sorted(&sorted))
        .enumerate()
        .map(|(i, (_, cdf))| {
            (cdf - i as f64 / n as f64)
                .abs()
                .max((cdf - (i + 1) as f64 / n as f64).abs())
        })
        .fold(0.0, f64::max);
    assert!(d < 0.0076, "Kolmogorov-Smirnov distance {d}");
}

/// The standard normal CDF at each of the ascending `xs`, by integrating the density with
/// Simpson's rule from -10 (where the CDF is below 1e-23) over the gaps between them.
fn normal_cdf_sorted(xs: &[f64]) -> Vec<f64> {
    let density = |t: f64| (-0.5 * t * t).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let (mut at, mut cdf) = (-10.0f64, 0.0f64);
    xs.iter()
        .map(|&x| {
            // Gaps are split so each Simpson step spans at most 0.01.
            let steps = ((x - at) / 0.01).ceil().max(1.0) as usize;
            let h = (x - at) / steps as f64;
            for k in 0..steps {
                let a = at + k as f64 * h;
                cdf += h / 6.0 * (density(a) + 4.0 * density(a + h / 2.0) + density(a + h));
            }
            at = x;
            cdf
        })
        .collect()
}

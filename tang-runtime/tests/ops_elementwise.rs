//! The elementwise ops of `tang_runtime::ops` on the GPU against f64 CPU references, on
//! lengths 0, 1, 3, 17, 257 and broadcast pairs (every read mode of the launch: full,
//! splat, broadcast by rows, broadcast per lane, and a broadcast past four coalesced
//! dimensions, which is materialised); every backward against central differences of the
//! reference, summed back over broadcast dimensions.

mod ops_support;
mod runtime_support;

use ops_support::{coords, finite_diff, flat};
use tang_runtime::{Device, Error, Tensor, ops};
use tang_testing::{Rng, assert_close};

/// The lengths every unary op runs on.
const LENGTHS: [usize; 5] = [0, 1, 3, 17, 257];

/// Shape pairs that broadcast, with what they exercise.
const PAIRS: [(&[usize], &[usize]); 9] = [
    (&[17], &[17]),                    // both full
    (&[1], &[3, 5]),                   // a scalar first
    (&[8, 4], &[8, 1]),                // a column, rows of 4: splat per thread
    (&[2, 8], &[8]),                   // a row, rows of 4: one vec4 load
    (&[3, 5], &[3, 1]),                // a column, rows of 5: per lane
    (&[2, 1, 5], &[2, 3, 5]),          // [B, 1, T] with [B, H, T]
    (&[4, 1], &[1, 3]),                // both broadcast
    (&[2, 1, 2, 1, 2], &[3, 1, 3, 1]), // past four dimensions: materialised
    (&[0, 3], &[1, 3]),                // empty
];

/// `x` of shape `xs` read at every position of the broadcast shape `out` (NumPy rules).
fn broadcast(x: &[f64], xs: &[usize], out: &[usize]) -> Vec<f64> {
    let n: usize = out.iter().product();
    let lead = out.len() - xs.len();
    (0..n)
        .map(|i| {
            let c = coords(i, out);
            let ci: Vec<usize> = (0..xs.len())
                .map(|d| if xs[d] == 1 { 0 } else { c[lead + d] })
                .collect();
            x[flat(&ci, xs)]
        })
        .collect()
}

fn upload(dev: &Device, v: &[f64], shape: &[usize]) -> Tensor {
    let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    Tensor::from_slice(dev, &v, shape).unwrap()
}

/// Random values in `[lo, hi)` rounded to f32 (so the reference sees what the GPU sees).
fn values(rng: &mut Rng, n: usize, lo: f32, hi: f32) -> Vec<f64> {
    (0..n).map(|_| f64::from(rng.range_f32(lo, hi))).collect()
}

/// The error function (Abramowitz and Stegun 7.1.26, within 1.5e-7).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    y.copysign(x)
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

type Unary = fn(&Tensor) -> Result<Tensor, Error>;
type UnaryBack = fn(&Tensor, &Tensor) -> Result<Tensor, Error>;
/// A unary case: name, forward, backward, f64 reference, input range.
type UnaryCase = (&'static str, Unary, UnaryBack, fn(f64) -> f64, (f32, f32));

#[test]
fn unary_ops_match_f64_and_their_backwards_match_finite_differences() {
    let dev = tang_testing::device();
    let cases: Vec<UnaryCase> = vec![
        ("neg", ops::neg, ops::neg_backward, |x| -x, (-2.0, 2.0)),
        ("abs", ops::abs, ops::abs_backward, f64::abs, (-2.0, 2.0)),
        ("exp", ops::exp, ops::exp_backward, f64::exp, (-3.0, 3.0)),
        ("log", ops::log, ops::log_backward, f64::ln, (0.1, 4.0)),
        ("sqrt", ops::sqrt, ops::sqrt_backward, f64::sqrt, (0.1, 4.0)),
        (
            "rsqrt",
            ops::rsqrt,
            ops::rsqrt_backward,
            |x| 1.0 / x.sqrt(),
            (0.1, 4.0),
        ),
        (
            "relu",
            ops::relu,
            ops::relu_backward,
            |x| x.max(0.0),
            (-2.0, 2.0),
        ),
        (
            "sigmoid",
            ops::sigmoid,
            ops::sigmoid_backward,
            sigmoid,
            (-6.0, 6.0),
        ),
        (
            "tanh",
            ops::tanh,
            ops::tanh_backward,
            f64::tanh,
            (-3.0, 3.0),
        ),
        (
            "silu",
            ops::silu,
            ops::silu_backward,
            |x| x * sigmoid(x),
            (-6.0, 6.0),
        ),
        (
            "gelu",
            ops::gelu,
            ops::gelu_backward,
            |x| {
                let c = (2.0 / std::f64::consts::PI).sqrt();
                0.5 * x * (1.0 + (c * (x + 0.044_715 * x * x * x)).tanh())
            },
            (-4.0, 4.0),
        ),
        (
            "gelu_erf",
            ops::gelu_erf,
            ops::gelu_erf_backward,
            |x| 0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2)),
            (-4.0, 4.0),
        ),
        (
            "leaky_relu",
            |x| ops::leaky_relu(x, 0.01),
            |g, x| ops::leaky_relu_backward(g, x, 0.01),
            |x| if x > 0.0 { x } else { 0.01 * x },
            (-2.0, 2.0),
        ),
        (
            "elu",
            |x| ops::elu(x, 1.5),
            |g, x| ops::elu_backward(g, x, 1.5),
            |x| if x > 0.0 { x } else { 1.5 * x.exp_m1() },
            (-3.0, 2.0),
        ),
        (
            "softplus",
            |x| ops::softplus(x, 2.0, 5.0),
            |g, x| ops::softplus_backward(g, x, 2.0, 5.0),
            |x| {
                if 2.0 * x > 5.0 {
                    x
                } else {
                    (2.0 * x).exp().ln_1p() / 2.0
                }
            },
            (-4.0, 4.0),
        ),
        (
            "clamp",
            |x| ops::clamp(x, -0.5, 0.75),
            |g, x| ops::clamp_backward(g, x, -0.5, 0.75),
            |x| x.clamp(-0.5, 0.75),
            (-2.0, 2.0),
        ),
        (
            "pow_scalar",
            |x| ops::pow_scalar(x, 2.5),
            |g, x| ops::pow_scalar_backward(g, x, 2.5),
            |x| x.powf(2.5),
            (0.1, 3.0),
        ),
        (
            "add_scalar",
            |x| ops::add_scalar(x, 1.5),
            |g, x| ops::add_scalar_backward(g, x, 1.5),
            |x| x + 1.5,
            (-2.0, 2.0),
        ),
        (
            "sub_scalar",
            |x| ops::sub_scalar(x, 1.5),
            |g, x| ops::sub_scalar_backward(g, x, 1.5),
            |x| x - 1.5,
            (-2.0, 2.0),
        ),
        (
            "mul_scalar",
            |x| ops::mul_scalar(x, -2.5),
            |g, x| ops::mul_scalar_backward(g, x, -2.5),
            |x| x * -2.5,
            (-2.0, 2.0),
        ),
        (
            "div_scalar",
            |x| ops::div_scalar(x, 4.0),
            |g, x| ops::div_scalar_backward(g, x, 4.0),
            |x| x / 4.0,
            (-2.0, 2.0),
        ),
    ];
    let mut rng = Rng::new(11);
    for (name, forward, backward, reference, (lo, hi)) in cases {
        for n in LENGTHS {
            let shape = [n];
            let x = values(&mut rng, n, lo, hi);
            let g = values(&mut rng, n, -1.0, 1.0);
            let (xt, gt) = (upload(&dev, &x, &shape), upload(&dev, &g, &shape));
            let y = forward(&xt).unwrap();
            assert_eq!(y.shape(), &shape, "{name}");
            let want: Vec<f64> = x.iter().map(|&v| reference(v)).collect();
            assert_close(
                &format!("{name} [{n}]"),
                &y.to_vec().unwrap(),
                &want,
                1e-5,
                1e-5,
            );
            let dx = backward(&gt, &xt).unwrap();
            let f = |x: &[f64]| x.iter().map(|&v| reference(v)).collect::<Vec<f64>>();
            let want = finite_diff(f, &x, &g, 1e-6);
            assert_close(
                &format!("{name}' [{n}]"),
                &dx.to_vec().unwrap(),
                &want,
                1e-4,
                1e-3,
            );
        }
    }
}

type Binary = fn(&Tensor, &Tensor) -> Result<Tensor, Error>;
type BinaryBack = fn(&Tensor, &Tensor, &Tensor) -> Result<(Tensor, Tensor), Error>;
/// A binary case: name, forward, backward, f64 reference, input range.
type BinaryCase = (
    &'static str,
    Binary,
    BinaryBack,
    fn(f64, f64) -> f64,
    (f32, f32),
);

#[test]
fn binary_ops_broadcast_and_their_backwards_sum_back() {
    let cases: [BinaryCase; 7] = [
        (
            "add",
            ops::add,
            ops::add_backward,
            |a, b| a + b,
            (-2.0, 2.0),
        ),
        (
            "sub",
            ops::sub,
            ops::sub_backward,
            |a, b| a - b,
            (-2.0, 2.0),
        ),
        (
            "mul",
            ops::mul,
            ops::mul_backward,
            |a, b| a * b,
            (-2.0, 2.0),
        ),
        ("div", ops::div, ops::div_backward, |a, b| a / b, (0.5, 2.0)),
        ("pow", ops::pow, ops::pow_backward, f64::powf, (0.5, 2.0)),
        (
            "maximum",
            ops::maximum,
            ops::maximum_backward,
            f64::max,
            (-2.0, 2.0),
        ),
        (
            "minimum",
            ops::minimum,
            ops::minimum_backward,
            f64::min,
            (-2.0, 2.0),
        ),
    ];
    let mut rng = Rng::new(5);
    // Both devices: the broadcast reads must stay in bounds with wgpu's checks off too.
    for dev in runtime_support::devices() {
        for (name, forward, backward, reference, (lo, hi)) in cases {
            for (sa, sb) in PAIRS {
                for (sa, sb) in [(sa, sb), (sb, sa)] {
                    let out = ops::broadcast_shapes(&[sa, sb]).unwrap();
                    let na: usize = sa.iter().product();
                    let nb: usize = sb.iter().product();
                    let (a, b) = (values(&mut rng, na, lo, hi), values(&mut rng, nb, lo, hi));
                    let (at, bt) = (upload(&dev, &a, sa), upload(&dev, &b, sb));
                    let what = format!("{name} {sa:?} {sb:?}");
                    let y = forward(&at, &bt).unwrap();
                    assert_eq!(y.shape(), out.as_slice(), "{what}");
                    let cpu = |a: &[f64], b: &[f64]| -> Vec<f64> {
                        let (a, b) = (broadcast(a, sa, &out), broadcast(b, sb, &out));
                        a.iter().zip(&b).map(|(&a, &b)| reference(a, b)).collect()
                    };
                    assert_close(&what, &y.to_vec().unwrap(), &cpu(&a, &b), 1e-5, 1e-5);
                    let g = values(&mut rng, out.iter().product(), -1.0, 1.0);
                    let gt = upload(&dev, &g, &out);
                    let (da, db) = backward(&gt, &at, &bt).unwrap();
                    assert_eq!((da.shape(), db.shape()), (sa, sb), "{what}");
                    let want_a = finite_diff(|x| cpu(x, &b), &a, &g, 1e-6);
                    let want_b = finite_diff(|x| cpu(&a, x), &b, &g, 1e-6);
                    assert_close(
                        &format!("{what} d/da"),
                        &da.to_vec().unwrap(),
                        &want_a,
                        1e-4,
                        1e-3,
                    );
                    assert_close(
                        &format!("{what} d/db"),
                        &db.to_vec().unwrap(),
                        &want_b,
                        1e-4,
                        1e-3,
                    );
                }
            }
        }
    }
}

#[test]
fn where_takes_a_comparison_mask_and_routes_gradients() {
    let dev = tang_testing::device();
    let mut rng = Rng::new(3);
    let (sm, sa, sb): (&[usize], &[usize], &[usize]) = (&[4, 3], &[3], &[4, 1]);
    let (c, a, b) = (
        values(&mut rng, 12, -1.0, 1.0),
        values(&mut rng, 3, -1.0, 1.0),
        values(&mut rng, 4, -1.0, 1.0),
    );
    let ct = upload(&dev, &c, sm);
    let mask = ops::gt(&ct, &Tensor::zeros(&dev, &[1]).unwrap()).unwrap();
    let (at, bt) = (upload(&dev, &a, sa), upload(&dev, &b, sb));
    let y = ops::where_cond(&mask, &at, &bt).unwrap();
    let cpu = |a: &[f64], b: &[f64]| -> Vec<f64> {
        let (a, b) = (broadcast(a, sa, sm), broadcast(b, sb, sm));
        (0..12)
            .map(|i| if c[i] > 0.0 { a[i] } else { b[i] })
            .collect()
    };
    assert_close("where", &y.to_vec().unwrap(), &cpu(&a, &b), 0.0, 0.0);
    let g = values(&mut rng, 12, -1.0, 1.0);
    let (da, db) = ops::where_cond_backward(&upload(&dev, &g, sm), &mask, &at, &bt).unwrap();
    assert_close(
        "where d/da",
        &da.to_vec().unwrap(),
        &finite_diff(|x| cpu(x, &b), &a, &g, 1e-6),
        1e-5,
        1e-4,
    );
    assert_close(
        "where d/db",
        &db.to_vec().unwrap(),
        &finite_diff(|x| cpu(&a, x), &b, &g, 1e-6),
        1e-5,
        1e-4,
    );
}

#[test]
fn nan_propagates_and_ties_share_the_gradient() {
    let dev = tang_testing::device();
    let nan = f64::NAN;
    let a = upload(&dev, &[nan, 1.0, 2.0, 3.0], &[4]);
    let b = upload(&dev, &[1.0, nan, 2.0, 0.0], &[4]);
    for y in [ops::maximum(&a, &b), ops::minimum(&a, &b)] {
        let y = y.unwrap().to_vec().unwrap();
        assert!(y[0].is_nan() && y[1].is_nan() && y[2] == 2.0, "{y:?}");
    }
    for y in [ops::relu(&a), ops::clamp(&a, 0.0, 1.0)] {
        assert!(y.unwrap().to_vec().unwrap()[0].is_nan());
    }
    let g = upload(&dev, &[1.0; 4], &[4]);
    let (da, db) = ops::maximum_backward(&g, &a, &b).unwrap();
    assert_eq!(da.to_vec().unwrap()[2..], [0.5, 1.0]);
    assert_eq!(db.to_vec().unwrap()[2..], [0.5, 0.0]);
}

#[test]
fn shapes_that_do_not_broadcast_are_errors() {
    let dev = tang_testing::device();
    let a = Tensor::zeros(&dev, &[2, 3]).unwrap();
    let b = Tensor::zeros(&dev, &[3, 2]).unwrap();
    assert!(matches!(ops::add(&a, &b), Err(Error::ShapeMismatch { .. })));
    // The launch path itself: equal lengths are not enough, shapes must broadcast.
    let k = runtime_support::add();
    assert!(matches!(
        dev.launch(k, &[&a, &b], &[], &[]),
        Err(Error::ShapeMismatch { .. })
    ));
    let row = Tensor::zeros(&dev, &[3]).unwrap();
    let col = Tensor::zeros(&dev, &[2, 1]).unwrap();
    assert_eq!(
        dev.launch(k, &[&row, &col], &[], &[]).unwrap()[0].shape(),
        &[2, 3]
    );
    // An in-out must have the launch shape: [3] cannot take a [2, 3] update.
    let g = Tensor::zeros(&dev, &[2, 3]).unwrap();
    let p = Tensor::zeros(&dev, &[3]).unwrap();
    assert!(matches!(
        dev.launch(runtime_support::sgd(), &[&g], &[&p], &[0.1]),
        Err(Error::ShapeMismatch { .. })
    ));
    // A gradient of the wrong shape.
    let x = Tensor::zeros(&dev, &[3]).unwrap();
    assert!(matches!(
        ops::exp_backward(&a, &x),
        Err(Error::ShapeMismatch { .. })
    ));
}

//! Gradient checks of the elementwise autograd methods (each `apply` of a `#[fused_grad]`
//! function of the runtime) against f64 central differences, on shapes 1, 3, 17 and
//! broadcast pairs; inputs are drawn in [-1, 1) and moved into each op's domain.

mod gradcheck_common;

use gradcheck_common::{broadcast, check};
use tang_nn::autograd::{Error, RawTensor, Tensor};

/// A method under test on the GPU.
type Method = fn(&Tensor) -> Result<Tensor, Error>;
/// A unary case: name, the method, its f64 reference.
type UnaryCase = (&'static str, Method, fn(f64) -> f64);

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The error function (Abramowitz and Stegun 7.1.26, within 1.5e-7).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let p = ((((1.061_405_429 * t - 1.453_152_027) * t + 1.421_413_741) * t - 0.284_496_736) * t
        + 0.254_829_592)
        * t;
    (1.0 - p * (-x * x).exp()).copysign(x)
}

#[test]
fn unary_methods() {
    let dev = tang_testing::device();
    // Positive domain for log, sqrt, rsqrt and pow: |x| + 0.5 on both sides.
    let cases: [UnaryCase; 23] = [
        ("neg", |t| t.neg(), |x| -x),
        ("abs", |t| t.abs(), f64::abs),
        ("exp", |t| t.exp(), f64::exp),
        (
            "log",
            |t| t.abs()?.add_scalar(0.5)?.log(),
            |x| (x.abs() + 0.5).ln(),
        ),
        (
            "sqrt",
            |t| t.abs()?.add_scalar(0.5)?.sqrt(),
            |x| (x.abs() + 0.5).sqrt(),
        ),
        (
            "rsqrt",
            |t| t.abs()?.add_scalar(0.5)?.rsqrt(),
            |x| 1.0 / (x.abs() + 0.5).sqrt(),
        ),
        (
            "pow_scalar",
            |t| t.abs()?.add_scalar(0.5)?.pow_scalar(2.5),
            |x| (x.abs() + 0.5).powf(2.5),
        ),
        ("add_scalar", |t| t.add_scalar(1.5), |x| x + 1.5),
        ("sub_scalar", |t| t.sub_scalar(1.5), |x| x - 1.5),
        ("mul_scalar", |t| t.mul_scalar(-2.5), |x| x * -2.5),
        ("div_scalar", |t| t.div_scalar(4.0), |x| x / 4.0),
        ("clamp", |t| t.clamp(-0.5, 0.25), |x| x.clamp(-0.5, 0.25)),
        ("relu", |t| t.relu(), |x| x.max(0.0)),
        (
            "leaky_relu",
            |t| t.leaky_relu(0.01),
            |x| if x > 0.0 { x } else { 0.01 * x },
        ),
        (
            "elu",
            |t| t.elu(1.0),
            |x| if x > 0.0 { x } else { x.exp_m1() },
        ),
        ("sigmoid", |t| t.sigmoid(), sigmoid),
        ("tanh", |t| t.tanh(), f64::tanh),
        ("silu", |t| t.silu(), |x| x * sigmoid(x)),
        (
            "softplus",
            |t| t.mul_scalar(4.0)?.softplus(1.0, 2.0),
            |x| {
                if 4.0 * x > 2.0 {
                    4.0 * x
                } else {
                    (4.0 * x).exp().ln_1p()
                }
            },
        ),
        (
            "gelu",
            |t| t.mul_scalar(3.0)?.gelu(),
            |x| {
                let (x, c) = (3.0 * x, (2.0 / std::f64::consts::PI).sqrt());
                0.5 * x * (1.0 + (c * (x + 0.044_715 * x * x * x)).tanh())
            },
        ),
        (
            "gelu_erf",
            |t| t.mul_scalar(3.0)?.gelu_erf(),
            |x| 1.5 * x * (1.0 + erf(3.0 * x / std::f64::consts::SQRT_2)),
        ),
        ("neg_neg", |t| t.neg()?.neg(), |x| x),
        ("exp_log", |t| t.exp()?.log(), |x| x),
    ];
    for (k, (name, gpu, cpu)) in cases.into_iter().enumerate() {
        for (j, shape) in [&[1][..], &[3], &[17], &[3, 17]].into_iter().enumerate() {
            check(
                &dev,
                &format!("{name} {shape:?}"),
                &[shape],
                &|t| gpu(&t[0]),
                &|x| x[0].iter().map(|&v| cpu(v)).collect(),
                (k * 8 + j) as u64,
            );
        }
    }
}

/// A two-input method under test on the GPU.
type Binary = fn(&Tensor, &Tensor) -> Result<Tensor, Error>;
/// A binary case: name, the method, its f64 reference.
type BinaryCase = (&'static str, Binary, fn(f64, f64) -> f64);

#[test]
fn binary_methods_broadcast() {
    let dev = tang_testing::device();
    let pairs: [(&[usize], &[usize]); 5] = [
        (&[3], &[3]),
        (&[3, 17], &[17]),
        (&[1], &[3]),
        (&[17, 1], &[1, 3]),
        (&[2, 1, 3], &[17, 1]),
    ];
    let cases: [BinaryCase; 7] = [
        ("add", |a, b| a.add(b), |a, b| a + b),
        ("sub", |a, b| a.sub(b), |a, b| a - b),
        ("mul", |a, b| a.mul(b), |a, b| a * b),
        // Denominators and bases kept away from 0: |b| + 0.5.
        (
            "div",
            |a, b| a.div(&b.abs()?.add_scalar(0.5)?),
            |a, b| a / (b.abs() + 0.5),
        ),
        (
            "pow",
            |a, b| a.abs()?.add_scalar(0.5)?.pow(b),
            |a, b| (a.abs() + 0.5).powf(b),
        ),
        ("maximum", |a, b| a.maximum(b), f64::max),
        ("minimum", |a, b| a.minimum(b), f64::min),
    ];
    for (k, (name, gpu, cpu)) in cases.into_iter().enumerate() {
        for (j, (sa, sb)) in pairs.into_iter().enumerate() {
            let out = tang_nn::tang_runtime::ops::broadcast_shapes(&[sa, sb]).unwrap();
            check(
                &dev,
                &format!("{name} {sa:?} {sb:?}"),
                &[sa, sb],
                &|t| gpu(&t[0], &t[1]),
                &|x| {
                    let (a, b) = (broadcast(&x[0], sa, &out), broadcast(&x[1], sb, &out));
                    a.iter().zip(&b).map(|(&a, &b)| cpu(a, b)).collect()
                },
                (k * 8 + j) as u64,
            );
        }
    }
}

#[test]
fn where_cond_routes_gradients_to_the_picked_input() {
    let dev = tang_testing::device();
    // The mask [4, 3] from a comparison; a is a row, b a column.
    let c: Vec<f32> = (0..12)
        .map(|i| if i % 5 < 2 { 1.0 } else { -1.0 })
        .collect();
    let ct = RawTensor::from_slice(&dev, &c, &[4, 3]).unwrap();
    let mask = ct.gt(&RawTensor::zeros(&dev, &[1]).unwrap()).unwrap();
    let (sa, sb, out): (&[usize], &[usize], &[usize]) = (&[3], &[4, 1], &[4, 3]);
    check(
        &dev,
        "where_cond",
        &[sa, sb],
        &|t| Tensor::where_cond(&mask, &t[0], &t[1]),
        &|x| {
            let (a, b) = (broadcast(&x[0], sa, out), broadcast(&x[1], sb, out));
            (0..12)
                .map(|i| if c[i] > 0.0 { a[i] } else { b[i] })
                .collect()
        },
        1,
    );
}

//! f16 tensors through the elementwise ops and `#[fused_grad]` functions: every op of
//! `ops::elementwise::kernels`, forward and backward, on f16 inputs against its f32 twin
//! on the same (f16-representable) values (the f16 kernel computes in f32 and rounds each
//! result once, so the two agree within one f16 rounding); odd lengths, every broadcast
//! read mode, a user function with a uniform, PyTorch's promotion of mixed f16/f32
//! inputs, the in-place ops (on views that end inside a 32-bit word) and the errors.

use half::f16;
use tang_runtime::ops::{self, kernels, to_dtype};
use tang_runtime::prelude::*;
use tang_runtime::{DType, Error, FusedFn};
use tang_testing::{Rng, device};

/// One op of the table: its fused function, the uniforms and the range of each input.
struct Case {
    f: FusedFn,
    uniforms: &'static [f32],
    ranges: &'static [(f32, f32)],
}

const ANY: (f32, f32) = (-3.0, 3.0);
const POSITIVE: (f32, f32) = (0.25, 4.0);
/// Rounds to 0 or 1: a mask.
const MASK: (f32, f32) = (0.0, 1.0);

fn case(f: FusedFn, uniforms: &'static [f32], ranges: &'static [(f32, f32)]) -> Case {
    Case {
        f,
        uniforms,
        ranges,
    }
}

/// Every op of `ops::elementwise::kernels`.
fn table() -> Vec<Case> {
    vec![
        case(kernels::add::FUSED, &[], &[ANY, ANY]),
        case(kernels::sub::FUSED, &[], &[ANY, ANY]),
        case(kernels::mul::FUSED, &[], &[ANY, ANY]),
        case(kernels::div::FUSED, &[], &[ANY, POSITIVE]),
        case(kernels::add_scalar::FUSED, &[0.5], &[ANY]),
        case(kernels::sub_scalar::FUSED, &[0.25], &[ANY]),
        case(kernels::mul_scalar::FUSED, &[1.5], &[ANY]),
        case(kernels::div_scalar::FUSED, &[3.0], &[ANY]),
        case(kernels::neg::FUSED, &[], &[ANY]),
        case(kernels::abs::FUSED, &[], &[ANY]),
        case(kernels::exp::FUSED, &[], &[ANY]),
        case(kernels::log::FUSED, &[], &[POSITIVE]),
        case(kernels::sqrt::FUSED, &[], &[POSITIVE]),
        case(kernels::rsqrt::FUSED, &[], &[POSITIVE]),
        case(kernels::pow::FUSED, &[], &[POSITIVE, ANY]),
        case(kernels::pow_scalar::FUSED, &[2.5], &[POSITIVE]),
        case(kernels::maximum::FUSED, &[], &[ANY, ANY]),
        case(kernels::minimum::FUSED, &[], &[ANY, ANY]),
        case(kernels::clamp::FUSED, &[-1.0, 1.5], &[ANY]),
        case(kernels::where_cond::FUSED, &[], &[MASK, ANY, ANY]),
        case(kernels::relu::FUSED, &[], &[ANY]),
        case(kernels::leaky_relu::FUSED, &[0.1], &[ANY]),
        case(kernels::elu::FUSED, &[1.0], &[ANY]),
        case(kernels::sigmoid::FUSED, &[], &[ANY]),
        case(kernels::tanh::FUSED, &[], &[ANY]),
        case(kernels::silu::FUSED, &[], &[ANY]),
        case(kernels::softplus::FUSED, &[1.0, 2.0], &[ANY]),
        case(kernels::gelu::FUSED, &[], &[ANY]),
        case(kernels::gelu_erf::FUSED, &[], &[ANY]),
    ]
}

/// `n` f16-representable values in `[lo, hi]` (a mask range gives 0 and 1).
fn values(rng: &mut Rng, n: usize, (lo, hi): (f32, f32)) -> Vec<f32> {
    (0..n)
        .map(|_| {
            let v = rng.range_f32(lo, hi);
            let v = if (lo, hi) == MASK { v.round() } else { v };
            f16::from_f32(v).to_f32()
        })
        .collect()
}

/// The same values as an f32 and an f16 tensor.
fn pair(dev: &Device, v: &[f32], shape: &[usize]) -> (Tensor, Tensor) {
    let t32 = Tensor::from_slice(dev, v, shape).unwrap();
    let t16 = to_dtype(&t32, DType::F16).unwrap();
    (t32, t16)
}

/// The f16 tensor `got` is the f32 tensor `want` rounded to f16, within one f16 step (the
/// two kernels may round an f32 result a few ulps apart, on either side of a halfway
/// point). NaN matches NaN.
fn assert_rounded(what: &str, got: &Tensor, want: &Tensor) {
    assert_eq!(got.dtype(), DType::F16, "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (got, want) = (got.to_vec_f16().unwrap(), want.to_vec().unwrap());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let r = f16::from_f32(*w);
        if r.is_nan() && g.is_nan() || *g == r {
            continue;
        }
        let step = (r.to_bits() as i32 - g.to_bits() as i32).abs();
        assert!(
            step <= 1 && g.is_sign_negative() == r.is_sign_negative(),
            "{what}[{i}]: f16 kernel gave {g}, the f32 one {w} (rounds to {r})"
        );
    }
}

/// `got` (f16) against the f32 `want` within `tol` relative to the largest magnitude:
/// for gradients summed over broadcast dimensions, where the f16 path rounds each term
/// before the sum.
fn assert_near(what: &str, got: &Tensor, want: &Tensor, tol: f32) {
    assert_eq!(got.dtype(), DType::F16, "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (got, want) = (got.to_vec().unwrap(), want.to_vec().unwrap());
    let scale = want.iter().fold(1.0f32, |m, w| m.max(w.abs()));
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= tol * scale,
            "{what}[{i}]: f16 path gave {g}, the f32 one {w}"
        );
    }
}

/// Runs `c` on inputs of `shapes` in f32 and in f16 and compares the value and every
/// gradient; `summed` when some input is broadcast (its gradient is a sum).
fn check_case(dev: &Device, rng: &mut Rng, c: &Case, shapes: &[&[usize]], summed: bool) {
    let name = c.f.name();
    let out_shape = ops::broadcast_shapes(shapes).unwrap();
    let inputs: Vec<(Tensor, Tensor)> = shapes
        .iter()
        .zip(c.ranges)
        .map(|(s, &r)| pair(dev, &values(rng, s.iter().product(), r), s))
        .collect();
    let n: usize = out_shape.iter().product();
    let (g32, g16) = pair(dev, &values(rng, n, ANY), &out_shape);
    let x32: Vec<&Tensor> = inputs.iter().map(|p| &p.0).collect();
    let x16: Vec<&Tensor> = inputs.iter().map(|p| &p.1).collect();
    let what = format!("{name} {shapes:?}");
    let y32 = c.f.forward(&x32, c.uniforms).unwrap();
    let y16 = c.f.forward(&x16, c.uniforms).unwrap();
    assert_rounded(&what, &y16, &y32);
    let d32 = c.f.backward(&g32, &x32, c.uniforms).unwrap();
    let d16 = c.f.backward(&g16, &x16, c.uniforms).unwrap();
    for (k, (a, b)) in d16.iter().zip(&d32).enumerate() {
        let (Some(a), Some(b)) = (a, b) else {
            assert!(a.is_none() && b.is_none(), "{what}: gradient {k}");
            continue;
        };
        let what = format!("{what} gradient {k}");
        if summed {
            assert_near(&what, a, b, 4e-3);
        } else {
            assert_rounded(&what, a, b);
        }
    }
}

#[test]
fn every_op_in_f16_matches_its_f32_twin() {
    let dev = device();
    let mut rng = Rng::new(16);
    for c in table() {
        for n in [1, 3, 5, 1027] {
            let shape = [n];
            let shapes = vec![&shape[..]; c.ranges.len()];
            check_case(&dev, &mut rng, &c, &shapes, false);
        }
    }
}

#[test]
fn broadcasts_read_f16_in_every_mode() {
    let dev = device();
    let mut rng = Rng::new(17);
    // Full, splat, a column with rows of 4 (one splat a thread), a row of 8 (one load),
    // a column with rows of 5 (per lane), [B, 1, T] with [B, H, T], both broadcast, and a
    // broadcast past four coalesced dimensions (materialised).
    let pairs: [(&[usize], &[usize]); 8] = [
        (&[7], &[7]),
        (&[1], &[3, 5]),
        (&[8, 4], &[8, 1]),
        (&[3, 8], &[8]),
        (&[3, 5], &[3, 1]),
        (&[2, 1, 5], &[2, 3, 5]),
        (&[4, 1], &[1, 3]),
        (&[2, 1, 2, 1, 2], &[3, 1, 3, 1]),
    ];
    let binary: Vec<Case> = table()
        .into_iter()
        .filter(|c| c.ranges.len() == 2)
        .collect();
    for c in &binary {
        for (a, b) in pairs {
            let summed = a != b;
            check_case(&dev, &mut rng, c, &[a, b], summed);
        }
    }
    let where_cond = table()
        .into_iter()
        .find(|c| c.f.name() == "where_cond")
        .unwrap();
    check_case(
        &dev,
        &mut rng,
        &where_cond,
        &[&[3, 1], &[1, 4], &[3, 4]],
        true,
    );
}

/// A user function with a uniform and a broadcast weight.
#[fused_grad]
fn scaled_tanh(x: f32, w: f32, #[uniform] alpha: f32) -> f32 {
    alpha * (x * w).tanh()
}

#[test]
fn a_user_fused_grad_function_runs_in_f16() {
    let dev = device();
    let mut rng = Rng::new(18);
    let c = case(scaled_tanh::FUSED, &[0.75], &[ANY, ANY]);
    check_case(&dev, &mut rng, &c, &[&[5, 3], &[5, 3]], false);
    check_case(&dev, &mut rng, &c, &[&[5, 3], &[5, 1]], true);
    // Its value kernel through the typed launcher, too.
    let (x32, x16) = pair(&dev, &values(&mut rng, 9, ANY), &[9]);
    let (w32, w16) = pair(&dev, &[0.5], &[1]);
    let y16 = scaled_tanh::launch(&dev, &x16, &w16, 2.0).unwrap();
    let y32 = scaled_tanh::launch(&dev, &x32, &w32, 2.0).unwrap();
    assert_rounded("scaled_tanh::launch", &y16, &y32);
    // ... and the CPU function, unchanged, within an f16 rounding of it.
    let (x, y) = (x16.to_vec().unwrap(), y16.to_vec().unwrap());
    for (x, y) in x.iter().zip(&y) {
        assert!((scaled_tanh(*x, 0.5, 2.0) - y).abs() <= 2e-3, "{x}: {y}");
    }
}

#[test]
fn mixed_f16_and_f32_promote_to_f32() {
    let dev = device();
    let mut rng = Rng::new(19);
    let a = values(&mut rng, 6, ANY);
    let b = values(&mut rng, 3, ANY);
    let (a32, a16) = pair(&dev, &a, &[2, 3]);
    let b32 = Tensor::from_slice(&dev, &b, &[3]).unwrap();
    let y = ops::mul(&a16, &b32).unwrap();
    assert_eq!(y.dtype(), DType::F32, "f16 * f32 is f32, as in PyTorch");
    assert_eq!(
        y.to_vec().unwrap(),
        ops::mul(&a32, &b32).unwrap().to_vec().unwrap()
    );
    // The f16 operand read in every mode (the launch widens it as it loads; a broadcast
    // past four dimensions is cast and copied first): the f32 product exactly.
    for (sa, sb) in [
        (vec![3], vec![2, 3]),
        (vec![1], vec![2, 3]),
        (vec![2, 1, 3], vec![2, 4, 3]),
        (vec![2, 1, 2, 1, 2], vec![1, 3, 1, 3, 1]),
    ] {
        let na: usize = sa.iter().product();
        let nb: usize = sb.iter().product();
        let (x32, x16) = pair(&dev, &values(&mut rng, na, ANY), &sa);
        let w32 = Tensor::from_slice(&dev, &values(&mut rng, nb, ANY), &sb).unwrap();
        for (y, want) in [
            (ops::mul(&x16, &w32), ops::mul(&x32, &w32)),
            (ops::mul(&w32, &x16), ops::mul(&w32, &x32)),
        ] {
            let (y, want) = (y.unwrap(), want.unwrap());
            assert_eq!(y.dtype(), DType::F32);
            assert_eq!(
                y.to_vec().unwrap(),
                want.to_vec().unwrap(),
                "{sa:?} with {sb:?}"
            );
        }
    }
    // Each gradient has its input's dtype: the f16 input's is f16.
    let g = Tensor::from_slice(&dev, &[1.0; 6], &[2, 3]).unwrap();
    let (ga, gb) = ops::mul_backward(&g, &a16, &b32).unwrap();
    let (ga32, gb32) = ops::mul_backward(&g, &a32, &b32).unwrap();
    assert_eq!((ga.dtype(), gb.dtype()), (DType::F16, DType::F32));
    assert_rounded("mul_backward a", &ga, &ga32);
    assert_eq!(gb.to_vec().unwrap(), gb32.to_vec().unwrap());
    // An f16 upstream gradient with f16 inputs stays f16; an f32 one gives f16 inputs
    // f16 gradients too.
    let g16 = to_dtype(&g, DType::F16).unwrap();
    let b16 = to_dtype(&b32, DType::F16).unwrap();
    let (ga, gb) = ops::mul_backward(&g, &a16, &b16).unwrap();
    assert_eq!((ga.dtype(), gb.dtype()), (DType::F16, DType::F16));
    let (ga, gb) = ops::mul_backward(&g16, &a16, &b16).unwrap();
    assert_eq!((ga.dtype(), gb.dtype()), (DType::F16, DType::F16));
    assert_rounded("mul_backward b", &gb, &gb32);
    // A u32 mask with f16 values keeps the values' dtype.
    let mask = Tensor::from_u32(&dev, &[1, 0, 1], &[3]).unwrap();
    let y = ops::where_cond(&mask, &a16, &b16).unwrap();
    assert_eq!(y.dtype(), DType::F16);
    assert_rounded(
        "where_cond",
        &y,
        &ops::where_cond(&mask, &a32, &b32).unwrap(),
    );
}

/// An f16 tensor of `n + 3` elements and its view of the first `n` (which ends inside a
/// 32-bit word when `n` is odd), filled with `0, 1, 2, ...`.
fn parent_and_view(dev: &Device, n: usize) -> (Tensor, Tensor) {
    let v: Vec<f32> = (0..n + 3).map(|i| i as f32).collect();
    let parent = pair(dev, &v, &[n + 3]).1;
    let view = parent.view_at(0, &[n]).unwrap();
    (parent, view)
}

/// The parent's elements past the view's `n` still hold their index.
fn assert_tail_untouched(what: &str, parent: &Tensor, n: usize) {
    let p = parent.to_vec().unwrap();
    for (i, v) in p.iter().enumerate().skip(n) {
        assert_eq!(*v, i as f32, "{what}: element {i} past the view changed");
    }
}

#[test]
fn in_place_ops_on_f16_write_only_their_elements() {
    let dev = device();
    for n in [1, 3, 5, 1027] {
        let idx: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let (parent, x) = parent_and_view(&dev, n);
        ops::mul_(&x, 0.5).unwrap();
        let want: Vec<f32> = idx
            .iter()
            .map(|v| f16::from_f32(v * 0.5).to_f32())
            .collect();
        assert_eq!(x.to_vec().unwrap(), want, "mul_ {n}");
        assert_tail_untouched("mul_", &parent, n);

        let other = Tensor::from_slice(&dev, &[0.25], &[1]).unwrap();
        ops::add_(&x, &other, 2.0).unwrap();
        let want: Vec<f32> = want
            .iter()
            .map(|v| f16::from_f32(v + 0.5).to_f32())
            .collect();
        assert_eq!(x.to_vec().unwrap(), want, "add_ {n} (f32 other, broadcast)");
        assert_eq!(x.dtype(), DType::F16);
        assert_tail_untouched("add_", &parent, n);
        // x.add_(x): a copy is read.
        ops::add_(&x, &x, 1.0).unwrap();
        let want: Vec<f32> = want.iter().map(|v| v * 2.0).collect();
        assert_eq!(x.to_vec().unwrap(), want, "add_ of itself {n}");

        let copy = ops::clone(&x).unwrap();
        assert_eq!(copy.dtype(), DType::F16);
        assert_eq!(copy.to_vec().unwrap(), want, "clone {n}");
        ops::fill_(&x, 1.0e-4).unwrap();
        let tiny = f16::from_f32(1.0e-4).to_f32();
        assert_eq!(x.to_vec().unwrap(), vec![tiny; n], "fill_ {n}");
        assert_tail_untouched("fill_", &parent, n);
        ops::copy_(&x, &copy).unwrap();
        assert_eq!(x.to_vec().unwrap(), want, "copy_ {n}");
        assert_tail_untouched("copy_", &parent, n);
        ops::zero_(&x).unwrap();
        assert_eq!(x.to_vec().unwrap(), vec![0.0; n], "zero_ {n}");
        assert_tail_untouched("zero_", &parent, n);
    }
    // An f32 tensor adds an f16 one read as f32.
    let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2]).unwrap();
    let h = pair(&dev, &[0.5, 0.25], &[2]).1;
    ops::add_(&x, &h, 1.0).unwrap();
    assert_eq!(x.to_vec().unwrap(), [1.5, 2.25]);
}

/// An in-place user kernel, for the in-out errors.
// Only its kernel is launched.
#[allow(dead_code)]
#[kernel]
fn axpy(y: &mut f32, x: f32, #[uniform] a: f32) {
    *y += a * x;
}

#[test]
fn f16_errors_say_what_to_do() {
    let dev = device();
    let h = pair(&dev, &[1.0, 2.0], &[2]).1;
    let f = Tensor::from_slice(&dev, &[1.0, 2.0], &[2]).unwrap();
    let u = Tensor::from_u32(&dev, &[1, 2], &[2]).unwrap();
    // u32 keeps its error, beside f16 too.
    for r in [ops::add(&h, &u), ops::exp(&u)] {
        assert!(
            matches!(
                r,
                Err(Error::DType {
                    got: DType::U32,
                    ..
                })
            ),
            "{r:?}"
        );
    }
    assert!(matches!(
        ops::add_(&h, &u, 1.0),
        Err(Error::DType {
            got: DType::U32,
            ..
        })
    ));
    // A backward that launches nothing (add's gradients are the upstream one) too.
    for r in [ops::add_backward(&h, &h, &u), ops::add_backward(&u, &h, &h)] {
        assert!(
            matches!(
                r,
                Err(Error::DType {
                    got: DType::U32,
                    ..
                })
            ),
            "{r:?}"
        );
    }
    // An f16 in-out beside an f32 input: the launch computes in f32 and cannot write f16
    // in place.
    let e = axpy::launch(&dev, &h, &f, 1.0).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
    assert!(e.to_string().contains("to_dtype"), "{e}");
    // Both f16, or the in-out f32 (the f16 input read as f32), work.
    let y = pair(&dev, &[1.0, 1.0], &[2]).1;
    axpy::launch(&dev, &y, &h, 2.0).unwrap();
    assert_eq!(y.to_vec().unwrap(), [3.0, 5.0]);
    axpy::launch(&dev, &f, &h, 1.0).unwrap();
    assert_eq!(f.to_vec().unwrap(), [2.0, 4.0]);
    // Shapes are checked as for f32.
    let h3 = pair(&dev, &[1.0, 2.0, 3.0], &[3]).1;
    assert!(matches!(
        ops::add(&h, &h3),
        Err(Error::ShapeMismatch { .. })
    ));
}

//! The fused `gelu(linear(x))` and the linear layer after it (`Linear::forward_gelu`,
//! `Linear::forward_after_gelu`): forward and every gradient against central
//! differences of an f64 reference, both GELU forms, sizes 1, 3, 17, batched, with and
//! without bias; and against the unfused composition `fc2(gelu(fc(x)))`.

mod nn_common;

use nn_common::{Case, gelu_cpu, linear_cpu};
use tang_nn::autograd::{Error, RawTensor, Tensor};
use tang_nn::nn::Approximate;
use tang_testing::Rng;

/// `(x shape, hidden, out)`: the input's last size is `in`.
const SHAPES: [(&[usize], usize, usize); 4] = [
    (&[3, 17], 3, 1),
    (&[1, 3], 17, 3),
    (&[2, 3, 4], 8, 3),
    (&[17, 1], 3, 4),
];

fn forms() -> [(Approximate, bool); 2] {
    [(Approximate::None, false), (Approximate::Tanh, true)]
}

/// `gelu(x W1ᵀ + b1)` through `activation()`, and `gelu(x W1ᵀ + b1) W2ᵀ + b2` through the
/// fused backward, against f64 finite differences of every input.
#[test]
fn fused_linear_gelu_matches_finite_differences() {
    let dev = tang_testing::device();
    for (k, (xs, hidden, out)) in SHAPES.into_iter().enumerate() {
        let n = *xs.last().unwrap();
        for (approximate, tanh) in forms() {
            for bias in [true, false] {
                let (w1, b1, w2, b2) = ([hidden, n], [hidden], [out, hidden], [out]);
                let shapes: Vec<&[usize]> = if bias {
                    vec![xs, &w1, &b1, &w2, &b2]
                } else {
                    vec![xs, &w1, &w2]
                };
                let (iw2, ib2) = if bias { (3, Some(4)) } else { (2, None) };
                let name = format!("{xs:?} -> {hidden} -> {out} {approximate:?} bias={bias}");
                // Scale 1: pre-activations stay within the range where the f64 erf series of the
                // reference is exact (|h| below about 8), and cover GELU's curved part.
                let case = Case::random(&name, &shapes, 1.0, 70 + k as u64);
                let hidden_cpu = |t: &[Vec<f64>]| -> Vec<f64> {
                    let b1 = bias.then(|| t[2].as_slice());
                    linear_cpu(&t[0], &t[1], b1, n, hidden)
                        .into_iter()
                        .map(|v| gelu_cpu(v, tanh))
                        .collect()
                };
                let fc = |p: &[Tensor]| p[0].linear_gelu(&p[1], bias.then(|| &p[2]), approximate);
                let wrt1: Vec<usize> = (0..if bias { 3 } else { 2 }).collect();
                case.check(&dev, &|p| fc(p)?.activation(), &hidden_cpu, &wrt1);
                let mlp_cpu = |t: &[Vec<f64>]| {
                    linear_cpu(
                        &hidden_cpu(t),
                        &t[iw2],
                        ib2.map(|i| t[i].as_slice()),
                        hidden,
                        out,
                    )
                };
                let wrt: Vec<usize> = (0..shapes.len()).collect();
                case.check(
                    &dev,
                    &|p| fc(p)?.linear(&p[iw2], ib2.map(|i| &p[i])),
                    &mlp_cpu,
                    &wrt,
                );
            }
        }
    }
}

/// The fused path's output and gradients equal the unfused `linear`, `gelu`, `linear`
/// to float rounding, for the GPT's MLP shape scaled down (vec4 stores) and odd sizes.
#[test]
fn fused_equals_the_unfused_composition() {
    let dev = tang_testing::device();
    let mut rng = Rng::new(3);
    for (xs, hidden, out) in [(&[2usize, 8, 16][..], 64usize, 16usize), (&[5, 3], 17, 3)] {
        let n = *xs.last().unwrap();
        for (approximate, _) in forms() {
            let leaf = |shape: &[usize], rng: &mut Rng| {
                let v = rng.vec(shape.iter().product(), 1.0);
                Tensor::parameter(RawTensor::from_slice(&dev, &v, shape).unwrap())
            };
            let x = leaf(xs, &mut rng);
            let (w1, b1) = (leaf(&[hidden, n], &mut rng), leaf(&[hidden], &mut rng));
            let (w2, b2) = (leaf(&[out, hidden], &mut rng), leaf(&[out], &mut rng));
            let g = rng.vec(xs[..xs.len() - 1].iter().product::<usize>() * out, 1.0);
            let mut out_shape = xs.to_vec();
            *out_shape.last_mut().unwrap() = out;
            let gt = Tensor::constant(RawTensor::from_slice(&dev, &g, &out_shape).unwrap());
            let fused = x
                .linear_gelu(&w1, Some(&b1), approximate)
                .unwrap()
                .linear(&w2, Some(&b2))
                .unwrap();
            let h = x.linear(&w1, Some(&b1)).unwrap();
            let a = match approximate {
                Approximate::None => h.gelu_erf(),
                Approximate::Tanh => h.gelu(),
            }
            .unwrap();
            let plain = a.linear(&w2, Some(&b2)).unwrap();
            let grads = |y: &Tensor| y.mul(&gt)?.sum_all()?.backward();
            let (gf, gp) = (grads(&fused).unwrap(), grads(&plain).unwrap());
            let close = |what: &str, f: &[f32], p: &[f32]| {
                assert_eq!(f.len(), p.len(), "{what}");
                for (i, (a, b)) in f.iter().zip(p).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                        "{approximate:?} {xs:?} {what}[{i}]: fused {a}, unfused {b}"
                    );
                }
            };
            close("output", &fused.to_vec().unwrap(), &plain.to_vec().unwrap());
            for (what, t) in [
                ("x", &x),
                ("w1", &w1),
                ("b1", &b1),
                ("w2", &w2),
                ("b2", &b2),
            ] {
                let (f, p) = (gf.get(t).unwrap(), gp.get(t).unwrap());
                close(what, &f.to_vec().unwrap(), &p.to_vec().unwrap());
            }
        }
    }
}

#[test]
fn wrong_shapes_are_errors() {
    let dev = tang_testing::device();
    let t = |s: &[usize]| Tensor::parameter(RawTensor::zeros(&dev, s).unwrap());
    let x = t(&[2, 3]);
    let err = x.linear_gelu(&t(&[4, 5]), None, Approximate::None);
    assert!(matches!(err, Err(Error::Runtime(_))));
    let err = x.linear_gelu(&t(&[4, 3]), Some(&t(&[5])), Approximate::None);
    assert!(matches!(err, Err(Error::Runtime(_))));
    let h = x.linear_gelu(&t(&[4, 3]), None, Approximate::Tanh).unwrap();
    assert_eq!(h.pre_activation().shape(), &[2, 4]);
    assert!(matches!(
        h.linear(&t(&[2, 3]), None),
        Err(Error::Runtime(_))
    ));
    assert_eq!(h.linear(&t(&[2, 4]), None).unwrap().shape(), &[2, 2]);
}

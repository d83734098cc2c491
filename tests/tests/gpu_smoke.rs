//! End-to-end checks on the default adapter (a hardware GPU, or Mesa's software Vulkan
//! driver in CI). There is deliberately no skip: without any adapter `Device::new()`
//! fails and so does every test here, with the runtime's message saying what to install.
//!
//! 1. A traced value-and-gradient kernel over 1,000,003 elements, every element compared
//!    with the CPU evaluation of the same traced graph and its derivative graph.
//! 2. One training step of the digits MLP (`tang_examples::mlp`) on a tiny batch: the
//!    GPU gradients of every parameter against central finite differences of the loss
//!    computed in f64 on the CPU, then the Adam update against the kernel's CPU twin.

use tang_examples::digits::{CLASSES, Digits, FEATURES};
use tang_examples::mlp::{Adam, Mlp, adam};
use tang_examples::rng::SplitMix64;
use tang_expr::{Expr, eval_batch, select};
use tang_runtime::{Device, Tensor};
use tang_tests::{Rng, close};

/// An odd length: not a multiple of the workgroup size, of 4, or of anything a kernel
/// could silently round to, so a missing bounds guard or tail shows up.
const N: usize = 1_000_003;

/// The function under test: a branch (whose derivative must follow the taken side), a
/// `max` (ties), and exp/ln/tanh/division, whose GPU implementations differ from Rust's
/// libm by a few ulps.
fn smoke(v: &[Expr]) -> Expr {
    let (x, y, z) = (v[0], v[1], v[2]);
    let above = x.tanh() * y + (0.5 * z).exp();
    let below = (1.0 + x * x).ln() * z - y / (1.0 + z * z);
    select(x.gt(y), above, below) + 0.25 * x.max(z)
}

/// The same function as plain Rust, to check that the trace records what was meant.
fn smoke_rust(x: f32, y: f32, z: f32) -> f32 {
    let b = if x > y {
        x.tanh() * y + (0.5 * z).exp()
    } else {
        (1.0 + x * x).ln() * z - y / (1.0 + z * z)
    };
    b + 0.25 * x.max(z)
}

#[test]
fn traced_value_and_gradient_match_the_cpu_on_a_million_elements() {
    let dev = Device::new().expect("a GPU adapter (install mesa-vulkan-drivers without a GPU)");
    let mut rng = Rng::new(0x5EED);
    let mut cols = [vec![0f32; N], vec![0f32; N], vec![0f32; N]];
    for i in 0..N {
        for c in &mut cols {
            c[i] = rng.range_f32(-4.0, 4.0);
        }
        // Exact ties exercise both the branch (x > y is false at x == y) and max's tie
        // rule; exact zeros the constants around them.
        match i % 101 {
            0 => cols[1][i] = cols[0][i],
            1 => cols[2][i] = cols[0][i],
            2 => cols[0][i] = 0.0,
            _ => {}
        }
    }
    let [xs, ys, zs] = &cols;

    let traced = tang_expr::trace(3, smoke);
    for i in [0, 1, 2, 3, 4, N / 2, N - 1] {
        let got = traced.eval_f32(&[xs[i], ys[i], zs[i]], &[]).unwrap()[0];
        assert_eq!(got, smoke_rust(xs[i], ys[i], zs[i]), "trace at element {i}");
    }

    // CPU reference: the traced graph and its reverse-mode derivative graph, evaluated
    // in f32 without the simplification the GPU kernel went through.
    let mut graph = traced.graph.clone();
    let wrt: Vec<_> = (0..3).map(|i| graph.input(i)).collect();
    let out = traced.outputs[0];
    let partials = tang_expr::grad(&mut graph, out, &wrt).unwrap();
    let roots = [vec![out], partials].concat();
    let want = eval_batch::<f32>(&graph, &roots, &[xs, ys, zs], &[]).unwrap();

    // GPU: the fused kernel (value and the three partials in one dispatch).
    let kernel = traced.fused_kernel("smoke").unwrap().leak();
    assert_eq!(kernel.outputs().len(), 4, "{:?}", kernel.outputs());
    let inputs: Vec<Tensor> = cols
        .iter()
        .map(|c| Tensor::from_slice(&dev, c, &[N]).unwrap())
        .collect();
    let outs = dev
        .launch(kernel, &[&inputs[0], &inputs[1], &inputs[2]], &[], &[])
        .unwrap();
    assert_eq!(outs.len(), 4);

    // Tolerance: WGSL lets exp/ln/tanh differ from the correctly rounded result by a
    // few ulps (and the GPU may fuse a multiply-add), and the simplified graph
    // reassociates nothing but may reorder; 1e-5 absolute + 1e-4 relative covers that
    // with a margin while catching any wrong branch, derivative or index (errors of
    // order 1).
    let (abs, rel) = (1e-5, 1e-4);
    let names = ["value", "d/dx", "d/dy", "d/dz"];
    for (k, (t, w)) in outs.iter().zip(&want).enumerate() {
        let got = t.to_vec().unwrap();
        assert_eq!(got.len(), N, "{}: length", names[k]);
        let mut bad = 0usize;
        let mut first = None;
        let mut worst = 0f64;
        for i in 0..N {
            let (g, c) = (f64::from(got[i]), f64::from(w[i]));
            if c.is_finite() {
                worst = worst.max((g - c).abs() / (abs + rel * c.abs()));
            }
            if !close(g, c, abs, rel) {
                bad += 1;
                first.get_or_insert(i);
            }
        }
        if let Some(i) = first {
            panic!(
                "{}: {bad} of {N} elements differ; first at {i} (x={}, y={}, z={}): GPU {} CPU {}",
                names[k], xs[i], ys[i], zs[i], got[i], w[i]
            );
        }
        // The worst error as a fraction of the tolerance, for whoever tunes it.
        println!("{}: worst error {worst:.3} of the tolerance", names[k]);
    }
}

/// First-layer pre-activations in f64: `x [rows, FEATURES] · w1ᵀ + b1`, `[rows, hidden]`.
fn pre_activations(w1: &[f64], b1: &[f64], x: &[f64], hidden: usize) -> Vec<f64> {
    x.chunks(FEATURES)
        .flat_map(|xr| {
            (0..hidden).map(move |j| {
                let wj = &w1[j * FEATURES..(j + 1) * FEATURES];
                b1[j] + wj.iter().zip(xr).map(|(w, v)| w * v).sum::<f64>()
            })
        })
        .collect()
}

/// The rest of the MLP in f64, from the pre-activations `[rows, hidden]`: ReLU, the
/// second layer and the mean cross-entropy (log-sum-exp shifted by the row maximum).
fn loss_from_pre(pre: &[f64], w2: &[f64], b2: &[f64], labels: &[u32], hidden: usize) -> f64 {
    let mut total = 0.0;
    for (zr, &label) in pre.chunks(hidden).zip(labels) {
        let logits: Vec<f64> = (0..CLASSES)
            .map(|c| {
                let wc = &w2[c * hidden..(c + 1) * hidden];
                b2[c] + wc.iter().zip(zr).map(|(w, z)| w * z.max(0.0)).sum::<f64>()
            })
            .collect();
        let m = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + logits.iter().map(|l| (l - m).exp()).sum::<f64>().ln();
        total += lse - logits[label as usize];
    }
    total / labels.len() as f64
}

#[test]
fn one_mlp_training_step_matches_finite_differences_and_the_cpu_adam() {
    let dev = Device::new().expect("a GPU adapter (install mesa-vulkan-drivers without a GPU)");
    let hidden = 128;
    let data = Digits::bundled().unwrap();
    // A tiny batch with five different digits.
    let batch = data.select(&[0, 1, 2, 3, 4]);
    let rows = batch.len();
    let model = Mlp::init(&dev, FEATURES, hidden, CLASSES, &mut SplitMix64::new(11)).unwrap();
    // Random (not zero) biases, so the bias gradients are checked at a generic point.
    let mut rng = Rng::new(3);
    let b1: Vec<f32> = (0..hidden).map(|_| rng.range_f32(-0.1, 0.1)).collect();
    let b2: Vec<f32> = (0..CLASSES).map(|_| rng.range_f32(-0.1, 0.1)).collect();
    model.b1.write(&b1).unwrap();
    model.b2.write(&b2).unwrap();
    let host: Vec<Vec<f32>> = model.params().iter().map(|p| p.to_vec().unwrap()).collect();

    let x = Tensor::from_slice(&dev, &batch.features, &[rows, FEATURES]).unwrap();
    let y = Tensor::from_u32(&dev, &batch.labels, &[rows]).unwrap();
    let step = model.loss_and_grads(&x, &y).unwrap();
    let gpu_loss = step.loss.item().unwrap();
    let gpu_grads: Vec<Vec<f32>> = step.grads.iter().map(|g| g.to_vec().unwrap()).collect();

    // The f64 reference at exactly the f32 parameters the GPU used.
    let p64: [Vec<f64>; 4] =
        std::array::from_fn(|k| host[k].iter().map(|&v| f64::from(v)).collect());
    let [w1, b1, w2, b2] = &p64;
    let x64: Vec<f64> = batch.features.iter().map(|&v| f64::from(v)).collect();
    let labels = &batch.labels;
    let pre = pre_activations(w1, b1, &x64, hidden);
    let loss = loss_from_pre(&pre, w2, b2, labels, hidden);
    assert!(
        close(f64::from(gpu_loss), loss, 1e-6, 1e-5),
        "loss: GPU {gpu_loss}, f64 {loss}"
    );

    // Central differences with step H. Every input is in [0, 1], so a step moves each
    // pre-activation by at most H (a weight) or exactly H (a bias): if none is within
    // H of ReLU's kink, the difference quotient sees a smooth function and is exact to
    // O(H^2) plus rounding (about 1e-16 / H), far below the tolerance.
    const H: f64 = 1e-6;
    let nearest = pre.iter().fold(f64::INFINITY, |m, z| m.min(z.abs()));
    assert!(
        nearest > 10.0 * H,
        "a pre-activation is {nearest} from ReLU's kink; pick another seed"
    );
    // The loss as a function of one parameter `(k, i)` moved by `d`. A first-layer
    // parameter changes only its hidden unit's pre-activations (w1[j, f] by d * x[r, f]
    // in row r, b1[j] by d), so those are updated in place instead of recomputing the
    // whole first layer: the same function, evaluated about 8x faster.
    let loss_at = |k: usize, i: usize, d: f64| -> f64 {
        match k {
            0 | 1 => {
                let (j, f) = if k == 0 {
                    (i / FEATURES, Some(i % FEATURES))
                } else {
                    (i, None)
                };
                let mut moved = pre.clone();
                for (r, zr) in moved.chunks_mut(hidden).enumerate() {
                    zr[j] += f.map_or(d, |f| d * x64[r * FEATURES + f]);
                }
                loss_from_pre(&moved, w2, b2, labels, hidden)
            }
            _ => {
                let mut p = p64[k].clone();
                p[i] += d;
                let (w2, b2) = if k == 2 { (&p, b2) } else { (w2, &p) };
                loss_from_pre(&pre, w2, b2, labels, hidden)
            }
        }
    };
    // Tolerance: the GPU gradient is computed in f32 (relative error ~1e-6 from the
    // matmul sums); 1e-6 absolute + 1e-3 relative.
    let (abs, rel) = (1e-6, 1e-3);
    let names = ["w1", "b1", "w2", "b2"];
    for k in 0..4 {
        assert_eq!(
            gpu_grads[k].len(),
            p64[k].len(),
            "{}: gradient length",
            names[k]
        );
        let mut nonzero = 0;
        let mut worst = 0f64;
        for (i, &g) in gpu_grads[k].iter().enumerate() {
            let fd = (loss_at(k, i, H) - loss_at(k, i, -H)) / (2.0 * H);
            let g = f64::from(g);
            worst = worst.max((g - fd).abs() / (abs + rel * fd.abs()));
            assert!(
                close(g, fd, abs, rel),
                "d loss / d {}[{i}]: GPU {g}, finite difference {fd}",
                names[k]
            );
            if fd.abs() > 1e-4 {
                nonzero += 1;
            }
        }
        // A gradient of all zeros would pass against an all-zero reference: make sure
        // the check compared real values.
        assert!(
            nonzero > 0,
            "{}: the reference gradient is all zero",
            names[k]
        );
        println!("{}: worst error {worst:.3} of the tolerance", names[k]);
    }

    // The update: one Adam step on the GPU against the kernel's CPU twin, elementwise.
    let mut opt = Adam::new(&model, 1e-2).unwrap();
    opt.step(&model, &step.grads).unwrap();
    // Step 1's bias corrections, computed as `Adam::step` does.
    let b1c = (1.0 - f64::from(opt.beta1)) as f32;
    let b2c = (1.0 - f64::from(opt.beta2)) as f32;
    for (k, p) in model.params().iter().enumerate() {
        let got = p.to_vec().unwrap();
        for (i, &g) in gpu_grads[k].iter().enumerate() {
            let (mut want, mut m, mut v) = (host[k][i], 0.0, 0.0);
            adam(
                &mut want, &mut m, &mut v, g, opt.lr, opt.beta1, opt.beta2, opt.eps, b1c, b2c,
            );
            assert!(
                close(f64::from(got[i]), f64::from(want), 1e-6, 1e-5),
                "{} [{i}] after Adam: GPU {}, CPU {want}",
                names[k],
                got[i]
            );
        }
        assert_ne!(got, host[k], "{}: Adam changed nothing", names[k]);
    }
}

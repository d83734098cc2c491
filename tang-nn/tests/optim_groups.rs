//! Parameter groups, per-step learning rates, one launch per parameter with no host
//! read, PyTorch's option checks, maximize, AMSGrad against a reference written from
//! PyTorch's formula, and the update kernels' fused multiply-add on the GPU.

mod optim_common;

use optim_common::*;
use tang_nn::optim::{
    Adam, AdamOptions, AdamW, AdamWOptions, OptimError, ParamGroup, Sgd, SgdOptions, decay_groups,
    kernels,
};
use tang_nn::tang_runtime::{Device, Tensor};

fn t(dev: &Device, v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_slice(dev, v, shape).unwrap()
}

#[test]
fn groups_with_their_own_decay_and_a_schedule_equal_separate_optimizers() {
    let dev = Device::new().unwrap();
    let fx = OptimFixture::load();
    let w0: Vec<f32> = fx.p0[..12].to_vec();
    let b0: Vec<f32> = fx.p0[12..15].to_vec();
    let (w, b) = (t(&dev, &w0, &[4, 3]), t(&dev, &b0, &[3]));
    let groups = decay_groups([("fc.weight", w.clone()), ("fc.bias", b.clone())], 0.1);
    assert_eq!(groups[0].params[0].0, "fc.weight");
    assert_eq!(groups[1].params[0].0, "fc.bias");
    let mut grouped = AdamW::with_groups(groups.into(), AdamWOptions::default()).unwrap();
    // The same parameters under two separate optimizers, one per group.
    let (w2, b2) = (t(&dev, &w0, &[4, 3]), t(&dev, &b0, &[3]));
    let decayed = AdamWOptions::default().weight_decay(0.1);
    let mut only_w = AdamW::new([("fc.weight", w2.clone())], decayed).unwrap();
    let mut only_b = AdamW::new(
        [("fc.bias", b2.clone())],
        AdamWOptions::default().weight_decay(0.0),
    )
    .unwrap();
    for (s, g) in fx.grads[..20].iter().enumerate() {
        let lr = 1e-3 * (s as f64 + 1.0) / 20.0; // a warmup, set every step
        grouped.set_lr(lr);
        only_w.set_lr(lr);
        only_b.set_lr(lr);
        let (gw, gb) = (t(&dev, &g[..12], &[4, 3]), t(&dev, &g[12..15], &[3]));
        grouped
            .step(&[("fc.weight", &gw), ("fc.bias", &gb)])
            .unwrap();
        only_w.step(&[("fc.weight", &gw)]).unwrap();
        only_b.step(&[("fc.bias", &gb)]).unwrap();
    }
    assert_eq!(w.to_vec().unwrap(), w2.to_vec().unwrap());
    assert_eq!(b.to_vec().unwrap(), b2.to_vec().unwrap());
    assert_eq!(grouped.lr(), 1e-3);
    assert_eq!(grouped.groups()[1].options.lr, 1e-3);
    assert_eq!(grouped.groups()[0].options.weight_decay, 0.1);
    assert_eq!(grouped.groups()[1].options.weight_decay, 0.0);
    assert_eq!(grouped.groups()[1].names(), ["fc.bias"]);
    // Decay made a difference: without it the weight ends elsewhere.
    let w3 = t(&dev, &w0, &[4, 3]);
    let mut no_decay = AdamW::new(
        [("fc.weight", w3.clone())],
        AdamWOptions::default().weight_decay(0.0),
    )
    .unwrap();
    for (s, g) in fx.grads[..20].iter().enumerate() {
        no_decay.set_lr(1e-3 * (s as f64 + 1.0) / 20.0);
        no_decay
            .step(&[("fc.weight", &t(&dev, &g[..12], &[4, 3]))])
            .unwrap();
    }
    assert_ne!(w3.to_vec().unwrap(), w.to_vec().unwrap());
}

#[test]
fn a_step_is_four_launches_per_group_with_no_submit_and_no_read() {
    let dev = Device::new().unwrap();
    let params: Vec<(String, Tensor)> = (0..6)
        .map(|i| (format!("layer{i}.weight"), t(&dev, &[0.5; 40], &[8, 5])))
        .collect();
    let grads: Vec<(String, Tensor)> = params
        .iter()
        .map(|(n, _)| (n.clone(), t(&dev, &[0.25; 40], &[8, 5])))
        .collect();
    let mut opt = Adam::new(params.clone(), AdamOptions::default()).unwrap();
    opt.step(&grads).unwrap(); // creates the state
    dev.sync().unwrap();
    let before = dev.stats();
    opt.step(&grads).unwrap();
    let after = dev.stats();
    // Adam's multi-tensor step: the parameters and the gradients packed into flat
    // tensors, one update, the parameters unpacked: 4 launches for the 6 parameters.
    assert_eq!(after.launches - before.launches, 4);
    assert_eq!(after.submits, before.submits, "recorded in one batch");
    assert_eq!(after.host_reads, before.host_reads);
    // A parameter without a gradient is skipped and has no state, as in PyTorch.
    let extra = t(&dev, &[1.0, 2.0], &[2]);
    let mut opt = Sgd::new(
        [("a", params[0].1.clone()), ("extra", extra.clone())],
        SgdOptions {
            momentum: 0.9,
            ..SgdOptions::default()
        },
    )
    .unwrap();
    opt.step(&[("a", &grads[0].1)]).unwrap();
    assert_eq!(extra.to_vec().unwrap(), [1.0, 2.0]);
    assert!(opt.state("extra").unwrap().is_empty());
    assert!(opt.state("a").unwrap().buffer("momentum_buffer").is_some());
}

#[test]
fn maximize_equals_minimizing_the_negated_gradient() {
    let dev = Device::new().unwrap();
    let fx = OptimFixture::load();
    let negated: Vec<Vec<f32>> = fx
        .grads
        .iter()
        .map(|g| g.iter().map(|x| -x).collect())
        .collect();
    let sgd = SgdOptions {
        lr: 0.05,
        momentum: 0.9,
        weight_decay: 1e-3,
        ..SgdOptions::default()
    };
    let a = run(
        &dev,
        SgdOptions {
            maximize: true,
            ..sgd
        },
        &fx.p0,
        &fx.grads[..30],
    );
    let b = run(&dev, sgd, &fx.p0, &negated[..30]);
    assert_eq!(differing(&a, &b), 0);
    let adam = AdamOptions {
        weight_decay: 1e-2,
        ..AdamOptions::default()
    };
    let a = run(
        &dev,
        AdamOptions {
            maximize: true,
            ..adam
        },
        &fx.p0,
        &fx.grads[..30],
    );
    let b = run(&dev, adam, &fx.p0, &negated[..30]);
    assert_eq!(differing(&a, &b), 0);
}

/// PyTorch's `_single_tensor_adam` with amsgrad, written out on the CPU (f32 tensors,
/// Python-float scalars in f64, fused multiply-adds where PyTorch's kernels fuse).
fn amsgrad_reference(
    p0: &[f32],
    grads: &[Vec<f32>],
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    wd: f64,
) -> Vec<Vec<f32>> {
    let n = p0.len();
    let (mut p, mut m, mut v, mut vmax) =
        (p0.to_vec(), vec![0f32; n], vec![0f32; n], vec![0f32; n]);
    let mut out = Vec::new();
    for (s, g) in grads.iter().enumerate() {
        let step = (s + 1) as f64;
        let bc1 = 1.0 - betas.0.powf(step);
        let bc2 = 1.0 - betas.1.powf(step);
        let neg_step = (-(lr / bc1)) as f32;
        let bc2_sqrt = bc2.powf(0.5) as f32;
        for i in 0..n {
            p[i] *= (1.0 - lr * wd) as f32;
            m[i] = ((1.0 - betas.0) as f32).mul_add(g[i] - m[i], m[i]);
            v[i] = (((1.0 - betas.1) as f32) * g[i]).mul_add(g[i], v[i] * betas.1 as f32);
            vmax[i] = vmax[i].max(v[i]);
            let denom = vmax[i].sqrt() / bc2_sqrt + eps as f32;
            p[i] += neg_step * m[i] / denom;
        }
        out.push(p.clone());
    }
    out
}

#[test]
fn amsgrad_follows_pytorchs_formula() {
    let dev = Device::new().unwrap();
    let fx = OptimFixture::load();
    let o = AdamWOptions::default().amsgrad(true).betas((0.8, 0.99));
    // Gradients that shrink, so that the running maximum differs from v.
    let grads: Vec<Vec<f32>> = fx.grads[..40]
        .iter()
        .enumerate()
        .map(|(s, g)| g.iter().map(|x| x / (1.0 + s as f32)).collect())
        .collect();
    let ours = run(&dev, o, &fx.p0, &grads);
    let reference = amsgrad_reference(&fx.p0, &grads, o.lr, o.betas, o.eps, o.weight_decay);
    let plain = run(&dev, o.amsgrad(false), &fx.p0, &grads);
    let rel = max_rel(&ours, &reference);
    println!(
        "amsgrad: {} values differ from the reference (max relative {rel:e}); {} differ from plain AdamW",
        differing(&ours, &reference),
        differing(&plain, &ours)
    );
    assert_eq!(differing(&ours, &reference), 0);
    assert!(differing(&plain, &ours) > 0);
}

#[test]
fn the_update_kernels_round_a_times_b_plus_c_once() {
    // sgd_update with no decay computes p + (-lr) * g as one fused multiply-add.
    let dev = Device::new().unwrap();
    let n = 4096;
    let g: Vec<f32> = (0..n).map(|i| (1.0 + i as f32 / 4096.0) * 1.1).collect();
    // Half the values nearly cancel (p close to lr * g), where an unfused product and
    // sum lose every bit.
    let neg_lr = -0.7f32;
    let p: Vec<f32> = g
        .iter()
        .enumerate()
        .map(|(i, x)| {
            if i % 2 == 0 {
                -(neg_lr * x)
            } else {
                0.3 * i as f32
            }
        })
        .collect();
    let pt = t(&dev, &p, &[n]);
    let one = t(&dev, &[1.0], &[1]);
    kernels::sgd_update::launch(&dev, &pt, &t(&dev, &g, &[n]), &one, 0.0, 0.0, neg_lr, 1.0)
        .unwrap();
    let gpu = pt.to_vec().unwrap();
    let wrong = (0..n)
        .filter(|&i| gpu[i].to_bits() != g[i].mul_add(neg_lr, p[i]).to_bits())
        .count();
    let cancelled = (0..n)
        .filter(|&i| i % 2 == 0 && g[i].mul_add(neg_lr, p[i]) != 0.0)
        .count();
    println!(
        "{wrong} of {n} differ from f32::mul_add; {cancelled} near-cancelling values are nonzero"
    );
    assert!(
        cancelled > 0,
        "the cases exercise the product's rounding error"
    );
    assert_eq!(wrong, 0);
}

#[test]
fn bad_options_and_parameters_are_typed_errors() {
    let dev = Device::new().unwrap();
    let p = t(&dev, &[1.0, 2.0], &[2]);
    let bad_option = |e: Result<Sgd, OptimError>| match e {
        Err(OptimError::InvalidOption { option, .. }) => option,
        other => panic!("{other:?}"),
    };
    let sgd = |o: SgdOptions| Sgd::new([("p", p.clone())], o);
    assert_eq!(
        bad_option(sgd(SgdOptions {
            lr: -1.0,
            ..Default::default()
        })),
        "lr"
    );
    assert_eq!(
        bad_option(sgd(SgdOptions {
            lr: f64::NAN,
            ..Default::default()
        })),
        "lr"
    );
    assert_eq!(
        bad_option(sgd(SgdOptions {
            momentum: -0.1,
            ..Default::default()
        })),
        "momentum"
    );
    assert_eq!(
        bad_option(sgd(SgdOptions {
            nesterov: true,
            momentum: 0.9,
            dampening: 0.1,
            ..Default::default()
        })),
        "nesterov"
    );
    assert_eq!(
        bad_option(sgd(SgdOptions {
            nesterov: true,
            ..Default::default()
        })),
        "nesterov"
    );
    let e = Adam::new(
        [("p", p.clone())],
        AdamOptions {
            betas: (0.9, 1.0),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            e,
            OptimError::InvalidOption {
                option: "betas[1]",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("in [0, 1)"), "{e}");
    let e = AdamW::new([("p", p.clone())], AdamWOptions::default().eps(-1.0)).unwrap_err();
    assert!(
        matches!(
            e,
            OptimError::InvalidOption {
                optimizer: "AdamW",
                option: "eps",
                ..
            }
        ),
        "{e}"
    );

    let none: [(&str, Tensor); 0] = [];
    assert!(matches!(
        Sgd::new(none, SgdOptions::default()),
        Err(OptimError::EmptyParameterList)
    ));
    let e = Sgd::with_groups(
        vec![
            ParamGroup::new([("p", p.clone())]),
            ParamGroup::new([("p", t(&dev, &[0.0], &[1]))]),
        ],
        SgdOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, OptimError::DuplicateParameter { .. }), "{e}");
    let e = Sgd::new(
        [("wte", p.clone()), ("lm_head", p.clone())],
        SgdOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, OptimError::SharedParameter { .. }), "{e}");
    let ids = Tensor::from_u32(&dev, &[1, 2], &[2]).unwrap();
    assert!(matches!(
        Sgd::new([("ids", ids)], SgdOptions::default()),
        Err(OptimError::NotF32 { .. })
    ));

    // A bad gradient changes nothing, even for parameters checked before it.
    let q = t(&dev, &[3.0], &[1]);
    let mut opt = Sgd::new(
        [("p", p.clone()), ("q", q.clone())],
        SgdOptions {
            lr: 0.1,
            ..Default::default()
        },
    )
    .unwrap();
    let gp = t(&dev, &[1.0, 1.0], &[2]);
    let e = opt.step(&[("p", &gp), ("q", &gp)]).unwrap_err();
    assert!(matches!(e, OptimError::GradientShape { .. }), "{e}");
    assert!(e.to_string().contains("shape [2]"), "{e}");
    assert_eq!(p.to_vec().unwrap(), [1.0, 2.0]);
    let e = opt.step(&[("p", &p)]).unwrap_err();
    assert!(matches!(e, OptimError::GradientIsParameter { .. }), "{e}");
    // Options set out of range between steps are caught at the step.
    opt.groups_mut()[0].options.lr = -0.5;
    assert!(matches!(
        opt.step(&[("p", &gp)]),
        Err(OptimError::InvalidOption { .. })
    ));
    assert_eq!(p.to_vec().unwrap(), [1.0, 2.0]);
}

/// The multi-tensor step (one group, flat tensors) and one optimizer per parameter take
/// the same trajectory to the bit, through a state saved and loaded halfway (which lays
/// the flat state out again), and AMSGrad (one launch per parameter) as well.
#[test]
fn the_multi_tensor_step_matches_one_parameter_at_a_time() {
    let dev = Device::new().unwrap();
    let mut rng = tang_testing::Rng::new(3);
    let shapes: [&[usize]; 4] = [&[8, 5], &[3], &[1], &[7, 9]];
    for amsgrad in [false, true] {
        let opts = AdamWOptions::default().amsgrad(amsgrad);
        let init: Vec<Vec<f32>> = shapes
            .iter()
            .map(|s| rng.vec(s.iter().product(), 1.0))
            .collect();
        let names: Vec<String> = (0..shapes.len()).map(|i| format!("p{i}")).collect();
        let together: Vec<Tensor> = init
            .iter()
            .zip(shapes)
            .map(|(v, s)| t(&dev, v, s))
            .collect();
        let apart: Vec<Tensor> = init
            .iter()
            .zip(shapes)
            .map(|(v, s)| t(&dev, v, s))
            .collect();
        let named = names.iter().cloned().zip(together.iter().cloned());
        let mut group = AdamW::new(named, opts).unwrap();
        let mut singles: Vec<AdamW> = names
            .iter()
            .zip(&apart)
            .map(|(n, p)| AdamW::new([(n.clone(), p.clone())], opts).unwrap())
            .collect();
        for step in 0..6 {
            let grads: Vec<(String, Tensor)> = names
                .iter()
                .zip(shapes)
                .map(|(n, s)| (n.clone(), t(&dev, &rng.vec(s.iter().product(), 1.0), s)))
                .collect();
            group.step(&grads).unwrap();
            for (opt, g) in singles.iter_mut().zip(&grads) {
                opt.step(&[(g.0.as_str(), &g.1)]).unwrap();
            }
            if step == 2 {
                let saved = group.state_dict().unwrap();
                group.load_state_dict(&saved).unwrap();
            }
        }
        for (i, (a, b)) in together.iter().zip(&apart).enumerate() {
            assert_eq!(
                a.to_vec().unwrap(),
                b.to_vec().unwrap(),
                "p{i}, amsgrad {amsgrad}"
            );
            let (sa, sb) = (
                group.state(&names[i]).unwrap(),
                singles[i].state(&names[i]).unwrap(),
            );
            assert_eq!(sa.step(), 6);
            for key in ["exp_avg", "exp_avg_sq"] {
                let (x, y) = (sa.buffer(key).unwrap(), sb.buffer(key).unwrap());
                assert_eq!(x.shape(), y.shape());
                assert_eq!(x.to_vec().unwrap(), y.to_vec().unwrap(), "{key} of p{i}");
            }
        }
    }
}

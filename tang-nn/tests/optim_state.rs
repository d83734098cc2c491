//! Optimizer state saved and loaded by parameter name: save -> load -> continue gives
//! the uninterrupted run's trajectory bit for bit, hyperparameters come back, and state
//! that does not fit is refused with a typed error before anything changes.

mod optim_common;

use optim_common::*;
use tang_nn::optim::{
    AdamOptions, AdamW, AdamWOptions, Algorithm, OptimError, Optimizer, Sgd, SgdOptions,
};
use tang_nn::tang_runtime::{Device, Tensor};

fn temp_path(tag: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "tang-optim-{}-{tag}.safetensors",
        std::process::id()
    ))
}

/// Steps an optimizer of parameter "p" over `grads`, returning p after each step.
fn steps<A: Algorithm>(
    dev: &Device,
    opt: &mut Optimizer<A>,
    p: &Tensor,
    grads: &[Vec<f32>],
) -> Vec<Vec<f32>> {
    grads
        .iter()
        .map(|g| {
            let gt = Tensor::from_slice(dev, g, &[g.len()]).unwrap();
            opt.step(&[("p", &gt)]).unwrap();
            p.to_vec().unwrap()
        })
        .collect()
}

/// Runs `options` for all of the fixture's steps, and again stopping after `cut` steps,
/// saving to a file, building a fresh optimizer over a fresh copy of the parameter,
/// loading and continuing. Both runs must agree bit for bit.
fn resume_matches<A: Algorithm>(dev: &Device, options: A, tag: &str) {
    let fx = OptimFixture::load();
    let cut = fx.grads.len() * 2 / 5;
    let p = Tensor::from_slice(dev, &fx.p0, &[fx.p0.len()]).unwrap();
    let mut whole = Optimizer::new([("p", p.clone())], options.clone()).unwrap();
    let uninterrupted = steps(dev, &mut whole, &p, &fx.grads);

    let p = Tensor::from_slice(dev, &fx.p0, &[fx.p0.len()]).unwrap();
    let mut first = Optimizer::new([("p", p.clone())], options.clone()).unwrap();
    let mut resumed = steps(dev, &mut first, &p, &fx.grads[..cut]);
    let path = temp_path(tag);
    first.save(&path).unwrap();
    let weights = p.to_vec().unwrap();
    drop(first);

    let p = Tensor::from_slice(dev, &weights, &[weights.len()]).unwrap();
    let mut second = Optimizer::new([("p", p.clone())], options).unwrap();
    second.load(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    resumed.extend(steps(dev, &mut second, &p, &fx.grads[cut..]));
    let diff = differing(&resumed, &uninterrupted);
    println!(
        "{tag}: resumed after {cut} of {} steps, {diff} values differ",
        fx.grads.len()
    );
    assert_eq!(diff, 0, "{tag}");
}

#[test]
fn save_load_continue_is_bit_identical() {
    let dev = Device::new().unwrap();
    resume_matches(
        &dev,
        SgdOptions {
            lr: 0.05,
            momentum: 0.9,
            nesterov: true,
            weight_decay: 1e-4,
            ..SgdOptions::default()
        },
        "sgd",
    );
    resume_matches(&dev, AdamOptions::default(), "adam");
    resume_matches(&dev, AdamWOptions::default().amsgrad(true), "adamw-amsgrad");
}

#[test]
fn state_is_keyed_by_parameter_name_and_hyperparameters_come_back() {
    let dev = Device::new().unwrap();
    let w = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let b = Tensor::from_slice(&dev, &[0.5, -0.5], &[2]).unwrap();
    let mut opt = AdamW::new(
        [("fc.weight", w.clone()), ("fc.bias", b.clone())],
        AdamWOptions::default(),
    )
    .unwrap();
    let gw = Tensor::from_slice(&dev, &[0.1, 0.2, 0.3, 0.4], &[2, 2]).unwrap();
    // Only the weight has a gradient: the bias has no state, as in PyTorch.
    opt.step(&[("fc.weight", &gw)]).unwrap();
    opt.step(&[("fc.weight", &gw)]).unwrap();
    opt.groups_mut()[0].options.lr = 3e-4;
    let state = opt.state_dict().unwrap();
    let names: Vec<&str> = state.tensors.names().collect();
    assert_eq!(
        names,
        [
            "fc.weight.step",
            "fc.weight.exp_avg",
            "fc.weight.exp_avg_sq"
        ]
    );
    assert_eq!(state.tensors.i64_values("fc.weight.step").unwrap(), [2]);
    assert_eq!(state.metadata["optimizer"], "AdamW");
    assert_eq!(state.metadata["param_groups.0.lr"], "0.0003");
    assert_eq!(state.metadata["param_groups.0.betas"], "0.9,0.999");
    assert!(opt.state("fc.bias").unwrap().is_empty());

    let mut other = AdamW::new(
        [("fc.weight", w.clone()), ("fc.bias", b.clone())],
        AdamWOptions::default(),
    )
    .unwrap();
    other.load_state_dict(&state).unwrap();
    assert_eq!(other.groups()[0].options.lr, 3e-4);
    let s = other.state("fc.weight").unwrap();
    assert_eq!(s.step(), 2);
    let m = s.buffer("exp_avg").unwrap();
    assert_eq!(
        m.to_vec().unwrap(),
        opt.state("fc.weight")
            .unwrap()
            .buffer("exp_avg")
            .unwrap()
            .to_vec()
            .unwrap()
    );
    // A loaded buffer is a copy: stepping one optimizer leaves the other's state alone.
    assert!(!m.same_buffer(opt.state("fc.weight").unwrap().buffer("exp_avg").unwrap()));
}

#[test]
fn state_that_does_not_fit_is_refused_before_anything_changes() {
    let dev = Device::new().unwrap();
    let p = Tensor::from_slice(&dev, &[1.0, 2.0], &[2]).unwrap();
    let g = Tensor::from_slice(&dev, &[0.5, 0.25], &[2]).unwrap();
    let mut adam = Optimizer::new([("p", p.clone())], AdamOptions::default()).unwrap();
    adam.step(&[("p", &g)]).unwrap();
    let saved = adam.state_dict().unwrap();
    let state_err = |r: Result<(), OptimError>| match r {
        Err(OptimError::State { detail }) => detail,
        other => panic!("expected a state error, got {other:?}"),
    };

    // Another optimizer kind.
    let mut sgd = Sgd::new([("p", p.clone())], SgdOptions::default()).unwrap();
    let d = state_err(sgd.load_state_dict(&saved));
    assert!(d.contains("saved by Adam"), "{d}");

    // Another parameter name.
    let q = Tensor::from_slice(&dev, &[1.0, 2.0], &[2]).unwrap();
    let mut renamed = Optimizer::new([("q", q.clone())], AdamOptions::default()).unwrap();
    let d = state_err(renamed.load_state_dict(&saved));
    assert!(d.contains("unknown parameter \"p\""), "{d}");
    assert!(renamed.state("q").unwrap().is_empty());

    // Another shape.
    let wide = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0], &[3]).unwrap();
    let mut reshaped = Optimizer::new([("p", wide)], AdamOptions::default()).unwrap();
    let d = state_err(reshaped.load_state_dict(&saved));
    assert!(d.contains("shape [2]"), "{d}");

    // Another number of groups.
    let r = Tensor::from_slice(&dev, &[1.0], &[1]).unwrap();
    let mut two = Optimizer::with_groups(
        vec![
            tang_nn::optim::ParamGroup::new([("p", p.clone())]),
            tang_nn::optim::ParamGroup::new([("r", r)]),
        ],
        AdamOptions::default(),
    )
    .unwrap();
    let d = state_err(two.load_state_dict(&saved));
    assert!(d.contains("1 parameter groups"), "{d}");

    // A bad hyperparameter value, and an unknown buffer.
    let mut bad = saved.clone();
    bad.metadata
        .insert("param_groups.0.lr".into(), "fast".into());
    let d = state_err(adam.load_state_dict(&bad));
    assert!(d.contains("param_groups.0.lr"), "{d}");
    let mut bad = saved.clone();
    bad.tensors.insert("p.velocity", g.clone());
    let d = state_err(adam.load_state_dict(&bad));
    assert!(d.contains("velocity"), "{d}");
    // Buffers without a step count.
    let mut bad = saved.clone();
    bad.tensors.remove("p.step");
    let mut fresh = Optimizer::new([("p", p.clone())], AdamOptions::default()).unwrap();
    let d = state_err(fresh.load_state_dict(&bad));
    assert!(d.contains("step count"), "{d}");
    assert!(fresh.state("p").unwrap().is_empty());
    // A step count with half of the moments.
    let mut bad = saved.clone();
    bad.tensors.remove("p.exp_avg_sq");
    let d = state_err(fresh.load_state_dict(&bad));
    assert!(d.contains("no exp_avg_sq"), "{d}");
    // SGD keeps no step count.
    let mut sgd_state = sgd.state_dict().unwrap();
    sgd_state
        .tensors
        .insert("p.step", saved.tensors.get("p.step").unwrap().clone());
    let d = state_err(sgd.load_state_dict(&sgd_state));
    assert!(d.contains("no state named \"step\""), "{d}");
    // The optimizer that refused them is unchanged.
    assert_eq!(adam.state("p").unwrap().step(), 1);
}

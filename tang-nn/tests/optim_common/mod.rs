//! Helpers shared by the optimizer tests: the PyTorch fixture of optimizer trajectories,
//! the options of each of its cases, and a run of an optimizer over its gradients.

#![allow(dead_code)]

use std::path::PathBuf;

use tang_nn::optim::{AdamOptions, AdamWOptions, Algorithm, Optimizer, SgdOptions};
use tang_nn::safetensors::{StateDict, read_file};
use tang_nn::tang_runtime::{Device, Tensor};

/// A PyTorch fixture (`../shared/fixtures/torch/` beside the checkout).
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/torch")
        .join(name)
}

/// `keys.json` parsed.
pub fn keys() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture("keys.json")).expect("keys.json");
    serde_json::from_str(&text).expect("keys.json is JSON")
}

/// `optim.safetensors`: `p0 [n]`, `grads [steps, n]`, `traj.<case> [steps, n]`, `clip.*`.
pub struct OptimFixture {
    pub tensors: StateDict,
    pub p0: Vec<f32>,
    /// One gradient per step.
    pub grads: Vec<Vec<f32>>,
}

impl OptimFixture {
    pub fn load() -> OptimFixture {
        let tensors = read_file(fixture("optim.safetensors"))
            .expect("optim.safetensors")
            .tensors;
        let p0 = tensors.f32_values("p0").unwrap();
        let grads = rows(&tensors, "grads", p0.len());
        OptimFixture { tensors, p0, grads }
    }

    /// PyTorch's parameter after each step of `case`.
    pub fn trajectory(&self, case: &str) -> Vec<Vec<f32>> {
        rows(&self.tensors, &format!("traj.{case}"), self.p0.len())
    }
}

/// The rows of 2-D tensor `name` with `n` columns.
pub fn rows(t: &StateDict, name: &str, n: usize) -> Vec<Vec<f32>> {
    let shape = t
        .get(name)
        .unwrap_or_else(|| panic!("{name}"))
        .shape()
        .to_vec();
    assert_eq!(shape.len(), 2, "{name}");
    assert_eq!(shape[1], n, "{name}");
    t.f32_values(name)
        .unwrap()
        .chunks(n)
        .map(<[f32]>::to_vec)
        .collect()
}

/// The options of each case of `make_fixtures.py` (keys.json's `optim_cases`).
pub enum CaseOptions {
    Sgd(SgdOptions),
    Adam(AdamOptions),
    AdamW(AdamWOptions),
}

pub fn case_options(case: &str) -> CaseOptions {
    let sgd = SgdOptions {
        lr: 0.05,
        momentum: 0.9,
        ..SgdOptions::default()
    };
    match case {
        "sgd_m09_wd1e-4" => CaseOptions::Sgd(SgdOptions {
            weight_decay: 1e-4,
            ..sgd
        }),
        "sgd_nesterov_m09" => CaseOptions::Sgd(SgdOptions {
            nesterov: true,
            ..sgd
        }),
        "sgd_m09_dampening05" => CaseOptions::Sgd(SgdOptions {
            dampening: 0.5,
            ..sgd
        }),
        "adam_default" => CaseOptions::Adam(AdamOptions::default()),
        "adam_wd1e-2" => CaseOptions::Adam(AdamOptions {
            weight_decay: 1e-2,
            ..AdamOptions::default()
        }),
        "adamw_b2_099_wd01" => {
            CaseOptions::AdamW(AdamWOptions::default().betas((0.9, 0.99)).weight_decay(0.1))
        }
        "adamw_default" => CaseOptions::AdamW(AdamWOptions::default()),
        other => panic!("unknown optimizer case {other}: add its options here"),
    }
}

/// One parameter named "p" starting at `p0`, stepped by `options` over `grads`; the
/// parameter's values after each step (read back only after every step is recorded).
pub fn run<A: Algorithm>(
    dev: &Device,
    options: A,
    p0: &[f32],
    grads: &[Vec<f32>],
) -> Vec<Vec<f32>> {
    let p = Tensor::from_slice(dev, p0, &[p0.len()]).unwrap();
    let mut opt = Optimizer::new([("p", p.clone())], options).unwrap();
    let mut snapshots = Vec::new();
    for g in grads {
        let gt = Tensor::from_slice(dev, g, &[g.len()]).unwrap();
        opt.step(&[("p", &gt)]).unwrap();
        snapshots.push(copy(dev, &p));
    }
    snapshots.iter().map(|t| t.to_vec().unwrap()).collect()
}

/// A device copy of `t` (recorded, not read).
pub fn copy(dev: &Device, t: &Tensor) -> Tensor {
    tang_nn::optim::kernels::copy_state::launch(dev, t).unwrap()
}

/// The trajectory of `case` on the device.
pub fn run_case(dev: &Device, case: &str, p0: &[f32], grads: &[Vec<f32>]) -> Vec<Vec<f32>> {
    match case_options(case) {
        CaseOptions::Sgd(o) => run(dev, o, p0, grads),
        CaseOptions::Adam(o) => run(dev, o, p0, grads),
        CaseOptions::AdamW(o) => run(dev, o, p0, grads),
    }
}

/// The largest relative difference `|a - b| / |b|` (0 where both are equal, including
/// both zero; infinite where only `b` is zero).
pub fn max_rel(a: &[Vec<f32>], b: &[Vec<f32>]) -> f64 {
    assert_eq!(a.len(), b.len());
    let mut worst = 0.0f64;
    for (ra, rb) in a.iter().zip(b) {
        assert_eq!(ra.len(), rb.len());
        for (&x, &y) in ra.iter().zip(rb) {
            let (x, y) = (f64::from(x), f64::from(y));
            let d = if x == y { 0.0 } else { (x - y).abs() / y.abs() };
            worst = worst.max(if d.is_nan() { f64::INFINITY } else { d });
        }
    }
    worst
}

/// Elements that differ in any bit.
pub fn differing(a: &[Vec<f32>], b: &[Vec<f32>]) -> usize {
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .filter(|(x, y)| x.to_bits() != y.to_bits())
        .count()
}

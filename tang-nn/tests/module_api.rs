//! The `Module` trait and `#[derive(Module)]`: PyTorch's names through nesting, `Vec`,
//! `Option`, `Box` and renames; a tied parameter listed once and counted once but saved
//! under both names, with its gradient the sum of both uses; freezing; strict loading
//! reporting every problem at once; loads that keep ties.

use std::cell::Cell;

use tang_nn::Module;
use tang_nn::autograd::{RawTensor, Tensor};
use tang_nn::module::Error;
use tang_nn::safetensors::{HostTensor, StateDict, StateTensor};
use tang_nn::tang_runtime::Device;

fn param(dev: &Device, v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::parameter(RawTensor::from_slice(dev, v, shape).unwrap())
}

fn zeros(dev: &Device, shape: &[usize]) -> Tensor {
    Tensor::parameter(RawTensor::zeros(dev, shape).unwrap())
}

#[derive(Module)]
struct Affine {
    weight: Tensor,
    bias: Option<Tensor>,
    #[module(skip)]
    features: usize,
}

/// Counts mode switches, to see that `train`/`eval` reach every child.
struct ModeProbe {
    training: Cell<bool>,
}

impl Module for ModeProbe {
    fn visit_parameters(&self, _: &str, _: &mut dyn FnMut(&str, &Tensor)) {}
    fn set_training(&self, training: bool) {
        self.training.set(training);
    }
}

#[derive(Module)]
struct Net {
    blocks: Vec<Affine>,
    probe: ModeProbe,
    #[module(name = "lm_head")]
    head: Box<Affine>,
    extra: Option<Affine>,
    r#type: Tensor,
}

fn affine(dev: &Device, n: usize, bias: bool) -> Affine {
    Affine {
        weight: zeros(dev, &[n, n]),
        bias: bias.then(|| zeros(dev, &[n])),
        features: n,
    }
}

#[test]
fn names_follow_fields_vec_indices_renames_and_skip_absent_options() {
    let dev = tang_testing::device();
    let net = Net {
        blocks: vec![affine(&dev, 2, true), affine(&dev, 2, false)],
        probe: ModeProbe {
            training: Cell::new(true),
        },
        head: Box::new(affine(&dev, 3, true)),
        extra: None,
        r#type: zeros(&dev, &[5]),
    };
    let names: Vec<String> = net.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "blocks.0.weight",
            "blocks.0.bias",
            "blocks.1.weight",
            "lm_head.weight",
            "lm_head.bias",
            "type"
        ]
    );
    assert_eq!(net.num_params(), 4 + 2 + 4 + 9 + 3 + 5);
    assert_eq!(net.blocks[0].features, 2);
    let sd = net.state_dict();
    assert_eq!(sd.len(), 6);
    assert_eq!(sd.get("lm_head.weight").unwrap().shape(), &[3, 3]);

    net.eval();
    assert!(!net.probe.training.get());
    net.train();
    assert!(net.probe.training.get());
}

/// nanoGPT's tie: the embedding matrix is also the output projection.
#[derive(Module)]
struct Tied {
    wte: Tensor,
    lm_head: Tensor,
}

#[test]
fn tied_parameter_is_one_leaf_listed_once_saved_twice_gradient_summed() {
    let dev = tang_testing::device();
    let w = param(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let model = Tied {
        wte: w.clone(),
        lm_head: w.clone(),
    };
    let named = model.named_parameters();
    assert_eq!(named.len(), 1);
    assert_eq!(named[0].0, "wte");
    assert_eq!(model.num_params(), 4);
    assert_eq!(model.parameters().len(), 1);

    let sd = model.state_dict();
    let names: Vec<&str> = sd.names().collect();
    assert_eq!(names, ["wte", "lm_head"]);
    let (a, b) = (sd.get("wte").unwrap(), sd.get("lm_head").unwrap());
    assert!(
        a.is_tied_to(b),
        "the writer must see one buffer under two names"
    );

    // loss = sum(x · wte) + sum(x · lm_head): the gradient of the one leaf is both uses.
    let x = Tensor::constant(RawTensor::from_slice(&dev, &[1.0, -1.0], &[1, 2]).unwrap());
    let loss = x
        .matmul(&model.wte)
        .unwrap()
        .sum_all()
        .unwrap()
        .add(&x.matmul(&model.lm_head).unwrap().sum_all().unwrap())
        .unwrap();
    let grads = loss.backward().unwrap();
    assert_eq!(grads.len(), 1);
    // d/dw sum(x·w) = xᵀ 1 = [[1, 1], [-1, -1]]; twice.
    assert_eq!(
        grads.get(&w).unwrap().to_vec().unwrap(),
        vec![2.0, 2.0, -2.0, -2.0]
    );

    // Loading writes in place: the tie survives and both names see the new values.
    let mut new = StateDict::new();
    let v = RawTensor::from_slice(&dev, &[9.0, 8.0, 7.0, 6.0], &[2, 2]).unwrap();
    new.insert("wte", v.clone());
    new.insert("lm_head", v);
    model.load_state_dict(&new, true).unwrap();
    assert_eq!(model.lm_head.to_vec().unwrap(), vec![9.0, 8.0, 7.0, 6.0]);
    assert_eq!(model.wte.id(), model.lm_head.id());
}

#[test]
fn frozen_parameters_get_no_gradient_and_unfreeze() {
    let dev = tang_testing::device();
    let model = Net {
        blocks: vec![affine(&dev, 2, true)],
        probe: ModeProbe {
            training: Cell::new(true),
        },
        head: Box::new(affine(&dev, 2, true)),
        extra: None,
        r#type: zeros(&dev, &[2]),
    };
    model.blocks.requires_grad_(false).unwrap();
    assert!(!model.blocks[0].weight.requires_grad());
    assert!(model.head.weight.requires_grad());
    let x = Tensor::constant(RawTensor::from_slice(&dev, &[1.0, 2.0], &[1, 2]).unwrap());
    let h = x.matmul(&model.blocks[0].weight).unwrap();
    assert!(!h.requires_grad(), "a frozen parameter records nothing");
    let loss = h.matmul(&model.head.weight).unwrap().sum_all().unwrap();
    let grads = loss.backward().unwrap();
    assert!(grads.get(&model.blocks[0].weight).is_none());
    assert!(grads.get(&model.head.weight).is_some());

    model.requires_grad_(true).unwrap();
    assert!(model.blocks[0].weight.requires_grad());
    // An op's result is not a leaf: freezing it is refused.
    let not_leaf = x.matmul(&model.head.weight).unwrap();
    assert!(not_leaf.requires_grad_(false).is_err());
}

#[test]
fn strict_load_lists_every_problem_and_copies_nothing() {
    let dev = tang_testing::device();
    let model = affine(&dev, 2, true);
    let mut sd = StateDict::new();
    // `weight` has the wrong shape, `bias` is missing, `scale` and `extra` are unexpected.
    sd.insert(
        "weight",
        RawTensor::from_slice(&dev, &[1.0, 2.0, 3.0], &[3]).unwrap(),
    );
    sd.insert("scale", RawTensor::zeros(&dev, &[1]).unwrap());
    sd.insert("extra", RawTensor::zeros(&dev, &[1]).unwrap());
    let err = model.load_state_dict(&sd, true).unwrap_err();
    let Error::Keys(keys) = &err else {
        panic!("expected a key error, got {err}");
    };
    assert_eq!(keys.model, "Affine");
    assert_eq!(keys.missing_keys, ["bias"]);
    assert_eq!(keys.unexpected_keys, ["scale", "extra"]);
    assert_eq!(keys.size_mismatches.len(), 1);
    assert_eq!(keys.size_mismatches[0].key, "weight");
    let msg = err.to_string();
    for part in [
        "Missing key(s) in state_dict: \"bias\"",
        "Unexpected key(s) in state_dict: \"scale\", \"extra\"",
        "size mismatch for weight",
    ] {
        assert!(msg.contains(part), "{msg}");
    }
    assert_eq!(
        model.weight.to_vec().unwrap(),
        vec![0.0; 4],
        "nothing copied"
    );

    // Non-strict: missing and unexpected keys are returned, the rest loaded (here from a
    // host F32 tensor, as read from a file).
    let mut partial = StateDict::new();
    partial.insert(
        "weight",
        StateTensor::Host(HostTensor::from_f32(&[1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap()),
    );
    partial.insert("scale", RawTensor::zeros(&dev, &[1]).unwrap());
    let report = model.load_state_dict(&partial, false).unwrap();
    assert_eq!(report.missing_keys, ["bias"]);
    assert_eq!(report.unexpected_keys, ["scale"]);
    assert_eq!(model.weight.to_vec().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    assert!(model.load_state_dict(&partial, true).is_err());
}

#[test]
fn state_dict_round_trips_through_load() {
    let dev = tang_testing::device();
    let a = affine(&dev, 2, true);
    let b = affine(&dev, 2, true);
    tang_nn::autograd::no_grad(|| a.weight.fill_(0.5)).unwrap();
    let report = b.load_state_dict(&a.state_dict(), true).unwrap();
    assert!(report.is_empty());
    assert_eq!(b.weight.to_vec().unwrap(), vec![0.5; 4]);
    // The copy is a copy: writing `a` later leaves `b` alone.
    tang_nn::autograd::no_grad(|| a.weight.fill_(1.0)).unwrap();
    assert_eq!(b.weight.to_vec().unwrap(), vec![0.5; 4]);
}

/// A model in eval mode under `no_grad` records nothing: no graph, no gradient.
#[test]
fn eval_forward_under_no_grad_records_nothing() {
    use tang_nn::nn::{Dropout, Linear, ReLU, Sequential};
    let dev = tang_testing::device();
    let mut rng = tang_nn::rng::SplitMix64::new(0);
    let model = Sequential::new()
        .append(Linear::new(&dev, 3, 4, true, &mut rng).unwrap())
        .append(ReLU)
        .append(Dropout::new(0.5).unwrap())
        .append(Linear::new(&dev, 4, 2, true, &mut rng).unwrap());
    let x = Tensor::constant(RawTensor::from_slice(&dev, &[1.0, 2.0, 3.0], &[1, 3]).unwrap());
    model.eval();
    let a = tang_nn::autograd::no_grad(|| model.forward(&x)).unwrap();
    assert!(!a.requires_grad() && !a.has_grad_fn());
    // Eval is deterministic (dropout off); training mode records.
    let b = tang_nn::autograd::no_grad(|| model.forward(&x)).unwrap();
    assert_eq!(a.to_vec().unwrap(), b.to_vec().unwrap());
    model.train();
    let c = model.forward(&x).unwrap();
    assert!(c.requires_grad() && c.has_grad_fn());
    assert_eq!(model.named_parameters().len(), 4);
    assert_eq!(
        model.state_dict().names().collect::<Vec<_>>(),
        ["0.weight", "0.bias", "3.weight", "3.bias"]
    );
}

#[test]
fn an_integer_entry_is_refused_before_anything_is_copied() {
    let dev = tang_testing::device();
    let model = affine(&dev, 2, true);
    let mut sd = StateDict::new();
    sd.insert(
        "weight",
        RawTensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap(),
    );
    sd.insert(
        "bias",
        StateTensor::Host(HostTensor::from_i64(&[1, 2], &[2]).unwrap()),
    );
    let err = model.load_state_dict(&sd, true).unwrap_err();
    assert!(matches!(err, Error::Safetensors(_)), "{err}");
    assert_eq!(model.weight.to_vec().unwrap(), vec![0.0; 4]);
}

//! PyTorch's keyword arguments as chained setters on the options structs, so that
//! `SGD(params, lr=0.05, momentum=0.9)` is one line:
//! `Sgd::new(model.named_parameters(), SgdOptions::default().lr(0.05).momentum(0.9))?`.
//! The fields stay public; a setter is the field assignment, typed, with no string key.

use super::{AdamOptions, AdamWOptions, SgdOptions};
use crate::macros::setters;

setters!(SgdOptions in optim {
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    maximize: bool,
});

// AdamW takes Adam's keyword arguments but `decoupled_weight_decay`, which it always sets.
setters!(AdamOptions, AdamWOptions in optim {
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    amsgrad: bool,
    maximize: bool,
});

setters!(AdamOptions in optim { decoupled_weight_decay: bool });

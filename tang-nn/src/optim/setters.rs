//! PyTorch's keyword arguments as chained setters on the options structs, so that
//! `SGD(params, lr=0.05, momentum=0.9)` is one line:
//! `Sgd::new(model.named_parameters(), SgdOptions::default().lr(0.05).momentum(0.9))?`.
//! The fields stay public; a setter is the field assignment, typed, with no string key.

use super::{AdamOptions, AdamWOptions, SgdOptions};

/// One `pub fn field(self, value) -> Self` per listed field.
macro_rules! setters {
    ($ty:ident { $($field:ident: $t:ty),* $(,)? }) => {
        impl $ty {
            $(
                #[doc = concat!("These options with `", stringify!($field), "` set (PyTorch's keyword argument of the same name).")]
                ///
                /// ```
                #[doc = concat!("let opts = tang_nn::optim::", stringify!($ty), "::default();")]
                #[doc = concat!("let v = opts.", stringify!($field), ";")]
                #[doc = concat!("assert_eq!(opts.", stringify!($field), "(v), opts);")]
                /// ```
                #[must_use]
                pub fn $field(mut self, $field: $t) -> Self {
                    self.$field = $field;
                    self
                }
            )*
        }
    };
}

setters!(SgdOptions {
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    maximize: bool,
});

setters!(AdamOptions {
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    amsgrad: bool,
    maximize: bool,
    decoupled_weight_decay: bool,
});

setters!(AdamWOptions {
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    weight_decay: f64,
    amsgrad: bool,
    maximize: bool,
});

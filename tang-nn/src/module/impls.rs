//! `Module` for the building blocks: a parameter tensor, and the containers PyTorch's
//! naming knows (`ModuleList`-style `Vec`, an optional child, a boxed child).

use super::{Module, join};
use crate::autograd::Tensor;

/// A tensor is one parameter, named by `prefix` itself (the field that holds it).
impl Module for Tensor {
    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor)) {
        f(prefix, self);
    }

    fn set_training(&self, _training: bool) {}
}

/// Children named `0`, `1`, ... by position, as PyTorch's `ModuleList`.
impl<M: Module> Module for Vec<M> {
    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor)) {
        for (i, child) in self.iter().enumerate() {
            child.visit_parameters(&join(prefix, &i.to_string()), f);
        }
    }

    fn set_training(&self, training: bool) {
        for child in self {
            child.set_training(training);
        }
    }
}

/// An optional child (a bias, a layer that a config may leave out): absent, it lists
/// nothing, as PyTorch's `register_parameter(name, None)`.
impl<M: Module> Module for Option<M> {
    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor)) {
        if let Some(child) = self {
            child.visit_parameters(prefix, f);
        }
    }

    fn set_training(&self, training: bool) {
        if let Some(child) = self {
            child.set_training(training);
        }
    }
}

/// A boxed child (also `Box<dyn Module>`), named as the child itself.
impl<M: Module + ?Sized> Module for Box<M> {
    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor)) {
        (**self).visit_parameters(prefix, f);
    }

    fn set_training(&self, training: bool) {
        (**self).set_training(training);
    }
}

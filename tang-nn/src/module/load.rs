//! Loading a state dict into a module in two phases: [`stage`] reads and checks every
//! entry and uploads every source without touching the module, [`StagedLoad::apply`]
//! copies them in. A caller that loads several things at once (a training checkpoint:
//! weights and optimizer state) stages all of them first, so a refused part leaves
//! everything as it was.

use super::{Error, Module, short_type_name};
use crate::autograd::{Tensor, no_grad};
use crate::safetensors::{IncompatibleKeys, StateDict, StateTensor, check_state_dict};

/// A load that has been checked and whose sources are on the device: only the copies
/// into the parameters remain.
pub(crate) struct StagedLoad {
    copies: Vec<(Tensor, crate::tang_runtime::Tensor)>,
    report: IncompatibleKeys,
}

impl StagedLoad {
    /// Copies every staged source into its parameter (under [`no_grad`]) and returns the
    /// keys the check left out.
    ///
    /// # Errors
    /// [`Error::Autograd`] when a copy fails on the device (the parameters before it have
    /// their new values).
    pub(crate) fn apply(self) -> Result<IncompatibleKeys, Error> {
        for (param, source) in self.copies {
            no_grad(|| param.copy_(&Tensor::constant(source)))?;
        }
        Ok(self.report)
    }
}

/// Checks `state` against `model`'s parameters (as `Module::load_state_dict` documents)
/// and uploads every entry that will be copied; `model` is not changed.
///
/// # Errors
/// As `Module::load_state_dict`, before anything is copied.
pub(crate) fn stage<M: Module + ?Sized>(
    model: &M,
    state: &StateDict,
    strict: bool,
) -> Result<StagedLoad, Error> {
    let mut expected: Vec<(String, Tensor)> = Vec::new();
    model.visit_parameters("", &mut |name, t| {
        expected.push((name.to_string(), t.clone()))
    });
    let shapes = expected
        .iter()
        .map(|(n, t)| (n.as_str(), t.shape().to_vec()));
    let report = check_state_dict(short_type_name::<M>(), shapes, state, strict)?;
    // Every source is read (and uploaded) before the first copy, so a bad entry leaves
    // the module as it was.
    let mut copies = Vec::new();
    for (name, param) in expected {
        let Some(entry) = state.get(&name) else {
            continue;
        };
        let source = match entry {
            StateTensor::Device(t) => t.clone(),
            StateTensor::Host(_) => {
                let values = state.f32_values(&name)?;
                let dev = param.data().device();
                crate::tang_runtime::Tensor::from_slice(dev, &values, param.shape())
                    .map_err(crate::autograd::Error::from)?
            }
        };
        copies.push((param, source));
    }
    Ok(StagedLoad { copies, report })
}

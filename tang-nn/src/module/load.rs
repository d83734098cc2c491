//! Loading a state dict into a module in two phases: [`stage`] reads and checks every
//! entry and uploads every source without touching the module, [`StagedLoad::apply`]
//! copies them in. A caller that loads several things at once (a training checkpoint:
//! weights and optimizer state) stages all of them first, so a refused part leaves
//! everything as it was.

use std::collections::HashSet;

use super::host_tensor::{StateTensor, same_storage};
use super::state_dict::StateDict;
use super::strict::{IncompatibleKeys, check_state_dict};
use super::{Error, Module, short_type_name};
use crate::autograd::{Tensor, no_grad};

/// How the names of tied parameters (one parameter under several names) are matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ties {
    /// Every name is a key of its own (PyTorch's `Module.load_state_dict`).
    EveryName,
    /// One name per tie is a key, the others are filled through it
    /// (`safetensors.torch.load_model`): see [`dropped_tied_names`].
    OneName,
}

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
    ties: Ties,
) -> Result<StagedLoad, Error> {
    let mut expected: Vec<(String, Tensor)> = Vec::new();
    model.visit_parameters("", &mut |name, t| {
        expected.push((name.to_string(), t.clone()))
    });
    if ties == Ties::OneName {
        let dropped = dropped_tied_names(&expected, state);
        expected.retain(|(name, _)| !dropped.contains(name));
    }
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

/// The names of the model's tied parameters that a file need not hold, chosen as
/// `safetensors.torch.load_model` chooses them (`_remove_duplicate_names` with the file's
/// names preferred): of each group of names sharing one parameter, the first in string
/// order among those the file holds is kept (the first of all when it holds none), and
/// the others are dropped. A dropped name is filled through the kept one; one that the
/// file holds anyway is an unexpected key, as in PyTorch. The file's metadata plays no
/// part: it is the caller's to use (`{"format": "pt"}`, a config), so a value that equals
/// a tensor's name means nothing.
fn dropped_tied_names(params: &[(String, Tensor)], state: &StateDict) -> HashSet<String> {
    let mut dropped = HashSet::new();
    let mut seen = vec![false; params.len()];
    for i in 0..params.len() {
        if seen[i] {
            continue;
        }
        let (_, first) = &params[i];
        let mut group: Vec<&str> = Vec::new();
        for (j, (name, t)) in params.iter().enumerate().skip(i) {
            // Tied: one storage, one shape (as the safetensors writer ties entries).
            if same_storage(t.data(), first.data()) && t.shape() == first.shape() {
                seen[j] = true;
                group.push(name);
            }
        }
        if group.len() < 2 {
            continue;
        }
        let keep = group
            .iter()
            .copied()
            .filter(|n| state.contains(n))
            .min()
            .or_else(|| group.iter().copied().min())
            .unwrap_or_default();
        dropped.extend(group.into_iter().filter(|n| *n != keep).map(str::to_string));
    }
    dropped
}

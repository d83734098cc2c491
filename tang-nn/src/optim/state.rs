//! Optimizer state by parameter name, saved and loaded through tang's safetensors files.
//!
//! Layout of a saved optimizer (PyTorch keeps the same things in `optimizer.state_dict()`,
//! keyed by parameter index; tang keys them by parameter name so that a file survives a
//! reordering of the model's parameters):
//! - a tensor `"{param}.{buffer}"` (F32, the parameter's shape) for each state buffer:
//!   `momentum_buffer` (SGD), `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq` (Adam, AdamW);
//! - a tensor `"{param}.step"` (I64, shape `[]`) for Adam's and AdamW's step count;
//! - metadata: `optimizer` (PyTorch's class name), `param_groups` (the number of
//!   groups), and for group `i` `param_groups.{i}.params` (its parameter count) and
//!   `param_groups.{i}.{option}` (each hyperparameter, as PyTorch's `param_groups` keep
//!   them; loading restores them, as `load_state_dict` does).
//!
//! A parameter that has no state in the file (it never had a gradient) starts fresh.

use std::collections::BTreeMap;
use std::path::Path;

use tang_runtime::Tensor;

use super::algorithm::Algorithm;
use super::error::OptimError;
use super::gpu::kernels::copy_state;
use super::optimizer::Optimizer;
use super::param::{Hyper, ParamState};
use crate::safetensors::{
    Checkpoint, FloatDtype, HostTensor, StateDict, StateTensor, read_file, save_file,
};

/// What an optimizer saves: its state tensors and the metadata describing its groups.
///
/// ```
/// use tang_nn::optim::{Adam, AdamOptions};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let w = Tensor::zeros(&dev, &[2])?;
/// let mut opt = Adam::new([("w", w.clone())], AdamOptions::default())?;
/// opt.step(&[("w", &Tensor::full(&dev, &[2], 1.0)?)])?;
/// let state = opt.state_dict()?; // optimizer.state_dict()
/// assert!(state.tensors.contains("w.exp_avg") && state.tensors.contains("w.step"));
/// assert_eq!(state.metadata["optimizer"], "Adam");
/// let mut fresh = Adam::new([("w", w)], AdamOptions::default())?;
/// fresh.load_state_dict(&state)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct OptimizerState {
    /// `"{param}.{key}"` tensors (see the module documentation).
    pub tensors: StateDict,
    /// The optimizer's kind and its groups' hyperparameters.
    pub metadata: BTreeMap<String, String>,
}

fn state_error(detail: impl Into<String>) -> OptimError {
    OptimError::State {
        detail: detail.into(),
    }
}

impl<A: Algorithm> Optimizer<A> {
    /// The optimizer's state by parameter name (the tensors are the live state buffers:
    /// save or copy them before the next step if they must not change).
    ///
    /// ```
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let mut opt = Sgd::new([("w", Tensor::zeros(&dev, &[2])?)], SgdOptions { momentum: 0.9, ..SgdOptions::default() })?;
    /// opt.step(&[("w", &Tensor::full(&dev, &[2], 1.0)?)])?;
    /// let state = opt.state_dict()?; // optimizer.state_dict()
    /// assert_eq!(state.tensors.names().collect::<Vec<_>>(), ["w.momentum_buffer"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`OptimError::Safetensors`] when a step count cannot be stored.
    pub fn state_dict(&self) -> Result<OptimizerState, OptimError> {
        let mut tensors = StateDict::new();
        for p in &self.params {
            if A::COUNTS_STEPS && p.state.step > 0 {
                let step = i64::try_from(p.state.step).unwrap_or(i64::MAX);
                tensors.insert(
                    format!("{}.step", p.name),
                    HostTensor::from_i64(&[step], &[])?,
                );
            }
            for (key, t) in &p.state.buffers {
                tensors.insert(format!("{}.{key}", p.name), t.clone());
            }
        }
        let mut metadata = BTreeMap::new();
        metadata.insert("optimizer".to_string(), A::NAME.to_string());
        metadata.insert("param_groups".to_string(), self.groups.len().to_string());
        for (i, g) in self.groups.iter().enumerate() {
            metadata.insert(
                format!("param_groups.{i}.params"),
                g.names.len().to_string(),
            );
            for (name, value) in g.options.hyperparameters() {
                metadata.insert(format!("param_groups.{i}.{name}"), value.to_string());
            }
        }
        Ok(OptimizerState { tensors, metadata })
    }

    /// Restores state saved by [`Optimizer::state_dict`] (or read back from a file): the
    /// groups' hyperparameters and every parameter's state, matched by name. Everything
    /// is checked before anything changes.
    ///
    /// ```
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let opts = SgdOptions { momentum: 0.9, ..SgdOptions::default() };
    /// let mut a = Sgd::new([("w", Tensor::zeros(&dev, &[2])?)], opts)?;
    /// a.step(&[("w", &Tensor::full(&dev, &[2], 1.0)?)])?;
    /// let mut b = Sgd::new([("w", Tensor::zeros(&dev, &[2])?)], opts)?;
    /// b.load_state_dict(&a.state_dict()?)?; // optimizer.load_state_dict(sd)
    /// assert!(b.state("w").is_some_and(|s| s.buffer("momentum_buffer").is_some()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`OptimError::State`] when the state is of another optimizer, has another number
    /// of groups or group sizes, names an unknown parameter or buffer, or has a buffer
    /// of the wrong shape; [`OptimError::Runtime`] when the device fails.
    pub fn load_state_dict(&mut self, state: &OptimizerState) -> Result<(), OptimError> {
        let meta = |key: &str| {
            state
                .metadata
                .get(key)
                .ok_or_else(|| state_error(format!("the metadata has no {key:?}")))
        };
        let kind = meta("optimizer")?;
        if kind != A::NAME {
            return Err(state_error(format!(
                "it was saved by {kind}, this optimizer is {}",
                A::NAME
            )));
        }
        let groups = meta("param_groups")?;
        if groups != &self.groups.len().to_string() {
            return Err(state_error(format!(
                "it has {groups} parameter groups, this optimizer {}",
                self.groups.len()
            )));
        }
        let mut options = Vec::with_capacity(self.groups.len());
        for (i, g) in self.groups.iter().enumerate() {
            let count = meta(&format!("param_groups.{i}.params"))?;
            if count != &g.names.len().to_string() {
                return Err(state_error(format!(
                    "its group {i} has {count} parameters, this optimizer's {}",
                    g.names.len()
                )));
            }
            let mut o = g.options.clone();
            for (name, _) in g.options.hyperparameters() {
                let key = format!("param_groups.{i}.{name}");
                let text = meta(&key)?;
                if !Hyper::parse(text).is_some_and(|v| o.set_hyperparameter(name, v)) {
                    return Err(state_error(format!("{key} has the invalid value {text:?}")));
                }
            }
            o.validate()?;
            options.push(o);
        }
        let mut states: Vec<ParamState> = vec![ParamState::default(); self.params.len()];
        for (key, tensor) in state.tensors.iter() {
            let (i, field) = self.split_key(key)?;
            let param = &self.params[i].tensor;
            if field == "step" && A::COUNTS_STEPS {
                let step = match tensor {
                    StateTensor::Host(_) => state.tensors.i64_values(key)?,
                    StateTensor::Device(_) => {
                        return Err(state_error(format!("{key} is not an integer tensor")));
                    }
                };
                states[i].step = match step.as_slice() {
                    [s] if *s > 0 => *s as u64,
                    _ => return Err(state_error(format!("{key} is not one positive count"))),
                };
                continue;
            }
            let Some(&name) = A::BUFFERS.iter().find(|b| **b == field) else {
                return Err(state_error(format!(
                    "{key}: {} keeps no state named {field:?} (it keeps {:?})",
                    A::NAME,
                    A::BUFFERS
                )));
            };
            if tensor.shape() != param.shape() {
                return Err(state_error(format!(
                    "{key} has shape {:?}, the parameter {:?}",
                    tensor.shape(),
                    param.shape()
                )));
            }
            let copy = match tensor {
                StateTensor::Device(t) if t.dtype() == tang_runtime::DType::F32 => {
                    if !t.device().same(self.device()) {
                        return Err(OptimError::DeviceMismatch { name: key.into() });
                    }
                    copy_state::launch(self.device(), t)?
                }
                _ => Tensor::from_slice(
                    self.device(),
                    &state.tensors.f32_values(key)?,
                    param.shape(),
                )?,
            };
            states[i].buffers.insert(name, copy);
        }
        // A parameter's state is all or nothing: its step count (where counted) and
        // every buffer its algorithm always keeps.
        for (p, st) in self.params.iter().zip(&states) {
            if st.is_empty() {
                continue;
            }
            let counted = !A::COUNTS_STEPS || st.step > 0;
            if let Some(missing) = A::REQUIRED.iter().find(|b| !st.buffers.contains_key(*b))
                && counted
            {
                return Err(state_error(format!("{:?} has no {missing}", p.name)));
            }
            if !counted {
                return Err(state_error(format!(
                    "{:?} has buffers without a step count",
                    p.name
                )));
            }
        }
        for (g, o) in self.groups.iter_mut().zip(options) {
            g.options = o;
        }
        for (p, s) in self.params.iter_mut().zip(states) {
            p.state = s;
        }
        Ok(())
    }

    /// The parameter index and state field of a saved key `"{param}.{field}"`.
    fn split_key<'k>(&self, key: &'k str) -> Result<(usize, &'k str), OptimError> {
        let (name, field) = key
            .rsplit_once('.')
            .ok_or_else(|| state_error(format!("{key:?} is not \"parameter.field\"")))?;
        let i =
            self.index.get(name).copied().ok_or_else(|| {
                state_error(format!("{key:?} names the unknown parameter {name:?}"))
            })?;
        Ok((i, field))
    }

    /// Saves the state to a safetensors file at `path` (F32 buffers, exact).
    ///
    /// ```no_run
    /// use tang_nn::optim::{AdamW, AdamWOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let opt = AdamW::new([("w", Tensor::zeros(&dev, &[2])?)], AdamWOptions::default())?;
    /// opt.save("optimizer.safetensors")?; // torch.save(optimizer.state_dict(), ...)
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`OptimError::Safetensors`] when the file cannot be written or a buffer cannot be
    /// read back.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), OptimError> {
        let state = self.state_dict()?;
        save_file(path, &state.tensors, FloatDtype::F32, &state.metadata)?;
        Ok(())
    }

    /// Loads state saved by [`Optimizer::save`].
    ///
    /// ```no_run
    /// use tang_nn::optim::{AdamW, AdamWOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let mut opt = AdamW::new([("w", Tensor::zeros(&dev, &[2])?)], AdamWOptions::default())?;
    /// opt.load("optimizer.safetensors")?; // optimizer.load_state_dict(torch.load(...))
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`OptimError::Safetensors`] for an unreadable or malformed file; as
    /// [`Optimizer::load_state_dict`].
    pub fn load(&mut self, path: impl AsRef<Path>) -> Result<(), OptimError> {
        let Checkpoint {
            tensors, metadata, ..
        } = read_file(path)?;
        self.load_state_dict(&OptimizerState { tensors, metadata })
    }
}

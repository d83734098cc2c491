//! The optimizer machinery shared by SGD, Adam and AdamW: registration of named
//! parameters in groups, the step loop (checks first, then one launch per group where the
//! multi-tensor step applies, see `flat.rs`, else one per parameter, all recorded without
//! a host read). The [`Algorithm`] each optimizer runs is defined in `algorithm.rs`, the
//! per-parameter state in `param.rs`.
//!
//! Why parameters are registered at construction and gradients passed by name: a
//! PyTorch optimizer holds its parameters and finds each gradient on `p.grad`; tang
//! tensors carry no gradient slot, so the optimizer holds the parameters (clones share
//! the model's buffers, so updates are seen by the model) and a step is given the
//! gradients keyed by the same names ([`Gradients`]). The names are the model's
//! `state_dict` names, which is also what optimizer state is saved under, and what
//! `loss.backward()` will key its gradients by: it plugs into `step` as it is.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use tang_runtime::{DType, Device, Tensor};

use super::algorithm::Algorithm;
use super::error::OptimError;
use super::flat::{self, FlatGroup};
use super::grads::Gradients;
use super::group::{Group, IntoParam, ParamGroup};
use super::param::{Hyper, Param, ParamState};

/// The next [`Optimizer::uid`].
static NEXT_UID: AtomicU64 = AtomicU64::new(0);

/// An optimizer over named parameters in groups, with algorithm `A`
/// ([`super::Sgd`], [`super::Adam`], [`super::AdamW`]).
///
/// ```
/// use tang_nn::optim::{Sgd, SgdOptions};
/// # use tang_nn::tang_runtime::{Device, Tensor};
/// # let dev = Device::new()?;
/// let w = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?;
/// // torch.optim.SGD([w], lr=0.1); the optimizer shares w's buffer
/// let mut opt = Sgd::new([("w", w.clone())], SgdOptions { lr: 0.1, ..SgdOptions::default() })?;
/// let g = Tensor::from_slice(&dev, &[1.0, 1.0], &[2])?;
/// opt.step(&[("w", &g)])?; // gradients by parameter name
/// assert_eq!(w.to_vec()?, [0.9, 1.9]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Optimizer<A: Algorithm> {
    pub(crate) groups: Vec<Group<A>>,
    /// Every parameter in registration order (group by group).
    pub(crate) params: Vec<Param>,
    /// Group of each parameter.
    pub(crate) group_of: Vec<usize>,
    pub(crate) index: HashMap<String, usize>,
    device: Device,
    /// A one-element tensor holding 1, the clip coefficient of an unclipped step.
    unit: Option<Tensor>,
    /// Per group, its flat state for the multi-tensor step (`flat.rs`), once laid out.
    flat: Vec<Option<FlatGroup>>,
    /// This optimizer's identity for the life of the process (a `GradScaler` keeps its
    /// per-optimizer state under it, as PyTorch's keys it by `id(optimizer)`).
    uid: u64,
}

impl<A: Algorithm> Optimizer<A> {
    /// An optimizer over one group of named parameters with options `defaults`.
    ///
    /// ```
    /// use tang_nn::optim::{Adam, AdamOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let params = [("w", Tensor::zeros(&dev, &[4, 4])?), ("b", Tensor::zeros(&dev, &[4])?)];
    /// let opt = Adam::new(params, AdamOptions { lr: 3e-4, ..AdamOptions::default() })?; // Adam(params, lr=3e-4)
    /// assert_eq!(opt.lr(), 3e-4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Optimizer::with_groups`].
    pub fn new<N: Into<String>, P: IntoParam>(
        params: impl IntoIterator<Item = (N, P)>,
        defaults: A,
    ) -> Result<Self, OptimError> {
        Self::with_groups(vec![ParamGroup::new(params)], defaults)
    }

    /// An optimizer over parameter groups: each group takes `defaults` with its own
    /// overrides (see [`super::decay_groups`] for nanoGPT's decay / no-decay split).
    /// Parameters are updated in place: the tensors are clones sharing the model's buffers.
    ///
    /// ```
    /// use tang_nn::optim::{AdamW, AdamWOptions, ParamGroup};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let groups = vec![
    ///     ParamGroup::new([("w", Tensor::zeros(&dev, &[4, 4])?)]),
    ///     ParamGroup::new([("b", Tensor::zeros(&dev, &[4])?)]).with_weight_decay(0.0),
    /// ];
    /// let opt = AdamW::with_groups(groups, AdamWOptions::default())?;
    /// assert_eq!(opt.groups().len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`OptimError::EmptyParameterList`] with no parameters,
    /// [`OptimError::DuplicateParameter`] / [`OptimError::SharedParameter`] when a name or
    /// a tensor appears twice, [`OptimError::NotF32`], [`OptimError::DeviceMismatch`] when
    /// parameters live on different devices, [`OptimError::InvalidOption`].
    pub fn with_groups(groups: Vec<ParamGroup>, defaults: A) -> Result<Self, OptimError> {
        let Some(device) = groups
            .iter()
            .flat_map(|g| g.params.first())
            .map(|(_, t)| t.device().clone())
            .next()
        else {
            return Err(OptimError::EmptyParameterList);
        };
        let mut opt = Optimizer {
            groups: Vec::with_capacity(groups.len()),
            params: Vec::new(),
            group_of: Vec::new(),
            index: HashMap::new(),
            device,
            unit: None,
            flat: Vec::new(),
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
        };
        for group in groups {
            let mut options = defaults.clone();
            if let Some(lr) = group.lr {
                options.set_hyperparameter("lr", Hyper::Float(lr));
            }
            if let Some(wd) = group.weight_decay {
                options.set_hyperparameter("weight_decay", Hyper::Float(wd));
            }
            options.validate()?;
            let g = opt.groups.len();
            let mut names = Vec::with_capacity(group.params.len());
            let ids = group.ids.into_iter().chain(std::iter::repeat(None));
            for ((name, tensor), id) in group.params.into_iter().zip(ids) {
                opt.register(&name, &tensor)?;
                opt.params.push(Param {
                    name: name.clone(),
                    tensor,
                    id,
                    state: ParamState::default(),
                });
                opt.group_of.push(g);
                names.push(name);
            }
            opt.groups.push(Group { options, names });
            opt.flat.push(None);
        }
        Ok(opt)
    }

    /// This optimizer's identity, unique in the process.
    pub(crate) fn uid(&self) -> u64 {
        self.uid
    }

    /// Checks a new parameter against those registered and indexes it.
    fn register(&mut self, name: &str, tensor: &Tensor) -> Result<(), OptimError> {
        if self.index.contains_key(name) {
            return Err(OptimError::DuplicateParameter { name: name.into() });
        }
        if let Some(p) = self.params.iter().find(|p| p.tensor.same_buffer(tensor)) {
            return Err(OptimError::SharedParameter {
                first: p.name.clone(),
                second: name.into(),
            });
        }
        if tensor.dtype() != DType::F32 {
            return Err(OptimError::NotF32 {
                name: name.into(),
                what: "parameter",
            });
        }
        if !tensor.device().same(&self.device) {
            return Err(OptimError::DeviceMismatch { name: name.into() });
        }
        self.index.insert(name.into(), self.params.len());
        Ok(())
    }

    /// The groups, in construction order.
    ///
    /// ```
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let opt = Sgd::new([("w", Tensor::zeros(&dev, &[2])?)], SgdOptions::default())?;
    /// assert_eq!(opt.groups()[0].options.lr, 1e-3); // optimizer.param_groups[0]["lr"]
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn groups(&self) -> &[Group<A>] {
        &self.groups
    }

    /// The groups, to change their options between steps (a schedule sets `lr` here).
    ///
    /// ```
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let mut opt = Sgd::new([("w", Tensor::zeros(&dev, &[2])?)], SgdOptions::default())?;
    /// opt.groups_mut()[0].options.weight_decay = 1e-4;
    /// assert_eq!(opt.groups()[0].options.weight_decay, 1e-4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn groups_mut(&mut self) -> &mut [Group<A>] {
        &mut self.groups
    }

    /// Sets the learning rate of every group (what a schedule does each step).
    ///
    /// ```
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let mut opt = Sgd::new([("w", Tensor::zeros(&dev, &[2])?)], SgdOptions::default())?;
    /// opt.set_lr(0.05); // for g in opt.param_groups: g["lr"] = 0.05
    /// assert_eq!(opt.lr(), 0.05);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_lr(&mut self, lr: f64) {
        for g in &mut self.groups {
            g.options.set_hyperparameter("lr", Hyper::Float(lr));
        }
    }

    /// The learning rate of the first group (what a log line shows).
    ///
    /// ```
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let opt = Sgd::new([("w", Tensor::zeros(&dev, &[2])?)], SgdOptions { lr: 0.1, ..SgdOptions::default() })?;
    /// println!("lr {:.1e}", opt.lr());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn lr(&self) -> f64 {
        let first = self.groups.first().map(|g| g.options.hyperparameters());
        first
            .into_iter()
            .flatten()
            .find_map(|(name, value)| match (name, value) {
                ("lr", Hyper::Float(lr)) => Some(lr),
                _ => None,
            })
            .unwrap_or(0.0)
    }

    /// The registered parameters by name, in registration order.
    ///
    /// ```
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let opt = Sgd::new([("w", Tensor::zeros(&dev, &[2])?)], SgdOptions::default())?;
    /// let names: Vec<&str> = opt.params().map(|(name, _)| name).collect();
    /// assert_eq!(names, ["w"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn params(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.params.iter().map(|p| (p.name.as_str(), &p.tensor))
    }

    /// The state of parameter `name` (`None` for an unknown name).
    ///
    /// ```
    /// use tang_nn::optim::{Adam, AdamOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let w = Tensor::zeros(&dev, &[2])?;
    /// let mut opt = Adam::new([("w", w)], AdamOptions::default())?;
    /// opt.step(&[("w", &Tensor::full(&dev, &[2], 1.0)?)])?;
    /// let state = opt.state("w").ok_or("w is registered")?; // optimizer.state[w]
    /// assert_eq!(state.step(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn state(&self, name: &str) -> Option<&ParamState> {
        self.index.get(name).map(|&i| &self.params[i].state)
    }

    /// The device of the parameters.
    ///
    /// ```
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let opt = Sgd::new([("w", Tensor::zeros(&dev, &[2])?)], SgdOptions::default())?;
    /// assert!(opt.device().same(&dev));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// One optimization step: updates every parameter that `grads` has a gradient for
    /// (others are skipped, as PyTorch skips `grad is None`), one kernel launch per
    /// parameter, recorded without reading anything back to the host.
    ///
    /// ```
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let (w, b) = (Tensor::full(&dev, &[2], 1.0)?, Tensor::zeros(&dev, &[1])?);
    /// let mut opt = Sgd::new([("w", w.clone()), ("b", b.clone())], SgdOptions { lr: 0.5, ..SgdOptions::default() })?;
    /// let gw = Tensor::full(&dev, &[2], 1.0)?;
    /// opt.step(&[("w", &gw)])?; // b has no gradient: skipped, as PyTorch skips grad None
    /// assert_eq!((w.to_vec()?, b.to_vec()?), (vec![0.5, 0.5], vec![0.0]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`OptimError::InvalidOption`] when a group's options were set out of range,
    /// [`OptimError::GradientShape`], [`OptimError::NotF32`],
    /// [`OptimError::DeviceMismatch`]; checked before anything is launched, so an error
    /// leaves every parameter and state as it was. [`OptimError::Runtime`] when the
    /// device fails.
    pub fn step<G: Gradients + ?Sized>(&mut self, grads: &G) -> Result<(), OptimError> {
        let unit = match &self.unit {
            Some(u) => u.clone(),
            None => {
                let u = Tensor::full(&self.device, &[1], 1.0)?;
                self.unit = Some(u.clone());
                u
            }
        };
        self.step_with_clip_coef(grads, &unit)
    }

    /// [`Optimizer::step`] with every gradient multiplied by `clip_coef` (a one-element
    /// device tensor, e.g. [`super::GradNorm::clip_coef`]) inside the update kernels:
    /// the same result as clipping the gradients in place first, one pass fewer, and
    /// still no host read.
    ///
    /// ```
    /// use tang_nn::optim::{Sgd, SgdOptions, grad_norm};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let w = Tensor::zeros(&dev, &[2])?;
    /// let mut opt = Sgd::new([("w", w.clone())], SgdOptions { lr: 1.0, ..SgdOptions::default() })?;
    /// let g = Tensor::from_slice(&dev, &[3.0, 4.0], &[2])?; // norm 5
    /// let norm = grad_norm([&g], 1.0)?; // clip to norm 1 inside the update
    /// opt.step_with_clip_coef(&[("w", &g)], &norm.clip_coef)?;
    /// let p = w.to_vec()?;
    /// assert!((p[0] + 0.6).abs() < 1e-5 && (p[1] + 0.8).abs() < 1e-5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Optimizer::step`], and [`OptimError::NotScalar`] when `clip_coef` has more
    /// than one element.
    pub fn step_with_clip_coef<G: Gradients + ?Sized>(
        &mut self,
        grads: &G,
        clip_coef: &Tensor,
    ) -> Result<(), OptimError> {
        check_scalar(clip_coef, &self.device, "clip coefficient")?;
        // The parameters change: autocast's f16 copies of them would be stale.
        crate::amp::forget_casts();
        for g in &self.groups {
            g.options.validate()?;
        }
        let mut work = Vec::new();
        for (i, p) in self.params.iter().enumerate() {
            let Some(grad) = grads.grad_of(&p.name, p.id) else {
                continue;
            };
            check_grad(p, grad)?;
            work.push((i, grad));
        }
        // Group by group: the multi-tensor step where it applies, else one launch per
        // parameter.
        for (gi, group) in self.groups.iter().enumerate() {
            let items: Vec<(usize, &Tensor)> = work
                .iter()
                .filter(|(i, _)| self.group_of[*i] == gi)
                .copied()
                .collect();
            let cache = &mut self.flat[gi];
            let options = &group.options;
            if flat::step_group(
                options,
                &mut self.params,
                &items,
                cache,
                clip_coef,
                &self.device,
            )? {
                continue;
            }
            for (i, grad) in items {
                let p = &mut self.params[i];
                options.update(&p.tensor, grad, clip_coef, &mut p.state)?;
            }
        }
        Ok(())
    }
}

/// Checks that `t` is a one-element f32 tensor on `device`.
pub(crate) fn check_scalar(
    t: &Tensor,
    device: &Device,
    what: &'static str,
) -> Result<(), OptimError> {
    if t.len() != 1 {
        return Err(OptimError::NotScalar {
            what,
            shape: t.shape().to_vec(),
        });
    }
    if t.dtype() != DType::F32 {
        return Err(OptimError::NotF32 {
            name: what.into(),
            what: "value",
        });
    }
    if !t.device().same(device) {
        return Err(OptimError::DeviceMismatch { name: what.into() });
    }
    Ok(())
}

fn check_grad(p: &Param, grad: &Tensor) -> Result<(), OptimError> {
    if grad.same_buffer(&p.tensor) {
        return Err(OptimError::GradientIsParameter {
            name: p.name.clone(),
        });
    }
    if grad.shape() != p.tensor.shape() {
        return Err(OptimError::GradientShape {
            name: p.name.clone(),
            param: p.tensor.shape().to_vec(),
            grad: grad.shape().to_vec(),
        });
    }
    if grad.dtype() != DType::F32 {
        return Err(OptimError::NotF32 {
            name: p.name.clone(),
            what: "gradient",
        });
    }
    if !grad.device().same(p.tensor.device()) {
        return Err(OptimError::DeviceMismatch {
            name: p.name.clone(),
        });
    }
    Ok(())
}

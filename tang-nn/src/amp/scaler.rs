//! [`GradScaler`]: PyTorch's dynamic loss scaling (`torch.amp.GradScaler`), with its
//! defaults, its per-optimizer stages and its update rule.
//!
//! Gradients of an f16 product are rounded to f16 in backward, where values under 2^-24
//! vanish; multiplying the loss by a large scale keeps them representable, and the
//! gradients are divided by it again before the optimizer sees them. When the scale is so
//! large that a gradient overflows, the step is skipped and the scale shrinks
//! (`backoff_factor`); after `growth_interval` clean steps in a row it grows
//! (`growth_factor`). The scale lives on the host: the one value a step reads back, the
//! inf/NaN count of the gradients, is what decides both the skip and the update, as
//! PyTorch's `step` reads its `found_inf` with `.item()`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use tang_runtime::Tensor;

use super::AmpError;
use super::unscale::unscale_grads;
use crate::optim::{Algorithm, Gradients, Optimizer};

/// A [`GradScaler`]'s options, with PyTorch's names and defaults
/// (`GradScaler(init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5,
/// growth_interval=2000, enabled=True)`).
///
/// ```
/// use tang_nn::amp::GradScalerOptions;
/// let options = GradScalerOptions::default();
/// assert_eq!((options.init_scale, options.growth_interval), (65536.0, 2000));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradScalerOptions {
    /// The scale to start from (2^16).
    pub init_scale: f64,
    /// What the scale is multiplied by after `growth_interval` clean steps in a row (2).
    pub growth_factor: f64,
    /// What the scale is multiplied by after a step with inf/NaN gradients (0.5).
    pub backoff_factor: f64,
    /// Clean steps in a row before the scale grows (2000).
    pub growth_interval: u64,
    /// When false, [`GradScaler::scale`] returns the loss as it is,
    /// [`GradScaler::step`] steps the optimizer as it is and `update` does nothing (the
    /// same program runs in f32 with the flag off).
    pub enabled: bool,
}

impl Default for GradScalerOptions {
    fn default() -> Self {
        GradScalerOptions {
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            enabled: true,
        }
    }
}

/// A [`GradScaler`]'s state, as PyTorch's `GradScaler.state_dict()` names it (JSON in a
/// checkpoint's trainer state; the same keys as PyTorch's dict).
///
/// ```
/// use tang_nn::amp::{GradScaler, GradScalerOptions};
/// let scaler = GradScaler::new(GradScalerOptions::default())?;
/// let state = scaler.state_dict().ok_or("enabled")?;
/// assert_eq!((state.scale, state.growth_tracker), (65536.0, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GradScalerState {
    /// The current scale.
    pub scale: f64,
    /// See [`GradScalerOptions::growth_factor`].
    pub growth_factor: f64,
    /// See [`GradScalerOptions::backoff_factor`].
    pub backoff_factor: f64,
    /// See [`GradScalerOptions::growth_interval`].
    pub growth_interval: u64,
    /// Clean steps in a row since the scale last changed.
    #[serde(rename = "_growth_tracker")]
    pub growth_tracker: u64,
}

/// Where one optimizer is in the current iteration (PyTorch's `OptState`; absent is
/// `READY`).
#[derive(Debug)]
enum Stage {
    Unscaled,
    Stepped,
}

/// Whether an optimizer's gradients held an inf or NaN: the device count until it is
/// read, then the answer.
#[derive(Debug)]
enum FoundInf {
    Pending(Tensor),
    Known(bool),
}

impl FoundInf {
    fn get(&mut self) -> Result<bool, AmpError> {
        if let FoundInf::Pending(count) = self {
            let found = count.to_vec()?.first().is_some_and(|&c| c > 0.0);
            *self = FoundInf::Known(found);
        }
        Ok(matches!(self, FoundInf::Known(true)))
    }
}

/// PyTorch's `GradScaler` (see the module documentation). Gradients are passed by name,
/// as to [`Optimizer::step`]: `unscale_` and `step` take the optimizer and the gradients
/// `backward` returned.
///
/// ```
/// use tang_nn::amp::{GradScaler, GradScalerOptions};
/// # use tang_nn::{Device, Module, Tensor, rng::SplitMix64};
/// use tang_nn::nn::Linear;
/// use tang_nn::optim::{AdamW, AdamWOptions, clip_grad_norm_};
/// # let dev = Device::new()?;
/// let fc = Linear::new(&dev, 4, 2, true, &mut SplitMix64::new(0))?;
/// let mut opt = AdamW::new(fc.named_parameters(), AdamWOptions::default())?;
/// let mut scaler = GradScaler::new(GradScalerOptions::default())?; // torch.amp.GradScaler()
/// let x = Tensor::full(&dev, &[3, 4], 0.5)?;
/// let loss = fc.forward(&x)?.square()?.mean_all()?;
/// let grads = scaler.scale(&loss)?.backward()?; // scaler.scale(loss).backward()
/// scaler.unscale_(&opt, &grads)?; // scaler.unscale_(opt)
/// clip_grad_norm_(grads.iter().map(|(_, g)| g), 1.0)?; // clip the true gradients
/// assert!(scaler.step(&mut opt, &grads)?); // scaler.step(opt): taken, nothing overflowed
/// scaler.update()?; // scaler.update()
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct GradScaler {
    options: GradScalerOptions,
    /// The scale, an f32 as PyTorch's `_scale` tensor is.
    scale: f32,
    growth_tracker: u64,
    /// The optimizers unscaled or stepped since the last `update`, by [`Optimizer::uid`].
    per_optimizer: HashMap<u64, (Stage, FoundInf)>,
}

impl GradScaler {
    /// A scaler with `options`.
    ///
    /// ```
    /// use tang_nn::amp::{GradScaler, GradScalerOptions};
    /// let scaler = GradScaler::new(GradScalerOptions { init_scale: 1024.0, ..GradScalerOptions::default() })?;
    /// assert_eq!(scaler.get_scale(), 1024.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`AmpError::InvalidOption`] for an `init_scale` that is not a positive finite f32,
    /// a `growth_factor` not above 1, a `backoff_factor` not in (0, 1), or a zero
    /// `growth_interval` (PyTorch refuses the factors; the others would never scale).
    pub fn new(options: GradScalerOptions) -> Result<GradScaler, AmpError> {
        check_options(
            options.init_scale,
            options.growth_factor,
            options.backoff_factor,
            options.growth_interval,
        )?;
        Ok(GradScaler {
            options,
            scale: options.init_scale as f32,
            growth_tracker: 0,
            per_optimizer: HashMap::new(),
        })
    }

    /// Whether the scaler scales (see [`GradScalerOptions::enabled`]).
    ///
    /// ```
    /// use tang_nn::amp::{GradScaler, GradScalerOptions};
    /// let scaler = GradScaler::new(GradScalerOptions { enabled: false, ..GradScalerOptions::default() })?;
    /// assert!(!scaler.is_enabled());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_enabled(&self) -> bool {
        self.options.enabled
    }

    /// The current scale (1 when disabled, as PyTorch's `get_scale`).
    ///
    /// ```
    /// use tang_nn::amp::{GradScaler, GradScalerOptions};
    /// assert_eq!(GradScaler::new(GradScalerOptions::default())?.get_scale(), 65536.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_scale(&self) -> f64 {
        if self.options.enabled {
            f64::from(self.scale)
        } else {
            1.0
        }
    }

    /// `loss * scale`, recorded for backward (the loss as it is when disabled).
    ///
    /// ```
    /// use tang_nn::amp::{GradScaler, GradScalerOptions};
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let scaler = GradScaler::new(GradScalerOptions { init_scale: 8.0, ..GradScalerOptions::default() })?;
    /// let loss = Tensor::full(&dev, &[1], 0.25)?;
    /// assert_eq!(scaler.scale(&loss)?.to_vec()?, [2.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`AmpError::Autograd`] when the multiplication fails (a u32 tensor).
    pub fn scale(
        &self,
        loss: &crate::autograd::Tensor,
    ) -> Result<crate::autograd::Tensor, AmpError> {
        if !self.options.enabled {
            return Ok(loss.clone());
        }
        Ok(loss.mul_scalar(self.scale)?)
    }

    /// Divides the gradients of `optimizer`'s parameters in `grads` by the scale, in
    /// place, and counts their infinite and NaN elements on the device (nothing is read
    /// back). Call it before clipping or reading the gradients; [`GradScaler::step`] then
    /// does not unscale again. Once per optimizer per iteration, as in PyTorch.
    ///
    /// ```
    /// use tang_nn::amp::{GradScaler, GradScalerOptions};
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let w = Tensor::zeros(&dev, &[2])?;
    /// let opt = Sgd::new([("w", w)], SgdOptions::default())?;
    /// let mut scaler = GradScaler::new(GradScalerOptions { init_scale: 4.0, ..GradScalerOptions::default() })?;
    /// let g = Tensor::from_slice(&dev, &[4.0, 8.0], &[2])?; // gradients of the scaled loss
    /// scaler.unscale_(&opt, &[("w", &g)])?;
    /// assert_eq!(g.to_vec()?, [1.0, 2.0]);
    /// assert!(scaler.unscale_(&opt, &[("w", &g)]).is_err()); // twice in one iteration
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`AmpError::AlreadyUnscaled`] or [`AmpError::UnscaleAfterStep`] when this
    /// optimizer was unscaled or stepped since the last [`GradScaler::update`];
    /// [`AmpError::Optim`] for a gradient that is not f32 or on another device, or when
    /// the device fails.
    pub fn unscale_<A: Algorithm, G: Gradients + ?Sized>(
        &mut self,
        optimizer: &Optimizer<A>,
        grads: &G,
    ) -> Result<(), AmpError> {
        if !self.options.enabled {
            return Ok(());
        }
        match self.per_optimizer.get(&optimizer.uid()) {
            Some((Stage::Unscaled, _)) => return Err(AmpError::AlreadyUnscaled),
            Some((Stage::Stepped, _)) => return Err(AmpError::UnscaleAfterStep),
            None => {}
        }
        let tensors: Vec<&Tensor> = optimizer
            .params
            .iter()
            .filter_map(|p| grads.grad_of(&p.name, p.id))
            .collect();
        // PyTorch's `inv_scale = scale.double().reciprocal().float()`.
        let inv_scale = (1.0 / f64::from(self.scale)) as f32;
        let found = match unscale_grads(&tensors, inv_scale)? {
            Some(count) => FoundInf::Pending(count),
            None => FoundInf::Known(false),
        };
        self.per_optimizer
            .insert(optimizer.uid(), (Stage::Unscaled, found));
        Ok(())
    }

    /// Steps `optimizer` with `grads` unless they held an inf or NaN (then the step is
    /// skipped: parameters and optimizer state stay as they were), unscaling them first
    /// when [`GradScaler::unscale_`] was not called. Returns whether the step was taken.
    /// Reads one value back from the device (the inf/NaN count), as PyTorch's `step` does.
    ///
    /// ```
    /// use tang_nn::amp::{GradScaler, GradScalerOptions};
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let w = Tensor::zeros(&dev, &[2])?;
    /// let mut opt = Sgd::new([("w", w.clone())], SgdOptions { lr: 1.0, ..SgdOptions::default() })?;
    /// let mut scaler = GradScaler::new(GradScalerOptions::default())?;
    /// let g = Tensor::from_slice(&dev, &[f32::INFINITY, 1.0], &[2])?; // an overflow
    /// assert!(!scaler.step(&mut opt, &[("w", &g)])?); // skipped
    /// scaler.update()?;
    /// assert_eq!((w.to_vec()?, scaler.get_scale()), (vec![0.0, 0.0], 32768.0)); // backed off
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`AmpError::AlreadyStepped`] when this optimizer was stepped since the last
    /// [`GradScaler::update`]; as [`GradScaler::unscale_`] and [`Optimizer::step`].
    pub fn step<A: Algorithm, G: Gradients + ?Sized>(
        &mut self,
        optimizer: &mut Optimizer<A>,
        grads: &G,
    ) -> Result<bool, AmpError> {
        self.step_by(optimizer, grads, |opt| opt.step(grads))
    }

    /// [`GradScaler::step`] through [`Optimizer::step_with_clip_coef`]: the gradients
    /// times `clip_coef` (a one-element device tensor, e.g. the
    /// [`GradNorm::clip_coef`](crate::optim::GradNorm::clip_coef) of the gradients
    /// unscaled by [`GradScaler::unscale_`]) inside the update kernels.
    ///
    /// ```
    /// use tang_nn::amp::{GradScaler, GradScalerOptions};
    /// use tang_nn::optim::{Sgd, SgdOptions, grad_norm};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let w = Tensor::zeros(&dev, &[2])?;
    /// let mut opt = Sgd::new([("w", w.clone())], SgdOptions { lr: 1.0, ..SgdOptions::default() })?;
    /// let mut scaler = GradScaler::new(GradScalerOptions { init_scale: 2.0, ..GradScalerOptions::default() })?;
    /// let g = Tensor::from_slice(&dev, &[6.0, 8.0], &[2])?; // the scaled gradient of (3, 4)
    /// scaler.unscale_(&opt, &[("w", &g)])?; // unscale first, then clip
    /// let norm = grad_norm([&g], 1.0)?;
    /// assert!(scaler.step_with_clip_coef(&mut opt, &[("w", &g)], &norm.clip_coef)?);
    /// let p = w.to_vec()?;
    /// assert!((p[0] + 0.6).abs() < 1e-5 && (p[1] + 0.8).abs() < 1e-5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`GradScaler::step`] and [`Optimizer::step_with_clip_coef`].
    pub fn step_with_clip_coef<A: Algorithm, G: Gradients + ?Sized>(
        &mut self,
        optimizer: &mut Optimizer<A>,
        grads: &G,
        clip_coef: &Tensor,
    ) -> Result<bool, AmpError> {
        self.step_by(optimizer, grads, |opt| {
            opt.step_with_clip_coef(grads, clip_coef)
        })
    }

    /// PyTorch's `step` with the optimizer's own step as `update`.
    fn step_by<A: Algorithm, G: Gradients + ?Sized>(
        &mut self,
        optimizer: &mut Optimizer<A>,
        grads: &G,
        update: impl FnOnce(&mut Optimizer<A>) -> Result<(), crate::optim::OptimError>,
    ) -> Result<bool, AmpError> {
        if !self.options.enabled {
            update(optimizer)?;
            return Ok(true);
        }
        let uid = optimizer.uid();
        match self.per_optimizer.get(&uid) {
            Some((Stage::Stepped, _)) => return Err(AmpError::AlreadyStepped),
            Some((Stage::Unscaled, _)) => {}
            None => self.unscale_(optimizer, grads)?,
        }
        let Some((stage, found)) = self.per_optimizer.get_mut(&uid) else {
            return Err(AmpError::NoInfChecks);
        };
        let skip = found.get()?;
        *stage = Stage::Stepped;
        if !skip {
            update(optimizer)?;
        }
        Ok(!skip)
    }

    /// Updates the scale from this iteration's inf/NaN checks (PyTorch's
    /// `_amp_update_scale_`): after an inf or NaN in any optimizer's gradients the scale
    /// is multiplied by `backoff_factor` and the count of clean steps restarts; after
    /// `growth_interval` clean steps in a row it is multiplied by `growth_factor` (unless
    /// that overflows f32). Then every optimizer may be unscaled and stepped again. Does
    /// nothing when disabled.
    ///
    /// ```
    /// use tang_nn::amp::{GradScaler, GradScalerOptions};
    /// use tang_nn::optim::{Sgd, SgdOptions};
    /// # use tang_nn::tang_runtime::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let mut opt = Sgd::new([("w", Tensor::zeros(&dev, &[1])?)], SgdOptions::default())?;
    /// let options = GradScalerOptions { init_scale: 4.0, growth_interval: 2, ..GradScalerOptions::default() };
    /// let mut scaler = GradScaler::new(options)?;
    /// for _ in 0..2 {
    ///     let g = Tensor::full(&dev, &[1], 1.0)?;
    ///     scaler.step(&mut opt, &[("w", &g)])?;
    ///     scaler.update()?;
    /// }
    /// assert_eq!(scaler.get_scale(), 8.0); // two clean steps: grown
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`AmpError::NoInfChecks`] when no optimizer was stepped or unscaled since the last
    /// update; [`AmpError::Optim`] when reading a pending check fails.
    pub fn update(&mut self) -> Result<(), AmpError> {
        if !self.options.enabled {
            return Ok(());
        }
        if self.per_optimizer.is_empty() {
            return Err(AmpError::NoInfChecks);
        }
        let mut found_inf = false;
        for (_, found) in self.per_optimizer.values_mut() {
            found_inf |= found.get()?;
        }
        (self.scale, self.growth_tracker) =
            updated_scale(self.scale, self.growth_tracker, found_inf, &self.options);
        self.per_optimizer.clear();
        Ok(())
    }

    /// The scale, the options that change it and the count of clean steps (PyTorch's
    /// `state_dict()`); `None` when disabled (PyTorch's is empty then).
    ///
    /// ```
    /// use tang_nn::amp::{GradScaler, GradScalerOptions};
    /// let scaler = GradScaler::new(GradScalerOptions::default())?;
    /// let json = serde_json::to_string(&scaler.state_dict())?;
    /// assert!(json.contains("\"_growth_tracker\":0")); // PyTorch's key
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn state_dict(&self) -> Option<GradScalerState> {
        self.options.enabled.then_some(GradScalerState {
            scale: f64::from(self.scale),
            growth_factor: self.options.growth_factor,
            backoff_factor: self.options.backoff_factor,
            growth_interval: self.options.growth_interval,
            growth_tracker: self.growth_tracker,
        })
    }

    /// Restores a [`GradScaler::state_dict`]: the scale, the factors, the interval and
    /// the count of clean steps (PyTorch's `load_state_dict`). Does nothing when
    /// disabled, as in PyTorch.
    ///
    /// ```
    /// use tang_nn::amp::{GradScaler, GradScalerOptions, GradScalerState};
    /// let mut scaler = GradScaler::new(GradScalerOptions::default())?;
    /// let saved = GradScalerState { scale: 512.0, growth_factor: 2.0, backoff_factor: 0.5, growth_interval: 2000, growth_tracker: 7 };
    /// scaler.load_state_dict(&saved)?;
    /// assert_eq!(scaler.state_dict(), Some(saved));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`AmpError::InvalidOption`] when a value is out of the range
    /// [`GradScaler::new`] accepts (the state is left as it was).
    pub fn load_state_dict(&mut self, state: &GradScalerState) -> Result<(), AmpError> {
        if !self.options.enabled {
            return Ok(());
        }
        check_options(
            state.scale,
            state.growth_factor,
            state.backoff_factor,
            state.growth_interval,
        )?;
        self.options.init_scale = state.scale;
        self.options.growth_factor = state.growth_factor;
        self.options.backoff_factor = state.backoff_factor;
        self.options.growth_interval = state.growth_interval;
        self.scale = state.scale as f32;
        self.growth_tracker = state.growth_tracker;
        Ok(())
    }
}

/// PyTorch's `_amp_update_scale_` (its CUDA kernel's arithmetic: the product in double,
/// stored as float; a growth that would overflow f32 is not taken).
fn updated_scale(
    scale: f32,
    growth_tracker: u64,
    found_inf: bool,
    options: &GradScalerOptions,
) -> (f32, u64) {
    if found_inf {
        return ((f64::from(scale) * options.backoff_factor) as f32, 0);
    }
    let successful = growth_tracker + 1;
    if successful < options.growth_interval {
        return (scale, successful);
    }
    let grown = (f64::from(scale) * options.growth_factor) as f32;
    (if grown.is_finite() { grown } else { scale }, 0)
}

/// Checks a scale and the options that change it.
fn check_options(
    scale: f64,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: u64,
) -> Result<(), AmpError> {
    let invalid = |option, value: String, requirement| AmpError::InvalidOption {
        option,
        value,
        requirement,
    };
    if !(scale > 0.0 && (scale as f32).is_finite()) {
        return Err(invalid(
            "init_scale",
            scale.to_string(),
            "positive and finite as an f32",
        ));
    }
    // NaN fails both comparisons.
    if !(growth_factor > 1.0 && growth_factor.is_finite()) {
        return Err(invalid(
            "growth_factor",
            growth_factor.to_string(),
            "finite and above 1.0",
        ));
    }
    if !(backoff_factor > 0.0 && backoff_factor < 1.0) {
        return Err(invalid(
            "backoff_factor",
            backoff_factor.to_string(),
            "between 0 and 1.0, exclusive",
        ));
    }
    if growth_interval == 0 {
        return Err(invalid("growth_interval", "0".into(), "at least 1"));
    }
    Ok(())
}

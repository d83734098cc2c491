//! `backward`: an iterative topological order from the loss, then each op's backward in
//! reverse order, summing gradients that meet at a tensor and freeing every node's saved
//! state as soon as its backward has run.

use std::collections::{HashMap, HashSet};

use tang_runtime::ops;

use super::Error;
use super::tensor::{GradFn, RawTensor, Tensor, TensorId};

/// The gradients of one backward pass: one per parameter the loss reaches, on the GPU,
/// keyed by the parameter's [`TensorId`].
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// let w = Tensor::from_slice(&dev, &[2.0], &[1])?.into_parameter();
/// let frozen = Tensor::from_slice(&dev, &[5.0], &[1])?.into_parameter();
/// let grads = w.mul(&w)?.sum_all()?.backward()?; // d(w²)/dw = 2w
/// assert_eq!(grads.get(&w).map(|g| g.to_vec()).transpose()?, Some(vec![4.0]));
/// assert!(grads.get(&frozen).is_none()); // the loss does not reach it
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct Gradients {
    map: HashMap<TensorId, RawTensor>,
}

impl Gradients {
    /// The gradient of `t` (`None` when the loss does not depend on it), as a constant
    /// sharing the gradient's buffer.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::from_slice(&dev, &[3.0], &[1])?.into_parameter();
    /// let grads = w.sum_all()?.backward()?;
    /// let dw = grads.get(&w).ok_or("w has no gradient")?; // torch: w.grad
    /// assert_eq!(dw.to_vec()?, [1.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, t: &Tensor) -> Option<Tensor> {
        self.map.get(&t.id()).map(|g| Tensor::constant(g.clone()))
    }

    /// The gradient of the tensor with identity `id`.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::from_slice(&dev, &[3.0], &[1])?.into_parameter();
    /// let grads = w.sum_all()?.backward()?;
    /// assert!(grads.get_id(w.id()).is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get_id(&self, id: TensorId) -> Option<&RawTensor> {
        self.map.get(&id)
    }

    /// Takes the gradient of `t` out of the set.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::from_slice(&dev, &[3.0], &[1])?.into_parameter();
    /// let mut grads = w.sum_all()?.backward()?;
    /// let dw = grads.remove(&w).ok_or("w has no gradient")?; // the buffer is now ours
    /// assert!(grads.is_empty() && dw.to_vec()? == [1.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove(&mut self, t: &Tensor) -> Option<RawTensor> {
        self.map.remove(&t.id())
    }

    /// How many parameters have a gradient.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let a = Tensor::zeros(&dev, &[1])?.into_parameter();
    /// let b = Tensor::zeros(&dev, &[1])?.into_parameter();
    /// assert_eq!(a.add(&b)?.sum_all()?.backward()?.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether no parameter has a gradient.
    ///
    /// ```
    /// assert!(tang_nn::autograd::Gradients::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every `(parameter id, gradient)`, in no particular order.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::zeros(&dev, &[2])?.into_parameter();
    /// for (id, grad) in w.sum_all()?.backward()?.iter() {
    ///     assert_eq!((id, grad.shape()), (w.id(), &[2][..]));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (TensorId, &RawTensor)> {
        self.map.iter().map(|(id, g)| (*id, g))
    }

    /// Adds the gradients of another backward pass into these, on the GPU: what
    /// PyTorch's `.grad` does over several `backward()` calls (gradient accumulation
    /// over micro-batches). A parameter only `other` reaches takes its gradient as is.
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let w = Tensor::from_slice(&dev, &[2.0], &[1])?.into_parameter();
    /// let mut grads = w.sum_all()?.backward()?;
    /// grads.accumulate(w.mul(&w)?.sum_all()?.backward()?)?; // 1 + 2w
    /// grads.scale(0.5)?; // the mean over two micro-batches
    /// assert_eq!(grads.get(&w).ok_or("no gradient")?.to_vec()?, [2.5]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when two gradients of one parameter differ in shape (they
    /// came from different models) or the device fails.
    pub fn accumulate(&mut self, other: Gradients) -> Result<(), Error> {
        for (id, g) in other.map {
            match self.map.get(&id) {
                Some(mine) => ops::add_(mine, &g, 1.0)?,
                None => {
                    self.map.insert(id, g);
                }
            }
        }
        Ok(())
    }

    /// The largest absolute difference between this set's gradient of `t` and `other`'s
    /// (PyTorch: `(g1 - g2).abs().max().item()`), read back to the host: how to check that
    /// two ways of computing one gradient agree.
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let w = Tensor::from_slice(&dev, &[2.0, 3.0], &[2])?.into_parameter();
    /// let a = w.sum_all()?.backward()?; // [1, 1]
    /// let b = w.mul(&w)?.sum_all()?.backward()?; // [4, 6]
    /// assert_eq!(a.max_abs_diff(&b, &w)?, 5.0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::MissingGradient`] when either set has no gradient of `t`;
    /// [`Error::Runtime`] when the shapes differ or the device fails.
    pub fn max_abs_diff(&self, other: &Gradients, t: &Tensor) -> Result<f32, Error> {
        let missing = || Error::MissingGradient {
            shape: t.shape().to_vec(),
        };
        let a = self.get(t).ok_or_else(missing)?;
        let b = other.get(t).ok_or_else(missing)?;
        let diff = a.sub(&b)?.abs()?.to_vec()?;
        Ok(diff.into_iter().fold(0.0, f32::max))
    }

    /// Sets the gradient of the parameter with identity `id` (data-parallel training
    /// gives a parameter this rank's pass did not reach the other ranks' mean).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn insert(&mut self, id: TensorId, grad: RawTensor) {
        self.map.insert(id, grad);
    }

    /// Multiplies every gradient by `factor` in place (`1 / micro_batches` after
    /// [`Gradients::accumulate`], to average instead of sum).
    ///
    /// ```
    /// # use tang_nn::{Device, Tensor};
    /// # let dev = Device::new()?;
    /// let w = Tensor::from_slice(&dev, &[2.0], &[1])?.into_parameter();
    /// let mut grads = w.sum_all()?.backward()?;
    /// grads.scale(0.25)?;
    /// assert_eq!(grads.get(&w).ok_or("no gradient")?.to_vec()?, [0.25]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Runtime`] when the device fails.
    pub fn scale(&mut self, factor: f32) -> Result<(), Error> {
        for g in self.map.values() {
            ops::mul_(g, factor)?;
        }
        Ok(())
    }
}

impl Tensor {
    /// The gradients of this one-element tensor (the loss) with respect to every
    /// parameter it depends on, computed by GPU kernels with no read back to the host.
    /// Frees the graph's saved state as it goes: a second `backward` through the same
    /// graph is [`Error::GraphFreed`].
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::from_slice(&dev, &[1.0, -1.0], &[2])?.into_parameter();
    /// let loss = w.relu()?.sum_all()?;
    /// let grads = loss.backward()?; // torch: loss.backward(); w.grad
    /// assert_eq!(grads.get(&w).ok_or("no gradient")?.to_vec()?, [1.0, 0.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NotScalar`] unless the tensor has one element; [`Error::NoGradient`] when
    /// it requires no grad; [`Error::ModifiedAfterSave`] when a tensor an op saved was
    /// written in place afterwards (checked before any kernel runs);
    /// [`Error::GraphFreed`]; [`Error::Runtime`] from a backward kernel.
    pub fn backward(&self) -> Result<Gradients, Error> {
        self.backward_hooked(&mut |_, _| {})
    }

    /// [`Tensor::backward`] calling `on_final(id, grad)` as soon as a parameter's
    /// gradient is final, before the rest of the pass runs: where data-parallel training
    /// starts the reduction of a bucket of gradients while backward goes on, as
    /// PyTorch's DDP does from its autograd hooks.
    pub(crate) fn backward_hooked(
        &self,
        on_final: &mut dyn FnMut(TensorId, &RawTensor),
    ) -> Result<Gradients, Error> {
        if self.data().len() != 1 {
            return Err(Error::NotScalar {
                shape: self.shape().to_vec(),
            });
        }
        if !self.requires_grad() {
            return Err(Error::NoGradient);
        }
        let seed = ops::full(self.data().device(), self.shape(), 1.0)?;
        self.backward_from(seed, on_final)
    }

    /// As [`Tensor::backward`] with the gradient of the output given (any shape, the
    /// tensor's own): PyTorch's `y.backward(gradient)`.
    ///
    /// ```
    /// # use tang_nn::autograd::{RawTensor, Tensor};
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?.into_parameter();
    /// let y = w.mul(&w)?;
    /// let grads = y.backward_with(RawTensor::from_slice(&dev, &[1.0, 0.5], &[2])?)?; // y.backward(g)
    /// assert_eq!(grads.get(&w).ok_or("no gradient")?.to_vec()?, [2.0, 2.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::backward`], and [`Error::Runtime`] when `grad_out`'s shape differs.
    pub fn backward_with(&self, grad_out: RawTensor) -> Result<Gradients, Error> {
        if !self.requires_grad() {
            return Err(Error::NoGradient);
        }
        if grad_out.shape() != self.shape() {
            return Err(tang_runtime::Error::ShapeMismatch {
                op: "backward".into(),
                detail: format!(
                    "the output gradient has shape {:?}, the tensor {:?}; pass one of the tensor's shape",
                    grad_out.shape(),
                    self.shape()
                ),
            }
            .into());
        }
        // `grad_out` is the caller's: copy it, so no gradient handed back is the
        // caller's own tensor.
        self.backward_from(ops::clone(&grad_out)?, &mut |_, _| {})
    }

    /// The backward pass from `grad_out`, a tensor of this one's shape owned by the
    /// pass, calling `on_final` with each parameter's gradient once it is final.
    fn backward_from(
        &self,
        grad_out: RawTensor,
        on_final: &mut dyn FnMut(TensorId, &RawTensor),
    ) -> Result<Gradients, Error> {
        let order = topological_order(self)?;
        let mut pending: HashMap<TensorId, RawTensor> = HashMap::new();
        pending.insert(self.id(), grad_out);
        let mut grads = Gradients::default();
        for t in &order {
            let grad = pending.remove(&t.id());
            if t.is_leaf() {
                if let Some(mut g) = grad {
                    // A gradient handed on unchanged may share its bytes with another
                    // one: each handed back has its own, so writing into one (clipping)
                    // never changes another. (Disjoint views of one buffer, as a layer
                    // norm's weight and bias gradients, need no copy.)
                    // Only a gradient whose buffer has other handles needs the search.
                    let mut others = pending.values().chain(grads.map.values());
                    if !g.is_sole_owner() && others.any(|o| o.overlaps(&g)) {
                        g = ops::clone(&g)?;
                    }
                    on_final(t.id(), &g);
                    grads.map.insert(t.id(), g);
                }
                continue;
            }
            // Taking the entry frees the saved state and the references to the inputs
            // once this node's backward is done.
            let Some(grad_fn) = t.node.grad_fn().take() else {
                continue;
            };
            let Some(grad) = grad else {
                continue;
            };
            let input_grads = grad_fn.op.backward(grad, &grad_fn.inputs)?;
            accumulate(&mut pending, &grad_fn, input_grads)?;
        }
        Ok(grads)
    }
}

/// Adds each input's gradient to what it already has. A backward may hand on views of
/// its `grad_out` (a reshape, both gradients of an add) for several inputs, so stored
/// gradients may share a buffer: a sum goes in place only into a gradient that is the
/// sole owner of its buffer, and out of place otherwise (copy on write), so summing never
/// writes through to another gradient or to a tensor the user holds.
fn accumulate(
    pending: &mut HashMap<TensorId, RawTensor>,
    grad_fn: &GradFn,
    input_grads: Vec<Option<RawTensor>>,
) -> Result<(), Error> {
    for (input, grad) in grad_fn.inputs.iter().zip(input_grads) {
        let Some(mut grad) = grad else { continue };
        if !input.requires_grad() {
            continue;
        }
        // A gradient has its tensor's dtype (PyTorch's rule): an f16 activation's is f16,
        // an f32 bias's f32 even where autocast computed it from f16 values.
        if grad.dtype() != input.data().dtype() {
            grad = ops::to_dtype(&grad, input.data().dtype())?;
        }
        match pending.get_mut(&input.id()) {
            Some(sum) if sum.is_sole_owner() => ops::add_(sum, &grad, 1.0)?,
            Some(sum) => *sum = ops::add(sum, &grad)?,
            None => {
                pending.insert(input.id(), grad);
            }
        }
    }
    Ok(())
}

/// The tensors requiring grad that `root` depends on, each after every tensor that uses
/// it (reverse post-order of a depth-first search kept on the heap, so a 100,000-op
/// chain does not grow the stack). Fails with `ModifiedAfterSave` or `GraphFreed` before
/// any backward kernel runs.
fn topological_order(root: &Tensor) -> Result<Vec<Tensor>, Error> {
    let mut seen: HashSet<TensorId> = HashSet::new();
    let mut post: Vec<Tensor> = Vec::new();
    // (tensor, its inputs requiring grad, the next input to visit)
    let mut stack: Vec<(Tensor, Vec<Tensor>, usize)> = Vec::new();
    let enter = |t: &Tensor| -> Result<Vec<Tensor>, Error> {
        if t.is_leaf() {
            return Ok(Vec::new());
        }
        let guard = t.node.grad_fn();
        let Some(grad_fn) = guard.as_ref() else {
            return Err(Error::GraphFreed);
        };
        grad_fn.check_versions()?;
        Ok(grad_fn
            .inputs
            .iter()
            .filter(|i| i.requires_grad())
            .cloned()
            .collect())
    };
    seen.insert(root.id());
    stack.push((root.clone(), enter(root)?, 0));
    while let Some((_, inputs, next)) = stack.last_mut() {
        if let Some(input) = inputs.get(*next).cloned() {
            *next += 1;
            if seen.insert(input.id()) {
                let children = enter(&input)?;
                stack.push((input, children, 0));
            }
        } else if let Some((t, _, _)) = stack.pop() {
            post.push(t);
        }
    }
    post.reverse();
    Ok(post)
}

//! The recording tensor: a runtime tensor plus, for an op's result, the node that says how
//! to go back. The graph is owned by the tensors that use it (candle's design): it lives
//! as long as the loss (or any tensor made from it) does and is freed when they drop or
//! when `backward` has run through it.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::Error;
use super::op::Op;

/// The runtime tensor a [`Tensor`] wraps (device buffer, shape, element type).
///
/// ```
/// use tang_nn::autograd::{RawTensor, Tensor};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let raw = RawTensor::from_slice(&dev, &[1.0, 2.0], &[2])?; // a plain device buffer
/// let x = Tensor::constant(raw); // wrapped so ops on it can be recorded
/// assert_eq!(x.data().shape(), &[2]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type RawTensor = tang_runtime::Tensor;

/// A stable identity of a [`Tensor`] (shared by its clones, never reused in a process):
/// the key of [`Gradients`](super::Gradients).
///
/// ```
/// # use tang_nn::autograd::Tensor;
/// # let dev = tang_nn::tang_runtime::Device::new()?;
/// let w = Tensor::zeros(&dev, &[1])?.into_parameter();
/// assert_eq!(w.clone().id(), w.id()); // clones share the identity
/// assert_ne!(w.detach().id(), w.id());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(u64);

impl TensorId {
    fn next() -> TensorId {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        TensorId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A tensor that records the ops applied to it when it (or an input) requires grad.
///
/// Cheap to clone: clones share the node, the buffer and the identity.
///
/// ```
/// use tang_nn::autograd::Tensor;
/// use tang_nn::tang_runtime::Device;
/// let dev = Device::new()?;
/// let w = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?.into_parameter();
/// let loss = w.add(&w)?.sum_all()?;
/// let grads = loss.backward()?;
/// assert_eq!(grads.get(&w).unwrap().to_vec()?, vec![2.0, 2.0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Tensor {
    pub(crate) node: Arc<Node>,
}

pub(crate) struct Node {
    pub(crate) id: TensorId,
    pub(crate) data: RawTensor,
    /// Bumped by every in-place write; shared by views of the same buffer.
    pub(crate) version: Arc<AtomicU64>,
    /// Atomic so that a leaf can be frozen and unfrozen through a shared handle
    /// ([`Tensor::requires_grad_`]); an op's result never changes it.
    pub(crate) requires_grad: AtomicBool,
    /// True for tensors made by [`Tensor::parameter`] / [`Tensor::constant`]: the ends of
    /// the graph where gradients are collected.
    pub(crate) is_leaf: bool,
    /// How to go back; `None` for a leaf, and for an op's result once backward has run
    /// through it (its saved state freed).
    pub(crate) grad_fn: Mutex<Option<GradFn>>,
}

/// One recorded op: its entry in the op table, its inputs, and the versions of the
/// tensors it saved.
pub(crate) struct GradFn {
    pub(crate) op: Op,
    pub(crate) inputs: Vec<Tensor>,
    pub(crate) saved: Vec<(Arc<AtomicU64>, u64)>,
}

impl GradFn {
    /// `Err(ModifiedAfterSave)` when a saved tensor was written since it was saved.
    pub(crate) fn check_versions(&self) -> Result<(), Error> {
        for (counter, saved) in &self.saved {
            let now = counter.load(Ordering::Acquire);
            if now != *saved {
                return Err(Error::ModifiedAfterSave {
                    op: self.op.name(),
                    saved: *saved,
                    now,
                });
            }
        }
        Ok(())
    }
}

impl Node {
    pub(crate) fn grad_fn(&self) -> MutexGuard<'_, Option<GradFn>> {
        // A panic while the lock was held leaves the option intact; keep using it.
        self.grad_fn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Node {
    /// Frees a chain of nodes with a loop instead of recursion: dropping the last handle
    /// of a 100,000-op chain would otherwise recurse once per op and overflow the stack.
    /// Inputs that are still held elsewhere are only released (their count drops by one).
    fn drop(&mut self) {
        let Some(grad_fn) = self
            .grad_fn
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        let mut stack = grad_fn.inputs;
        while let Some(t) = stack.pop() {
            if let Some(mut node) = Arc::into_inner(t.node) {
                let inner = node.grad_fn.get_mut().unwrap_or_else(|e| e.into_inner());
                if let Some(gf) = inner.take() {
                    stack.extend(gf.inputs);
                }
                // `node` drops here with no inputs left: no recursion.
            }
        }
    }
}

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Runs `f` with recording off on this thread (PyTorch's `torch.no_grad()`): ops inside
/// give tensors that require no grad and hold no graph. Nests; restored even if `f` panics.
///
/// ```
/// let y = tang_nn::autograd::no_grad(|| tang_nn::autograd::is_grad_enabled());
/// assert!(!y);
/// ```
pub fn no_grad<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            GRAD_ENABLED.with(|g| g.set(self.0));
        }
    }
    let _restore = Restore(GRAD_ENABLED.with(|g| g.replace(false)));
    f()
}

/// Whether ops on this thread record for backward (false inside [`no_grad`]).
///
/// ```
/// use tang_nn::autograd::{is_grad_enabled, no_grad};
/// assert!(is_grad_enabled()); // torch.is_grad_enabled()
/// assert!(!no_grad(is_grad_enabled));
/// ```
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

impl Tensor {
    fn from_parts(
        data: RawTensor,
        version: Arc<AtomicU64>,
        requires_grad: bool,
        is_leaf: bool,
        grad_fn: Option<GradFn>,
    ) -> Tensor {
        Tensor {
            node: Arc::new(Node {
                id: TensorId::next(),
                data,
                version,
                requires_grad: AtomicBool::new(requires_grad),
                is_leaf,
                grad_fn: Mutex::new(grad_fn),
            }),
        }
    }

    /// A trainable leaf: `backward` returns its gradient. Write to it only through this
    /// handle's in-place methods (they bump the version that catches writes to saved
    /// tensors); a write through another handle of the same buffer is not seen.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::zeros(&dev, &[3])?.into_parameter(); // torch: nn.Parameter(torch.zeros(3))
    /// assert!(w.requires_grad() && w.is_leaf());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn parameter(data: RawTensor) -> Tensor {
        Tensor::from_parts(data, Arc::default(), true, true, None)
    }

    /// A leaf that requires no grad (inputs, targets): ops on it record nothing unless
    /// another input requires grad.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::zeros(&dev, &[3])?; // an input: torch.zeros(3)
    /// assert!(!x.requires_grad() && !x.relu()?.requires_grad());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn constant(data: RawTensor) -> Tensor {
        Tensor::from_parts(data, Arc::default(), false, true, None)
    }

    /// A constant sharing this tensor's buffer and version counter, cut from the graph
    /// (PyTorch's `detach`).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::zeros(&dev, &[2])?.into_parameter();
    /// let y = w.relu()?.detach(); // torch: w.relu().detach()
    /// assert!(!y.requires_grad() && y.is_leaf());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn detach(&self) -> Tensor {
        Tensor::from_parts(
            self.node.data.clone(),
            self.node.version.clone(),
            false,
            true,
            None,
        )
    }

    /// The tensor's stable identity (the key of its gradient).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::zeros(&dev, &[1])?.into_parameter();
    /// let grads = w.sum_all()?.backward()?;
    /// assert!(grads.get_id(w.id()).is_some());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> TensorId {
        self.node.id
    }

    /// The runtime tensor (device buffer) holding the values.
    ///
    /// ```
    /// # use tang_nn::autograd::{RawTensor, Tensor};
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?;
    /// let raw: &RawTensor = x.data(); // the device buffer, for the runtime's own ops
    /// assert_eq!(raw.to_vec()?, [1.0, 2.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn data(&self) -> &RawTensor {
        &self.node.data
    }

    /// The shape.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::zeros(&dev, &[2, 3])?;
    /// assert_eq!(x.shape(), &[2, 3]); // torch: x.shape
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shape(&self) -> &[usize] {
        self.node.data.shape()
    }

    /// Whether gradients flow to this tensor (a parameter, or an op's result with a
    /// parameter among its inputs, recorded outside [`no_grad`]).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::zeros(&dev, &[1])?.into_parameter();
    /// let x = Tensor::zeros(&dev, &[1])?;
    /// assert!(w.requires_grad() && x.mul(&w)?.requires_grad() && !x.requires_grad());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn requires_grad(&self) -> bool {
        self.node.requires_grad.load(Ordering::Acquire)
    }

    /// Sets whether gradients flow to this leaf (PyTorch's `requires_grad_`): `false`
    /// freezes a parameter (ops on it record nothing and backward gives it no gradient),
    /// `true` makes any leaf trainable. Every clone of the tensor sees the change.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # use tang_nn::tang_runtime::Device;
    /// let dev = Device::new()?;
    /// let w = Tensor::from_slice(&dev, &[1.0], &[1])?.into_parameter();
    /// w.requires_grad_(false)?;
    /// assert!(!w.requires_grad());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NotLeaf`] on an op's result, whose flag follows its inputs (detach it
    /// first, as in PyTorch).
    pub fn requires_grad_(&self, requires_grad: bool) -> Result<(), Error> {
        if !self.is_leaf() {
            return Err(Error::NotLeaf);
        }
        self.node
            .requires_grad
            .store(requires_grad, Ordering::Release);
        Ok(())
    }

    /// Whether this tensor was created directly rather than by an op.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::zeros(&dev, &[1])?.into_parameter();
    /// assert!(w.is_leaf() && !w.exp()?.is_leaf()); // torch: w.is_leaf
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_leaf(&self) -> bool {
        self.node.is_leaf
    }

    /// Whether an op's backward is still attached (false for leaves, for results
    /// recorded under [`no_grad`], and after backward has freed the graph).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let w = Tensor::zeros(&dev, &[1])?.into_parameter();
    /// let loss = w.exp()?.sum_all()?;
    /// assert!(loss.has_grad_fn()); // torch: loss.grad_fn is not None
    /// loss.backward()?;
    /// assert!(!loss.has_grad_fn()); // backward freed it
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn has_grad_fn(&self) -> bool {
        self.node.grad_fn().is_some()
    }

    /// How many in-place writes this tensor's buffer has seen through autograd handles.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::zeros(&dev, &[2])?;
    /// x.fill_(1.0)?;
    /// assert_eq!(x.version(), 1); // torch: x._version
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn version(&self) -> u64 {
        self.node.version.load(Ordering::Acquire)
    }

    /// The values, read back to the host (a sync point).
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.5, 2.5], &[2])?;
    /// assert_eq!(x.to_vec()?, [1.5, 2.5]); // torch: x.tolist()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`RawTensor::to_vec`].
    pub fn to_vec(&self) -> Result<Vec<f32>, Error> {
        Ok(self.node.data.to_vec()?)
    }

    /// Records an op's result. `saves_inputs`: the backward reads the inputs' values (so
    /// their in-place modification is an error); `saved_output`: the counter of the result
    /// itself, when the backward reads the output (softmax). Records nothing when no input
    /// requires grad or inside [`no_grad`].
    pub(crate) fn record(
        data: RawTensor,
        op: Op,
        inputs: &[&Tensor],
        saves_inputs: bool,
        saves_output: bool,
    ) -> Tensor {
        Tensor::record_sharing(data, Arc::default(), op, inputs, saves_inputs, saves_output)
    }

    /// As [`Tensor::record`] with the result's version counter given: a view shares its
    /// input's, since an in-place write through either changes both.
    pub(crate) fn record_sharing(
        data: RawTensor,
        version: Arc<AtomicU64>,
        op: Op,
        inputs: &[&Tensor],
        saves_inputs: bool,
        saves_output: bool,
    ) -> Tensor {
        let requires_grad = is_grad_enabled() && inputs.iter().any(|t| t.requires_grad());
        if !requires_grad {
            return Tensor::from_parts(data, version, false, false, None);
        }
        let mut saved = Vec::new();
        if saves_inputs {
            saved.extend(inputs.iter().map(|t| (t.node.version.clone(), t.version())));
        }
        if saves_output {
            saved.push((version.clone(), version.load(Ordering::Acquire)));
        }
        let grad_fn = GradFn {
            op,
            inputs: inputs.iter().map(|t| (*t).clone()).collect(),
            saved,
        };
        Tensor::from_parts(data, version, true, false, Some(grad_fn))
    }

    /// Refuses an in-place write that would corrupt a gradient: on a tensor that requires
    /// grad while recording (PyTorch refuses the same; update parameters inside
    /// [`no_grad`]).
    fn before_write(&self, op: &'static str) -> Result<(), Error> {
        if self.requires_grad() && is_grad_enabled() {
            return Err(Error::InPlaceOnGraph { op });
        }
        Ok(())
    }

    fn bump(&self) {
        self.node.version.fetch_add(1, Ordering::AcqRel);
        // An autocast copy of these values would be stale now.
        crate::amp::forget_casts();
    }

    /// In place: `self += alpha * other` (`other` broadcasts to `self`), not recorded.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// use tang_nn::autograd::no_grad;
    /// let w = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?.into_parameter();
    /// let g = Tensor::from_slice(&dev, &[1.0, 1.0], &[2])?;
    /// no_grad(|| w.add_(&g, -0.1))?; // a hand-written SGD step: w.add_(g, alpha=-0.1)
    /// assert_eq!(w.to_vec()?, [0.9, 1.9]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InPlaceOnGraph`] on a tensor that requires grad outside [`no_grad`]; as
    /// [`tang_runtime::ops::add_`].
    pub fn add_(&self, other: &Tensor, alpha: f32) -> Result<(), Error> {
        self.before_write("add_")?;
        tang_runtime::ops::add_(self.data(), other.data(), alpha)?;
        self.bump();
        Ok(())
    }

    /// In place: `self *= s`, not recorded.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::from_slice(&dev, &[1.0, 2.0], &[2])?;
    /// x.mul_(2.0)?; // torch: x.mul_(2)
    /// assert_eq!(x.to_vec()?, [2.0, 4.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::add_`].
    pub fn mul_(&self, s: f32) -> Result<(), Error> {
        self.before_write("mul_")?;
        tang_runtime::ops::mul_(self.data(), s)?;
        self.bump();
        Ok(())
    }

    /// In place: copies `src` (same shape) into `self`, not recorded.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::zeros(&dev, &[2])?;
    /// x.copy_(&Tensor::from_slice(&dev, &[3.0, 4.0], &[2])?)?;
    /// assert_eq!(x.to_vec()?, [3.0, 4.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::add_`]; as [`tang_runtime::ops::copy_`].
    pub fn copy_(&self, src: &Tensor) -> Result<(), Error> {
        self.before_write("copy_")?;
        tang_runtime::ops::copy_(self.data(), src.data())?;
        self.bump();
        Ok(())
    }

    /// In place: every element set to `value`, not recorded.
    ///
    /// ```
    /// # use tang_nn::autograd::Tensor;
    /// # let dev = tang_nn::tang_runtime::Device::new()?;
    /// let x = Tensor::zeros(&dev, &[2])?;
    /// x.fill_(7.0)?; // torch: x.fill_(7)
    /// assert_eq!(x.to_vec()?, [7.0, 7.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Tensor::add_`].
    pub fn fill_(&self, value: f32) -> Result<(), Error> {
        self.before_write("fill_")?;
        tang_runtime::ops::fill_(self.data(), value)?;
        self.bump();
        Ok(())
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("id", &self.node.id)
            .field("shape", &self.shape())
            .field("requires_grad", &self.requires_grad())
            .finish()
    }
}

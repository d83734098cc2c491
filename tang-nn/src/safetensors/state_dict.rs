//! An ordered state dict: PyTorch's `state_dict()` names mapped to tensors that live on
//! the device (tang's f32 and u32 tensors) or on the host (any file dtype, as raw bytes).
//!
//! Entries that share storage with the same shape are tied parameters (one leaf under two names, as
//! nanoGPT's `lm_head.weight` and `transformer.wte.weight`): clones of a device tensor share
//! its buffer, clones of a host tensor share its bytes, and saving writes them once.

use std::collections::HashMap;
use std::sync::Arc;

use tang_runtime::{DType, Device, Tensor};

use super::convert::{fit, integers, widen_to_f32};
use super::dtype::{Dtype, byte_size};
use super::error::SafetensorsError;

/// A tensor held in host memory: a file dtype, a shape and the little-endian bytes.
/// Cheap to clone (clones share the bytes, and count as tied when saved).
///
/// ```
/// use tang_nn::safetensors::{Dtype, HostTensor, StateDict, read_bytes, save_bytes};
/// // Token ids as PyTorch keeps them: int64.
/// let ids = HostTensor::from_i64(&[3, 1, 4, 1, 5], &[5])?;
/// assert_eq!((ids.dtype(), ids.shape()), (Dtype::I64, &[5][..]));
/// let mut state = StateDict::new();
/// state.insert("ids", ids);
/// let bytes = save_bytes(&state, Default::default(), &Default::default())?;
/// assert_eq!(read_bytes(&bytes)?.tensors.i64_values("ids")?, [3, 1, 4, 1, 5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq)]
pub struct HostTensor {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Arc<[u8]>,
}

impl HostTensor {
    /// A host tensor from little-endian bytes.
    ///
    /// ```
    /// use tang_nn::safetensors::{Dtype, HostTensor};
    /// let t = HostTensor::new(Dtype::U8, &[2, 2], vec![1, 2, 3, 4])?;
    /// assert_eq!(t.data(), [1, 2, 3, 4]);
    /// assert!(HostTensor::new(Dtype::F32, &[2], vec![0; 4]).is_err()); // 2 f32 need 8 bytes
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`SafetensorsError::HostTensorSize`] when `data` is not exactly the size `dtype`
    /// and `shape` need.
    pub fn new(dtype: Dtype, shape: &[usize], data: Vec<u8>) -> Result<Self, SafetensorsError> {
        let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        let expected = byte_size(dtype, &dims).ok();
        if expected != Some(data.len() as u64) {
            return Err(SafetensorsError::HostTensorSize {
                expected,
                got: data.len(),
            });
        }
        Ok(HostTensor {
            dtype,
            shape: shape.to_vec(),
            data: data.into(),
        })
    }

    /// An I64 host tensor (token ids, class labels as PyTorch stores them).
    ///
    /// ```
    /// use tang_nn::safetensors::HostTensor;
    /// let labels = HostTensor::from_i64(&[0, 2, -100], &[3])?; // torch.tensor([0, 2, -100])
    /// assert_eq!(labels.data().len(), 24);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`SafetensorsError::HostTensorSize`] when `values` does not fill `shape`.
    pub fn from_i64(values: &[i64], shape: &[usize]) -> Result<Self, SafetensorsError> {
        Self::new(
            Dtype::I64,
            shape,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
    }

    /// An F32 host tensor.
    ///
    /// ```
    /// use tang_nn::safetensors::HostTensor;
    /// let t = HostTensor::from_f32(&[1.0, 2.0], &[2])?;
    /// assert_eq!(t.data(), [0, 0, 128, 63, 0, 0, 0, 64]); // little-endian f32
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`SafetensorsError::HostTensorSize`] when `values` does not fill `shape`.
    pub fn from_f32(values: &[f32], shape: &[usize]) -> Result<Self, SafetensorsError> {
        Self::new(
            Dtype::F32,
            shape,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
    }

    /// The element type.
    ///
    /// ```
    /// use tang_nn::safetensors::{Dtype, HostTensor};
    /// assert_eq!(HostTensor::from_f32(&[1.0], &[1])?.dtype(), Dtype::F32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The shape.
    ///
    /// ```
    /// use tang_nn::safetensors::HostTensor;
    /// assert_eq!(HostTensor::from_f32(&[0.0; 6], &[2, 3])?.shape(), &[2, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The little-endian bytes, as stored in a file.
    ///
    /// ```
    /// use tang_nn::safetensors::HostTensor;
    /// let t = HostTensor::from_i64(&[1], &[1])?;
    /// assert_eq!(t.data(), 1i64.to_le_bytes());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Whether two host tensors share their bytes (tied).
    ///
    /// ```
    /// use tang_nn::safetensors::HostTensor;
    /// let a = HostTensor::from_f32(&[1.0], &[1])?;
    /// let b = HostTensor::from_f32(&[1.0], &[1])?;
    /// assert!(a.same_data(&a.clone()) && !a.same_data(&b)); // equal values, separate storage
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn same_data(&self, other: &HostTensor) -> bool {
        Arc::ptr_eq(&self.data, &other.data)
    }

    /// The values widened to f32 (F32, F16 and BF16 only; the widening is exact).
    fn f32_values(&self, name: &str) -> Result<Vec<f32>, SafetensorsError> {
        widen_to_f32(self.dtype, &self.data).ok_or_else(|| SafetensorsError::UnsupportedDtype {
            name: name.to_string(),
            dtype: self.dtype,
            accepted: "F32, F16 or BF16",
        })
    }

    /// The integer values (integer dtypes and BOOL only).
    fn integer_values(&self, name: &str) -> Result<Vec<i128>, SafetensorsError> {
        integers(self.dtype, &self.data).ok_or_else(|| SafetensorsError::UnsupportedDtype {
            name: name.to_string(),
            dtype: self.dtype,
            accepted: "an integer dtype",
        })
    }
}

impl std::fmt::Debug for HostTensor {
    // The bytes can be large; show what identifies the tensor.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostTensor")
            .field("dtype", &self.dtype)
            .field("shape", &self.shape)
            .finish()
    }
}

/// One entry of a [`StateDict`].
///
/// ```
/// use tang_nn::safetensors::{Dtype, HostTensor, StateDict, StateTensor};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// let mut state = StateDict::new();
/// state.insert("weight", tang_nn::tang_runtime::Tensor::zeros(&dev, &[2, 2])?); // on the device
/// state.insert("step", HostTensor::from_i64(&[10], &[])?); // on the host
/// match state.get("step") {
///     Some(StateTensor::Host(t)) => assert_eq!(t.dtype(), Dtype::I64),
///     _ => return Err("step is a host tensor".into()),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub enum StateTensor {
    /// A tensor on the device (f32 parameters and buffers, u32 ids).
    Device(Tensor),
    /// A tensor in host memory (integer ids, or any dtype not loaded onto the device).
    Host(HostTensor),
}

impl StateTensor {
    /// The shape.
    ///
    /// ```
    /// use tang_nn::safetensors::{HostTensor, StateTensor};
    /// let t = StateTensor::from(HostTensor::from_f32(&[0.0; 6], &[3, 2])?);
    /// assert_eq!(t.shape(), &[3, 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shape(&self) -> &[usize] {
        match self {
            StateTensor::Device(t) => t.shape(),
            StateTensor::Host(h) => h.shape(),
        }
    }

    /// The file dtype this tensor has now (a device tensor's is F32 or U32).
    ///
    /// ```
    /// use tang_nn::safetensors::{Dtype, StateTensor};
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let t = StateTensor::from(tang_nn::tang_runtime::Tensor::zeros(&dev, &[2])?);
    /// assert_eq!(t.dtype(), Dtype::F32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn dtype(&self) -> Dtype {
        match self {
            StateTensor::Device(t) => match t.dtype() {
                DType::F32 => Dtype::F32,
                DType::U32 => Dtype::U32,
                DType::F16 => Dtype::F16,
            },
            StateTensor::Host(h) => h.dtype(),
        }
    }

    /// Whether two entries are tied: one storage under two names, with the same shape. (A
    /// reshaped view of a buffer is not a tie, nor is a view at another offset of it, as
    /// an optimizer's flat state buffers hold each parameter's state: each is saved as
    /// its own tensor.)
    ///
    /// ```
    /// use tang_nn::safetensors::{HostTensor, StateTensor};
    /// let w = HostTensor::from_f32(&[0.0; 4], &[2, 2])?;
    /// let (wte, lm_head) = (StateTensor::from(w.clone()), StateTensor::from(w)); // one storage, two names
    /// assert!(wte.is_tied_to(&lm_head));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_tied_to(&self, other: &StateTensor) -> bool {
        if self.shape() != other.shape() {
            return false;
        }
        match (self, other) {
            (StateTensor::Device(a), StateTensor::Device(b)) => same_storage(a, b),
            (StateTensor::Host(a), StateTensor::Host(b)) => a.same_data(b),
            _ => false,
        }
    }
}

/// Whether two device tensors are one storage: the same bytes of one buffer (clones of
/// one tensor, or views of one range). Sharing a buffer is not enough: the segments of a
/// flat buffer at different offsets hold different values, even when their shapes agree.
pub(crate) fn same_storage(a: &Tensor, b: &Tensor) -> bool {
    a.same_buffer(b) && a.byte_offset() == b.byte_offset() && a.len() == b.len()
}

impl From<Tensor> for StateTensor {
    fn from(t: Tensor) -> Self {
        StateTensor::Device(t)
    }
}

impl From<HostTensor> for StateTensor {
    fn from(t: HostTensor) -> Self {
        StateTensor::Host(t)
    }
}

/// An ordered map from PyTorch `state_dict` names to tensors (insertion order kept, as
/// PyTorch's `OrderedDict`).
///
/// ```
/// use tang_nn::safetensors::{HostTensor, StateDict};
/// let mut sd = StateDict::new(); // an OrderedDict of name -> tensor
/// sd.insert("fc.weight", HostTensor::from_f32(&[0.0; 4], &[2, 2])?);
/// sd.insert("fc.bias", HostTensor::from_f32(&[0.0; 2], &[2])?);
/// assert_eq!(sd.names().collect::<Vec<_>>(), ["fc.weight", "fc.bias"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct StateDict {
    entries: Vec<(String, StateTensor)>,
    index: HashMap<String, usize>,
}

impl StateDict {
    /// An empty state dict.
    ///
    /// ```
    /// assert!(tang_nn::safetensors::StateDict::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `name` to `tensor`: a new name goes last, an existing one keeps its place and
    /// its previous tensor is returned.
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let mut sd = StateDict::new();
    /// assert!(sd.insert("a", HostTensor::from_f32(&[1.0], &[1])?).is_none());
    /// assert!(sd.insert("a", HostTensor::from_f32(&[2.0], &[1])?).is_some()); // replaced in place
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert(
        &mut self,
        name: impl Into<String>,
        tensor: impl Into<StateTensor>,
    ) -> Option<StateTensor> {
        let name = name.into();
        let tensor = tensor.into();
        match self.index.get(&name) {
            Some(&i) => Some(std::mem::replace(&mut self.entries[i].1, tensor)),
            None => {
                self.index.insert(name.clone(), self.entries.len());
                self.entries.push((name, tensor));
                None
            }
        }
    }

    /// Removes `name`, returning its tensor.
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let mut sd = StateDict::new();
    /// sd.insert("a", HostTensor::from_f32(&[1.0], &[1])?);
    /// assert!(sd.remove("a").is_some() && sd.is_empty()); // sd.pop("a")
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn remove(&mut self, name: &str) -> Option<StateTensor> {
        let i = self.index.remove(name)?;
        let (_, tensor) = self.entries.remove(i);
        for (n, _) in &self.entries[i..] {
            if let Some(slot) = self.index.get_mut(n) {
                *slot -= 1;
            }
        }
        Some(tensor)
    }

    /// The tensor named `name`.
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let mut sd = StateDict::new();
    /// sd.insert("a", HostTensor::from_f32(&[1.0], &[1])?);
    /// assert_eq!(sd.get("a").map(|t| t.shape().to_vec()), Some(vec![1])); // sd["a"].shape
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self, name: &str) -> Option<&StateTensor> {
        self.index.get(name).map(|&i| &self.entries[i].1)
    }

    /// Whether `name` is present.
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let mut sd = StateDict::new();
    /// sd.insert("a", HostTensor::from_f32(&[1.0], &[1])?);
    /// assert!(sd.contains("a") && !sd.contains("b")); // "a" in sd
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// Number of entries.
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let mut sd = StateDict::new();
    /// sd.insert("a", HostTensor::from_f32(&[1.0], &[1])?);
    /// assert_eq!(sd.len(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    ///
    /// ```
    /// assert!(tang_nn::safetensors::StateDict::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in order.
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let mut sd = StateDict::new();
    /// sd.insert("a", HostTensor::from_f32(&[1.0, 2.0], &[2])?);
    /// for (name, tensor) in sd.iter() { // sd.items()
    ///     assert_eq!((name, tensor.shape()), ("a", &[2][..]));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (&str, &StateTensor)> {
        self.entries.iter().map(|(n, t)| (n.as_str(), t))
    }

    /// The names in order.
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let mut sd = StateDict::new();
    /// sd.insert("b", HostTensor::from_f32(&[1.0], &[1])?);
    /// sd.insert("a", HostTensor::from_f32(&[1.0], &[1])?);
    /// assert_eq!(sd.names().collect::<Vec<_>>(), ["b", "a"]); // insertion order: sd.keys()
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// The (name, shape) of every entry in order: what [`super::check_state_dict`]
    /// expects of a model.
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let mut sd = StateDict::new();
    /// sd.insert("w", HostTensor::from_f32(&[0.0; 6], &[2, 3])?);
    /// assert_eq!(sd.shapes(), [("w".to_string(), vec![2, 3])]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn shapes(&self) -> Vec<(String, Vec<usize>)> {
        self.iter()
            .map(|(n, t)| (n.to_string(), t.shape().to_vec()))
            .collect()
    }

    /// The same state dict with every F32, F16 and BF16 host tensor uploaded to `dev` as
    /// an f32 tensor (widened exactly); other host tensors (I64 ids, ...) stay on the
    /// host, and device tensors are kept. Tied host entries stay tied (one upload).
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let mut sd = StateDict::new();
    /// sd.insert("w", HostTensor::from_f32(&[1.0, 2.0], &[2])?);
    /// sd.insert("ids", HostTensor::from_i64(&[7], &[1])?);
    /// let on_device = sd.to_device(&dev)?; // floats uploaded, ids stay on the host
    /// assert_eq!(on_device.f32_values("w")?, [1.0, 2.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`SafetensorsError::Runtime`] when the device fails.
    pub fn to_device(&self, dev: &Device) -> Result<StateDict, SafetensorsError> {
        let mut out = StateDict::new();
        for (i, (name, tensor)) in self.entries.iter().enumerate() {
            let tied = self.entries[..i]
                .iter()
                .find(|(_, earlier)| earlier.is_tied_to(tensor))
                .and_then(|(earlier, _)| out.get(earlier).cloned());
            let moved = match (tied, tensor) {
                (Some(shared), _) => shared,
                (None, StateTensor::Host(h)) if h.dtype().is_float_for_device() => {
                    let values = h.f32_values(name)?;
                    StateTensor::Device(Tensor::from_slice(dev, &values, h.shape())?)
                }
                (None, other) => other.clone(),
            };
            out.insert(name.clone(), moved);
        }
        Ok(out)
    }

    /// The values of `name` as f32: a device f32 tensor is downloaded, an F32, F16 or BF16
    /// host tensor widened.
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let mut sd = StateDict::new();
    /// sd.insert("w", HostTensor::from_f32(&[1.5, -2.0], &[2])?);
    /// assert_eq!(sd.f32_values("w")?, [1.5, -2.0]); // sd["w"].tolist()
    /// assert!(sd.f32_values("missing").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`SafetensorsError::MissingTensor`] when there is no such entry,
    /// [`SafetensorsError::UnsupportedDtype`] for other dtypes,
    /// [`SafetensorsError::Runtime`] when the download fails.
    pub fn f32_values(&self, name: &str) -> Result<Vec<f32>, SafetensorsError> {
        match self.lookup(name)? {
            StateTensor::Device(t) if t.dtype() == DType::F32 => Ok(t.to_vec()?),
            StateTensor::Device(_) => Err(SafetensorsError::UnsupportedDtype {
                name: name.to_string(),
                dtype: Dtype::U32,
                accepted: "F32, F16 or BF16",
            }),
            StateTensor::Host(h) => h.f32_values(name),
        }
    }

    /// The values of integer tensor `name` as i64 (how PyTorch stores token ids).
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let mut sd = StateDict::new();
    /// sd.insert("ids", HostTensor::from_i64(&[5, -100], &[2])?);
    /// assert_eq!(sd.i64_values("ids")?, [5, -100]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`StateDict::f32_values`], and [`SafetensorsError::ValueOutOfRange`] for a U64
    /// value past `i64::MAX`.
    pub fn i64_values(&self, name: &str) -> Result<Vec<i64>, SafetensorsError> {
        match self.lookup(name)? {
            StateTensor::Device(t) if t.dtype() == DType::U32 => {
                Ok(t.to_vec_u32()?.into_iter().map(i64::from).collect())
            }
            StateTensor::Device(_) => Err(SafetensorsError::UnsupportedDtype {
                name: name.to_string(),
                dtype: Dtype::F32,
                accepted: "an integer dtype",
            }),
            StateTensor::Host(h) => fit(name, "i64", &h.integer_values(name)?),
        }
    }

    /// Integer tensor `name` (I64 token ids, ...) as a u32 device tensor.
    ///
    /// ```
    /// # use tang_nn::safetensors::{HostTensor, StateDict};
    /// let dev = tang_nn::tang_runtime::Device::new()?;
    /// let mut sd = StateDict::new();
    /// sd.insert("ids", HostTensor::from_i64(&[5, 6], &[2])?);
    /// assert_eq!(sd.u32_tensor("ids", &dev)?.to_vec_u32()?, [5, 6]); // ready for an Embedding
    /// sd.insert("labels", HostTensor::from_i64(&[-100], &[1])?);
    /// assert!(sd.u32_tensor("labels", &dev).is_err()); // negative ids do not fit u32
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`SafetensorsError::ValueOutOfRange`] naming the first value outside u32 (a negative
    /// id such as PyTorch's ignore index -100, or one past 2^32 - 1); as
    /// [`StateDict::i64_values`] otherwise.
    pub fn u32_tensor(&self, name: &str, dev: &Device) -> Result<Tensor, SafetensorsError> {
        match self.lookup(name)? {
            StateTensor::Device(t) if t.dtype() == DType::U32 => Ok(t.clone()),
            StateTensor::Device(_) => Err(SafetensorsError::UnsupportedDtype {
                name: name.to_string(),
                dtype: Dtype::F32,
                accepted: "an integer dtype",
            }),
            StateTensor::Host(h) => {
                let values: Vec<u32> = fit(name, "u32", &h.integer_values(name)?)?;
                Ok(Tensor::from_u32(dev, &values, h.shape())?)
            }
        }
    }

    fn lookup(&self, name: &str) -> Result<&StateTensor, SafetensorsError> {
        self.get(name)
            .ok_or_else(|| SafetensorsError::MissingTensor {
                name: name.to_string(),
            })
    }
}

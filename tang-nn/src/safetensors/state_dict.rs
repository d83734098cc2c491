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
#[derive(Clone, PartialEq)]
pub struct HostTensor {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Arc<[u8]>,
}

impl HostTensor {
    /// A host tensor from little-endian bytes.
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
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The little-endian bytes, as stored in a file.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Whether two host tensors share their bytes (tied).
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
#[derive(Clone, Debug)]
pub enum StateTensor {
    /// A tensor on the device (f32 parameters and buffers, u32 ids).
    Device(Tensor),
    /// A tensor in host memory (integer ids, or any dtype not loaded onto the device).
    Host(HostTensor),
}

impl StateTensor {
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            StateTensor::Device(t) => t.shape(),
            StateTensor::Host(h) => h.shape(),
        }
    }

    /// The file dtype this tensor has now (a device tensor's is F32 or U32).
    pub fn dtype(&self) -> Dtype {
        match self {
            StateTensor::Device(t) => match t.dtype() {
                DType::F32 => Dtype::F32,
                DType::U32 => Dtype::U32,
            },
            StateTensor::Host(h) => h.dtype(),
        }
    }

    /// Whether two entries are tied: one storage under two names, with the same shape. (A
    /// reshaped view of a buffer is not a tie: it is saved as its own tensor.)
    pub fn is_tied_to(&self, other: &StateTensor) -> bool {
        if self.shape() != other.shape() {
            return false;
        }
        match (self, other) {
            (StateTensor::Device(a), StateTensor::Device(b)) => a.same_buffer(b),
            (StateTensor::Host(a), StateTensor::Host(b)) => a.same_data(b),
            _ => false,
        }
    }
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
#[derive(Clone, Debug, Default)]
pub struct StateDict {
    entries: Vec<(String, StateTensor)>,
    index: HashMap<String, usize>,
}

impl StateDict {
    /// An empty state dict.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `name` to `tensor`: a new name goes last, an existing one keeps its place and
    /// its previous tensor is returned.
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
    pub fn get(&self, name: &str) -> Option<&StateTensor> {
        self.index.get(name).map(|&i| &self.entries[i].1)
    }

    /// Whether `name` is present.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &StateTensor)> {
        self.entries.iter().map(|(n, t)| (n.as_str(), t))
    }

    /// The names in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// The (name, shape) of every entry in order: what [`super::check_state_dict`]
    /// expects of a model.
    pub fn shapes(&self) -> Vec<(String, Vec<usize>)> {
        self.iter()
            .map(|(n, t)| (n.to_string(), t.shape().to_vec()))
            .collect()
    }

    /// The same state dict with every F32, F16 and BF16 host tensor uploaded to `dev` as
    /// an f32 tensor (widened exactly); other host tensors (I64 ids, ...) stay on the
    /// host, and device tensors are kept. Tied host entries stay tied (one upload).
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

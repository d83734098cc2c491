//! An ordered state dict: PyTorch's `state_dict()` names mapped to [`StateTensor`]s, in
//! insertion order as PyTorch's `OrderedDict`.

use std::collections::HashMap;

use tang_runtime::{DType, Device, Tensor};

use super::host_tensor::StateTensor;
use crate::safetensors::convert::widens_to_f32;
use crate::safetensors::{Dtype, SafetensorsError};

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

    /// The (name, shape) of every entry in order: what [`check_state_dict`](crate::safetensors::check_state_dict)
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
                (None, StateTensor::Host(h)) if widens_to_f32(h.dtype()) => {
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

/// Integer values as `T` (u32 for a device tensor, i64 as PyTorch holds ids), or the
/// first that does not fit, named after tensor `name`.
fn fit<T: TryFrom<i128>>(
    name: &str,
    target: &'static str,
    values: &[i128],
) -> Result<Vec<T>, SafetensorsError> {
    values
        .iter()
        .enumerate()
        .map(|(index, &v)| {
            T::try_from(v).map_err(|_| SafetensorsError::ValueOutOfRange {
                name: name.to_string(),
                target,
                index,
                value: v,
            })
        })
        .collect()
}

//! The tensors of a state dict: on the device (tang's f32 and u32 tensors) or on the
//! host (any file dtype, as raw bytes).
//!
//! Entries that share storage with the same shape are tied parameters (one leaf under two
//! names, as nanoGPT's `lm_head.weight` and `transformer.wte.weight`): clones of a device
//! tensor share its buffer, clones of a host tensor share its bytes, and saving writes
//! them once.

use std::sync::Arc;

use tang_runtime::{DType, Tensor};

use crate::safetensors::convert::widen_to_f32;
use crate::safetensors::header::bit_size;
use crate::safetensors::{Dtype, SafetensorsError};

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
        let expected = bit_size(dtype, shape)
            .filter(|bits| bits % 8 == 0)
            .map(|bits| bits / 8);
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
    pub(crate) fn f32_values(&self, name: &str) -> Result<Vec<f32>, SafetensorsError> {
        widen_to_f32(self.dtype, &self.data).ok_or_else(|| SafetensorsError::UnsupportedDtype {
            name: name.to_string(),
            dtype: self.dtype,
            accepted: "F32, F16 or BF16",
        })
    }

    /// The integer values (integer dtypes and BOOL only).
    pub(crate) fn integer_values(&self, name: &str) -> Result<Vec<i128>, SafetensorsError> {
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

/// One entry of a [`StateDict`](super::state_dict::StateDict).
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

/// The integer values of an integer dtype's bytes (`BOOL` as 0/1); `None` for floats.
fn integers(dtype: Dtype, bytes: &[u8]) -> Option<Vec<i128>> {
    fn le<const N: usize>(bytes: &[u8], f: impl Fn([u8; N]) -> i128) -> Vec<i128> {
        bytes
            .chunks_exact(N)
            .map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                f(a)
            })
            .collect()
    }
    Some(match dtype {
        Dtype::BOOL | Dtype::U8 => bytes.iter().map(|&b| i128::from(b)).collect(),
        Dtype::I8 => bytes.iter().map(|&b| i128::from(b as i8)).collect(),
        Dtype::I16 => le(bytes, |a| i128::from(i16::from_le_bytes(a))),
        Dtype::U16 => le(bytes, |a| i128::from(u16::from_le_bytes(a))),
        Dtype::I32 => le(bytes, |a| i128::from(i32::from_le_bytes(a))),
        Dtype::U32 => le(bytes, |a| i128::from(u32::from_le_bytes(a))),
        Dtype::I64 => le(bytes, |a| i128::from(i64::from_le_bytes(a))),
        Dtype::U64 => le(bytes, |a| i128::from(u64::from_le_bytes(a))),
        _ => return None,
    })
}

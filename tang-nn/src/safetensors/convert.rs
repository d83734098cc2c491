//! Element conversions between file bytes (little-endian, as the format stores them) and
//! the values tang's device tensors hold: F16 and BF16 widen to f32 exactly; f32 narrows
//! to F16 or BF16 rounding to nearest, ties to even, as PyTorch's `.to(dtype)` does.

use half::{bf16, f16};

use super::dtype::Dtype;
use super::error::SafetensorsError;

/// The precisions a state dict's floating tensors can be saved in.
///
/// ```
/// use tang_nn::safetensors::{Dtype, FloatDtype, HostTensor, StateDict, read_bytes, save_bytes};
/// let mut sd = StateDict::new();
/// sd.insert("w", HostTensor::from_f32(&[1.0, 0.1], &[2])?);
/// // Half the bytes, as model.half() then save_file would write.
/// let bytes = save_bytes(&sd, FloatDtype::BF16, &Default::default())?;
/// let back = read_bytes(&bytes)?;
/// assert_eq!(back.tensors.get("w").map(|t| t.dtype()), Some(Dtype::BF16));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FloatDtype {
    /// IEEE single precision (no rounding).
    #[default]
    F32,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
}

impl FloatDtype {
    /// The file dtype.
    ///
    /// ```
    /// use tang_nn::safetensors::{Dtype, FloatDtype};
    /// assert_eq!(FloatDtype::F16.dtype(), Dtype::F16);
    /// ```
    pub fn dtype(self) -> Dtype {
        match self {
            FloatDtype::F32 => Dtype::F32,
            FloatDtype::F16 => Dtype::F16,
            FloatDtype::BF16 => Dtype::BF16,
        }
    }
}

/// The f32 values of F32, F16 or BF16 bytes; `None` for any other dtype.
pub(crate) fn widen_to_f32(dtype: Dtype, bytes: &[u8]) -> Option<Vec<f32>> {
    Some(match dtype {
        Dtype::F32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        Dtype::F16 => bytes
            .chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        Dtype::BF16 => bytes
            .chunks_exact(2)
            .map(|c| bf16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        _ => return None,
    })
}

/// `values` as little-endian bytes of `dtype`, rounded to nearest even.
pub(crate) fn narrow_from_f32(values: &[f32], dtype: FloatDtype) -> Vec<u8> {
    match dtype {
        FloatDtype::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        FloatDtype::F16 => values
            .iter()
            .flat_map(|&v| f16::from_f32(v).to_le_bytes())
            .collect(),
        FloatDtype::BF16 => values
            .iter()
            .flat_map(|&v| bf16::from_f32(v).to_le_bytes())
            .collect(),
    }
}

/// The integer values of an integer dtype's bytes (`BOOL` as 0/1); `None` for floats.
pub(crate) fn integers(dtype: Dtype, bytes: &[u8]) -> Option<Vec<i128>> {
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

/// Integer values as `T` (u32 for a device tensor, i64 as PyTorch holds ids), or the
/// first that does not fit, named after tensor `name`.
pub(crate) fn fit<T: TryFrom<i128>>(
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

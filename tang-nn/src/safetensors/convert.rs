//! Element conversions between file bytes (little-endian, as the format stores them) and
//! the values tang's device tensors hold: F16 and BF16 widen to f32 exactly; f32 narrows
//! to F16 or BF16 rounding to nearest, ties to even, as PyTorch's `.to(dtype)` does.

use half::{bf16, f16};

use safetensors::Dtype;

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

/// Whether tang loads `dtype` into an f32 device tensor: the floats it widens exactly,
/// and f32 itself.
pub(crate) fn widens_to_f32(dtype: Dtype) -> bool {
    matches!(dtype, Dtype::F32 | Dtype::F16 | Dtype::BF16)
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

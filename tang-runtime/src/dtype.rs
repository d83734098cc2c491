//! The element types of tensors.

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 32-bit unsigned integer (token ids, class labels, indices).
    U32,
    /// 16-bit IEEE float (PyTorch's `torch.float16`): storage for mixed precision. Kernels
    /// compute in f32 and round to f16 on store; matmul multiplies f16 operands on the
    /// tensor cores where the device has them. Needs the adapter's `SHADER_F16`.
    F16,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::U32 => 4,
            DType::F16 => 2,
        }
    }
}

//! The element types of tensors.

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 32-bit unsigned integer (token ids, class labels, indices).
    U32,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        4
    }
}

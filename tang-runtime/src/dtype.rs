//! The element types of tensors.

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 32-bit unsigned integer (token ids, class labels, indices).
    U32,
    /// 16-bit IEEE float (PyTorch's `torch.float16`): storage for mixed precision.
    /// [`ops::to_dtype`](crate::ops::to_dtype) converts both ways; matmul multiplies f16
    /// operands (on the tensor cores where the device has them); the elementwise ops, their
    /// backwards, every `#[kernel]`/`#[fused_grad]` function and the in-place ops
    /// (`add_`, `mul_`, `fill_`, `zero_`, `copy_`, `clone`) read and write f16 and compute
    /// in f32, as PyTorch does: f16 inputs give f16 results and gradients, f16 beside f32
    /// promotes to f32. Softmax, log-softmax, the norms, cross-entropy, the reductions and
    /// attention take f16 and compute in f32 (results in f16, as PyTorch). Other ops take f32 and say
    /// so. Kernels read and write f16 as bits of 32-bit words, so f16 storage works on
    /// every adapter, `SHADER_F16` or not (only the tensor-core kernels need it). Both
    /// conversions are exact: widening is `unpack2x16float` where the adapter has it
    /// (integer arithmetic elsewhere), and narrowing is integer arithmetic everywhere, so
    /// it rounds to nearest even on every adapter (WGSL leaves `pack2x16float`'s rounding
    /// to the implementation). That arithmetic is what the memory-bound ops pay for half
    /// the bytes: on an H200 the f16 tanh-GELU over 64M elements runs 0.137 ms against
    /// 0.135 ms in f32, and 0.189 ms with integer widening (BENCHMARKS.md, 2026-11-29
    /// (fifth session)).
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

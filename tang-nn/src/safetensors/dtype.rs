//! The element types a safetensors file may name, with their sizes and the order in which
//! the format's reference writer lays tensors out.

use std::fmt;

/// An element type of the safetensors format (the header's `dtype` string).
///
/// The variants are declared in the format's own order: its reference writer (the one
/// behind `safetensors.torch.save_file`) places tensors by this order, largest first, then
/// by name, and tang's writer does the same so that its files are byte-identical.
///
/// ```
/// use tang_nn::safetensors::Dtype;
/// let dtype = Dtype::from_name("BF16").ok_or("a safetensors dtype")?; // torch.bfloat16
/// assert_eq!((dtype.bits(), dtype.name()), (16, "BF16"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(non_camel_case_types)]
pub enum Dtype {
    /// Boolean, one byte.
    BOOL,
    /// 4-bit float (e2m1).
    F4,
    /// 6-bit float (e2m3).
    F6_E2M3,
    /// 6-bit float (e3m2).
    F6_E3M2,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 8-bit integer.
    I8,
    /// 8-bit float (e5m2).
    F8_E5M2,
    /// 8-bit float (e4m3).
    F8_E4M3,
    /// 8-bit exponent-only scale (e8m0).
    F8_E8M0,
    /// 8-bit float (e4m3, finite, unsigned zero).
    F8_E4M3FNUZ,
    /// 8-bit float (e5m2, finite, unsigned zero).
    F8_E5M2FNUZ,
    /// Signed 16-bit integer.
    I16,
    /// Unsigned 16-bit integer.
    U16,
    /// IEEE half precision.
    F16,
    /// bfloat16 (the upper half of an f32).
    BF16,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 32-bit integer.
    U32,
    /// IEEE single precision.
    F32,
    /// Complex of two f32.
    C64,
    /// IEEE double precision.
    F64,
    /// Signed 64-bit integer (PyTorch's `long`, token ids and class labels).
    I64,
    /// Unsigned 64-bit integer.
    U64,
}

/// Every dtype with its header name.
const NAMES: [(Dtype, &str); 22] = [
    (Dtype::BOOL, "BOOL"),
    (Dtype::F4, "F4"),
    (Dtype::F6_E2M3, "F6_E2M3"),
    (Dtype::F6_E3M2, "F6_E3M2"),
    (Dtype::U8, "U8"),
    (Dtype::I8, "I8"),
    (Dtype::F8_E5M2, "F8_E5M2"),
    (Dtype::F8_E4M3, "F8_E4M3"),
    (Dtype::F8_E8M0, "F8_E8M0"),
    (Dtype::F8_E4M3FNUZ, "F8_E4M3FNUZ"),
    (Dtype::F8_E5M2FNUZ, "F8_E5M2FNUZ"),
    (Dtype::I16, "I16"),
    (Dtype::U16, "U16"),
    (Dtype::F16, "F16"),
    (Dtype::BF16, "BF16"),
    (Dtype::I32, "I32"),
    (Dtype::U32, "U32"),
    (Dtype::F32, "F32"),
    (Dtype::C64, "C64"),
    (Dtype::F64, "F64"),
    (Dtype::I64, "I64"),
    (Dtype::U64, "U64"),
];

impl Dtype {
    /// The dtype a header string names, if the format defines it.
    ///
    /// ```
    /// use tang_nn::safetensors::Dtype;
    /// assert_eq!(Dtype::from_name("I64"), Some(Dtype::I64));
    /// assert_eq!(Dtype::from_name("float32"), None); // header names only
    /// ```
    pub fn from_name(name: &str) -> Option<Dtype> {
        NAMES.iter().find(|(_, n)| *n == name).map(|(d, _)| *d)
    }

    /// The header string of this dtype (`"F32"`, `"BF16"`, ...).
    ///
    /// ```
    /// assert_eq!(tang_nn::safetensors::Dtype::F32.name(), "F32");
    /// ```
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(d, _)| *d == self)
            .map_or("?", |(_, n)| n)
    }

    /// Bits per element.
    ///
    /// ```
    /// use tang_nn::safetensors::Dtype;
    /// assert_eq!((Dtype::F32.bits(), Dtype::F4.bits()), (32, 4));
    /// ```
    pub fn bits(self) -> u64 {
        match self {
            Dtype::F4 => 4,
            Dtype::F6_E2M3 | Dtype::F6_E3M2 => 6,
            Dtype::BOOL
            | Dtype::U8
            | Dtype::I8
            | Dtype::F8_E5M2
            | Dtype::F8_E4M3
            | Dtype::F8_E8M0
            | Dtype::F8_E4M3FNUZ
            | Dtype::F8_E5M2FNUZ => 8,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::BF16 => 16,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 32,
            Dtype::C64 | Dtype::F64 | Dtype::I64 | Dtype::U64 => 64,
        }
    }

    /// Whether tang loads this dtype into an f32 device tensor (the float types it can
    /// widen exactly, and f32 itself).
    ///
    /// ```
    /// use tang_nn::safetensors::Dtype;
    /// assert!(Dtype::F16.is_float_for_device() && !Dtype::I64.is_float_for_device());
    /// ```
    pub fn is_float_for_device(self) -> bool {
        matches!(self, Dtype::F32 | Dtype::F16 | Dtype::BF16)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Size in bytes of `shape` elements of `dtype`, or `None` when the element count or the
/// bit count overflows `u64`, or the bits do not fill whole bytes (`Err` with the bits).
pub(crate) fn byte_size(dtype: Dtype, shape: &[u64]) -> Result<u64, ByteSizeError> {
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or(ByteSizeError::Overflow)?;
    let bits = elements
        .checked_mul(dtype.bits())
        .ok_or(ByteSizeError::Overflow)?;
    if bits % 8 != 0 {
        return Err(ByteSizeError::PartialByte { bits });
    }
    Ok(bits / 8)
}

/// Why [`byte_size`] has no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ByteSizeError {
    /// The element or bit count overflows `u64`.
    Overflow,
    /// Sub-byte elements whose total does not end on a byte boundary.
    PartialByte {
        /// The total number of bits.
        bits: u64,
    },
}

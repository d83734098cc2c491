//! The typed errors of reading, loading and saving safetensors files.
//!
//! A file is a user's input: every way it can be malformed has its own variant, so that a
//! caller can tell a truncated download from a corrupted header, and the message says
//! what is wrong and where.

use std::fmt;
use std::path::PathBuf;

use safetensors::Dtype;

/// Everything that can go wrong reading, loading or saving a safetensors file.
///
/// ```
/// use tang_nn::safetensors::{SafetensorsError, read_bytes};
/// let err = read_bytes(b"not a file").err().ok_or("10 bytes are no safetensors file")?;
/// assert!(matches!(err, SafetensorsError::HeaderTooLarge { .. })); // "not a fi" read as a length
/// println!("{err}"); // what is wrong with the file, in words
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[non_exhaustive]
pub enum SafetensorsError {
    /// The file could not be opened, read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file is shorter than the 8-byte header length that starts every safetensors file.
    TooShort {
        /// The file's length in bytes.
        len: u64,
    },
    /// The header length exceeds the format's cap (100 MB), so the file is not read.
    HeaderTooLarge {
        /// The header length the file claims.
        claimed: u64,
        /// The cap.
        limit: u64,
    },
    /// The header claims more bytes than the file has (a truncated or corrupted file).
    HeaderPastEnd {
        /// The header length the file claims.
        claimed: u64,
        /// The bytes after the 8-byte length.
        available: u64,
    },
    /// The header is not valid UTF-8.
    HeaderNotUtf8 {
        /// Byte offset in the header of the first invalid sequence.
        offset: usize,
    },
    /// The header is not valid JSON.
    Json {
        /// Byte offset in the header where parsing stopped.
        offset: usize,
        /// What was expected there.
        detail: String,
    },
    /// The header's JSON nests deeper than any valid header can.
    JsonTooDeep {
        /// Byte offset in the header where the limit was passed.
        offset: usize,
        /// The nesting limit.
        limit: usize,
    },
    /// One JSON object names the same key twice (which one a reader keeps is undefined).
    DuplicateKey {
        /// The key.
        key: String,
        /// The object holding it (`"header"`, `"__metadata__"` or a tensor's name).
        within: String,
    },
    /// Valid JSON that is not a safetensors header (a wrong type or a missing field).
    InvalidHeader {
        /// The entry at fault (a tensor name, `"__metadata__"` or `"header"`).
        entry: String,
        /// What is wrong.
        detail: String,
    },
    /// A tensor names a dtype the format does not define.
    UnknownDtype {
        /// The tensor.
        name: String,
        /// The dtype string in the file.
        dtype: String,
    },
    /// A tensor's shape has more elements (or bytes) than fit in 64 bits.
    ShapeOverflow {
        /// The tensor.
        name: String,
        /// Its shape as written in the file.
        shape: String,
    },
    /// A tensor's byte range does not match its dtype and shape.
    SizeMismatch {
        /// The tensor.
        name: String,
        /// Bytes the dtype and shape need.
        expected: u64,
        /// The `data_offsets` in the file.
        offsets: [u64; 2],
    },
    /// Two tensors' byte ranges overlap.
    OverlappingOffsets {
        /// The tensor that starts first.
        first: String,
        /// The tensor that starts inside it.
        second: String,
    },
    /// Bytes of the data section belong to no tensor.
    HoleInOffsets {
        /// Where the unclaimed bytes start.
        start: u64,
        /// Where the next tensor starts.
        end: u64,
    },
    /// A tensor's byte range ends past the end of the file (a truncated file).
    OffsetOutOfRange {
        /// The tensor.
        name: String,
        /// Where its data ends, from the start of the data section.
        end: u64,
        /// The length of the data section in the file.
        data_len: u64,
    },
    /// The file continues past the last tensor's data.
    TrailingBytes {
        /// Where the last tensor ends, from the start of the data section.
        data_end: u64,
        /// The length of the data section in the file.
        data_len: u64,
    },
    /// Integer values that do not fit the requested type (negative or too large ids for a
    /// u32 device tensor).
    ValueOutOfRange {
        /// The tensor.
        name: String,
        /// The type asked for (`"u32"`, `"i64"`).
        target: &'static str,
        /// Index of the first value that does not fit.
        index: usize,
        /// That value.
        value: i128,
    },
    /// A tensor of this dtype cannot become a device tensor (tang's device tensors are
    /// f32 and u32).
    UnsupportedDtype {
        /// The tensor.
        name: String,
        /// Its dtype.
        dtype: Dtype,
        /// What the operation accepts.
        accepted: &'static str,
    },
    /// No tensor of this name is in the state dict.
    MissingTensor {
        /// The name asked for.
        name: String,
    },
    /// A tensor's name cannot be saved (`__metadata__` is reserved by the format).
    ReservedName {
        /// The name.
        name: String,
    },
    /// A host tensor's bytes do not match its dtype and shape.
    HostTensorSize {
        /// Bytes the dtype and shape need (`None`: the shape overflows).
        expected: Option<u64>,
        /// Bytes given.
        got: usize,
    },
    /// The device failed (allocation, upload or download).
    Runtime(tang_runtime::Error),
}

impl SafetensorsError {
    /// A short stable name of the variant, for counting errors by kind.
    ///
    /// ```
    /// use tang_nn::safetensors::read_bytes;
    /// let err = read_bytes(&[1, 2]).err().ok_or("2 bytes are no safetensors file")?;
    /// assert_eq!(err.kind(), "too_short"); // stable across messages: count errors by kind
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            SafetensorsError::Io { .. } => "io",
            SafetensorsError::TooShort { .. } => "too_short",
            SafetensorsError::HeaderTooLarge { .. } => "header_too_large",
            SafetensorsError::HeaderPastEnd { .. } => "header_past_end",
            SafetensorsError::HeaderNotUtf8 { .. } => "header_not_utf8",
            SafetensorsError::Json { .. } => "json",
            SafetensorsError::JsonTooDeep { .. } => "json_too_deep",
            SafetensorsError::DuplicateKey { .. } => "duplicate_key",
            SafetensorsError::InvalidHeader { .. } => "invalid_header",
            SafetensorsError::UnknownDtype { .. } => "unknown_dtype",
            SafetensorsError::ShapeOverflow { .. } => "shape_overflow",
            SafetensorsError::SizeMismatch { .. } => "size_mismatch",
            SafetensorsError::OverlappingOffsets { .. } => "overlapping_offsets",
            SafetensorsError::HoleInOffsets { .. } => "hole_in_offsets",
            SafetensorsError::OffsetOutOfRange { .. } => "offset_out_of_range",
            SafetensorsError::TrailingBytes { .. } => "trailing_bytes",
            SafetensorsError::ValueOutOfRange { .. } => "value_out_of_range",
            SafetensorsError::UnsupportedDtype { .. } => "unsupported_dtype",
            SafetensorsError::MissingTensor { .. } => "missing_tensor",
            SafetensorsError::ReservedName { .. } => "reserved_name",
            SafetensorsError::HostTensorSize { .. } => "host_tensor_size",
            SafetensorsError::Runtime(_) => "runtime",
        }
    }
}

crate::macros::debug_as_display!(SafetensorsError);

impl fmt::Display for SafetensorsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SafetensorsError as E;
        match self {
            E::Io { path, source } => write!(f, "{}: {source}", path.display()),
            E::TooShort { len } => write!(
                f,
                "not a safetensors file: {len} bytes, fewer than the 8-byte header length"
            ),
            E::HeaderTooLarge { claimed, limit } => write!(
                f,
                "the header claims {claimed} bytes, over the format's limit of {limit}: \
                 the file is corrupted or not a safetensors file"
            ),
            E::HeaderPastEnd { claimed, available } => write!(
                f,
                "the header claims {claimed} bytes but only {available} follow the length: \
                 the file is truncated or corrupted"
            ),
            E::HeaderNotUtf8 { offset } => {
                write!(
                    f,
                    "the header is not UTF-8 (invalid bytes at offset {offset})"
                )
            }
            E::Json { offset, detail } => {
                write!(f, "the header is not valid JSON at byte {offset}: {detail}")
            }
            E::JsonTooDeep { offset, limit } => write!(
                f,
                "the header's JSON nests deeper than {limit} levels (at byte {offset}); \
                 a safetensors header needs 3"
            ),
            E::DuplicateKey { key, within } => {
                write!(f, "the header names \"{key}\" twice in {within}")
            }
            E::InvalidHeader { entry, detail } => {
                write!(f, "invalid safetensors header entry \"{entry}\": {detail}")
            }
            E::UnknownDtype { name, dtype } => write!(
                f,
                "tensor \"{name}\" has dtype \"{dtype}\", which the safetensors format \
                 does not define"
            ),
            E::ShapeOverflow { name, shape } => write!(
                f,
                "tensor \"{name}\" has shape {shape}, whose size overflows 64 bits"
            ),
            E::SizeMismatch {
                name,
                expected,
                offsets,
            } => write!(
                f,
                "tensor \"{name}\" needs {expected} bytes but its data_offsets {offsets:?} \
                 span {}",
                offsets[1].wrapping_sub(offsets[0])
            ),
            E::OverlappingOffsets { first, second } => write!(
                f,
                "the data of tensors \"{first}\" and \"{second}\" overlap"
            ),
            E::HoleInOffsets { start, end } => write!(
                f,
                "bytes {start}..{end} of the data section belong to no tensor"
            ),
            E::OffsetOutOfRange {
                name,
                end,
                data_len,
            } => write!(
                f,
                "tensor \"{name}\" ends at byte {end} but the data section has {data_len} \
                 bytes: the file is truncated"
            ),
            E::TrailingBytes { data_end, data_len } => write!(
                f,
                "the tensors end at byte {data_end} but the data section has {data_len} \
                 bytes: the file has trailing bytes"
            ),
            E::ValueOutOfRange {
                name,
                target,
                index,
                value,
            } => write!(
                f,
                "tensor \"{name}\" holds {value} at index {index}, outside {target}: keep it \
                 as a host tensor, or map the values into range first"
            ),
            E::UnsupportedDtype {
                name,
                dtype,
                accepted,
            } => write!(
                f,
                "tensor \"{name}\" has dtype {dtype}; this operation accepts {accepted}"
            ),
            E::MissingTensor { name } => write!(f, "no tensor named \"{name}\""),
            E::ReservedName { name } => write!(
                f,
                "a tensor cannot be named \"{name}\": the safetensors format reserves it"
            ),
            E::HostTensorSize { expected, got } => match expected {
                Some(e) => write!(f, "host tensor data has {got} bytes, its shape needs {e}"),
                None => write!(f, "host tensor shape overflows ({got} bytes given)"),
            },
            E::Runtime(e) => write!(f, "device error: {e}"),
        }
    }
}

impl std::error::Error for SafetensorsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SafetensorsError::Io { source, .. } => Some(source),
            SafetensorsError::Runtime(e) => Some(e),
            _ => None,
        }
    }
}

crate::macros::wrap_errors!(SafetensorsError { tang_runtime::Error => Runtime });

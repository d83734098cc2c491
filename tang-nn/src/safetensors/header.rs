//! The safetensors header: parsed and validated by the `safetensors` crate, with a typed
//! error for every defect of a hostile file.
//!
//! The crate decides whether a header is valid. Before it, a pre-check in `diagnose.rs`
//! keeps the order of the entries and refuses a key named twice (the crate's maps keep
//! one of them silently); when the crate refuses a header, `diagnose.rs` names the
//! defect (which tensor, which field, which bytes).

use std::collections::BTreeMap;

use safetensors::Dtype;
use safetensors::tensor::Metadata;

use super::diagnose::{diagnose, entry_names, invalid};
use super::error::SafetensorsError;

/// The largest header the format allows (and tang reads): 100 MB.
///
/// ```
/// use tang_nn::safetensors::{MAX_HEADER_LEN, read_bytes};
/// // A header claiming more than MAX_HEADER_LEN bytes is refused before anything is allocated.
/// let mut bytes = (MAX_HEADER_LEN + 1).to_le_bytes().to_vec();
/// bytes.extend_from_slice(b"{}");
/// assert_eq!(read_bytes(&bytes).err().map(|e| e.kind()), Some("header_too_large"));
/// ```
pub const MAX_HEADER_LEN: u64 = 100_000_000;

/// The most dimensions tang accepts in a tensor's shape; real tensors have a handful.
///
/// ```
/// use tang_nn::safetensors::{Header, MAX_RANK};
/// let shape = vec!["1"; MAX_RANK + 1].join(",");
/// let json = format!(r#"{{"x":{{"dtype":"U8","shape":[{shape}],"data_offsets":[0,1]}}}}"#);
/// assert!(Header::parse(json.as_bytes(), 1).is_err()); // too many dimensions
/// ```
pub const MAX_RANK: usize = 64;

/// Bytes of the little-endian header length that starts every file.
pub(crate) const LEN_BYTES: u64 = 8;

/// The key of the header's string-to-string metadata map.
pub(crate) const METADATA_KEY: &str = "__metadata__";

/// One tensor's entry in a header.
///
/// ```
/// use tang_nn::safetensors::{Dtype, Header};
/// let json = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
/// let info = &Header::parse(json, 8)?.tensors[0];
/// assert_eq!((info.name.as_str(), info.dtype, info.data_offsets), ("w", Dtype::F32, [0, 8]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// The tensor's name (PyTorch's `state_dict` key).
    pub name: String,
    /// Its element type.
    pub dtype: Dtype,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Where its bytes start and end, from the start of the data section.
    pub data_offsets: [u64; 2],
}

/// A parsed and validated header.
///
/// ```
/// use tang_nn::safetensors::Header;
/// let json = br#"{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
/// let header = Header::parse(json, 8)?;
/// assert_eq!((header.metadata["format"].as_str(), header.tensors[0].shape.as_slice()), ("pt", &[2][..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// The `__metadata__` map (empty when the file has none).
    pub metadata: BTreeMap<String, String>,
    /// The tensors in the order the header lists them.
    pub tensors: Vec<TensorInfo>,
}

/// Reads the header length from the first 8 bytes and checks it against the format's cap
/// and against `available`, the bytes that follow them: nothing is allocated for a header
/// the file cannot hold.
pub(crate) fn header_len(prefix: [u8; 8], available: u64) -> Result<u64, SafetensorsError> {
    let claimed = u64::from_le_bytes(prefix);
    if claimed > MAX_HEADER_LEN {
        return Err(SafetensorsError::HeaderTooLarge {
            claimed,
            limit: MAX_HEADER_LEN,
        });
    }
    if claimed > available {
        return Err(SafetensorsError::HeaderPastEnd { claimed, available });
    }
    Ok(claimed)
}

/// The bits of `shape` elements of `dtype`; `None` when the element count or the bit
/// count overflows 64 bits (counted in the crate's order, elements first, so that both
/// refuse the same shapes).
pub(crate) fn bit_size(dtype: Dtype, shape: &[usize]) -> Option<u64> {
    let elements = shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))?;
    elements.checked_mul(dtype.bitsize() as u64)
}

impl Header {
    /// Parses `bytes` (the header, without its length) and checks it against a data
    /// section of `data_len` bytes: every tensor's size, and that the tensors cover the
    /// data section exactly once (no overlap, no hole, nothing past the end or after it).
    ///
    /// ```
    /// use tang_nn::safetensors::Header;
    /// let json = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    /// assert!(Header::parse(json, 8).is_ok());
    /// assert!(Header::parse(json, 12).is_err()); // 4 bytes of the data section belong to no tensor
    /// ```
    ///
    /// # Errors
    /// A typed [`SafetensorsError`] for each kind of defect; never panics.
    pub fn parse(bytes: &[u8], data_len: u64) -> Result<Header, SafetensorsError> {
        let text = std::str::from_utf8(bytes).map_err(|e| SafetensorsError::HeaderNotUtf8 {
            offset: e.valid_up_to(),
        })?;
        let names = entry_names(text)?;
        match serde_json::from_str::<Metadata>(text) {
            Ok(meta) if meta.data_len() as u64 == data_len => from_crate(&names, &meta),
            verdict => {
                // The crate refused the header or its length: tang's checks name the defect.
                diagnose(text, &names, data_len)?;
                Err(invalid(
                    "header",
                    verdict.map_or_else(|e| e.to_string(), |_| "wrong data length".into()),
                ))
            }
        }
    }

    /// Indices of [`Header::tensors`] in the order their data lies in the file.
    pub(crate) fn data_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.tensors.len()).collect();
        order.sort_by_key(|&i| self.tensors[i].data_offsets);
        order
    }
}

/// The header as the crate read it, its tensors in the order the header lists them.
fn from_crate(names: &[String], meta: &Metadata) -> Result<Header, SafetensorsError> {
    let mut header = Header {
        metadata: meta
            .metadata()
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect(),
        tensors: Vec::with_capacity(names.len()),
    };
    for name in names.iter().filter(|k| *k != METADATA_KEY) {
        let info = meta
            .info(name)
            .ok_or_else(|| invalid(name, "not in the header as the safetensors crate read it"))?;
        if info.shape.len() > MAX_RANK {
            return Err(invalid(
                name,
                format!("shape has more than {MAX_RANK} dimensions"),
            ));
        }
        header.tensors.push(TensorInfo {
            name: name.clone(),
            dtype: info.dtype,
            shape: info.shape.clone(),
            data_offsets: [info.data_offsets.0 as u64, info.data_offsets.1 as u64],
        });
    }
    Ok(header)
}

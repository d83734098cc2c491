//! The safetensors header: reading it from hostile bytes with a typed error for every
//! defect, checking that the tensors tile the data section exactly, and writing it as the
//! format's reference writer does.

use std::collections::{BTreeMap, HashSet};

use super::dtype::{ByteSizeError, Dtype, byte_size};
use super::error::SafetensorsError;
use super::json::{Cursor, push_string};

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

/// The most dimensions tang accepts in a tensor's shape. It bounds what a hostile header
/// can make the reader allocate per tensor; real tensors have a handful.
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
        let header = parse_json(&mut Cursor::new(text))?;
        for t in &header.tensors {
            check_size(t)?;
        }
        check_layout(&header.tensors, data_len)?;
        Ok(header)
    }

    /// Indices of [`Header::tensors`] in the order their data lies in the file.
    pub(crate) fn data_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.tensors.len()).collect();
        order.sort_by_key(|&i| self.tensors[i].data_offsets);
        order
    }
}

/// Records `key` as seen in the object `within`, refusing a second occurrence.
fn first_time(
    seen: &mut HashSet<String>,
    key: &str,
    within: impl FnOnce() -> String,
) -> Result<(), SafetensorsError> {
    if seen.insert(key.to_string()) {
        Ok(())
    } else {
        Err(SafetensorsError::DuplicateKey {
            key: key.to_string(),
            within: within(),
        })
    }
}

fn invalid(entry: &str, detail: impl Into<String>) -> SafetensorsError {
    SafetensorsError::InvalidHeader {
        entry: entry.to_string(),
        detail: detail.into(),
    }
}

/// Reads the header object: `__metadata__` and the tensor entries.
fn parse_json(c: &mut Cursor<'_>) -> Result<Header, SafetensorsError> {
    if c.peek() != Some(b'{') {
        return Err(invalid("header", "the header must be a JSON object"));
    }
    c.expect(b'{')?;
    let mut header = Header::default();
    let mut seen = HashSet::new();
    if !c.eat(b'}') {
        loop {
            let key = c.string()?;
            first_time(&mut seen, &key, || "the header".into())?;
            c.expect(b':')?;
            if key == METADATA_KEY {
                header.metadata = parse_metadata(c)?;
            } else {
                let info = parse_tensor(c, key)?;
                header.tensors.push(info);
            }
            if !c.next_element(b'}')? {
                break;
            }
        }
    }
    if !c.at_end() {
        return Err(c.error("trailing characters after the header object"));
    }
    Ok(header)
}

/// Reads `__metadata__`: an object of strings (or `null`).
fn parse_metadata(c: &mut Cursor<'_>) -> Result<BTreeMap<String, String>, SafetensorsError> {
    let mut map = BTreeMap::new();
    if c.peek() == Some(b'n') {
        c.skip_value(1)?;
        return Ok(map);
    }
    if c.peek() != Some(b'{') {
        return Err(invalid(METADATA_KEY, "must be an object of strings"));
    }
    c.expect(b'{')?;
    if c.eat(b'}') {
        return Ok(map);
    }
    let mut seen = HashSet::new();
    loop {
        let key = c.string()?;
        first_time(&mut seen, &key, || METADATA_KEY.into())?;
        c.expect(b':')?;
        if c.peek() != Some(b'"') {
            return Err(invalid(
                METADATA_KEY,
                format!("the value of \"{key}\" must be a string"),
            ));
        }
        let value = c.string()?;
        map.insert(key, value);
        if !c.next_element(b'}')? {
            return Ok(map);
        }
    }
}

/// Reads one tensor entry: `{"dtype": ..., "shape": [...], "data_offsets": [a, b]}`.
/// Unknown fields are skipped, as the format's reference reader does.
fn parse_tensor(c: &mut Cursor<'_>, name: String) -> Result<TensorInfo, SafetensorsError> {
    if c.peek() != Some(b'{') {
        return Err(invalid(
            &name,
            "must be an object with dtype, shape and data_offsets",
        ));
    }
    c.expect(b'{')?;
    let (mut dtype, mut shape, mut offsets) = (None, None, None);
    let mut seen = HashSet::new();
    if !c.eat(b'}') {
        loop {
            let field = c.string()?;
            first_time(&mut seen, &field, || format!("tensor \"{name}\""))?;
            c.expect(b':')?;
            match field.as_str() {
                "dtype" => {
                    if c.peek() != Some(b'"') {
                        return Err(invalid(&name, "dtype must be a string"));
                    }
                    let s = c.string()?;
                    dtype = Some(Dtype::from_name(&s).ok_or_else(|| {
                        SafetensorsError::UnknownDtype {
                            name: name.clone(),
                            dtype: s,
                        }
                    })?);
                }
                "shape" => shape = Some(parse_shape(c, &name)?),
                "data_offsets" => offsets = Some(parse_offsets(c, &name)?),
                _ => c.skip_value(2)?,
            }
            if !c.next_element(b'}')? {
                break;
            }
        }
    }
    let missing = |what: &str| invalid(&name, format!("missing field \"{what}\""));
    Ok(TensorInfo {
        dtype: dtype.ok_or_else(|| missing("dtype"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
        data_offsets: offsets.ok_or_else(|| missing("data_offsets"))?,
        name,
    })
}

/// Reads a shape: an array of at most [`MAX_RANK`] non-negative integers.
fn parse_shape(c: &mut Cursor<'_>, name: &str) -> Result<Vec<usize>, SafetensorsError> {
    if c.peek() != Some(b'[') {
        return Err(invalid(name, "shape must be an array of integers"));
    }
    let start = c.pos();
    c.expect(b'[')?;
    let mut shape = Vec::new();
    if c.eat(b']') {
        return Ok(shape);
    }
    loop {
        if shape.len() == MAX_RANK {
            return Err(invalid(
                name,
                format!("shape has more than {MAX_RANK} dimensions"),
            ));
        }
        let dim = c.u64(|t| invalid(name, format!("shape holds {t}, not a size")))?;
        match dim.and_then(|d| usize::try_from(d).ok()) {
            Some(d) => shape.push(d),
            None => {
                // Finish the array so that the error can show the whole shape.
                while c.next_element(b']')? {
                    c.u64(|t| invalid(name, format!("shape holds {t}, not a size")))?;
                }
                return Err(SafetensorsError::ShapeOverflow {
                    name: name.to_string(),
                    shape: c.slice(start, c.pos()),
                });
            }
        }
        if !c.next_element(b']')? {
            return Ok(shape);
        }
    }
}

/// Reads `data_offsets`: an array of exactly two non-negative integers.
fn parse_offsets(c: &mut Cursor<'_>, name: &str) -> Result<[u64; 2], SafetensorsError> {
    let bad = || invalid(name, "data_offsets must be two non-negative integers");
    if c.peek() != Some(b'[') {
        return Err(bad());
    }
    c.expect(b'[')?;
    let mut out = [0u64; 2];
    for (i, slot) in out.iter_mut().enumerate() {
        if i > 0 && !c.eat(b',') {
            return Err(bad());
        }
        *slot = c
            .u64(|_| bad())?
            .ok_or_else(|| invalid(name, "a data offset exceeds 64 bits"))?;
    }
    if !c.eat(b']') {
        return Err(bad());
    }
    Ok(out)
}

/// Checks that a tensor's byte range has exactly the size its dtype and shape need.
fn check_size(t: &TensorInfo) -> Result<(), SafetensorsError> {
    let shape: Vec<u64> = t.shape.iter().map(|&d| d as u64).collect();
    let expected = match byte_size(t.dtype, &shape) {
        Ok(n) => n,
        Err(ByteSizeError::Overflow) => {
            return Err(SafetensorsError::ShapeOverflow {
                name: t.name.clone(),
                shape: format!("{:?}", t.shape),
            });
        }
        Err(ByteSizeError::PartialByte { bits }) => {
            return Err(invalid(
                &t.name,
                format!("{bits} bits of {} do not fill whole bytes", t.dtype),
            ));
        }
    };
    let [begin, end] = t.data_offsets;
    if end < begin || end - begin != expected {
        return Err(SafetensorsError::SizeMismatch {
            name: t.name.clone(),
            expected,
            offsets: t.data_offsets,
        });
    }
    Ok(())
}

/// Checks that the tensors' byte ranges tile `0..data_len` exactly. A range past the end
/// is reported first (the file is truncated, or the range is wrong), then overlaps and
/// holes in data order, then bytes after the last tensor.
fn check_layout(tensors: &[TensorInfo], data_len: u64) -> Result<(), SafetensorsError> {
    let mut order: Vec<&TensorInfo> = tensors.iter().collect();
    order.sort_by_key(|t| t.data_offsets);
    if let Some(t) = order.iter().find(|t| t.data_offsets[1] > data_len) {
        return Err(SafetensorsError::OffsetOutOfRange {
            name: t.name.clone(),
            end: t.data_offsets[1],
            data_len,
        });
    }
    let mut covered = 0u64;
    let mut previous: Option<&TensorInfo> = None;
    for t in order {
        let [begin, end] = t.data_offsets;
        if begin < covered {
            return Err(SafetensorsError::OverlappingOffsets {
                first: previous.map_or_else(String::new, |p| p.name.clone()),
                second: t.name.clone(),
            });
        }
        if begin > covered {
            return Err(SafetensorsError::HoleInOffsets {
                start: covered,
                end: begin,
            });
        }
        covered = end;
        previous = Some(t);
    }
    if covered < data_len {
        return Err(SafetensorsError::TrailingBytes {
            data_end: covered,
            data_len,
        });
    }
    Ok(())
}

/// The header bytes for `metadata` and `tensors` (in the given order), padded with spaces
/// to a multiple of 8 bytes: the exact text the format's reference writer produces (no
/// whitespace, `__metadata__` first and only when non-empty).
pub(crate) fn serialize(metadata: &BTreeMap<String, String>, tensors: &[TensorInfo]) -> Vec<u8> {
    let mut s = String::from("{");
    let mut first = true;
    let mut comma = |s: &mut String| {
        if !std::mem::take(&mut first) {
            s.push(',');
        }
    };
    if !metadata.is_empty() {
        comma(&mut s);
        push_string(&mut s, METADATA_KEY);
        s.push_str(":{");
        for (i, (k, v)) in metadata.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            push_string(&mut s, k);
            s.push(':');
            push_string(&mut s, v);
        }
        s.push('}');
    }
    for t in tensors {
        comma(&mut s);
        push_string(&mut s, &t.name);
        s.push_str(":{\"dtype\":");
        push_string(&mut s, t.dtype.name());
        s.push_str(",\"shape\":[");
        let dims: Vec<String> = t.shape.iter().map(usize::to_string).collect();
        s.push_str(&dims.join(","));
        s.push_str(&format!(
            "],\"data_offsets\":[{},{}]}}",
            t.data_offsets[0], t.data_offsets[1]
        ));
    }
    s.push('}');
    let mut bytes = s.into_bytes();
    bytes.resize(bytes.len().next_multiple_of(8), b' ');
    bytes
}

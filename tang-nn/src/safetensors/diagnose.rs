//! Naming the defect of a header the `safetensors` crate refused: the entry and field at
//! fault, a shape whose size overflows, a byte range of the wrong size, and the overlap,
//! hole, truncation or trailing bytes of the data section, each as its own
//! [`SafetensorsError`]. The JSON itself is read by serde_json, into [`Json`].

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::dtype::{ByteSizeError, Dtype, byte_size};
use super::error::SafetensorsError;
use super::header::{Header, MAX_RANK, METADATA_KEY, TensorInfo};

/// serde_json's nesting limit, which the crate's reader shares.
const MAX_DEPTH: usize = 128;

/// A JSON value whose objects keep their entries in order, a repeated key included.
pub(crate) enum Json {
    /// An object's entries in order.
    Object(Vec<(String, Json)>),
    /// An array.
    Array(Vec<Json>),
    /// A string, number, boolean or null.
    Scalar(Value),
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Scalar(v.into()))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Scalar(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Scalar(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Scalar(v.into()))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Scalar(v.into()))
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Scalar(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(Json::Object(entries))
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Object(_) => f.write_str("an object"),
            Json::Array(_) => f.write_str("an array"),
            Json::Scalar(v) => write!(f, "{v}"),
        }
    }
}

/// An [`SafetensorsError::InvalidHeader`] of `entry`.
pub(crate) fn invalid(entry: &str, detail: impl Into<String>) -> SafetensorsError {
    SafetensorsError::InvalidHeader {
        entry: entry.to_string(),
        detail: detail.into(),
    }
}

/// serde_json's syntax error as tang's, at a byte offset of the header.
pub(crate) fn json_error(text: &str, e: &serde_json::Error) -> SafetensorsError {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let offset = line_start + e.column().saturating_sub(1);
    let message = e.to_string();
    let detail = message.split(" at line ").next().unwrap_or_default();
    match (detail, text.as_bytes().get(offset)) {
        ("recursion limit exceeded", _) => SafetensorsError::JsonTooDeep {
            offset,
            limit: MAX_DEPTH,
        },
        // serde_json's words for a leading surrogate that no `\u` escape follows.
        ("unexpected end of hex escape", _) => SafetensorsError::Json {
            offset,
            detail: "lone leading surrogate in a \\u escape".into(),
        },
        ("trailing comma", Some(b'}')) => SafetensorsError::Json {
            offset,
            detail: "expected '\"' (a key) after ',', found '}'".into(),
        },
        _ => SafetensorsError::Json {
            offset,
            detail: detail.to_string(),
        },
    }
}

/// tang's checks of a header the crate refused: the first defect as a typed error, in
/// the order an entry's fields, the tensors' sizes and the data section's layout are read.
pub(crate) fn diagnose(entries: &[(String, Json)], data_len: u64) -> Result<(), SafetensorsError> {
    let mut header = Header::default();
    for (key, value) in entries {
        if key == METADATA_KEY {
            header.metadata = metadata(value)?;
        } else {
            header.tensors.push(tensor(key, value)?);
        }
    }
    for t in &header.tensors {
        check_size(t)?;
    }
    check_layout(&header.tensors, data_len)
}

/// `__metadata__`: an object of strings, or `null`.
fn metadata(value: &Json) -> Result<BTreeMap<String, String>, SafetensorsError> {
    let fields = match value {
        Json::Scalar(Value::Null) => return Ok(BTreeMap::new()),
        Json::Object(fields) => fields,
        _ => return Err(invalid(METADATA_KEY, "must be an object of strings")),
    };
    fields
        .iter()
        .map(|(k, v)| match v {
            Json::Scalar(Value::String(s)) => Ok((k.clone(), s.clone())),
            _ => Err(invalid(
                METADATA_KEY,
                format!("the value of \"{k}\" must be a string"),
            )),
        })
        .collect()
}

/// One tensor entry: `{"dtype": ..., "shape": [...], "data_offsets": [a, b]}`, other
/// fields ignored as the crate ignores them.
fn tensor(name: &str, value: &Json) -> Result<TensorInfo, SafetensorsError> {
    let Json::Object(fields) = value else {
        return Err(invalid(
            name,
            "must be an object with dtype, shape and data_offsets",
        ));
    };
    let field = |f: &str| {
        fields
            .iter()
            .find(|(k, _)| k == f)
            .map(|(_, v)| v)
            .ok_or_else(|| invalid(name, format!("missing field \"{f}\"")))
    };
    let dtype = match field("dtype")? {
        Json::Scalar(Value::String(s)) => {
            Dtype::from_name(s).ok_or_else(|| SafetensorsError::UnknownDtype {
                name: name.to_string(),
                dtype: s.clone(),
            })?
        }
        _ => return Err(invalid(name, "dtype must be a string")),
    };
    let shape = match field("shape")? {
        Json::Array(dims) if dims.len() > MAX_RANK => {
            return Err(invalid(
                name,
                format!("shape has more than {MAX_RANK} dimensions"),
            ));
        }
        Json::Array(dims) => shape(name, dims)?,
        _ => return Err(invalid(name, "shape must be an array of integers")),
    };
    let offset = |v: &Json| match v {
        Json::Scalar(Value::Number(n)) => n.as_u64(),
        _ => None,
    };
    let data_offsets = match field("data_offsets")? {
        Json::Array(pair) => match pair.as_slice() {
            [a, b] => offset(a).zip(offset(b)).map(|(a, b)| [a, b]),
            _ => None,
        },
        _ => None,
    }
    .ok_or_else(|| invalid(name, "data_offsets must be two non-negative integers"))?;
    Ok(TensorInfo {
        name: name.to_string(),
        dtype,
        shape,
        data_offsets,
    })
}

/// A shape's sizes. An integer past 64 bits (which serde_json reads as a float) is a
/// shape that overflows; anything else that is not a size is an invalid entry.
fn shape(name: &str, dims: &[Json]) -> Result<Vec<usize>, SafetensorsError> {
    let overflow = || SafetensorsError::ShapeOverflow {
        name: name.to_string(),
        shape: format!(
            "[{}]",
            dims.iter()
                .map(Json::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    dims.iter()
        .map(|d| match d {
            Json::Scalar(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
                (Some(u), _) => usize::try_from(u).map_err(|_| overflow()),
                (None, Some(f)) if f >= u64::MAX as f64 && f.fract() == 0.0 => Err(overflow()),
                _ => Err(invalid(name, format!("shape holds {d}, not a size"))),
            },
            _ => Err(invalid(name, format!("shape holds {d}, not a size"))),
        })
        .collect()
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

//! What the `safetensors` crate does not say about a header: a pre-check that refuses a
//! key named twice and keeps the entries' order (the crate's maps keep one key of two,
//! and forget the order), and, for a header the crate refused, the defect named as its
//! own [`SafetensorsError`]: the entry and field at fault, a shape whose size overflows,
//! a byte range of the wrong size, and the overlap, hole, truncation or trailing bytes of
//! the data section. serde_json reads the JSON.

use std::cell::Cell;
use std::collections::{BTreeMap, HashSet};
use std::fmt;

use safetensors::Dtype;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, Error as _, IntoDeserializer, MapAccess};
use serde::de::{SeqAccess, Visitor};
use serde_json::Value;

use super::error::SafetensorsError;
use super::header::{MAX_RANK, METADATA_KEY, TensorInfo, bit_size};

/// serde_json's nesting limit, which the crate's reader shares.
const MAX_DEPTH: usize = 128;

/// An [`SafetensorsError::InvalidHeader`] of `entry`.
pub(crate) fn invalid(entry: &str, detail: impl Into<String>) -> SafetensorsError {
    SafetensorsError::InvalidHeader {
        entry: entry.to_string(),
        detail: detail.into(),
    }
}

/// The header's keys in the order it lists them, once the pre-check passed: the text is
/// one JSON object, nested no deeper than serde_json reads, that names no key twice in
/// the header, in `__metadata__` or in a tensor's entry.
pub(crate) fn entry_names(text: &str) -> Result<Vec<String>, SafetensorsError> {
    if !text.trim_start().starts_with('{') {
        return Err(invalid("header", "the header must be a JSON object"));
    }
    let found = Cell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let seed = UniqueKeys {
        top: true,
        within: Some("the header".into()),
        found: &found,
    };
    let names = seed
        .deserialize(&mut de)
        .and_then(|names| de.end().map(|()| names));
    match (names, found.into_inner()) {
        (_, Some(duplicate)) => Err(duplicate),
        (Ok(names), None) => Ok(names),
        (Err(e), None) => Err(json_error(text, &e)),
    }
}

/// Reads one JSON value and keeps only an object's keys, refusing a repeated one.
struct UniqueKeys<'a> {
    /// Whether this is the whole header, whose values are the entries.
    top: bool,
    /// The object as an error names it; `None` below an entry, where the crate ignores
    /// what it reads and a repeated key is harmless.
    within: Option<String>,
    /// The typed error of a repeated key (serde's errors carry only text).
    found: &'a Cell<Option<SafetensorsError>>,
}

impl<'de> DeserializeSeed<'de> for UniqueKeys<'_> {
    type Value = Vec<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<String>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys<'_> {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Vec<String>, E> {
        Ok(Vec::new())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Vec<String>, E> {
        Ok(Vec::new())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Vec<String>, E> {
        Ok(Vec::new())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Vec<String>, E> {
        Ok(Vec::new())
    }
    fn visit_str<E>(self, _: &str) -> Result<Vec<String>, E> {
        Ok(Vec::new())
    }
    fn visit_unit<E>(self) -> Result<Vec<String>, E> {
        Ok(Vec::new())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
        let nested = || UniqueKeys {
            top: false,
            within: None,
            found: self.found,
        };
        while seq.next_element_seed(nested())?.is_some() {}
        Ok(Vec::new())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
        let (mut keys, mut seen) = (Vec::new(), HashSet::new());
        while let Some(key) = map.next_key::<String>()? {
            if let Some(within) = self.within.as_ref().filter(|_| !seen.insert(key.clone())) {
                let within = within.clone();
                self.found
                    .set(Some(SafetensorsError::DuplicateKey { key, within }));
                return Err(A::Error::custom("a key named twice"));
            }
            let within = match self.top {
                true if key == METADATA_KEY => Some(key.clone()),
                true => Some(format!("tensor \"{key}\"")),
                false => None,
            };
            map.next_value_seed(UniqueKeys {
                top: false,
                within,
                found: self.found,
            })?;
            keys.push(key);
        }
        Ok(keys)
    }
}

/// serde_json's syntax error as tang's, at a byte offset of the header.
fn json_error(text: &str, e: &serde_json::Error) -> SafetensorsError {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum();
    let offset = line_start + e.column().saturating_sub(1);
    let message = e.to_string();
    let detail = message.split(" at line ").next().unwrap_or_default();
    let detail = match (detail, text.as_bytes().get(offset)) {
        ("recursion limit exceeded", _) => {
            return SafetensorsError::JsonTooDeep {
                offset,
                limit: MAX_DEPTH,
            };
        }
        // serde_json's words for a leading surrogate that no `\u` escape follows.
        ("unexpected end of hex escape", _) => "lone leading surrogate in a \\u escape",
        ("trailing comma", Some(b'}')) => "expected '\"' (a key) after ',', found '}'",
        (detail, _) => detail,
    };
    SafetensorsError::Json {
        offset,
        detail: detail.to_string(),
    }
}

/// tang's checks of a header the crate refused (its keys `names`, each once): the first
/// defect as a typed error, in the order an entry's fields, the tensors' sizes and the
/// data section's layout are read.
pub(crate) fn diagnose(
    text: &str,
    names: &[String],
    data_len: u64,
) -> Result<(), SafetensorsError> {
    let header: Value = serde_json::from_str(text).map_err(|e| json_error(text, &e))?;
    let mut tensors = Vec::with_capacity(names.len());
    for name in names {
        match &header[name.as_str()] {
            metadata if name == METADATA_KEY => check_metadata(metadata)?,
            entry => tensors.push(tensor(name, entry)?),
        }
    }
    for t in &tensors {
        check_size(t)?;
    }
    check_layout(&tensors, data_len)
}

/// `__metadata__`: an object of strings, or `null`.
fn check_metadata(value: &Value) -> Result<(), SafetensorsError> {
    match Option::<BTreeMap<String, Value>>::deserialize(value) {
        Ok(fields) => match fields
            .unwrap_or_default()
            .iter()
            .find(|(_, v)| !v.is_string())
        {
            Some((k, _)) => Err(invalid(
                METADATA_KEY,
                format!("the value of \"{k}\" must be a string"),
            )),
            None => Ok(()),
        },
        Err(_) => Err(invalid(METADATA_KEY, "must be an object of strings")),
    }
}

/// One tensor entry: `{"dtype": ..., "shape": [...], "data_offsets": [a, b]}`, other
/// fields ignored as the crate ignores them.
fn tensor(name: &str, value: &Value) -> Result<TensorInfo, SafetensorsError> {
    if !value.is_object() {
        return Err(invalid(
            name,
            "must be an object with dtype, shape and data_offsets",
        ));
    }
    let field = |f: &str| {
        value
            .get(f)
            .ok_or_else(|| invalid(name, format!("missing field \"{f}\"")))
    };
    let dtype = field("dtype")?
        .as_str()
        .ok_or_else(|| invalid(name, "dtype must be a string"))?;
    let dtype =
        Dtype::deserialize(dtype.into_deserializer()).map_err(|_: serde::de::value::Error| {
            SafetensorsError::UnknownDtype {
                name: name.to_string(),
                dtype: dtype.to_string(),
            }
        })?;
    let shape = match field("shape")?.as_array() {
        Some(dims) if dims.len() > MAX_RANK => {
            return Err(invalid(
                name,
                format!("shape has more than {MAX_RANK} dimensions"),
            ));
        }
        Some(dims) => shape(name, dims)?,
        None => return Err(invalid(name, "shape must be an array of integers")),
    };
    let data_offsets = match field("data_offsets")?.as_array().map(Vec::as_slice) {
        Some([a, b]) => a.as_u64().zip(b.as_u64()).map(|(a, b)| [a, b]),
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
fn shape(name: &str, dims: &[Value]) -> Result<Vec<usize>, SafetensorsError> {
    let overflow = || SafetensorsError::ShapeOverflow {
        name: name.to_string(),
        shape: Value::from(dims).to_string().replace(',', ", "),
    };
    dims.iter()
        .map(|d| match (d.as_u64(), d.as_f64()) {
            (Some(u), _) => usize::try_from(u).map_err(|_| overflow()),
            (None, Some(f)) if f >= u64::MAX as f64 && f.fract() == 0.0 => Err(overflow()),
            _ => Err(invalid(name, format!("shape holds {d}, not a size"))),
        })
        .collect()
}

/// Checks that a tensor's byte range has exactly the size its dtype and shape need.
fn check_size(t: &TensorInfo) -> Result<(), SafetensorsError> {
    let bits = bit_size(t.dtype, &t.shape).ok_or_else(|| SafetensorsError::ShapeOverflow {
        name: t.name.clone(),
        shape: format!("{:?}", t.shape),
    })?;
    if bits % 8 != 0 {
        return Err(invalid(
            &t.name,
            format!("{bits} bits of {} do not fill whole bytes", t.dtype),
        ));
    }
    let [begin, end] = t.data_offsets;
    if end < begin || end - begin != bits / 8 {
        return Err(SafetensorsError::SizeMismatch {
            name: t.name.clone(),
            expected: bits / 8,
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

//! Writing state dicts as safetensors files through the `safetensors` crate, the writer
//! behind `safetensors.torch`: tensors laid out by dtype (the format's order, largest
//! first) then by name, the header compact JSON padded with spaces to 8 bytes. tang
//! converts the floats and writes tied entries once, with the dropped names recorded in
//! `__metadata__` as `save_model` records them.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::Path;

use safetensors::{SafeTensorError, View};
use serde::Deserialize;
use serde::de::IntoDeserializer;
use tang_runtime::DType;

use super::convert::{FloatDtype, narrow_from_f32, widen_to_f32};
use super::dtype::Dtype;
use super::error::SafetensorsError;
use super::header::METADATA_KEY;
use super::state_dict::{StateDict, StateTensor};

/// The dtype `tensor` is written in: floating tensors (F32, F16, BF16) in `float`, every
/// other dtype as it is.
fn stored_dtype(tensor: &StateTensor, float: FloatDtype) -> Dtype {
    let d = tensor.dtype();
    if d.is_float_for_device() {
        float.dtype()
    } else {
        d
    }
}

/// Drops tied duplicates as `safetensors.torch.save_model` does: of each group of tied
/// entries ([`StateTensor::is_tied_to`]), the name first in string order is kept and each other is
/// recorded in the metadata as `{dropped: kept}` unless the caller's metadata already
/// uses that key. Returns the kept entries and the metadata to write.
fn untie<'a>(
    state: &'a StateDict,
    metadata: &BTreeMap<String, String>,
) -> (Vec<(&'a str, &'a StateTensor)>, BTreeMap<String, String>) {
    let entries: Vec<(&str, &StateTensor)> = state.iter().collect();
    let mut metadata = metadata.clone();
    let mut kept = Vec::new();
    for (i, &(name, tensor)) in entries.iter().enumerate() {
        let group: Vec<&str> = entries
            .iter()
            .filter(|(_, other)| other.is_tied_to(tensor))
            .map(|&(n, _)| n)
            .collect();
        let keep = group.iter().copied().min().unwrap_or(name);
        if keep == name {
            kept.push(entries[i]);
        } else {
            metadata
                .entry(name.to_string())
                .or_insert_with(|| keep.to_string());
        }
    }
    (kept, metadata)
}

/// One tensor as the crate writes it: its file dtype, shape and little-endian bytes
/// (borrowed from a host tensor already in that dtype, else encoded).
struct Encoded<'a> {
    dtype: safetensors::Dtype,
    shape: &'a [usize],
    bytes: Cow<'a, [u8]>,
}

impl View for &Encoded<'_> {
    fn dtype(&self) -> safetensors::Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// The tensors to write (tied entries once) with their bytes, and the metadata: the
/// crate lays them out (dtype order, largest first, then name) and writes the header.
type Plan<'a> = (Vec<(&'a str, Encoded<'a>)>, Option<HashMap<String, String>>);

/// Unties `state`, refuses the reserved name and encodes each tensor in its file dtype.
fn plan<'a>(
    state: &'a StateDict,
    float: FloatDtype,
    metadata: &BTreeMap<String, String>,
) -> Result<Plan<'a>, SafetensorsError> {
    let (kept, metadata) = untie(state, metadata);
    let mut tensors = Vec::with_capacity(kept.len());
    for (name, tensor) in kept {
        if name == METADATA_KEY {
            return Err(SafetensorsError::ReservedName { name: name.into() });
        }
        let dtype = stored_dtype(tensor, float);
        let unsupported = |_| SafetensorsError::UnsupportedDtype {
            name: name.into(),
            dtype,
            accepted: "a dtype of the safetensors crate",
        };
        let encoded = Encoded {
            dtype: safetensors::Dtype::deserialize(dtype.name().into_deserializer())
                .map_err(|e: serde::de::value::Error| unsupported(e))?,
            shape: tensor.shape(),
            bytes: encode(name, tensor, dtype, float)?,
        };
        tensors.push((name, encoded));
    }
    Ok((
        tensors,
        (!metadata.is_empty()).then(|| metadata.into_iter().collect()),
    ))
}

/// The bytes of `tensor` in `dtype` (downloaded from the device when it lives there).
fn encode<'a>(
    name: &str,
    tensor: &'a StateTensor,
    dtype: Dtype,
    float: FloatDtype,
) -> Result<Cow<'a, [u8]>, SafetensorsError> {
    match tensor {
        StateTensor::Device(t) => Ok(Cow::Owned(match t.dtype() {
            // An f16 tensor widens exactly, so narrowing it back to F16 is lossless.
            DType::F32 | DType::F16 => narrow_from_f32(&t.to_vec()?, float),
            DType::U32 => t
                .to_vec_u32()?
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        })),
        StateTensor::Host(h) if h.dtype() == dtype => Ok(Cow::Borrowed(h.data())),
        StateTensor::Host(h) => {
            let values = widen_to_f32(h.dtype(), h.data()).ok_or_else(|| {
                SafetensorsError::UnsupportedDtype {
                    name: name.to_string(),
                    dtype: h.dtype(),
                    accepted: "F32, F16 or BF16 for conversion",
                }
            })?;
            Ok(Cow::Owned(narrow_from_f32(&values, float)))
        }
    }
}

/// The crate's error in writing `path` as tang's.
fn write_error(path: &Path, e: SafeTensorError) -> SafetensorsError {
    match e {
        SafeTensorError::IoError(source) => SafetensorsError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => SafetensorsError::InvalidHeader {
            entry: "header".into(),
            detail: other.to_string(),
        },
    }
}

/// `state` as the bytes of a safetensors file: floating tensors in `float` (rounded to
/// nearest even), integer tensors in their own dtype, tied entries once (see [`save_file`]),
/// and `metadata` kept.
///
/// ```
/// use tang_nn::safetensors::{FloatDtype, HostTensor, StateDict, save_bytes};
/// let mut sd = StateDict::new();
/// sd.insert("w", HostTensor::from_f32(&[1.0, 2.0], &[2])?);
/// let bytes = save_bytes(&sd, FloatDtype::F32, &Default::default())?; // safetensors.torch.save(sd)
/// assert_eq!(&bytes[8..10], b"{\"");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`SafetensorsError::ReservedName`] for a tensor named `__metadata__`,
/// [`SafetensorsError::Runtime`] when a download fails.
pub fn save_bytes(
    state: &StateDict,
    float: FloatDtype,
    metadata: &BTreeMap<String, String>,
) -> Result<Vec<u8>, SafetensorsError> {
    let (tensors, metadata) = plan(state, float, metadata)?;
    let tensors = tensors.iter().map(|(name, t)| (*name, t));
    safetensors::serialize(tensors, metadata).map_err(|e| write_error(Path::new("<memory>"), e))
}

/// Writes `state` to `path` as `safetensors.torch.save_model` would: floating tensors in
/// `float` (F32, or F16/BF16 rounded to nearest even), integer tensors in their own dtype,
/// each group of tied entries once under its first name in string order with the others
/// recorded in `__metadata__` as `{dropped: kept}`, and the caller's `metadata` kept
/// (never overwritten by an alias record). For an untied state dict the file is
/// byte-identical to `safetensors.torch.save_file`'s. The file is written under a
/// temporary name beside `path` and renamed into place, so a reader never sees half of it.
///
/// ```
/// use tang_nn::safetensors::{FloatDtype, StateDict, save_file};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// # let path = std::env::temp_dir().join(format!("tang-doc-save-file-{}.safetensors", std::process::id()));
/// let mut sd = StateDict::new();
/// sd.insert("w", tang_nn::tang_runtime::Tensor::zeros(&dev, &[2, 2])?); // downloaded when written
/// let meta = [("step".to_string(), "100".to_string())].into();
/// save_file(&path, &sd, FloatDtype::F16, &meta)?; // safetensors.torch.save_file(sd, path, metadata)
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`SafetensorsError::Io`] when the file cannot be written; as [`save_bytes`].
pub fn save_file(
    path: impl AsRef<Path>,
    state: &StateDict,
    float: FloatDtype,
    metadata: &BTreeMap<String, String>,
) -> Result<(), SafetensorsError> {
    let path = path.as_ref();
    let io = |source| SafetensorsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (tensors, metadata) = plan(state, float, metadata)?;
    // The crate writes a temporary file beside `path` and renames it into place; the file
    // created first keeps the permissions a new file gets here (the temporary file's are
    // owner-only), and the sync makes the data durable as before.
    let permissions = File::create(path)
        .and_then(|f| f.metadata())
        .map_err(io)?
        .permissions();
    let tensors = tensors.iter().map(|(name, t)| (*name, t));
    safetensors::serialize_to_file(tensors, metadata, path).map_err(|e| write_error(path, e))?;
    std::fs::set_permissions(path, permissions).map_err(io)?;
    File::open(path).and_then(|f| f.sync_all()).map_err(io)
}

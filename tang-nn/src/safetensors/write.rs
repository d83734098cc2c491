//! Writing state dicts as safetensors files, byte for byte as `safetensors.torch` writes
//! them: tensors laid out by dtype (the format's order, largest first) then by name, the
//! header compact JSON padded with spaces to 8 bytes, and tied entries written once with
//! the dropped names recorded in `__metadata__` as `save_model` records them.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use tang_runtime::DType;

use super::convert::{FloatDtype, narrow_from_f32, widen_to_f32};
use super::dtype::{Dtype, byte_size};
use super::error::SafetensorsError;
use super::header::{METADATA_KEY, TensorInfo, serialize};
use super::state_dict::{StateDict, StateTensor};

/// What will be written: the header and, in data order, the tensors to encode.
struct Plan<'a> {
    header: Vec<u8>,
    tensors: Vec<(&'a str, &'a StateTensor, Dtype)>,
}

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

/// Lays out the tensors (dtype order, largest first, then name) and builds the header.
fn plan<'a>(
    state: &'a StateDict,
    float: FloatDtype,
    metadata: &BTreeMap<String, String>,
) -> Result<Plan<'a>, SafetensorsError> {
    let (kept, metadata) = untie(state, metadata);
    let mut tensors: Vec<(&str, &StateTensor, Dtype)> = kept
        .into_iter()
        .map(|(n, t)| (n, t, stored_dtype(t, float)))
        .collect();
    if let Some((name, _, _)) = tensors.iter().find(|(n, _, _)| *n == METADATA_KEY) {
        return Err(SafetensorsError::ReservedName {
            name: name.to_string(),
        });
    }
    tensors.sort_by(|(ln, _, ld), (rn, _, rd)| rd.cmp(ld).then(ln.cmp(rn)));
    let mut infos = Vec::with_capacity(tensors.len());
    let mut offset = 0u64;
    for &(name, tensor, dtype) in &tensors {
        let dims: Vec<u64> = tensor.shape().iter().map(|&d| d as u64).collect();
        let size = byte_size(dtype, &dims)
            .ok()
            .and_then(|n| offset.checked_add(n).map(|end| (n, end)));
        let Some((_, end)) = size else {
            return Err(SafetensorsError::ShapeOverflow {
                name: name.to_string(),
                shape: format!("{:?}", tensor.shape()),
            });
        };
        infos.push(TensorInfo {
            name: name.to_string(),
            dtype,
            shape: tensor.shape().to_vec(),
            data_offsets: [offset, end],
        });
        offset = end;
    }
    Ok(Plan {
        header: serialize(&metadata, &infos),
        tensors,
    })
}

/// The bytes of `tensor` in `dtype` (downloaded from the device when it lives there).
fn encode(
    name: &str,
    tensor: &StateTensor,
    dtype: Dtype,
    float: FloatDtype,
) -> Result<Vec<u8>, SafetensorsError> {
    match tensor {
        StateTensor::Device(t) => Ok(match t.dtype() {
            DType::F32 => narrow_from_f32(&t.to_vec()?, float),
            DType::U32 => t
                .to_vec_u32()?
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
        }),
        StateTensor::Host(h) if h.dtype() == dtype => Ok(h.data().to_vec()),
        StateTensor::Host(h) => {
            let values = widen_to_f32(h.dtype(), h.data()).ok_or_else(|| {
                SafetensorsError::UnsupportedDtype {
                    name: name.to_string(),
                    dtype: h.dtype(),
                    accepted: "F32, F16 or BF16 for conversion",
                }
            })?;
            Ok(narrow_from_f32(&values, float))
        }
    }
}

/// Writes the file's bytes to `out`: length, header, then each tensor in data order.
fn write_to(out: &mut impl Write, plan: &Plan<'_>, float: FloatDtype) -> Result<(), WriteFailure> {
    out.write_all(&(plan.header.len() as u64).to_le_bytes())?;
    out.write_all(&plan.header)?;
    for &(name, tensor, dtype) in &plan.tensors {
        out.write_all(&encode(name, tensor, dtype, float)?)?;
    }
    Ok(())
}

/// Why writing stopped: the sink failed, or a tensor could not be encoded.
enum WriteFailure {
    Io(std::io::Error),
    Tensor(SafetensorsError),
}

impl From<std::io::Error> for WriteFailure {
    fn from(e: std::io::Error) -> Self {
        WriteFailure::Io(e)
    }
}

impl From<SafetensorsError> for WriteFailure {
    fn from(e: SafetensorsError) -> Self {
        WriteFailure::Tensor(e)
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
    let plan = plan(state, float, metadata)?;
    let mut out = Vec::new();
    match write_to(&mut out, &plan, float) {
        Ok(()) => Ok(out),
        Err(WriteFailure::Tensor(e)) => Err(e),
        // Writing to a Vec does not fail; keep the error typed all the same.
        Err(WriteFailure::Io(source)) => Err(SafetensorsError::Io {
            path: "<memory>".into(),
            source,
        }),
    }
}

/// Writes `state` to `path` as `safetensors.torch.save_model` would: floating tensors in
/// `float` (F32, or F16/BF16 rounded to nearest even), integer tensors in their own dtype,
/// each group of tied entries once under its first name in string order with the others
/// recorded in `__metadata__` as `{dropped: kept}`, and the caller's `metadata` kept
/// (never overwritten by an alias record). For an untied state dict the file is
/// byte-identical to `safetensors.torch.save_file`'s. The file is written in place; write
/// to a temporary name and rename for atomicity.
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
    let plan = plan(state, float, metadata)?;
    let mut out = BufWriter::new(File::create(path).map_err(io)?);
    match write_to(&mut out, &plan, float) {
        Ok(()) => {}
        Err(WriteFailure::Tensor(e)) => return Err(e),
        Err(WriteFailure::Io(e)) => return Err(io(e)),
    }
    out.into_inner()
        .map_err(|e| io(e.into_error()))?
        .sync_all()
        .map_err(io)
}

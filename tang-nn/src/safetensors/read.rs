//! Reading safetensors files into state dicts. Every length in the file is checked against
//! the file's real size before anything is allocated: the header length against the format's
//! cap and the bytes present, every tensor's range against the data section, and the
//! tensors must tile that section exactly.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use tang_runtime::Device;

use super::error::SafetensorsError;
use super::header::{Header, LEN_BYTES, header_len};
use super::{HostTensor, StateDict};

/// What a safetensors file holds: its tensors by name, and its `__metadata__`.
///
/// As `safetensors.torch.load_file`, the tensors are exactly those the file stores: a
/// tied name that `save_model` left out is not filled in here, because which names are
/// tied is a fact about a model, not about the file (its metadata is free-form: a value
/// that equals a tensor's name may be anything). [`crate::safetensors::load_model`]
/// takes the ties from the model, as PyTorch's `load_model` does.
///
/// ```
/// use tang_nn::safetensors::{HostTensor, StateDict, read_bytes, save_bytes};
/// let mut sd = StateDict::new();
/// sd.insert("w", HostTensor::from_f32(&[1.0], &[1])?);
/// let meta = [("format".to_string(), "pt".to_string())].into();
/// let file = read_bytes(&save_bytes(&sd, Default::default(), &meta)?)?;
/// assert_eq!((file.tensors.len(), file.metadata["format"].as_str()), (1, "pt"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Checkpoint {
    /// The tensors, in the order the header lists them.
    pub tensors: StateDict,
    /// The `__metadata__` map (a writer's records of tied names included, as text).
    pub metadata: BTreeMap<String, String>,
}

/// Parses a whole safetensors file held in memory; tensors stay on the host in their
/// file dtype.
///
/// ```
/// use tang_nn::safetensors::{HostTensor, StateDict, read_bytes, save_bytes};
/// let mut sd = StateDict::new();
/// sd.insert("w", HostTensor::from_f32(&[1.0, 2.0], &[2])?);
/// let bytes = save_bytes(&sd, Default::default(), &Default::default())?;
/// assert_eq!(read_bytes(&bytes)?.tensors.f32_values("w")?, [1.0, 2.0]); // safetensors.torch.load(bytes)
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// A typed [`SafetensorsError`] for every defect of the bytes; never panics.
pub fn read_bytes(bytes: &[u8]) -> Result<Checkpoint, SafetensorsError> {
    read_from(bytes, bytes.len() as u64, Path::new("<memory>"))
}

/// Reads a safetensors file; tensors stay on the host in their file dtype. The file is
/// read once, front to back, and nothing is allocated that the file's length does not
/// back.
///
/// ```
/// use tang_nn::safetensors::{HostTensor, StateDict, read_file, save_file};
/// # let path = std::env::temp_dir().join(format!("tang-doc-read-file-{}.safetensors", std::process::id()));
/// let mut sd = StateDict::new();
/// sd.insert("ids", HostTensor::from_i64(&[1, 2], &[2])?);
/// save_file(&path, &sd, Default::default(), &Default::default())?;
/// let file = read_file(&path)?; // host tensors in the file's dtypes
/// assert_eq!(file.tensors.i64_values("ids")?, [1, 2]);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`SafetensorsError::Io`] when the file cannot be read, and a typed error for every
/// defect of its contents; never panics.
pub fn read_file(path: impl AsRef<Path>) -> Result<Checkpoint, SafetensorsError> {
    let path = path.as_ref();
    let io = |source| SafetensorsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let file_len = file.metadata().map_err(io)?.len();
    read_from(BufReader::new(file), file_len, path)
}

/// Reads a file of `file_len` bytes from `reader` (named `path` in errors) once, front to
/// back, allocating nothing that `file_len` does not back.
fn read_from(
    mut reader: impl Read,
    file_len: u64,
    path: &Path,
) -> Result<Checkpoint, SafetensorsError> {
    let io = |source| SafetensorsError::Io {
        path: path.to_path_buf(),
        source,
    };
    if file_len < LEN_BYTES {
        return Err(SafetensorsError::TooShort { len: file_len });
    }
    let mut prefix = [0u8; 8];
    reader.read_exact(&mut prefix).map_err(io)?;
    let n = header_len(prefix, file_len - LEN_BYTES)?;
    let mut header_bytes = vec![0u8; n as usize];
    reader.read_exact(&mut header_bytes).map_err(io)?;
    let header = Header::parse(&header_bytes, file_len - LEN_BYTES - n)?;
    drop(header_bytes);
    // The tensors tile the data section, so reading them in offset order reads the rest
    // of the file sequentially; each buffer is exactly its validated size.
    let mut data: Vec<Vec<u8>> = vec![Vec::new(); header.tensors.len()];
    for i in header.data_order() {
        let [begin, end] = header.tensors[i].data_offsets;
        data[i] = vec![0u8; (end - begin) as usize];
        reader.read_exact(&mut data[i]).map_err(io)?;
    }
    let mut tensors = StateDict::new();
    for (t, bytes) in header.tensors.iter().zip(data) {
        tensors.insert(t.name.clone(), HostTensor::new(t.dtype, &t.shape, bytes)?);
    }
    Ok(Checkpoint {
        tensors,
        metadata: header.metadata,
    })
}

/// Reads a safetensors file onto `dev`: F32, F16 and BF16 tensors become f32 device
/// tensors (F16 and BF16 widened exactly); integer tensors (I64 token ids) stay on the
/// host (see [`StateDict::u32_tensor`]).
///
/// ```
/// use tang_nn::safetensors::{HostTensor, StateDict, load_file, save_file};
/// let dev = tang_nn::tang_runtime::Device::new()?;
/// # let path = std::env::temp_dir().join(format!("tang-doc-load-file-{}.safetensors", std::process::id()));
/// let mut sd = StateDict::new();
/// sd.insert("w", HostTensor::from_f32(&[1.0, 2.0], &[2])?);
/// save_file(&path, &sd, Default::default(), &Default::default())?;
/// let file = load_file(&path, &dev)?; // safetensors.torch.load_file(path, device="cuda")
/// assert_eq!(file.tensors.f32_values("w")?, [1.0, 2.0]);
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`read_file`], and [`SafetensorsError::Runtime`] when the device fails.
pub fn load_file(path: impl AsRef<Path>, dev: &Device) -> Result<Checkpoint, SafetensorsError> {
    let host = read_file(path)?;
    Ok(Checkpoint {
        tensors: host.tensors.to_device(dev)?,
        ..host
    })
}

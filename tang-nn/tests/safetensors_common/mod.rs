//! Helpers shared by the safetensors tests: fixture paths and the parts of a file.

#![allow(dead_code)]

use std::path::PathBuf;

use tang_nn::safetensors::Header;

/// A PyTorch fixture (`../shared/fixtures/torch/` beside the checkout).
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/torch")
        .join(name)
}

/// A file committed under `tang-nn/tests/data/`.
pub fn data_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The bytes of a fixture or data file.
pub fn bytes(path: &PathBuf) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The header length a file declares.
pub fn header_len(file: &[u8]) -> usize {
    u64::from_le_bytes(file[..8].try_into().unwrap()) as usize
}

/// The header text of a file (padding included).
pub fn header_text(file: &[u8]) -> String {
    String::from_utf8(file[8..8 + header_len(file)].to_vec()).unwrap()
}

/// The data section of a file.
pub fn data_section(file: &[u8]) -> &[u8] {
    &file[8 + header_len(file)..]
}

/// The parsed header of a well-formed file.
pub fn header(file: &[u8]) -> Header {
    Header::parse(
        &file[8..8 + header_len(file)],
        data_section(file).len() as u64,
    )
    .unwrap()
}

//! naga validation of WGSL: the check every tang shader passes before it can be used.

use crate::error::ValidationError;

/// Parses and validates a WGSL shader with naga (all validation flags; the capabilities
/// tang's shaders may use: subgroup operations, f16, `unpack2x16float`, cooperative
/// matrices and 64-bit integers, which the runtime only selects when the adapter has
/// them).
///
/// # Errors
/// A [`ValidationError`] with naga's message and the location it points at.
pub fn validate(wgsl: &str) -> Result<(), ValidationError> {
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| ValidationError {
        stage: "parse",
        message: e.emit_to_string(wgsl),
    })?;
    let caps = naga::valid::Capabilities::SUBGROUP
        | naga::valid::Capabilities::SUBGROUP_BARRIER
        | naga::valid::Capabilities::SHADER_FLOAT16
        | naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32
        | naga::valid::Capabilities::COOPERATIVE_MATRIX
        | naga::valid::Capabilities::SHADER_INT64;
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| ValidationError {
            stage: "validate",
            message: e.emit_to_string(wgsl),
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_and_rejects_invalid_shaders() {
        let ok = "@compute @workgroup_size(1) fn main() { let x = 1.0f + 2.0f; }";
        assert_eq!(validate(ok), Ok(()));
        let parse = validate("fn main( {").unwrap_err();
        assert_eq!(parse.stage, "parse");
        let bad = "@compute @workgroup_size(1) fn main() { let x: f32 = 1u; }";
        assert!(validate(bad).is_err());
    }
}

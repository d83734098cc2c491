//! How an operand's elements reach the f32 tile's FMAs: f32 as stored, f32 rounded to f16
//! on load (autocast's products without tensor cores), or f16 storage widened on load.

/// How an operand's elements reach the f32 FMAs of the tile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Elem {
    /// f32 storage, used as is.
    #[default]
    F32,
    /// f32 storage rounded to f16 on load (autocast's products without tensor cores).
    F32AsF16,
    /// f16 storage, widened on load.
    F16,
}

impl Elem {
    /// The element kind of a `dtype` operand in a product whose operands are rounded to
    /// f16 when `half` is set.
    pub(crate) fn of(dtype: crate::DType, half: bool) -> Elem {
        match (dtype, half) {
            (crate::DType::F16, _) => Elem::F16,
            (_, true) => Elem::F32AsF16,
            _ => Elem::F32,
        }
    }

    /// The WGSL storage type of an operand (`vec`: four elements per index).
    pub(super) fn storage(self, vec: bool) -> &'static str {
        match (self, vec) {
            // f16 storage is read as 32-bit words and converted on the bits (no
            // `SHADER_F16` needed): 4 halves per `vec2<u32>`, 2 per `u32`.
            (Elem::F16, true) => "array<vec2<u32>>",
            (Elem::F16, false) => "array<u32>",
            (_, true) => "array<vec4<f32>>",
            (_, false) => "array<f32>",
        }
    }

    /// `load` (a WGSL read of element index `gi`, or of its vec4 at `gi >> 2`) as f32.
    pub(super) fn convert(self, name: char, vec: bool) -> String {
        match (self, vec) {
            (Elem::F32, true) => format!("{name}[gi >> 2u]"),
            (Elem::F32, false) => format!("{name}[gi]"),
            (Elem::F32AsF16, true) => format!("round_f16x4({name}[gi >> 2u])"),
            (Elem::F32AsF16, false) => format!("round_f16({name}[gi])"),
            (Elem::F16, true) => format!("widen_f16x4({name}[gi >> 2u])"),
            (Elem::F16, false) => format!("widen_f16({name}[gi >> 1u], gi)"),
        }
    }
}

/// WGSL helpers for [`Elem`]: f32 rounded through f16 and f16 words widened, on the
/// bits (round to nearest even, as `to_dtype`).
pub(crate) fn elem_helpers() -> String {
    use crate::cast::{F16_BITS_TO_F32_WGSL, F32_TO_F16_BITS_WGSL};
    use crate::wgsl_rewrite::WIDEN_F16_WGSL;
    format!(
        "{F32_TO_F16_BITS_WGSL}{F16_BITS_TO_F32_WGSL}fn round_f16(x: f32) -> f32 {{ return bitcast<f32>(f16_bits_to_f32(f32_to_f16_bits(bitcast<u32>(x)))); }}
fn round_f16x4(x: vec4<f32>) -> vec4<f32> {{ return vec4<f32>(round_f16(x.x), round_f16(x.y), round_f16(x.z), round_f16(x.w)); }}
{WIDEN_F16_WGSL}"
    )
}

//! The f16 -> f32 widening in WGSL in the form each device runs. Kernels are written with
//! the portable integer form ([`F16_BITS_TO_F32_WGSL`], which needs nothing of the
//! adapter), and where the adapter has `unpack2x16float` (wgpu's
//! `DownlevelFlags::SHADER_F16_IN_F32`: Vulkan, Metal, DX12, GL and browsers; Mesa's
//! llvmpipe only with `SHADER_F16`) [`for_device`] swaps in that one instruction when the
//! shader module is made (`pipeline.rs`), as `wide_mul` does for the 64-bit product.
//!
//! Both forms are exact (every f16 value is an f32 value, and WGSL defines the widening
//! so), so the bits are the same either way. The integer form cost more than the memory
//! f16 saves: an f16 tanh-GELU over 64M elements ran in 0.189 ms against 0.136 ms in f32
//! on an H200 (BENCHMARKS.md, 2026-11-29 (fifth session)). Rounding the other way stays
//! integer arithmetic on every device: WGSL leaves `pack2x16float`'s rounding to the
//! implementation, and tang rounds to nearest even as PyTorch and the `half` crate do.

use std::borrow::Cow;

use crate::cast::F16_BITS_TO_F32_WGSL;

/// The widening as one instruction (`SHADER_F16_IN_F32`). Only the low half of `h` is
/// read, as the portable form reads it.
const F16_BITS_TO_F32_NATIVE_WGSL: &str = "fn f16_bits_to_f32(h: u32) -> u32 {
    return bitcast<u32>(unpack2x16float(h).x);
}
";

/// Whether the adapter runs `unpack2x16float` (and the other f16-in-f32 builtins).
pub(crate) fn adapter_has_native(adapter: &wgpu::Adapter) -> bool {
    adapter
        .get_downlevel_capabilities()
        .flags
        .contains(wgpu::DownlevelFlags::SHADER_F16_IN_F32)
}

/// `wgsl` as a device runs it: with `native` (see [`adapter_has_native`]) the portable
/// widening becomes `unpack2x16float`. Every shader module is made through this.
pub(crate) fn for_device(wgsl: &str, native: bool) -> Cow<'_, str> {
    if native && wgsl.contains(F16_BITS_TO_F32_WGSL) {
        Cow::Owned(wgsl.replace(F16_BITS_TO_F32_WGSL, F16_BITS_TO_F32_NATIVE_WGSL))
    } else {
        Cow::Borrowed(wgsl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel for the test: its f16 form is what the kernel macros make of every
    /// elementwise function.
    #[crate::kernel]
    fn halve(x: f32) -> f32 {
        x * 0.5
    }

    /// The swap reaches the f16 form of a generated elementwise kernel, and what it makes
    /// passes naga (the hand-written kernels' swapped forms are validated with the rest of
    /// the registry by the workspace's shader test).
    #[test]
    fn the_native_widening_replaces_the_portable_one_and_validates() {
        assert_eq!(halve(3.0), 1.5); // the function itself runs on the CPU
        let desc = halve::KERNEL;
        let (text, _) = desc
            .wgsl_f16()
            .expect("an elementwise kernel has an f16 form");
        let swapped = for_device(text, true);
        assert!(matches!(swapped, Cow::Owned(_)));
        assert!(swapped.contains("unpack2x16float") && !swapped.contains("e == 0x1fu"));
        tang_expr::validate(&swapped).unwrap_or_else(|e| panic!("{e}\n{swapped}"));
        assert!(matches!(for_device(text, false), Cow::Borrowed(_)));
        assert!(matches!(for_device(desc.wgsl(), true), Cow::Borrowed(_)));
    }
}

//! The 32 x 32 -> 64-bit product in WGSL (Philox's, `ops/random`), in the form each device
//! runs: WGSL has no 64-bit integers without `SHADER_INT64` (WebGPU in browsers has none),
//! so kernels are written with the portable product from 16-bit halves, and where the
//! device has 64-bit integers [`for_device`] swaps in one `u64` multiply when the shader
//! module is made (`pipeline.rs`). NVIDIA's compiler makes that one wide multiply where the
//! halves take about fifteen instructions; Philox is two products per round, and the
//! dropout inside attention spent most of its time there. Same bits either way.

use std::borrow::Cow;

/// The portable product, `mulhilo(a, b) -> vec2<u32>` (high word, low word), as a string
/// literal for `concat!`.
macro_rules! mulhilo_wgsl {
    () => {
        "
// (high, low) words of the 64-bit product, from 16-bit halves.
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>(a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u), a * b);
}
"
    };
}
pub(crate) use mulhilo_wgsl;

/// The portable product's text, which [`for_device`] looks for.
const MULHILO_WGSL: &str = mulhilo_wgsl!();

/// The same product as one 64-bit multiply (`SHADER_INT64`).
const MULHILO_INT64_WGSL: &str = "
// (high, low) words of the 64-bit product (SHADER_INT64).
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
    let p = u64(a) * u64(b);
    return vec2<u32>(u32(p >> 32u), u32(p));
}
";

/// `wgsl` as a device with `features` runs it: with `SHADER_INT64`, the portable product
/// becomes the 64-bit one. Every shader module is made through this, so each kernel that
/// draws random numbers gets the product its device has from one text.
pub(crate) fn for_device(wgsl: &str, features: wgpu::Features) -> Cow<'_, str> {
    if features.contains(wgpu::Features::SHADER_INT64) && wgsl.contains(MULHILO_WGSL) {
        Cow::Owned(wgsl.replace(MULHILO_WGSL, MULHILO_INT64_WGSL))
    } else {
        Cow::Borrowed(wgsl)
    }
}

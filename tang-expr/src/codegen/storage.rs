//! How an elementwise kernel's tensors are stored: f32 (`array<vec4<f32>>`, four elements
//! in one 128-bit word) or f16 (`array<vec2<u32>>`, four elements as the bits of two
//! 32-bit words, two per word, low half first). The generator writes the same body for
//! both; only the loads and stores differ, and they are printed here. Arithmetic is f32
//! in both, as PyTorch computes `torch.float16` elementwise ops.
//!
//! f16 is read and written as bits so that it needs no `SHADER_F16` and rounds the same
//! on every adapter: [`F32_TO_F16_BITS_WGSL`] rounds to nearest even (`pack2x16float`'s
//! rounding is left to the implementation). The widening, [`F16_BITS_TO_F32_WGSL`], is
//! written in integer arithmetic too. The runtime swaps in `unpack2x16float` (exact, and
//! one instruction) when it makes the shader module on an adapter that has it, and
//! `pack2x16float` for the narrowing on a device whose probe, run when it was made, found
//! that it rounds the same (tang-runtime's `f16_native`).

use std::fmt::Write as _;

/// WGSL: the f16 bits (in the low half) of the f32 with bits `x`, rounded to nearest
/// even; overflow gives inf, NaN stays NaN with its payload's top bits (as the `half`
/// crate and PyTorch round).
pub const F32_TO_F16_BITS_WGSL: &str = "fn f32_to_f16_bits(x: u32) -> u32 {
    let sign = (x >> 16u) & 0x8000u;
    let a = x & 0x7fffffffu;
    // Every case is computed and one selected: no branch per element (the three ranges
    // were branches, which cost more than the arithmetic they skipped).
    // Normal: rebias the exponent and round the 13 dropped bits to nearest even; a carry
    // steps the exponent, and from 65520 on (inf too) the result reaches inf, where
    // `min` holds it.
    let normal = min((a + 0xc8000fffu + ((a >> 13u) & 1u)) >> 13u, 0x7c00u);
    // NaN keeps the quiet bit and its payload's top bits.
    let nan = 0x7e00u | ((a >> 13u) & 0x3ffu);
    // Below 2^-14 (f16 subnormals and zero): adding 0.5 puts the value, rounded to
    // nearest even by the (correctly rounded) f32 sum, in the low mantissa bits.
    let small = bitcast<u32>(bitcast<f32>(a) + 0.5) - 0x3f000000u;
    return sign | select(select(normal, nan, a > 0x7f800000u), small, a < 0x38800000u);
}
";

/// WGSL: the f32 bits of the f16 with bits `h` (low half), exact.
pub const F16_BITS_TO_F32_WGSL: &str = "fn f16_bits_to_f32(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) { return sign | 0x7f800000u | (m << 13u); }
    if (e == 0u) {
        // Subnormal (or zero): m * 2^-24, a normal f32 (the product is exact).
        return sign | bitcast<u32>(f32(m) * 5.9604644775390625e-8);
    }
    return sign | ((e + 112u) << 23u) | (m << 13u);
}
";

/// The f16 kernels' own helpers: one element from the low half of a word, four from two
/// words, and back.
const F16_LANES_WGSL: &str = "fn tang_h1(w: u32) -> f32 {
    return bitcast<f32>(f16_bits_to_f32(w & 0xffffu));
}

fn tang_h4(w: vec2<u32>) -> vec4<f32> {
    return vec4<f32>(tang_h1(w.x), tang_h1(w.x >> 16u), tang_h1(w.y), tang_h1(w.y >> 16u));
}

fn tang_f2(a: f32, b: f32) -> u32 {
    return f32_to_f16_bits(bitcast<u32>(a)) | (f32_to_f16_bits(bitcast<u32>(b)) << 16u);
}

fn tang_f4(v: vec4<f32>) -> vec2<u32> {
    return vec2<u32>(tang_f2(v.x, v.y), tang_f2(v.z, v.w));
}

";

/// The element storage of one variant of a kernel (every tensor binding has it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Storage {
    /// `array<vec4<f32>>`.
    F32,
    /// `array<vec2<u32>>`: f16 bits, two elements per word.
    F16,
}

impl Storage {
    /// The WGSL type of a tensor binding.
    pub(crate) fn array(self) -> &'static str {
        match self {
            Storage::F32 => "array<vec4<f32>>",
            Storage::F16 => "array<vec2<u32>>",
        }
    }

    /// Module-scope helpers the loads and stores call.
    pub(crate) fn helpers(self) -> String {
        match self {
            Storage::F32 => String::new(),
            Storage::F16 => {
                format!("{F16_BITS_TO_F32_WGSL}\n{F32_TO_F16_BITS_WGSL}\n{F16_LANES_WGSL}")
            }
        }
    }

    /// The four elements of group `g` of binding `b`, as a `vec4<f32>`.
    pub(crate) fn load4(self, b: &str, g: &str) -> String {
        match self {
            Storage::F32 => format!("{b}[{g}]"),
            Storage::F16 => format!("tang_h4({b}[{g}])"),
        }
    }

    /// Element 0 of binding `b`, as an `f32`.
    pub(crate) fn load_first(self, b: &str) -> String {
        match self {
            Storage::F32 => format!("{b}[0][0]"),
            Storage::F16 => format!("tang_h1({b}[0].x)"),
        }
    }

    /// Element `j` (a WGSL `u32` name) of binding `b`, as an `f32`.
    pub(crate) fn load1(self, b: &str, j: &str) -> String {
        match self {
            Storage::F32 => format!("{b}[{j} >> 2u][{j} & 3u]"),
            Storage::F16 => {
                format!("tang_h1({b}[{j} >> 2u][({j} >> 1u) & 1u] >> (({j} & 1u) << 4u))")
            }
        }
    }

    /// Stores `v` (a `vec4<f32>`) to `dst[q]`, the group of elements `i .. i + 4`: whole
    /// when the group lies below `params.n`, else only the lanes below `n` (nothing past a
    /// tensor's end changes). An f16 group is two words; in the last group a word whose
    /// high lane is past `n` keeps its high half: it is past this tensor's end, where a
    /// larger view of the same buffer may keep an element (no other thread writes the
    /// word in this launch, so reading and writing it back is race-free).
    pub(crate) fn stores(self, body: &mut String, stores: &[(String, &str)]) {
        body.push_str("    if (i + 4u <= params.n) {\n");
        for (dst, v) in stores {
            let _ = writeln!(body, "        {dst}[q] = {};", self.pack(v));
        }
        match self {
            Storage::F32 => {
                body.push_str("    } else {\n        for (var l = 0u; l < 4u; l++) {\n            if (i + l < params.n) {\n");
                for (dst, v) in stores {
                    let _ = writeln!(body, "                {dst}[q][l] = {v}[l];");
                }
                body.push_str("            }\n        }\n    }\n");
            }
            Storage::F16 => {
                // k = 1, 2 or 3 lanes are in the tensor; the second word only when k = 3.
                body.push_str("    } else {\n        let k = params.n - i;\n");
                for (dst, v) in stores {
                    let _ = writeln!(
                        body,
                        "        let w_{dst} = tang_f4({v});\n        if (k >= 2u) {{ {dst}[q].x = w_{dst}.x; }} else {{ {dst}[q].x = (w_{dst}.x & 0xffffu) | ({dst}[q].x & 0xffff0000u); }}\n        if (k == 3u) {{ {dst}[q].y = (w_{dst}.y & 0xffffu) | ({dst}[q].y & 0xffff0000u); }}"
                    );
                }
                body.push_str("    }\n");
            }
        }
    }

    /// `v` (a `vec4<f32>`) as the value of one group.
    fn pack(self, v: &str) -> String {
        match self {
            Storage::F32 => v.to_string(),
            Storage::F16 => format!("tang_f4({v})"),
        }
    }
}

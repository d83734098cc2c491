//! Conversions between element types (`to_dtype`, PyTorch's `x.to(dtype)`): f32 <-> u32
//! and f32 <-> f16. The f16 conversions work on the bits (round to nearest even, IEEE
//! subnormals, inf and NaN kept), so every adapter rounds as the host's `half` crate and
//! PyTorch do, and no `SHADER_F16` is needed to store or read f16 tensors.

use crate::spec::{Slot, Source, Spec, U32_X_TO_OUT, launch_threads, params};
use crate::wgsl::{IS_NAN_WGSL, thread_main};
use crate::{DType, Error, Tensor};

params! {
    /// `n`: threads that do work (elements, or f16 pairs).
    struct CastParams { n: u32, len: u32 }
}

/// `DIR = 0`: f32 -> u32, truncating toward zero and saturating (negative numbers and NaN
/// give 0, 2^32 and beyond give `u32::MAX`). `DIR = 1`: u32 -> f32.
static CAST_U32: Spec<CastParams> = Spec::new(
    "to_dtype",
    &[IS_NAN_WGSL],
    U32_X_TO_OUT,
    concat!(
        "override DIR: u32 = 0u;

",
        thread_main!(i < "p.n"),
        "    let w = x[i];
    if (DIR == 1u) {
        out[i] = bitcast<u32>(f32(w));
        return;
    }
    let f = bitcast<f32>(w);
    var r = 0u;
    if (!is_nan(w) && f >= 1.0) {
        if (f >= 4294967296.0) { r = 0xffffffffu; } else { r = u32(f); }
    }
    out[i] = r;
}
"
    ),
);

/// The exact f16 <-> f32 conversions on the bits (round to nearest even), the one
/// definition every kernel uses: the generated elementwise kernels' f16 variants need them
/// at compile time, so they live in tang-expr beside that generator.
pub(crate) use tang_expr::kernel::{F16_BITS_TO_F32_WGSL, F32_TO_F16_BITS_WGSL};

/// `DIR = 0`: f32 -> f16, thread `i` writes the word of f16 elements `2i` and `2i + 1`
/// (the high half is 0 past the end: the pad of an odd length). `DIR = 1`: f16 -> f32,
/// thread `i` widens element `i`.
static CAST_F16: Spec<CastParams> = Spec::new(
    "to_dtype_f16",
    &[F32_TO_F16_BITS_WGSL, F16_BITS_TO_F32_WGSL],
    U32_X_TO_OUT,
    concat!(
        "override DIR: u32 = 0u;

",
        thread_main!(i < "p.n"),
        "    if (DIR == 1u) {
        let w = x[i >> 1u];
        out[i] = f16_bits_to_f32((w >> (16u * (i & 1u))) & 0xffffu);
        return;
    }
    let lo = f32_to_f16_bits(x[2u * i]);
    var hi = 0u;
    if (2u * i + 1u < p.len) { hi = f32_to_f16_bits(x[2u * i + 1u]); }
    out[i] = lo | (hi << 16u);
}
"
    ),
);

/// f32 -> f16 four elements a thread, for lengths that are multiples of 4: one 128-bit
/// read and one 64-bit write each, where [`CAST_F16`] moves 32 bits at a time (its
/// one-element widening ran at 1.6 TB/s on an H200, and an AMP step casts its activations
/// a dozen times).
static NARROW_F16_V4: Spec<CastParams> = Spec::new(
    "to_dtype_f16_narrow_v4",
    &[F32_TO_F16_BITS_WGSL],
    &[
        Slot::Read("x", "array<vec4<u32>>"),
        Slot::ReadWrite("out", "array<vec2<u32>>"),
    ],
    concat!(
        thread_main!(i < "p.n"),
        "    let v = x[i];
    out[i] = vec2<u32>(f32_to_f16_bits(v.x) | (f32_to_f16_bits(v.y) << 16u),
                       f32_to_f16_bits(v.z) | (f32_to_f16_bits(v.w) << 16u));
}
"
    ),
);

/// f16 -> f32 four elements a thread (see [`NARROW_F16_V4`]).
static WIDEN_F16_V4: Spec<CastParams> = Spec::new(
    "to_dtype_f16_widen_v4",
    &[F16_BITS_TO_F32_WGSL],
    &[
        Slot::Read("x", "array<vec2<u32>>"),
        Slot::ReadWrite("out", "array<vec4<u32>>"),
    ],
    concat!(
        thread_main!(i < "p.n"),
        "    let w = x[i];
    out[i] = vec4<u32>(f16_bits_to_f32(w.x & 0xffffu), f16_bits_to_f32(w.x >> 16u),
                       f16_bits_to_f32(w.y & 0xffffu), f16_bits_to_f32(w.y >> 16u));
}
"
    ),
);

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![
        CAST_U32.source(),
        CAST_F16.source(),
        NARROW_F16_V4.source(),
        WIDEN_F16_V4.source(),
    ]
}

/// `x` converted to `dtype` (PyTorch's `x.to(dtype)`; the same tensor when it already has
/// it). f32 -> u32 truncates toward zero and saturates: negative numbers and NaN give 0,
/// values of 2^32 and beyond `u32::MAX`. u32 -> f32 is exact below 2^24; above, the GPU
/// rounds to one of the two nearest f32 (WGSL leaves the direction to the adapter).
/// f32 -> f16 rounds to nearest even (beyond 65504 to inf, below 2^-25 to zero; NaN
/// stays NaN), f16 -> f32 is exact; u32 <-> f16 goes through f32.
///
/// ```
/// # use tang_runtime::{Device, DType, Tensor, ops};
/// let dev = Device::new()?;
/// let x = Tensor::from_slice(&dev, &[1.0, 1.0e-3, 70000.0], &[3])?;
/// let h = ops::to_dtype(&x, DType::F16)?;
/// assert_eq!(h.to_vec()?, vec![1.0, 0.0010004044, f32::INFINITY]);
/// # Ok::<(), tang_runtime::Error>(())
/// ```
///
/// # Errors
/// [`Error::TooLarge`] past 2^32 - 1 elements, [`Error::DeviceLost`].
pub fn to_dtype(x: &Tensor, dtype: DType) -> Result<Tensor, Error> {
    let op = "to_dtype";
    let from = x.dtype();
    if from == dtype {
        return Ok(x.clone());
    }
    // Through f32 where neither side is f32 (u32 <-> f16).
    if from != DType::F32 && dtype != DType::F32 {
        return to_dtype(&to_dtype(x, DType::F32)?, dtype);
    }
    let len = crate::size::fits_u32(op, "elements", x.len())?;
    let dev = x.device();
    let out = dev.empty(x.shape(), dtype)?;
    if len == 0 {
        return Ok(out);
    }
    // DIR 1 converts to f32; f32 -> f16 runs a thread per word of two results. The
    // four-a-thread kernels have one direction each (no DIR).
    let dir = [("DIR", if dtype == DType::F32 { 1.0 } else { 0.0 })];
    let (kernel, n, constants): (_, _, &[(&str, f64)]) = match (from, dtype) {
        (DType::F32, DType::F16) if len.is_multiple_of(4) => (&NARROW_F16_V4, len / 4, &[]),
        (DType::F16, DType::F32) if len.is_multiple_of(4) => (&WIDEN_F16_V4, len / 4, &[]),
        (DType::F32, DType::F16) => (&CAST_F16, len.div_ceil(2), &dir),
        (DType::F16, _) => (&CAST_F16, len, &dir),
        _ => (&CAST_U32, len, &dir),
    };
    let params = CastParams { n, len };
    launch_threads(op, dev, kernel, constants, &params, n, &[x, &out])?;
    Ok(out)
}

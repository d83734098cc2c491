//! A maximum that propagates NaN, as PyTorch's `max` does, for the reduction kernels.
//!
//! WGSL's `max` is not required to return NaN for a NaN operand, and real drivers do not
//! (lavapipe and NVIDIA's both return the other operand), so a NaN in a training run
//! would vanish inside `reduce::max`. Comparisons and `select` on floats cannot be
//! trusted either: drivers may compile them as if NaN never occurs. So NaN is tested on
//! the bits, `(bits & 0x7fffffff) > 0x7f800000`: an integer test that no float
//! optimisation can fold away.
//!
//! The texts need the unit's `T` and, for `wg_max_nan`, `WG` and `red_a` of the shared
//! workgroup reductions.

/// The scalar pieces: `max_nan` and the workgroup tree `wg_max_nan`.
macro_rules! nan_max_common {
    () => {
        "fn is_nan_f32(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
fn max_nan(a: f32, b: f32) -> f32 {
    return select(select(max(a, b), b, is_nan_f32(b)), a, is_nan_f32(a));
}
fn wg_max_nan(v: f32, lid: u32) -> f32 {
    red_a[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) { red_a[lid] = max_nan(red_a[lid], red_a[lid + s]); }
        workgroupBarrier();
    }
    let r = red_a[0];
    workgroupBarrier();
    return r;
}
"
    };
}
pub(crate) use nan_max_common;

/// For the `vec4` unit: `tmax_nan` per component, `hmax_nan` across the components.
macro_rules! nan_max_v4 {
    () => {
        concat!(
            $crate::ops::reduce::nan_max::nan_max_common!(),
            "fn is_nan_t(v: T) -> vec4<bool> {
    return (bitcast<vec4<u32>>(v) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
}
fn tmax_nan(a: T, b: T) -> T { return select(select(max(a, b), b, is_nan_t(b)), a, is_nan_t(a)); }
fn hmax_nan(v: T) -> f32 { return max_nan(max_nan(v.x, v.y), max_nan(v.z, v.w)); }
"
        )
    };
}
pub(crate) use nan_max_v4;

/// For the `f32` unit.
macro_rules! nan_max_f1 {
    () => {
        concat!(
            $crate::ops::reduce::nan_max::nan_max_common!(),
            "fn tmax_nan(a: T, b: T) -> T { return max_nan(a, b); }
fn hmax_nan(v: T) -> f32 { return v; }
"
        )
    };
}
pub(crate) use nan_max_f1;

//! Dropout on the attention weights inside the fused kernels: each kernel regenerates the
//! keep/drop decision of every weight it touches from the Philox stream of a
//! [`DropoutState`], so the mask is never stored and the backward sees the forward's.
//!
//! The weight of key `j` in score row `row = (b * H + h) * T + i` is element
//! `row * T + j` of the `[B, H, T, T]` weights, decided as [`crate::ops::dropout`] decides
//! the elements of the materialized weights (16 bits of the Philox block of the patch of
//! rows `row & !1, row | 1` by keys `j & !3 ..`, [`crate::ops::dropout_block`]): one seed
//! gives the same mask on the fused path and on the explicit one (scores, softmax,
//! `dropout`), so the two are interchangeable. The block number is 64-bit (two words), so
//! any `T` has its own counter per patch. A thread or a pair of lanes that holds both rows
//! of a patch makes its block once (`emit_rows_by_keys`, `emit_patch_pair`).
//!
//! With dropout the output is `o = (P * M / (1 - p)) V` for the softmax `P` and the mask
//! `M`; the logsumexp stays that of `P`, and in the backward `dV = (P * M / (1 - p))^T dO`
//! and `dS = P * (M / (1 - p) * dP - delta)` where `delta = rowsum(dO * o)` is unchanged.

use super::layout::AttentionParams;
use crate::Error;
use crate::ops::DropoutState;
use crate::ops::check;
use crate::ops::random::philox::dropout_threshold;

/// The WGSL of the dropout factors (after [`crate::ops::random::PHILOX_WGSL`]): `drop1`
/// for one weight, `drop4` for four consecutive keys of one row, `drop_patch` for the two
/// rows of a patch. All are 1 without dropout (`drop_threshold` 0), a uniform branch.
pub(super) const DROPOUT_WGSL: &str = "
// 0 in the pipelines of calls without dropout (see `constants`): the dropout code then
// folds away; a uniform branch on `drop_threshold` alone kept its registers live and cost
// the dq pass 5% at T = 1024 on an H200.
override DROPOUT: u32 = 1u;
fn dropping() -> bool {
    return DROPOUT != 0u && p.drop_threshold != 0u;
}

// The Philox block of the patch of score rows 2 pr, 2 pr + 1 by keys 4 g .. 4 g + 3: block
// number pr * ceil(T / 4) + g (64-bit).
fn drop_block(pr: u32, g: u32) -> vec4<u32> {
    let m = mulhilo(pr, (p.tq + 3u) / 4u);
    let lo = m.y + g;
    let hi = m.x + select(0u, 1u, lo < g);
    let key = vec2<u32>(p.drop_seed_lo, p.drop_seed_hi);
    return philox(vec4<u32>(lo, hi, p.drop_offset_lo, p.drop_offset_hi), key);
}

// The factors of one row's four keys from its two words (low halves first): 0 for a
// dropped weight, 1 / (1 - p) for a kept one.
fn drop_factors(w: vec2<u32>) -> vec4<f32> {
    let h = vec4<u32>(w.x & 0xFFFFu, w.x >> 16u, w.y & 0xFFFFu, w.y >> 16u);
    return select(vec4<f32>(0.0), vec4<f32>(p.drop_scale), h >= vec4<u32>(p.drop_threshold));
}

// The factors of row `row`, keys 4 g .. 4 g + 3.
fn drop_group(row: u32, g: u32) -> vec4<f32> {
    let w = drop_block(row >> 1u, g);
    return drop_factors(select(w.xy, w.zw, (row & 1u) == 1u));
}

// Both rows of a patch: `even` row 2 pr, `odd` row 2 pr + 1.
struct DropPatch {
    even: vec4<f32>,
    odd: vec4<f32>,
}

fn drop_patch(pr: u32, g: u32) -> DropPatch {
    let w = drop_block(pr, g);
    return DropPatch(drop_factors(w.xy), drop_factors(w.zw));
}

// The dropout factor of key j in score row `row`.
fn drop1(row: u32, j: u32) -> f32 {
    if (!dropping()) {
        return 1.0;
    }
    return drop_group(row, j >> 2u)[j & 3u];
}

// The dropout factors of keys j .. j + 3 in score row `row` (one block when j is a
// multiple of 4, two otherwise).
fn drop4(row: u32, j: u32) -> vec4<f32> {
    if (!dropping()) {
        return vec4<f32>(1.0);
    }
    let e = j & 3u;
    let a = drop_group(row, j >> 2u);
    if (e == 0u) {
        return a;
    }
    let b = drop_group(row, (j >> 2u) + 1u);
    if (e == 1u) {
        return vec4<f32>(a.yzw, b.x);
    } else if (e == 2u) {
        return vec4<f32>(a.zw, b.xy);
    }
    return vec4<f32>(a.w, b.xyz);
}
";

/// Sets the dropout fields of `params` from `state` (none: no dropout).
///
/// # Errors
/// [`Error::InvalidArgument`] unless `0 <= p <= 1`.
pub(super) fn set(
    op: &str,
    params: &mut AttentionParams,
    state: Option<&DropoutState>,
) -> Result<(), Error> {
    let Some(state) = state else {
        params.drop_threshold = 0;
        params.drop_scale = 1.0;
        return Ok(());
    };
    if !(0.0..=1.0).contains(&state.p) {
        return Err(check::invalid(
            op,
            format!("the dropout probability must be in [0, 1], got {}", state.p),
        ));
    }
    let s = state.stream;
    params.drop_threshold = dropout_threshold(state.p);
    params.drop_scale = state.scale();
    params.drop_seed_lo = s.seed as u32;
    params.drop_seed_hi = (s.seed >> 32) as u32;
    params.drop_offset_lo = s.offset as u32;
    params.drop_offset_hi = (s.offset >> 32) as u32;
    Ok(())
}

/// The pipeline constants of an attention kernel for `params`: without dropout the
/// dropout code is compiled out.
pub(super) fn constants(params: &AttentionParams) -> &'static [(&'static str, f64)] {
    if params.drop_threshold == 0 {
        &[("DROPOUT", 0.0)]
    } else {
        &[]
    }
}

/// Emits, inside a register-blocked kernel, the dropout of a thread's 4 rows x 4 keys of
/// weights: `vars[k]` (a WGSL `vec4` over the four rows) holds key `{key} + k`, the rows
/// are score rows `{row} + 0 .. 3` (WGSL expressions). It folds away in pipelines without
/// dropout (`pipeline_drops()`, [`emit_fma_functions`]).
pub(super) fn emit_rows_by_keys(w: &mut String, ind: &str, vars: [&str; 4], row: &str, key: &str) {
    use std::fmt::Write as _;
    let _ = writeln!(w, "{ind}if (pipeline_drops()) {{");
    emit_factors_rows_by_keys(w, &format!("{ind}    "), "dm", row, key);
    for (v, comp) in vars.iter().zip(["x", "y", "z", "w"]) {
        let _ = writeln!(
            w,
            "{ind}    {v} *= vec4<f32>(dm0.{comp}, dm1.{comp}, dm2.{comp}, dm3.{comp});"
        );
    }
    let _ = writeln!(w, "{ind}}}");
}

/// Emits (inside a branch on whether the pipeline drops) the dropout factors `{f}0 ..
/// {f}3` of score rows `{row} + 0 .. 3`, each a `vec4` over keys `{key} .. {key} + 3`:
/// two Philox blocks (two patches of two rows) where the first row is even and the key a
/// multiple of 4 (every call when `T` is even), four or more otherwise.
pub(super) fn emit_factors_rows_by_keys(w: &mut String, ind: &str, f: &str, row: &str, key: &str) {
    use std::fmt::Write as _;
    let _ = writeln!(
        w,
        "{ind}var {f}0: vec4<f32>;
{ind}var {f}1: vec4<f32>;
{ind}var {f}2: vec4<f32>;
{ind}var {f}3: vec4<f32>;
{ind}{{
{ind}    let dr = {row};
{ind}    let dk = {key};
{ind}    if ((dr & 1u) == 0u && (dk & 3u) == 0u) {{
{ind}        let pa = drop_patch(dr >> 1u, dk >> 2u);
{ind}        let pb = drop_patch((dr >> 1u) + 1u, dk >> 2u);
{ind}        {f}0 = pa.even;
{ind}        {f}1 = pa.odd;
{ind}        {f}2 = pb.even;
{ind}        {f}3 = pb.odd;
{ind}    }} else {{
{ind}        {f}0 = drop4(dr, dk);
{ind}        {f}1 = drop4(dr + 1u, dk);
{ind}        {f}2 = drop4(dr + 2u, dk);
{ind}        {f}3 = drop4(dr + 3u, dk);
{ind}    }}
{ind}}}"
    );
}

/// Emits the WGSL functions of the dropout factors (Philox and [`DROPOUT_WGSL`]) into a
/// generated kernel, after its declarations.
pub(super) fn emit_functions(w: &mut String) {
    w.push_str(crate::ops::random::PHILOX_WGSL);
    w.push_str(DROPOUT_WGSL);
}

/// [`emit_functions`] for the register-blocked FMA kernels, which also get
/// `pipeline_drops()`: whether the pipeline drops, from its `DROPOUT` constant alone, so
/// that no branch is left around their dropout code when it does. Measured on an H200
/// (BENCHMARKS.md, 2026-11-30 (thirteenth session)): 2% faster with dropout at B8 H8
/// T1024 than inside `dropping()`'s uniform branch. The tensor-core kernels keep that
/// branch: every change to their dropout text tried there, even to a path that even `T`
/// never runs, moved the driver's Philox key schedule out of uniform registers and cost
/// them 2-9%.
pub(super) fn emit_fma_functions(w: &mut String) {
    emit_functions(w);
    w.push_str(
        "
fn pipeline_drops() -> bool {
    return DROPOUT != 0u;
}
",
    );
}

//! f32 attention to f32 accuracy on the tensor cores, whose cooperative matrices take f16
//! operands only (the `split` variants of `coop.rs`).
//!
//! Each f32 operand `x` becomes two f16 parts, `hi = f16(x)` and `lo = f16(x - hi)`, and
//! each product three products into one f32 accumulator: `lo·hi + hi·lo + hi·hi` (the
//! small terms first; `lo·lo`, about `2^-22` of the result, is left out). That keeps
//! about 22 bits of every operand, as PyTorch's fp32 SDPA keeps with its three TF32
//! products of split operands (CUTLASS's `OpMultiplyAddFastF32`), where f16 alone keeps
//! 11.
//!
//! f16's range is narrow (largest 65504; `lo` loses bits below `2^-14`), so operands are
//! scaled by powers of two (exact) into it: each tensor by one factor from its largest
//! magnitude ([`maxima`], one pass over the tensor before the kernels), mapping it below
//! `2^14`; P by a factor from its bound (`2^8` in the forward, whose probabilities are
//! relative to a stale maximum, 1 in the backward, times the dropout's `1 / (1 - p)`);
//! dS by one from the bound `2 D max|dO| max|V| / (1 - p)`. The products are scaled back
//! where their f32 results are read. An element `2^17` below its tensor's largest loses
//! low bits, but its part of any product is then below the error of the largest's.
//! Inf or NaN in a tensor leaves it unscaled, so it propagates as in f32.
//!
//! The two parts double the staged tiles and the f16 scratch, so these variants walk the
//! other side in tiles of 32 rows (45 KiB of workgroup memory at head dim 64, as much as
//! the f16 variants take with tiles of 64).

use std::fmt::Write as _;

use crate::spec::{Slot, Source, Spec, grid, params};
use crate::wgsl::wg_main;
use crate::{DType, Error, Tensor};

/// The WGSL name of the scale of the staged or registered operand `src` (`q`, `k`, `v`,
/// `go`), defined by [`emit_scales`].
pub(super) fn scale(src: &str) -> String {
    format!("x_{src}")
}

/// One line of WGSL storing `value` (a `vec4<f32>` expression) as its f16 high part at
/// `hi` and its low part at `lo`.
///
/// The high part is `value` rounded to f16's 11 bits by integer operations on its bits
/// (to nearest, ties away), not `f32(f16(value))`: the H200's driver folds that round
/// trip away, leaving a low part of 0 (measured: every result at f16 accuracy).
pub(super) fn stores(value: &str, hi: &str, lo: &str) -> String {
    format!(
        "let xs = {value}; let xh = bitcast<vec4<f32>>((bitcast<vec4<u32>>(xs) + vec4<u32>(0x1000u)) & vec4<u32>(0xffffe000u)); {hi} = vec4<f16>(xh); {lo} = vec4<f16>(xs - xh);"
    )
}

/// The terms `(A, B)` of a product's accumulation: `(a_hi, b(0))` alone, or for `split`
/// the three of the module doc (`b(low)`: B's low part, `low` units on in its array).
pub(super) fn terms(
    v: &super::coop::Coop,
    a_hi: &str,
    a_lo: &str,
    b: impl Fn(u32) -> String,
) -> Vec<(String, String)> {
    if v.split {
        let low = v.low();
        vec![
            (a_lo.to_string(), b(0)),
            (a_hi.to_string(), b(low)),
            (a_hi.to_string(), b(0)),
        ]
    } else {
        vec![(a_hi.to_string(), b(0))]
    }
}

/// Declares the low part of the f16 scratch (`psl`: `pl` units; the staged tiles hold
/// their low parts after their high ones) and `split_scale`.
pub(super) fn emit_declarations(w: &mut String, pl: u32) {
    let _ = writeln!(
        w,
        "// The low part of the f16 scratch
var<workgroup> psl: array<vec4<f16>, {pl}>;
// The power of two that maps magnitudes up to `m` below 2^14 (1 for 0, inf or NaN).
fn split_scale(m: f32) -> f32 {{
    if (!(m > 0.0) || m > 3.0e38) {{
        return 1.0;
    }}
    return ldexp(1.0, clamp(14 - frexp(m).exp, -120, 120));
}}"
    );
}

/// Emits the scales of a split kernel: `x_q`, `x_k`, `x_v` of the tensors (from the
/// `amax` binding of [`maxima`]), `s_fac` (the scores' factor, `scale log2(e)` over the
/// operands' scales) and, for the backward (`backward`), `x_go` (dO), `i_gv` (dP's factor),
/// `x_ds` (dS) and `x_pb` (the backward's P); the forward's P scale is `x_pf`.
pub(super) fn emit_scales(w: &mut String, backward: bool) {
    w.push_str(
        "    let x_q = split_scale(amax[0]);
    let x_k = split_scale(amax[1]);
    let x_v = split_scale(amax[2]);
    let s_fac = p.scale_log2 / (x_q * x_k);
",
    );
    if backward {
        w.push_str(
            "    let x_go = split_scale(amax[3]);
    let i_gv = 1.0 / (x_go * x_v);
    let x_ds = split_scale(2.0 * f32(p.d) * amax[3] * amax[2] * p.drop_scale);
    let x_pb = split_scale(p.drop_scale);
",
        );
    } else {
        w.push_str("    let x_pf = split_scale(256.0 * p.drop_scale);\n");
    }
}

params! {
    /// `n4` vec4s of `x` whose largest magnitude goes into `out[slot .. slot + count]`.
    struct MaximaParams { n4: u32, slot: u32, count: u32 }
}

/// Workgroups of the maxima kernel: enough to fill an H200 several times over, few
/// enough that the atomics are rare.
const MAXIMA_GROUPS: u64 = 1024;

/// `out[s] = max(out[s], bits of |x|)` over the tensor: a grid-strided loop, a tree in
/// workgroup memory, one atomic per workgroup. The bits of non-negative floats order as
/// the floats do, and NaN's (`0x7fc00000` and up) above inf's, so the maximum of a
/// tensor holding NaN reads as NaN.
static MAXIMA: Spec<MaximaParams> = Spec::new(
    "attention_split_maxima",
    &[],
    &[
        Slot::Read("x", "array<vec4<u32>>"),
        Slot::ReadWrite("out", "array<atomic<u32>>"),
    ],
    concat!(
        "var<workgroup> red: array<u32, 256>;\n",
        wg_main!(@signature),
        "    let all = nwg.x * nwg.y * 256u;
    var m = 0u;
    for (var i = (wid.x + wid.y * nwg.x) * 256u + lid; i < p.n4; i += all) {
        let b = x[i] & vec4<u32>(0x7fffffffu);
        m = max(m, max(max(b.x, b.y), max(b.z, b.w)));
    }
    red[lid] = m;
    for (var s = 128u; s > 0u; s >>= 1u) {
        workgroupBarrier();
        if (lid < s) {
            red[lid] = max(red[lid], red[lid + s]);
        }
    }
    if (lid == 0u) {
        for (var s = p.slot; s < p.slot + p.count; s++) {
            atomicMax(&out[s], red[0]);
        }
    }
}
"
    ),
);

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![MAXIMA.source()]
}

/// The largest magnitudes of the attention's tensors (f32, contiguous, a multiple of 4
/// elements), as a 4-element f32 tensor: q, k and v in elements 0, 1 and 2 (`qkv`: the
/// three, or one packed projection whose maximum goes into all three), the gradient of
/// `o` (`go`) in element 3.
pub(super) fn maxima(qkv: &[&Tensor], go: Option<&Tensor>) -> Result<Tensor, Error> {
    let dev = qkv[0].device();
    let out = dev.empty(&[4], DType::F32)?;
    out.clear()?;
    let count = if qkv.len() == 1 { 3 } else { 1 };
    let slots = qkv
        .iter()
        .enumerate()
        .map(|(slot, &t)| (t, slot as u32, count))
        .chain(go.map(|t| (t, 3, 1)));
    for (t, slot, count) in slots {
        let n4 = crate::size::fits_u32("attention", "q, k, v", t.len() / 4)?;
        if n4 == 0 {
            continue;
        }
        let groups = grid(
            dev,
            "attention",
            u64::from(n4).div_ceil(256).min(MAXIMA_GROUPS),
        )?;
        let params = MaximaParams { n4, slot, count };
        MAXIMA.dispatch(&[], &params, &[t, &out], groups)?;
    }
    Ok(out)
}

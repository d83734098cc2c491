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

use crate::spec::{Slot, Source, Spec, params};
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
    /// The vec4s of the four tensors whose largest magnitudes go into `out[0..4]` (0 for
    /// a tensor not given); `packed`: 1 when the first is a packed projection, whose
    /// maximum goes into `out[0..3]`.
    struct MaximaParams { n0: u32, n1: u32, n2: u32, n3: u32, packed: u32 }
}

/// Workgroups of the maxima kernel per tensor: with four loads in flight per thread,
/// enough to fill an H200; few enough that the atomics are rare.
const MAXIMA_GROUPS: u64 = 256;

/// `out[t] = max(out[t], bits of |x|)` over tensor `t` (the workgroups' row `y`): a
/// grid-strided loop four loads deep, a tree in workgroup memory, one atomic per
/// workgroup. The bits of non-negative floats order as the floats do, and NaN's
/// (`0x7fc00000` and up) above inf's, so the maximum of a tensor holding NaN reads as NaN.
/// One launch for all four tensors: seven launches of one tensor each took 0.104 ms of
/// GPT-2's attention forward and backward on an H200 (6.1%; BENCHMARKS.md, 2026-11-30
/// (fourteenth session)).
static MAXIMA: Spec<MaximaParams> = Spec::new(
    "attention_split_maxima",
    &[],
    &[
        Slot::Read("x0", "array<vec4<u32>>"),
        Slot::Read("x1", "array<vec4<u32>>"),
        Slot::Read("x2", "array<vec4<u32>>"),
        Slot::Read("x3", "array<vec4<u32>>"),
        Slot::ReadWrite("out", "array<atomic<u32>>"),
    ],
    concat!(
        "var<workgroup> red: array<u32, 256>;

// Element `i` of tensor `t`, its sign bits cleared.
fn magnitude(t: u32, i: u32) -> vec4<u32> {
    var b: vec4<u32>;
    if (t == 0u) {
        b = x0[i];
    } else if (t == 1u) {
        b = x1[i];
    } else if (t == 2u) {
        b = x2[i];
    } else {
        b = x3[i];
    }
    return b & vec4<u32>(0x7fffffffu);
}

fn max4(b: vec4<u32>) -> u32 {
    return max(max(b.x, b.y), max(b.z, b.w));
}
",
        wg_main!(@signature),
        "    let t = wid.y;
    let n = array<u32, 4>(p.n0, p.n1, p.n2, p.n3)[t];
    let stride = nwg.x * 256u;
    var i = wid.x * 256u + lid;
    var m = 0u;
    while (i + 3u * stride < n) {
        let a = magnitude(t, i);
        let b = magnitude(t, i + stride);
        let c = magnitude(t, i + 2u * stride);
        let d = magnitude(t, i + 3u * stride);
        m = max(m, max(max(max4(a), max4(b)), max(max4(c), max4(d))));
        i += 4u * stride;
    }
    while (i < n) {
        m = max(m, max4(magnitude(t, i)));
        i += stride;
    }
    red[lid] = m;
    for (var s = 128u; s > 0u; s >>= 1u) {
        workgroupBarrier();
        if (lid < s) {
            red[lid] = max(red[lid], red[lid + s]);
        }
    }
    if (lid == 0u && red[0] != 0u) {
        atomicMax(&out[t], red[0]);
        if (t == 0u && p.packed != 0u) {
            atomicMax(&out[1], red[0]);
            atomicMax(&out[2], red[0]);
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

/// The [`maxima`] a variant's kernels read: of q, k and v (one packed projection bound
/// three times when `v.packed`) and `go`, or none for the variants that are not split.
pub(super) fn maxima_for(
    v: &super::coop::Coop,
    [q, k, vt]: [&Tensor; 3],
    go: Option<&Tensor>,
) -> Result<Option<Tensor>, Error> {
    if !v.split {
        return Ok(None);
    }
    let qkv: &[&Tensor] = if v.packed { &[q] } else { &[q, k, vt] };
    maxima(qkv, go).map(Some)
}

/// The largest magnitudes of the attention's tensors (f32, contiguous, a multiple of 4
/// elements), as a 4-element f32 tensor: q, k and v in elements 0, 1 and 2 (`qkv`: the
/// three, or one packed projection whose maximum goes into all three), the gradient of
/// `o` (`go`) in element 3. One launch.
fn maxima(qkv: &[&Tensor], go: Option<&Tensor>) -> Result<Tensor, Error> {
    let dev = qkv[0].device();
    let out = dev.empty(&[4], DType::F32)?;
    out.clear()?;
    // Slots 1 and 2 of a packed projection come from slot 0; slot 3 is the gradient.
    let mut tensors = [qkv[0]; 4];
    let mut n = [0u32; 4];
    let slots = qkv.iter().enumerate().chain(go.iter().map(|t| (3, t)));
    for (slot, &t) in slots {
        tensors[slot] = t;
        n[slot] = crate::size::fits_u32("attention", "q, k, v", t.len() / 4)?;
    }
    let rows = if go.is_some() { 4 } else { 3 };
    let widest = u64::from(*n.iter().max().unwrap_or(&0));
    let groups = widest.div_ceil(4 * 256).clamp(1, MAXIMA_GROUPS);
    let params = MaximaParams {
        n0: n[0],
        n1: n[1],
        n2: n[2],
        n3: n[3],
        packed: u32::from(qkv.len() == 1),
    };
    let [a, b, c, d] = tensors;
    MAXIMA.dispatch(&[], &params, &[a, b, c, d, &out], [groups as u32, rows, 1])?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::maxima;
    use crate::{Device, Tensor};

    /// The kernel runs anywhere (the split attention only where there are tensor cores):
    /// the largest magnitude of each tensor, past several workgroups' strides, a NaN
    /// above everything, a packed projection's into three slots.
    #[test]
    fn maxima_are_the_largest_magnitudes_each_in_its_slot() {
        let dev = Device::new().expect("a Vulkan adapter (lavapipe at least)");
        let len = 4 * 256 * 300 + 8;
        let with = |at: usize, x: f32| {
            let mut v: Vec<f32> = (0..len).map(|i| (i % 7) as f32 * 0.01).collect();
            v[at] = x;
            Tensor::from_slice(&dev, &v, &[len]).unwrap()
        };
        let (q, k, v) = (with(len - 1, 3.5), with(1, -7.0), with(277_777, 1e-30));
        let go = with(12_345, f32::NAN);
        let got = maxima(&[&q, &k, &v], Some(&go)).unwrap().to_vec().unwrap();
        assert_eq!(&got[..3], &[3.5, 7.0, 0.06]);
        assert!(got[3].is_nan(), "{got:?}");
        let packed = with(200_000, -5.0);
        let got = maxima(&[&packed], None).unwrap().to_vec().unwrap();
        assert_eq!(got, [5.0, 5.0, 5.0, 0.0]);
    }
}

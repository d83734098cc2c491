//! [`foreach_sum_of_squares`]: the sum of squares of each of many tensors in a few
//! launches, the first half of PyTorch's `torch._foreach_norm` (gradient clipping's
//! per-tensor norms). One tensor at a time took four launches of a few microseconds each
//! (square, sum, root, and a copy into the list of norms): about 160 launches and 1.2 ms of
//! a GPT recipe step's GPU time on an H200 for its 40 gradients.
//!
//! [`foreach_unscale_count_non_finite`]: the GradScaler's unscale (PyTorch's
//! `torch._amp_foreach_non_finite_check_and_unscale_`) by the same passes, each tensor
//! multiplied in place where it lies. Packing the gradients into one flat tensor for it and
//! unpacking them again cost 1.3 ms of GPT-2 small's AMP step on an H200 (BENCHMARKS.md,
//! 2026-11-29 (fifth session)).
//!
//! Two passes per group of up to [`MAX_PARTS`] tensors, bound as
//! [`crate::ops::pack`] binds its parts (a table of each part's first workgroup and length
//! in the uniform, each workgroup finding its part by a search of it): the first squares
//! and sums chunks of [`CHUNK`] elements into one partial per workgroup; the second, one
//! workgroup, sums each part's partials in order. The order of operations depends only on
//! the lengths, so the results are bit-identical from run to run.

use std::fmt::Write as _;

use crate::dispatch::Binding;
use crate::ops::check;
use crate::ops::shape::segments::{MAX_PARTS, PART_SEARCH_WGSL, parts_per_launch};
use crate::spec::{Source, Variants};
use crate::{DType, Error, Tensor};

/// Threads per workgroup of both passes.
const WG: usize = 256;
/// Elements one workgroup of the first pass squares and sums (16 per thread).
const CHUNK: usize = 16 * WG;

/// What the first pass does with each element, and what its partials add up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Pass {
    /// Squares it: the partials are sums of squares.
    SumOfSquares,
    /// Multiplies it in place by the uniform's `bitcast<f32>(p.arg)`: the partials count
    /// the elements that were infinite or NaN before (on the bits: drivers may fold a
    /// float comparison with NaN).
    UnscaleCount,
}

/// The first pass by the number of parts it binds and what it does.
static PARTIALS: Variants<(usize, Pass)> = Variants::new();

/// The uniform of both passes: a count, a base index, and a table of one `vec4` per part.
const PARAMS_WGSL: &str = "struct Params {
    parts: u32, base: u32, arg: u32, _c: u32,
    table: array<vec4<u32>, 64>,
}
@group(0) @binding(0) var<uniform> p: Params;
var<workgroup> acc: array<f32, 256>;

// The sum of acc[0 .. 256] into acc[0], in a fixed order (every thread calls it).
fn tree_sum(lid: u32) {
    for (var w = 128u; w > 0u; w = w >> 1u) {
        workgroupBarrier();
        if (lid < w) { acc[lid] = acc[lid] + acc[lid + w]; }
    }
    workgroupBarrier();
}
";

/// The first pass over `parts` bound parts: `partials[p.base + g]` is the sum (of squares,
/// or of non-finite elements: see [`Pass`]) of chunk `g - first` of the part whose table
/// entry is `(first, length, _, _)`.
fn generate_partials(parts: usize, pass: Pass) -> (String, String) {
    const _: () = assert!(MAX_PARTS == 64 && CHUNK == 16 * 256);
    let (name, access, body) = match pass {
        Pass::SumOfSquares => ("foreach_sum_of_squares", "read", "s += v * v;"),
        Pass::UnscaleCount => (
            "foreach_unscale_count",
            "read_write",
            "s += select(0.0, 1.0, (bitcast<u32>(v) & 0x7fffffffu) >= 0x7f800000u); PART[j] = v * bitcast<f32>(p.arg);",
        ),
    };
    let name = format!("{name}_{parts}");
    let mut w = format!("// {name} (generated; see ops/reduce/foreach.rs).\n{PARAMS_WGSL}");
    for i in 0..parts {
        let _ = writeln!(
            w,
            "@group(0) @binding({}) var<storage, {access}> part{i}: array<f32>;",
            i + 1
        );
    }
    let _ = writeln!(
        w,
        "@group(0) @binding({}) var<storage, read_write> partials: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {{
    let g = wid.x + wid.y * nwg.x;
{PART_SEARCH_WGSL}
    let part = p.table[lo];
    let start = (g - part.x) * 4096u;
    let live = lo < p.parts && start < part.y;
    var s = 0.0;
    if (live) {{
        let end = min(start + 4096u, part.y);
        switch lo {{",
        parts + 1
    );
    for i in 0..parts {
        let body = body.replace("PART", &format!("part{i}"));
        let _ = writeln!(
            w,
            "            case {i}u: {{ for (var j = start + lid; j < end; j += 256u) {{ let v = part{i}[j]; {body} }} }}"
        );
    }
    w.push_str(
        "            default: {}
        }
    }
    acc[lid] = s;
    tree_sum(lid);
    if (live && lid == 0u) { partials[p.base + g] = acc[0]; }
}
",
    );
    (name, w)
}

/// The second pass: `out[p.base + i] = sum(partials[first .. first + count])` for table
/// entry `i = (first, count, _, _)`, one workgroup.
const TOTALS_WGSL: &str = "@group(0) @binding(1) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    for (var i = 0u; i < p.parts; i = i + 1u) {
        let e = p.table[i];
        var s = 0.0;
        for (var k = lid; k < e.y; k += 256u) { s += partials[e.x + k]; }
        acc[lid] = s;
        tree_sum(lid);
        if (lid == 0u) { out[p.base + i] = acc[0]; }
    }
}
";

/// The second pass's text (one kernel for every group).
fn totals() -> (String, String) {
    (
        "foreach_sum_of_squares_totals".into(),
        format!(
            "// foreach_sum_of_squares_totals (see ops/reduce/foreach.rs).\n{PARAMS_WGSL}{TOTALS_WGSL}"
        ),
    )
}

static TOTALS: Variants<()> = Variants::new();

/// The uniform words of a pass: `parts`, `base`, `arg`, and the table rows.
fn uniform_words(base: usize, arg: u32, rows: &[[u32; 2]]) -> Vec<u32> {
    let mut words = vec![0u32; 4 + 4 * MAX_PARTS];
    words[0] = rows.len() as u32;
    words[1] = base as u32;
    words[2] = arg;
    for (i, r) in rows.iter().enumerate() {
        words[4 + 4 * i] = r[0];
        words[5 + 4 * i] = r[1];
    }
    words
}

/// The sum of the squares of each tensor's elements, as a `[parts.len()]` f32 tensor
/// (0 for an empty tensor): the step before the per-tensor norms of PyTorch's
/// `torch._foreach_norm(tensors)`, which gradient clipping takes. Four launches per group
/// of up to 64 (`MAX_PARTS`) tensors at most, whatever their sizes.
///
/// ```
/// use tang_runtime::{Device, Tensor, ops};
/// let dev = Device::new()?;
/// let a = Tensor::from_slice(&dev, &[3.0, 4.0], &[2])?;
/// let b = Tensor::from_slice(&dev, &[1.0, 2.0, 2.0], &[3])?;
/// assert_eq!(ops::foreach_sum_of_squares(&[&a, &b])?.to_vec()?, [25.0, 9.0]);
/// # Ok::<(), tang_runtime::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] with no tensors; [`Error::DType`] for a tensor that is not
/// f32; [`Error::DeviceMismatch`]; [`Error::TooLarge`] past 2^32 - 1 elements in one
/// tensor or chunks in all.
pub fn foreach_sum_of_squares(parts: &[&Tensor]) -> Result<Tensor, Error> {
    let op = "foreach_sum_of_squares";
    let (partials, chunks) = first_passes(op, parts, Pass::SumOfSquares, 0)?;
    let dev = partials.device();
    let out = dev.empty(&[parts.len()], DType::F32)?;
    let per_launch = parts_per_launch(dev);
    let mut base = 0;
    for (c, lens) in chunks.chunks(per_launch).enumerate() {
        // Each part's partials, by their index in `partials`.
        let sums: Vec<[u32; 2]> = lens
            .iter()
            .map(|&n| {
                let row = [base as u32, n as u32];
                base += n;
                row
            })
            .collect();
        totals_pass(&partials, &out, c * per_launch, &sums)?;
    }
    Ok(out)
}

/// Multiplies every element of each tensor by `inv_scale` in place and counts the
/// elements that were infinite or NaN before (PyTorch's
/// `torch._amp_foreach_non_finite_check_and_unscale_`, which a GradScaler's unscale
/// runs): the count as a one-element f32 tensor, left on the device. Each tensor is
/// multiplied where it lies (no packing into a flat tensor and back); at most two launches
/// per group of up to 64 (`MAX_PARTS`) tensors and one more for the count.
///
/// ```
/// use tang_runtime::{Device, Tensor, ops};
/// let dev = Device::new()?;
/// let a = Tensor::from_slice(&dev, &[1024.0, f32::INFINITY], &[2])?;
/// let b = Tensor::from_slice(&dev, &[2048.0, f32::NAN, 512.0], &[3])?;
/// let count = ops::foreach_unscale_count_non_finite(&[&a, &b], 1.0 / 1024.0)?;
/// assert_eq!(count.to_vec()?, [2.0]);
/// assert_eq!(a.to_vec()?[0], 1.0);
/// assert_eq!(b.to_vec()?[2], 0.5);
/// # Ok::<(), tang_runtime::Error>(())
/// ```
///
/// # Errors
/// As [`foreach_sum_of_squares`].
pub fn foreach_unscale_count_non_finite(
    parts: &[&Tensor],
    inv_scale: f32,
) -> Result<Tensor, Error> {
    let op = "foreach_unscale_count_non_finite";
    let (partials, chunks) = first_passes(op, parts, Pass::UnscaleCount, inv_scale.to_bits())?;
    let out = partials.device().empty(&[1], DType::F32)?;
    let total: usize = chunks.iter().sum();
    totals_pass(&partials, &out, 0, &[[0, total as u32]])?;
    Ok(out)
}

/// The first pass of `pass` over every group of up to [`MAX_PARTS`] of `parts`, with `arg`
/// in the uniform: the partials (one per chunk of [`CHUNK`] elements, in part order) and
/// each part's chunk count.
fn first_passes(
    op: &str,
    parts: &[&Tensor],
    pass: Pass,
    arg: u32,
) -> Result<(Tensor, Vec<usize>), Error> {
    let Some(first) = parts.first() else {
        return Err(check::invalid(op, "no tensors: pass at least one".into()));
    };
    let dev = first.device();
    for t in parts {
        check::same_device(op, dev, &[("tensor", t)])?;
        check::dtype(op, t, DType::F32)?;
        crate::size::fits_u32(op, "elements of one tensor", t.len())?;
    }
    let chunks: Vec<usize> = parts.iter().map(|t| t.len().div_ceil(CHUNK)).collect();
    let total: usize = chunks.iter().sum();
    crate::size::fits_u32(op, "chunks", total)?;
    // One partial per chunk; a list with no element at all still needs a buffer.
    let partials = dev.empty(&[total.max(1)], DType::F32)?;
    let per_launch = parts_per_launch(dev);
    let mut base = 0;
    for (group, lens) in parts.chunks(per_launch).zip(chunks.chunks(per_launch)) {
        // Each part's first workgroup and length.
        let mut rows = Vec::with_capacity(group.len());
        let mut groups = 0usize;
        for (t, &n) in group.iter().zip(lens) {
            rows.push([groups as u32, t.len() as u32]);
            groups += n;
        }
        if groups > 0 {
            let kernel = PARTIALS.get(&(group.len(), pass), || {
                generate_partials(group.len(), pass)
            })?;
            let words = uniform_words(base, arg, &rows);
            let mut bindings = vec![Binding::Uniform(bytemuck::cast_slice(&words))];
            bindings.extend(group.iter().map(|t| match pass {
                Pass::SumOfSquares => Binding::Read(t),
                Pass::UnscaleCount => Binding::ReadWrite(t),
            }));
            bindings.push(Binding::ReadWrite(&partials));
            let grid = crate::spec::grid(dev, op, groups as u64)?;
            dev.dispatch_raw(kernel, &[], &bindings, grid)?;
        }
        base += groups;
    }
    Ok((partials, chunks))
}

/// The second pass: `out[base + i]` is the sum of `partials[first .. first + count]` for
/// each row `(first, count)` of `sums` (at most [`MAX_PARTS`]).
fn totals_pass(
    partials: &Tensor,
    out: &Tensor,
    base: usize,
    sums: &[[u32; 2]],
) -> Result<(), Error> {
    let words = uniform_words(base, 0, sums);
    let kernel = TOTALS.get(&(), totals)?;
    let bindings = [
        Binding::Uniform(bytemuck::cast_slice(&words)),
        Binding::Read(partials),
        Binding::ReadWrite(out),
    ];
    partials
        .device()
        .dispatch_raw(kernel, &[], &bindings, [1, 1, 1])
}

/// Representatives of the kernels, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![
        generate_partials(1, Pass::SumOfSquares),
        generate_partials(MAX_PARTS, Pass::SumOfSquares),
        generate_partials(1, Pass::UnscaleCount),
        generate_partials(MAX_PARTS, Pass::UnscaleCount),
        totals(),
    ]
}

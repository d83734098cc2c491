//! Embedding lookup (`[ids] -> [ids, dim]`) and its deterministic backward.
//!
//! An id at or past the vocabulary size never reads out of bounds: its output row is
//! zeros, and the backward gives it no gradient.
//!
//! The backward is a counting sort of the ids on the GPU, so that every vocabulary row
//! sums its gradient rows in increasing position order, the same bits on every run (a
//! float scatter-add with atomics would depend on thread timing):
//! 1. histogram of the ids (integer atomics: exact);
//! 2. exclusive scan of the counts (one workgroup) -> each row's slice of a position list;
//! 3. fill the position list (integer atomics: the order inside a slice varies);
//! 4. one workgroup per vocabulary row sorts its slice in workgroup memory (rank sort, up to
//!    256 positions) and sums `grad[pos, :]` in position order, coalesced over `dim`. A row
//!    with more positions (at most `n / 256` such rows) lists them in order from the ids,
//!    1,024 ids at a time (a scan in workgroup memory), and sums them the same way: in a
//!    character-level recipe the most frequent characters hold thousands of positions each,
//!    where a scan of the ids by one thread per column took 1 ms of a step on an H200.

use crate::ops::check::{by_unit, mismatch, want_f32, want_shape, want_u32};
use crate::size::Size;
use crate::size::WG;
use crate::spec::{Slot, Source, Spec, grid, params};
use crate::wgsl::{thread_main, unit_specs, wg_common, wg_main};
use crate::{DType, Error, Tensor};

params! {
    /// `n` ids, rows of `units` units (`T`) of a table of `vocab` rows.
    struct RowsParams { n: u32, units: u32, vocab: u32 }
}

params! {
    /// `n` ids into a table of `vocab` rows.
    struct IdsParams { n: u32, vocab: u32 }
}

const FWD_SLOTS: &[Slot] = &[
    Slot::Read("ids", "array<u32>"),
    Slot::Read("w", "array<T>"),
    Slot::ReadWrite("out", "array<T>"),
];

const FWD_BODY: &str = concat!(
    thread_main!(idx < "p.n * p.units"),
    "    let i = idx / p.units;
    let u = idx % p.units;
    let id = ids[i];
    var v = T(0.0);
    if (id < p.vocab) { v = w[id * p.units + u]; }
    out[idx] = v;
}
"
);

const COUNT_SLOTS: &[Slot] = &[
    Slot::Read("ids", "array<u32>"),
    Slot::ReadWrite("counts", "array<atomic<u32>>"),
];

const COUNT_BODY: &str = concat!(
    thread_main!(i < "p.n"),
    "    let id = ids[i];
    if (id < p.vocab) { atomicAdd(&counts[id], 1u); }
}
"
);

const SCAN_SLOTS: &[Slot] = &[
    Slot::Read("counts", "array<u32>"),
    // [vocab + 1]: start of each row's slice of the position list; the last is the total.
    Slot::ReadWrite("offsets", "array<u32>"),
];

const SCAN_BODY: &str = "var<workgroup> sc: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    // Each thread scans a contiguous block; the 256 block totals are scanned in
    // workgroup memory (Hillis-Steele).
    let per = (p.vocab + 255u) / 256u;
    let lo = min(lid * per, p.vocab);
    let hi = min(lo + per, p.vocab);
    var s = 0u;
    for (var i = lo; i < hi; i = i + 1u) { s = s + counts[i]; }
    sc[lid] = s;
    workgroupBarrier();
    for (var off = 1u; off < 256u; off = off * 2u) {
        var t = 0u;
        if (lid >= off) { t = sc[lid - off]; }
        workgroupBarrier();
        sc[lid] = sc[lid] + t;
        workgroupBarrier();
    }
    var run = sc[lid] - s;
    for (var i = lo; i < hi; i = i + 1u) {
        offsets[i] = run;
        run = run + counts[i];
    }
    if (lid == 255u) { offsets[p.vocab] = sc[255]; }
}
";

const FILL_SLOTS: &[Slot] = &[
    Slot::Read("ids", "array<u32>"),
    Slot::Read("offsets", "array<u32>"),
    Slot::ReadWrite("counts", "array<atomic<u32>>"),
    Slot::ReadWrite("pos", "array<u32>"),
];

const FILL_BODY: &str = concat!(
    thread_main!(i < "p.n"),
    "    let id = ids[i];
    if (id < p.vocab) {
        // counts[id] >= 1 here (the histogram counted this position), so no wrap.
        let c = atomicSub(&counts[id], 1u);
        let slot = offsets[id] + c - 1u;
        if (slot < p.n) { pos[slot] = i; }
    }
}
"
);

const GATHER_SLOTS: &[Slot] = &[
    Slot::Read("ids", "array<u32>"),
    Slot::Read("offsets", "array<u32>"),
    Slot::Read("pos", "array<u32>"),
    Slot::Read("dy", "array<T>"),
    Slot::ReadWrite("dw", "array<T>"),
];

const GATHER_BODY: &str = concat!(
    "// Rows of at most L positions sort their slice; longer ones list their positions tile by
// tile (S ids a tile) in order.
const L: u32 = 256u;
const S: u32 = 1024u;
var<workgroup> sp: array<u32, 1024>;
var<workgroup> ss: array<u32, 1024>;

",
    wg_main!(v),
    "    let live = v < p.vocab;
    var off = 0u;
    var b = 0u;
    if (live) { off = offsets[v]; b = offsets[v + 1u] - off; }
    if (b <= L) {
        for (var k = lid; k < b; k = k + WG) {
            let q = off + k;
            if (q < p.n) { sp[k] = pos[q]; }
        }
        workgroupBarrier();
        // Rank sort: positions are distinct, so ranks are a permutation of 0..b.
        for (var k = lid; k < b; k = k + WG) {
            let e = sp[k];
            var r = 0u;
            for (var j = 0u; j < b; j = j + 1u) { r = r + select(0u, 1u, sp[j] < e); }
            if (r < S) { ss[r] = e; }
        }
        workgroupBarrier();
        let units = select(0u, p.units, live);
        for (var u = lid; u < units; u = u + WG) {
            var acc = T(0.0);
            for (var k = 0u; k < b; k = k + 1u) {
                let i = ss[k];
                if (i < p.n) { acc = acc + dy[i * p.units + u]; }
            }
            dw[v * p.units + u] = acc;
        }
        return;
    }
    // Each tile of S ids: thread `lid` counts row v's positions among ids 4 lid .. 4 lid + 3
    // of the tile, a scan of the counts places them, in order, in sp[0 .. found]; then the
    // gradient rows at those positions are summed. Same order (increasing position) and
    // bits as the sorted slices.
    for (var u0 = 0u; u0 < p.units; u0 = u0 + WG) {
        let u = u0 + lid;
        var acc = T(0.0);
        for (var t0 = 0u; t0 < p.n; t0 = t0 + S) {
            var mine = 0u;
            for (var e = 0u; e < 4u; e = e + 1u) {
                let j = t0 + 4u * lid + e;
                if (j < p.n && ids[j] == v) { mine = mine + 1u; }
            }
            ss[lid] = mine;
            workgroupBarrier();
            for (var w = 1u; w < WG; w = w * 2u) {
                var t = 0u;
                if (lid >= w) { t = ss[lid - w]; }
                workgroupBarrier();
                ss[lid] = ss[lid] + t;
                workgroupBarrier();
            }
            var at = ss[lid] - mine;
            for (var e = 0u; e < 4u; e = e + 1u) {
                let j = t0 + 4u * lid + e;
                if (j < p.n && ids[j] == v) {
                    sp[at] = j;
                    at = at + 1u;
                }
            }
            let found = ss[WG - 1u];
            workgroupBarrier();
            if (u < p.units) {
                for (var k = 0u; k < found; k = k + 1u) { acc = acc + dy[sp[k] * p.units + u]; }
            }
            workgroupBarrier();
        }
        if (u < p.units) { dw[v * p.units + u] = acc; }
    }
}
"
);

unit_specs!(K_FWD_V4, K_FWD_F1: RowsParams = "embedding", [wg_common!()], FWD_SLOTS, FWD_BODY);
static K_COUNT: Spec<IdsParams> =
    Spec::new("embedding_backward_count", &[], COUNT_SLOTS, COUNT_BODY);
static K_SCAN: Spec<IdsParams> = Spec::new("embedding_backward_scan", &[], SCAN_SLOTS, SCAN_BODY);
static K_FILL: Spec<IdsParams> = Spec::new("embedding_backward_fill", &[], FILL_SLOTS, FILL_BODY);
unit_specs!(K_GATHER_V4, K_GATHER_F1: RowsParams = "embedding_backward", [wg_common!()], GATHER_SLOTS, GATHER_BODY);

/// Every kernel of this file, for the registry of `index/mod.rs`.
pub(crate) fn kernels() -> Vec<Source> {
    vec![
        K_FWD_V4.source(),
        K_FWD_F1.source(),
        K_COUNT.source(),
        K_SCAN.source(),
        K_FILL.source(),
        K_GATHER_V4.source(),
        K_GATHER_F1.source(),
    ]
}

/// Embedding lookup: `ids` (u32, any shape `[...]`) and `weight [vocab, dim]` ->
/// `[..., dim]`, row `ids[i]` of the weight.
///
/// # Errors
/// [`Error::DType`] unless `ids` is u32 and `weight` f32, [`Error::ShapeMismatch`] unless
/// `weight` is 2-D, [`Error::TooLarge`] past 2^32 output elements;
/// [`Error::IndexOutOfRange`] for an id `>= vocab`: at once for ids uploaded from the
/// host, at the next read or sync for ids computed on the GPU (whose row is zeros
/// meanwhile: never read out of bounds).
pub fn embedding(ids: &Tensor, weight: &Tensor) -> Result<Tensor, Error> {
    let op = "embedding";
    want_u32(op, ids)?;
    want_f32(op, weight)?;
    let &[vocab, dim] = weight.shape() else {
        return Err(mismatch(
            op,
            format!(
                "weight has shape {:?}; expected [vocab, dim]",
                weight.shape()
            ),
        ));
    };
    crate::ops::index::bounds::check_ids(op, ids, vocab)?;
    let n = ids.len();
    let mut shape = ids.shape().to_vec();
    shape.push(dim);
    // The kernels index with 32 bits.
    let limit = u64::from(u32::MAX);
    (Size::of(n) * dim).at_most(limit, || format!("{op}: elements of the output {shape:?}"))?;
    Size::of(weight.len()).at_most(limit, || {
        format!("{op}: elements of weight [{vocab}, {dim}]")
    })?;
    let dev = ids.device();
    let out = dev.empty(&shape, DType::F32)?;
    if n == 0 || dim == 0 {
        return Ok(out);
    }
    let (k, units) = by_unit(dim, [&K_FWD_V4, &K_FWD_F1]);
    let params = RowsParams {
        n: n as u32,
        units: units as u32,
        vocab: vocab.min(u32::MAX as usize) as u32,
    };
    let g = grid(dev, op, (n * units).div_ceil(WG as usize) as u64)?;
    k.dispatch(&[], &params, &[ids, weight, &out], g)?;
    Ok(out)
}

/// Gradient of [`embedding`] w.r.t. the weight: `ids` (u32, `[...]`) and `grad_out`
/// (`[..., dim]`) -> `[vocab, dim]`, row `v` the sum of `grad_out` rows whose id is `v`,
/// in increasing position order (bit-identical on every run). Ids `>= vocab` contribute
/// nothing.
///
/// # Errors
/// [`Error::DType`] unless `ids` is u32 and `grad_out` f32, [`Error::ShapeMismatch`] when
/// `grad_out` is not `ids.shape() + [dim]`, [`Error::TooLarge`] past 2^32 elements.
pub fn embedding_backward(grad_out: &Tensor, ids: &Tensor, vocab: usize) -> Result<Tensor, Error> {
    let op = "embedding_backward";
    want_u32(op, ids)?;
    want_f32(op, grad_out)?;
    let gs = grad_out.shape();
    let dim = gs.last().copied().unwrap_or(0);
    let want = [ids.shape(), &[dim]].concat();
    want_shape(
        op,
        "grad_out",
        gs,
        &want,
        "the ids' shape followed by [dim]",
    )?;
    let n = ids.len();
    // The kernels index with 32 bits (and the scan's offsets hold `vocab + 1` entries).
    let limit = u64::from(u32::MAX);
    Size::of(grad_out.len()).at_most(limit, || format!("{op}: elements of grad_out {gs:?}"))?;
    (Size::of(vocab) * dim).at_most(limit - 1, || {
        format!("{op}: elements of the weight gradient [{vocab}, {dim}]")
    })?;
    let dev = ids.device();
    if n == 0 || dim == 0 || vocab == 0 {
        return Tensor::zeros(dev, &[vocab, dim]);
    }
    // The counters are bound as atomic<u32>: a zeroed buffer is 0u whatever its dtype.
    let counts = Tensor::zeros(dev, &[vocab])?;
    let offsets = dev.empty(&[vocab + 1], DType::U32)?;
    let pos = dev.empty(&[n], DType::U32)?;
    let dw = dev.empty(&[vocab, dim], DType::F32)?;
    let params = IdsParams {
        n: n as u32,
        vocab: vocab as u32,
    };
    let per_id = grid(dev, op, n.div_ceil(WG as usize) as u64)?;
    K_COUNT.dispatch(&[], &params, &[ids, &counts], per_id)?;
    K_SCAN.dispatch(&[], &params, &[&counts, &offsets], [1, 1, 1])?;
    K_FILL.dispatch(&[], &params, &[ids, &offsets, &counts, &pos], per_id)?;
    let (k, units) = by_unit(dim, [&K_GATHER_V4, &K_GATHER_F1]);
    let rows = RowsParams {
        n: n as u32,
        units: units as u32,
        vocab: vocab as u32,
    };
    let g = grid(dev, op, vocab as u64)?;
    k.dispatch(&[], &rows, &[ids, &offsets, &pos, grad_out, &dw], g)?;
    Ok(dw)
}

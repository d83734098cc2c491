//! Copies on the GPU: transpose of the last two dimensions (tiled through workgroup
//! memory so reads and writes are both coalesced), and `cat` and `split` along any dim (one strided block copy per piece). The kernels move 32-bit
//! words, so f32 and u32 tensors are copied bit for bit.

use crate::ops::check::{self, mismatch};
use crate::ops::to_dtype;
use crate::size::Size;
use crate::spec::{Slot, Source, Spec, params};
use crate::strided::COPY_SLOTS;
use crate::wgsl::{thread_main, unit_specs};
use crate::{DType, Device, Error, Tensor};

// 32 x 32 tile, 32 x 8 threads, 4 elements each. The tile row is padded to 33 words so
// the column-wise reads of the write phase fall in distinct banks. Every loop bound is
// workgroup-uniform (the barriers need that); tiles beyond the grid are walked in a
// grid-stride loop, so any shape fits in the grid.
params! {
    /// `count` matrices of `rows` x `cols`, walked in `xtiles` x `ytiles` tiles of 32.
    struct TransposeParams { rows: u32, cols: u32, xtiles: u32, ytiles: u32, count: u32 }
}

const TRANSPOSE_SLOTS: &[Slot] = &[
    Slot::Read("src", "array<u32>"),
    Slot::ReadWrite("dst", "array<u32>"),
];

const TRANSPOSE_BODY: &str = "var<workgroup> tile: array<u32, 1056>;

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) l: vec3<u32>) {
    for (var tx = wg.x; tx < p.xtiles; tx += nwg.x) {
        let c0 = tx * 32u;
        for (var t = wg.y + wg.z * nwg.y; t < p.count; t += nwg.y * nwg.z) {
            let b = t / p.ytiles;
            let r0 = (t - b * p.ytiles) * 32u;
            let base = b * p.rows * p.cols;
            for (var i = 0u; i < 32u; i += 8u) {
                let r = r0 + l.y + i;
                let c = c0 + l.x;
                if (r < p.rows && c < p.cols) {
                    tile[(l.y + i) * 33u + l.x] = src[base + r * p.cols + c];
                }
            }
            workgroupBarrier();
            for (var i = 0u; i < 32u; i += 8u) {
                let c = c0 + l.y + i;
                let r = r0 + l.x;
                if (c < p.cols && r < p.rows) {
                    dst[base + c * p.rows + r] = tile[l.x * 33u + l.y + i];
                }
            }
            workgroupBarrier();
        }
    }
}
";

// `dst[o * dst_ld + dst_off + j] = src[o * src_ld + src_off + j]` for `o < outer`,
// `j < inner`: one piece of a cat or split. `T` is `u32` or `vec4<u32>` (then
// every quantity is in units of 4 words).
params! {
    /// `total` units (`T`) in rows of `inner`, from `src` (row stride `src_ld`, offset `src_off`) to `dst` (likewise).
    struct CopyParams { inner: u32, src_ld: u32, src_off: u32, dst_ld: u32, dst_off: u32, total: u32 }
}

const COPY_BODY: &str = concat!(
    thread_main!(i < "p.total"),
    "    let o = i / p.inner;
    let j = i - o * p.inner;
    dst[o * p.dst_ld + p.dst_off + j] = src[o * p.src_ld + p.src_off + j];
}
"
);

static TRANSPOSE: Spec<TransposeParams> =
    Spec::new("transpose", &[], TRANSPOSE_SLOTS, TRANSPOSE_BODY);
unit_specs!(COPY_V4, COPY_F1: CopyParams = "block_copy",
    v4: ["alias T = vec4<u32>;\n"], f1: ["alias T = u32;\n"], COPY_SLOTS, COPY_BODY);

/// Every kernel of this file, for the registry of `shape/mod.rs`.
pub(crate) fn kernels() -> Vec<Source> {
    vec![TRANSPOSE.source(), COPY_V4.source(), COPY_F1.source()]
}

fn too_large(what: &str, n: usize) -> Error {
    Error::TooLarge {
        what: format!("{what}: elements"),
        requested: n as u64,
        limit: u32::MAX as u64,
    }
}

fn fits_u32(what: &str, n: usize) -> Result<u32, Error> {
    u32::try_from(n).map_err(|_| too_large(what, n))
}

/// Swaps the last two dimensions: `[.., r, c]` to `[.., c, r]` (a copy in the new
/// layout). f32 and u32 tensors. The kernel behind [`permute`](crate::ops::permute) when
/// a permutation is a batch of matrix transposes.
///
/// # Errors
/// [`Error::ShapeMismatch`] for a tensor of rank < 2, [`Error::TooLarge`] beyond
/// 2^32 - 1 elements.
pub(crate) fn transpose(x: &Tensor) -> Result<Tensor, Error> {
    let s = x.shape();
    if s.len() < 2 {
        return Err(mismatch(
            "transpose",
            format!(
                "expected rank >= 2 ([.., rows, cols]), got {s:?}; reshape a vector to [1, n] first"
            ),
        ));
    }
    let (rows, cols) = (s[s.len() - 2], s[s.len() - 1]);
    let mut out_shape = s.to_vec();
    let rank = s.len();
    out_shape.swap(rank - 2, rank - 1);
    let dev = x.device();
    let out = dev.empty(&out_shape, x.dtype())?;
    if out.is_empty() {
        return Ok(out);
    }
    fits_u32("transpose", x.len())?;
    let batch = x.len() / (rows * cols);
    let (xtiles, ytiles) = (cols.div_ceil(32), rows.div_ceil(32));
    let count = fits_u32("transpose: tiles", ytiles * batch)?;
    let max = dev.info().limits.max_compute_workgroups_per_dimension as usize;
    let gx = xtiles.min(max);
    let gy = (count as usize).min(max);
    let gz = (count as usize).div_ceil(gy).min(max);
    let params = TransposeParams {
        rows: rows as u32,
        cols: cols as u32,
        xtiles: xtiles as u32,
        ytiles: ytiles as u32,
        count,
    };
    TRANSPOSE.dispatch(&[], &params, &[x, &out], [gx as u32, gy as u32, gz as u32])?;
    Ok(out)
}

/// One block copy: `outer` rows of `inner` words from `src` (row stride `src_ld`,
/// starting at column `src_off`) to `dst` (likewise).
#[allow(clippy::too_many_arguments)]
fn block_copy(
    dev: &Device,
    src: &Tensor,
    dst: &Tensor,
    outer: usize,
    inner: usize,
    (src_ld, src_off): (usize, usize),
    (dst_ld, dst_off): (usize, usize),
) -> Result<(), Error> {
    let total = outer * inner;
    if total == 0 {
        return Ok(());
    }
    let v4 = [inner, src_ld, src_off, dst_ld, dst_off]
        .iter()
        .all(|x| x % 4 == 0);
    let w = if v4 { 4 } else { 1 };
    let total_u = fits_u32("cat/split", total / w)?;
    let groups = (total / w).div_ceil(256);
    let grid = crate::spec::grid(dev, "cat/split", groups as u64)?;
    let params = CopyParams {
        inner: (inner / w) as u32,
        src_ld: (src_ld / w) as u32,
        src_off: (src_off / w) as u32,
        dst_ld: (dst_ld / w) as u32,
        dst_off: (dst_off / w) as u32,
        total: total_u,
    };
    let k = if v4 { &COPY_V4 } else { &COPY_F1 };
    k.dispatch(&[], &params, &[src, dst], grid)
}

/// `(outer, dim length, inner)` of `shape` around `dim`. Only for the shape of a
/// non-empty tensor, whose parts cannot overflow.
fn around(shape: &[usize], dim: usize) -> (usize, usize, usize) {
    (
        shape[..dim].iter().product(),
        shape[dim],
        shape[dim + 1..].iter().product(),
    )
}

/// Joins tensors along `dim` (PyTorch's `cat`): all have the same rank, dtype and device
/// and the same sizes except along `dim`; the result's `dim` is the sum of theirs.
///
/// # Errors
/// [`Error::Arity`] for an empty list, [`Error::ShapeMismatch`] (a dim out of range,
/// ranks or other dimensions that differ), [`Error::DType`] for mixed dtypes,
/// [`Error::DeviceMismatch`] for mixed devices, [`Error::TooLarge`] beyond 2^32 - 1
/// elements.
pub fn cat(xs: &[&Tensor], dim: usize) -> Result<Tensor, Error> {
    if xs.first().is_some_and(|x| x.dtype() == DType::F16) {
        // The copy kernels move 32-bit words: f16 pieces go through f32 (exact).
        let wide = xs
            .iter()
            .map(|x| to_dtype(x, DType::F32))
            .collect::<Result<Vec<_>, _>>()?;
        let wide: Vec<&Tensor> = wide.iter().collect();
        return to_dtype(&cat(&wide, dim)?, DType::F16);
    }
    let Some((first, rest)) = xs.split_first() else {
        return Err(Error::Arity {
            op: "cat".into(),
            what: "tensors (at least one)",
            expected: 1,
            got: 0,
        });
    };
    let named: Vec<(String, &Tensor)> = rest
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("tensor {}", i + 1), *t))
        .collect();
    let named: Vec<(&str, &Tensor)> = named.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    check::same_device("cat", first.device(), &named)?;
    let s0 = first.shape();
    check::dim("cat", dim, s0)?;
    for (i, x) in xs.iter().enumerate() {
        let s = x.shape();
        let same = s.len() == s0.len()
            && s.iter()
                .zip(s0)
                .enumerate()
                .all(|(d, (a, b))| d == dim || a == b);
        if !same {
            return Err(mismatch(
                "cat",
                format!(
                    "tensor {i} has shape {s:?}, expected {s0:?} in every dimension except dim {dim}"
                ),
            ));
        }
        x.expect_dtype(&format!("cat (tensor {i})"), first.dtype())?;
    }
    let total_axis = Size::sum(xs.iter().map(|x| x.shape()[dim])).counted(|| {
        let lens: Vec<usize> = xs.iter().map(|x| x.shape()[dim]).collect();
        format!("cat: length of dim {dim} of the result (the sum of {lens:?})")
    })?;
    let mut out_shape = s0.to_vec();
    out_shape[dim] = total_axis;
    let dev = first.device();
    let out = dev.empty(&out_shape, first.dtype())?;
    if out.is_empty() {
        return Ok(out);
    }
    fits_u32("cat", out.len())?;
    let (outer, _, inner) = around(&out_shape, dim);
    let dst_ld = total_axis * inner;
    let mut off = 0;
    for x in xs {
        let piece = x.shape()[dim] * inner;
        block_copy(dev, x, &out, outer, piece, (piece, 0), (dst_ld, off))?;
        off += piece;
    }
    Ok(out)
}

/// Cuts `x` along `dim` into pieces of `sizes` (which must sum to `x.shape()[dim]`).
///
/// # Errors
/// [`Error::ShapeMismatch`] for a dim out of range or sizes that do not sum to the
/// dim's length, [`Error::TooLarge`] beyond 2^32 - 1 elements.
pub fn split(x: &Tensor, dim: usize, sizes: &[usize]) -> Result<Vec<Tensor>, Error> {
    if x.dtype() == DType::F16 {
        // As `cat`: through f32, exactly.
        let pieces = split(&to_dtype(x, DType::F32)?, dim, sizes)?;
        return pieces.iter().map(|p| to_dtype(p, DType::F16)).collect();
    }
    let s = x.shape();
    check::dim("split", dim, s)?;
    let sum = Size::sum(sizes.iter().copied());
    if sum.get() != Some(s[dim]) {
        return Err(mismatch(
            "split",
            format!(
                "sizes {sizes:?} do not sum to {} (dim {dim} of {s:?}): they sum to {sum}",
                s[dim]
            ),
        ));
    }
    fits_u32("split", x.len())?;
    let dev = x.device();
    if x.is_empty() {
        // Every piece is empty too; the parts around the dim may overflow on their own.
        return sizes
            .iter()
            .map(|&size| {
                let mut shape = s.to_vec();
                shape[dim] = size;
                dev.empty(&shape, x.dtype())
            })
            .collect();
    }
    let (outer, _, inner) = around(s, dim);
    let src_ld = s[dim] * inner;
    let mut off = 0;
    let mut out = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let mut shape = s.to_vec();
        shape[dim] = size;
        let piece = dev.empty(&shape, x.dtype())?;
        let w = size * inner;
        block_copy(dev, x, &piece, outer, w, (src_ld, off), (w, 0))?;
        off += w;
        out.push(piece);
    }
    Ok(out)
}

/// The gradient of [`split`]: the pieces' gradients (`grad_outs`) joined along `dim`.
///
/// # Errors
/// As [`cat`].
pub fn split_backward(grad_outs: &[&Tensor], dim: usize) -> Result<Tensor, Error> {
    cat(grad_outs, dim)
}

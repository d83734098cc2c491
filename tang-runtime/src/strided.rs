//! The strided copy every layout op is made of (permute, expand, narrow, slice_scatter,
//! copy_): `dst[dst_off + Σ c_d·dst_stride_d] = src[src_off + Σ c_d·src_stride_d]` for
//! every coordinate `c` of a shape. Strides are in elements and may be 0 (a broadcast
//! read). Before launch, dimensions of size 1 are dropped and neighbours that are
//! contiguous on both sides are merged, so most copies run at rank 1 to 3; when the last
//! dimension is contiguous on both sides and everything is a multiple of 4, each thread
//! moves a `vec4` (16-byte loads and stores, coalesced along that dimension). The kernel
//! moves 32-bit words, so f32 and u32 tensors are copied bit for bit. f16 tensors (two
//! elements per word) are copied as words where every run of the copy pairs up (even
//! sizes, strides and offsets: a permute of heads of even width), and otherwise into a
//! contiguous destination a word of two elements per thread, each read from its half.

use crate::size::fits_u32;
use crate::spec::{Slot, Source, Spec, launch_threads, params};
use crate::wgsl::thread_main;
use crate::{Error, Tensor};

/// Every copy kernel's bindings: `src` read, `dst` written, in units `T`.
pub(crate) const COPY_SLOTS: &[Slot] = &[
    Slot::Read("src", "array<T>"),
    Slot::ReadWrite("dst", "array<T>"),
];

/// The layout that reads a contiguous tensor of `shape` as if broadcast to `target` (the
/// caller checks that it broadcasts): a broadcast dimension reads the same element again,
/// stride 0.
pub(crate) fn broadcast_layout(shape: &[usize], target: &[usize]) -> Layout {
    let lead = target.len() - shape.len();
    let own = crate::size::contiguous_strides(shape);
    let strides = (0..target.len())
        .map(|d| {
            if d < lead || shape[d - lead] == 1 {
                0
            } else {
                own[d - lead]
            }
        })
        .collect();
    Layout { strides, offset: 0 }
}

/// The most dimensions a copy may keep after merging (the kernel's uniform fields).
pub(crate) const MAX_RANK: usize = 8;

params! {
    /// A strided copy of `total` units over up to 8 dimensions: sizes `n*`, source strides
    /// `s*`, destination strides `d*` (the first `rank` of each), start offsets.
    struct StridedParams {
        n0: u32, n1: u32, n2: u32, n3: u32, n4: u32, n5: u32, n6: u32, n7: u32,
        s0: u32, s1: u32, s2: u32, s3: u32, s4: u32, s5: u32, s6: u32, s7: u32,
        d0: u32, d1: u32, d2: u32, d3: u32, d4: u32, d5: u32, d6: u32, d7: u32,
        rank: u32, src_off: u32, dst_off: u32, total: u32,
    }
}

impl StridedParams {
    /// Sets the sizes and strides of the dimensions (unused ones 0).
    fn set_dims(&mut self, n: [u32; MAX_RANK], s: [u32; MAX_RANK], d: [u32; MAX_RANK]) {
        [
            self.n0, self.n1, self.n2, self.n3, self.n4, self.n5, self.n6, self.n7,
        ] = n;
        [
            self.s0, self.s1, self.s2, self.s3, self.s4, self.s5, self.s6, self.s7,
        ] = s;
        [
            self.d0, self.d1, self.d2, self.d3, self.d4, self.d5, self.d6, self.d7,
        ] = d;
    }
}

/// WGSL: the copy's sizes and source strides as indexable arrays.
macro_rules! sizes_and_src_strides {
    () => {
        "    let shape = array<u32, 8>(p.n0, p.n1, p.n2, p.n3, p.n4, p.n5, p.n6, p.n7);
    let src_strides = array<u32, 8>(p.s0, p.s1, p.s2, p.s3, p.s4, p.s5, p.s6, p.s7);
"
    };
}

/// WGSL, inside the loop over dimensions `k` (innermost first): the coordinate `c` of
/// dimension `d` taken off the remaining index `r`, and the source offset `s` moved by it.
macro_rules! walk_dim {
    () => {
        "        let d = p.rank - 1u - k;
        let n = shape[d];
        let c = r % n;
        r = r / n;
        s = s + c * src_strides[d];
"
    };
}

const BODY: &str = concat!(
    thread_main!(i < "p.total"),
    sizes_and_src_strides!(),
    "    let dst_strides = array<u32, 8>(p.d0, p.d1, p.d2, p.d3, p.d4, p.d5, p.d6, p.d7);
    var r = i;
    var s = p.src_off;
    var t = p.dst_off;
    // Innermost dimension first: the coordinate of the last dimension varies fastest.
    for (var k = 0u; k < p.rank; k = k + 1u) {
",
    walk_dim!(),
    "        t = t + c * dst_strides[d];
    }
    dst[t] = src[s];
}
"
);

/// f16 into a contiguous destination: thread `i` writes destination word `i` (elements
/// `2i`, `2i + 1` of the copy), each element read from its half of a source word. The
/// high half past an odd total keeps what the destination held (another tensor's
/// element, in a view).
const HALF_BODY: &str = concat!(
    thread_main!(i < "(p.total + 1u) / 2u"),
    sizes_and_src_strides!(),
    "    var word = 0u;
    for (var h = 0u; h < 2u; h = h + 1u) {
    let e = 2u * i + h;
    var half = 0u;
    if (e < p.total) {
    var r = e;
    var s = p.src_off;
    for (var k = 0u; k < p.rank; k = k + 1u) {
",
    walk_dim!(),
    "    }
    half = (src[s >> 1u] >> (16u * (s & 1u))) & 0xffffu;
    } else {
    half = dst[p.dst_off / 2u + i] >> 16u;
    }
    word = word | (half << (16u * h));
    }
    dst[p.dst_off / 2u + i] = word;
}
"
);

static K_WORD: Spec<StridedParams> =
    Spec::new("strided_copy", &["alias T = u32;\n"], COPY_SLOTS, BODY);
static K_VEC4: Spec<StridedParams> = Spec::new(
    "strided_copy_vec4",
    &["alias T = vec4<u32>;\n"],
    COPY_SLOTS,
    BODY,
);

static K_HALF: Spec<StridedParams> = Spec::new(
    "strided_copy_f16",
    &["alias T = u32;\n"],
    COPY_SLOTS,
    HALF_BODY,
);

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![K_WORD.source(), K_VEC4.source(), K_HALF.source()]
}

/// Where a tensor's elements sit: per-dimension strides and a start offset (elements).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub strides: Vec<usize>,
    pub offset: usize,
}

impl Layout {
    /// The layout of a contiguous tensor of `shape`.
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout {
            strides: crate::size::contiguous_strides(shape),
            offset: 0,
        }
    }
}

/// One merged dimension: size, source stride, destination stride.
pub(crate) type Dim = (usize, usize, usize);

/// Drops size-1 dimensions and merges neighbours contiguous on both sides.
pub(crate) fn merge_dims(shape: &[usize], src: &[usize], dst: &[usize]) -> Vec<Dim> {
    let mut out: Vec<Dim> = Vec::with_capacity(shape.len());
    for ((&n, &ss), &ds) in shape.iter().zip(src).zip(dst) {
        if n == 1 {
            continue;
        }
        match out.last_mut() {
            Some(prev) if prev.1 == ss * n && prev.2 == ds * n => *prev = (prev.0 * n, ss, ds),
            _ => out.push((n, ss, ds)),
        }
    }
    if out.is_empty() {
        out.push((1, 1, 1));
    }
    out
}

/// Copies the elements of `shape` from `src` (read through `src_layout`) into `dst`
/// (written through `dst_layout`). The caller checks that both layouts stay inside their
/// tensors, that the dtypes agree and that the written positions are distinct.
pub(crate) fn strided_copy(
    op: &str,
    src: &Tensor,
    src_layout: &Layout,
    dst: &Tensor,
    dst_layout: &Layout,
    shape: &[usize],
) -> Result<(), Error> {
    let total: usize = shape.iter().product();
    if total == 0 {
        return Ok(());
    }
    fits_u32(op, "source elements", src.len())?;
    fits_u32(op, "destination elements", dst.len())?;
    let dims = merge_dims(shape, &src_layout.strides, &dst_layout.strides);
    if dims.len() > MAX_RANK {
        return Err(Error::TooLarge {
            what: format!(
                "{op}: dimensions of the copy {shape:?} that do not merge (make the tensor contiguous in steps)"
            ),
            requested: dims.len() as u64,
            limit: MAX_RANK as u64,
        });
    }
    // Elements per 32-bit word.
    let epw = 4 / src.dtype().size();
    let (last_n, last_s, last_d) = dims[dims.len() - 1];
    // Whether the copy moves units of `w` elements: the last dimension contiguous on both
    // sides, every size, stride and offset a multiple of `w`.
    let units_of = |w: usize| {
        last_n.is_multiple_of(w)
            && last_s == 1
            && last_d == 1
            && src_layout.offset.is_multiple_of(w)
            && dst_layout.offset.is_multiple_of(w)
            && dims[..dims.len() - 1]
                .iter()
                .all(|&(_, s, d)| s.is_multiple_of(w) && d.is_multiple_of(w))
    };
    let vec4 = units_of(4 * epw);
    if epw > 1 && !vec4 && !units_of(epw) {
        return half_copy(op, (src, src_layout), (dst, dst_layout), shape, &dims);
    }
    let w = if vec4 { 4 * epw } else { epw };
    let mut params = StridedParams::default();
    let (mut ns, mut ss, mut ds) = ([0u32; MAX_RANK], [0u32; MAX_RANK], [0u32; MAX_RANK]);
    let last = dims.len() - 1;
    for (k, &(n, s, d)) in dims.iter().enumerate() {
        // In vec4 units the last dimension has a quarter of the length and keeps stride 1;
        // the other strides are multiples of 4. Every quantity is below the tensors'
        // lengths, checked above to fit in u32.
        let (n, s, d) = if k == last {
            (n / w, s, d)
        } else {
            (n, s / w, d / w)
        };
        (ns[k], ss[k], ds[k]) = (n as u32, s as u32, d as u32);
    }
    params.set_dims(ns, ss, ds);
    params.rank = dims.len() as u32;
    params.src_off = (src_layout.offset / w) as u32;
    params.dst_off = (dst_layout.offset / w) as u32;
    params.total = fits_u32(op, "elements", total / w)?;
    let kernel = if vec4 { &K_VEC4 } else { &K_WORD };
    launch_threads(
        op,
        src.device(),
        kernel,
        &[],
        &params,
        params.total,
        &[src, dst],
    )
}

/// [`strided_copy`] of f16 elements that do not pair into words: into a contiguous
/// destination (a new tensor, or a contiguous view from an even offset), a thread per
/// destination word.
fn half_copy(
    op: &str,
    (src, src_layout): (&Tensor, &Layout),
    (dst, dst_layout): (&Tensor, &Layout),
    shape: &[usize],
    dims: &[Dim],
) -> Result<(), Error> {
    let contiguous = dst_layout.strides == crate::size::contiguous_strides(shape);
    if !contiguous || !dst_layout.offset.is_multiple_of(2) {
        return Err(Error::InvalidArgument {
            op: op.into(),
            detail: format!(
                "an f16 copy into a strided view of shape {shape:?} whose elements do not pair \
                 into 32-bit words (odd sizes, strides or offsets) is not supported; copy in \
                 f32 (`to_dtype`) and cast the result, or make the destination contiguous"
            ),
        });
    }
    let mut params = StridedParams::default();
    let (mut ns, mut ss) = ([0u32; MAX_RANK], [0u32; MAX_RANK]);
    for (k, &(n, s, _)) in dims.iter().enumerate() {
        // Below the tensors' lengths, checked by the caller to fit in u32.
        (ns[k], ss[k]) = (n as u32, s as u32);
    }
    params.set_dims(ns, ss, [0; MAX_RANK]);
    params.rank = dims.len() as u32;
    params.src_off = src_layout.offset as u32;
    params.dst_off = dst_layout.offset as u32;
    params.total = fits_u32(op, "elements", shape.iter().product())?;
    let words = params.total.div_ceil(2);
    launch_threads(op, src.device(), &K_HALF, &[], &params, words, &[src, dst])
}

/// A new contiguous tensor of `shape` holding `src` read through `layout` (the caller
/// checks that the layout stays inside `src`).
pub(crate) fn gather_view(
    op: &str,
    src: &Tensor,
    layout: &Layout,
    shape: &[usize],
) -> Result<Tensor, Error> {
    let out = src.device().empty(shape, src.dtype())?;
    strided_copy(op, src, layout, &out, &Layout::contiguous(shape), shape)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::merge_dims;

    #[test]
    fn contiguous_runs_merge_and_unit_dims_drop() {
        // A contiguous copy is one dimension.
        assert_eq!(
            merge_dims(&[2, 3, 4], &[12, 4, 1], &[12, 4, 1]),
            vec![(24, 1, 1)]
        );
        // [B,T,H,D] = [2,3,5,8] -> [B,H,T,D]: nothing merges; a unit dim vanishes.
        assert_eq!(
            merge_dims(&[2, 5, 1, 3, 8], &[120, 8, 1, 40, 1], &[120, 24, 24, 8, 1]),
            vec![(2, 120, 120), (5, 8, 24), (3, 40, 8), (8, 1, 1)]
        );
        // A broadcast read (stride 0) merges with its neighbour broadcast dims.
        assert_eq!(
            merge_dims(&[3, 4, 5], &[0, 0, 1], &[20, 5, 1]),
            vec![(12, 0, 5), (5, 1, 1)]
        );
        assert_eq!(merge_dims(&[1, 1], &[1, 1], &[1, 1]), vec![(1, 1, 1)]);
    }
}

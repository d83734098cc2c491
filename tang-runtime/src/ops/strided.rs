//! The strided copy every layout op is made of (permute, expand, narrow, slice_scatter,
//! copy_): `dst[dst_off + Σ c_d·dst_stride_d] = src[src_off + Σ c_d·src_stride_d]` for
//! every coordinate `c` of a shape. Strides are in elements and may be 0 (a broadcast
//! read). Before launch, dimensions of size 1 are dropped and neighbours that are
//! contiguous on both sides are merged, so most copies run at rank 1 to 3; when the last
//! dimension is contiguous on both sides and everything is a multiple of 4, each thread
//! moves a `vec4` (16-byte loads and stores, coalesced along that dimension). The kernel
//! moves 32-bit words, so f32 and u32 tensors are copied bit for bit.

use bytemuck::{Pod, Zeroable};

use super::check::fits_u32;
use crate::dense::reduce::grid;
use crate::{Binding, Error, RawKernel, Tensor};

/// The most dimensions a copy may keep after merging (the kernel's uniform arrays).
pub(crate) const MAX_RANK: usize = 8;

/// Threads per workgroup.
const WG: usize = 256;

/// The kernel's uniform block (the WGSL `struct P` below, field for field).
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct StridedParams {
    shape: [u32; MAX_RANK],
    src_strides: [u32; MAX_RANK],
    dst_strides: [u32; MAX_RANK],
    rank: u32,
    src_off: u32,
    dst_off: u32,
    total: u32,
    /// Threads in one row of the 2-D grid.
    row: u32,
    pad: [u32; 3],
}

macro_rules! strided_body {
    () => {
        "
struct P {
    shape: array<vec4<u32>, 2>, src_strides: array<vec4<u32>, 2>, dst_strides: array<vec4<u32>, 2>,
    rank: u32, src_off: u32, dst_off: u32, total: u32, row: u32, pad0: u32, pad1: u32, pad2: u32,
}
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> src: array<T>;
@group(0) @binding(2) var<storage, read_write> dst: array<T>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * p.row;
    if (i >= p.total) { return; }
    var r = i;
    var s = p.src_off;
    var t = p.dst_off;
    // Innermost dimension first: the coordinate of the last dimension varies fastest.
    for (var k = 0u; k < p.rank; k = k + 1u) {
        let d = p.rank - 1u - k;
        let n = p.shape[d / 4u][d % 4u];
        let c = r % n;
        r = r / n;
        s = s + c * p.src_strides[d / 4u][d % 4u];
        t = t + c * p.dst_strides[d / 4u][d % 4u];
    }
    dst[t] = src[s];
}
"
    };
}

const STRIDED_WORD: &str = concat!("alias T = u32;\n", strided_body!());
const STRIDED_VEC4: &str = concat!("alias T = vec4<u32>;\n", strided_body!());
static K_WORD: RawKernel = RawKernel::new("strided_copy", STRIDED_WORD, "main");
static K_VEC4: RawKernel = RawKernel::new("strided_copy_vec4", STRIDED_VEC4, "main");

/// The kernels of this file, for naga validation.
#[cfg(test)]
pub(crate) fn shaders() -> Vec<(&'static str, &'static str)> {
    vec![
        ("strided_copy", STRIDED_WORD),
        ("strided_copy_vec4", STRIDED_VEC4),
    ]
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
            strides: super::check::contiguous_strides(shape),
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
    let (last_n, last_s, last_d) = dims[dims.len() - 1];
    let vec4 = last_n.is_multiple_of(4)
        && last_s == 1
        && last_d == 1
        && src_layout.offset.is_multiple_of(4)
        && dst_layout.offset.is_multiple_of(4)
        && dims[..dims.len() - 1]
            .iter()
            .all(|&(_, s, d)| s.is_multiple_of(4) && d.is_multiple_of(4));
    let w = if vec4 { 4 } else { 1 };
    let mut params = StridedParams::zeroed();
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
        params.shape[k] = n as u32;
        params.src_strides[k] = s as u32;
        params.dst_strides[k] = d as u32;
    }
    let units = total / w;
    let dev = src.device();
    let groups = grid(dev, op, units.div_ceil(WG) as u64)?;
    params.rank = dims.len() as u32;
    params.src_off = (src_layout.offset / w) as u32;
    params.dst_off = (dst_layout.offset / w) as u32;
    params.total = fits_u32(op, "elements", units)?;
    params.row = groups[0] * WG as u32;
    let kernel = if vec4 { &K_VEC4 } else { &K_WORD };
    dev.dispatch_raw(
        kernel,
        &[],
        &[
            Binding::Uniform(bytemuck::bytes_of(&params)),
            Binding::Read(src),
            Binding::ReadWrite(dst),
        ],
        groups,
    )
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

//! Matrix multiplication: `C = op(A) · op(B)` in f32, with either operand read transposed
//! in place, batched (a rank-2 operand is broadcast over the other's batch, as a Linear
//! layer needs), an optional bias row and an elementwise [`Epilogue`] fused into the
//! store; and its backward.
//!
//! The shader is generated per variant (tile shape, transposes, which operands allow
//! vec4 access, bias, epilogue: see `codegen`) and validated by naga the first time it
//! is used, through the kernel layer's one cache (`spec::Variants`): its params struct
//! (`MatmulParams`) and bindings are declared by the layer from the Rust side. Each
//! distinct text is kept for the life of the process: the count is bounded by the
//! variants (at most a few hundred) times the distinct epilogues a program uses.

mod backward;
pub(crate) mod codegen;
mod coop;
mod coop_stage;
mod coop_tile;
pub(crate) mod elem;
mod epilogue;
mod split;
mod store;
mod tile;

pub use backward::{bias_backward, matmul_backward, matmul_backward_cast, matmul_backward_with};
pub use coop_tile::CoopTile;
pub use epilogue::Epilogue;
#[doc(hidden)]
pub use split::matmul_tn_split;
pub use tile::TileConfig;

use crate::ops::check::mismatch;
use codegen::{Shape, Variant};
use split::{matmul_split_k, split_k};

use crate::size::Size;
use crate::spec::Variants;
use crate::{DType, Device, Error, RawKernel, Tensor};

/// How to multiply: transposes, bias, epilogue and (optionally) a forced tile shape.
#[derive(Clone, Copy, Debug, Default)]
pub struct MatmulOptions<'a> {
    /// A is stored `[.., k, m]` and used transposed (no copy is made).
    pub transpose_a: bool,
    /// B is stored `[.., n, k]` and used transposed (no copy is made).
    pub transpose_b: bool,
    /// A row of `n` values added to every row of C before the epilogue.
    pub bias: Option<&'a Tensor>,
    /// A function applied to every element of C as it is stored.
    pub epilogue: Option<&'a Epilogue>,
    /// A tile shape to use instead of the automatic choice (benchmarks and tuning);
    /// it must satisfy [`TileConfig::is_valid`] and the device's limits. A forced tile
    /// runs on the f32 tile even where tensor cores would be chosen.
    pub tile: Option<TileConfig>,
    /// Round both operands to f16 before the products (f32 accumulation): what
    /// `torch.autocast(dtype=torch.float16)` does to a matmul. Runs on the tensor cores
    /// where the device has them ([`crate::DeviceInfo::tensor_cores`]), else on the f32
    /// tile with the same rounding. An operand that is an f16 tensor is always
    /// multiplied this way.
    pub f16_inputs: bool,
    /// The result's element type: f32 (`None`, the default) or [`DType::F16`] (rounded
    /// to nearest even as it is stored).
    pub out_dtype: Option<DType>,
    /// A tensor-core block shape to use instead of the automatic choice (benchmarks and
    /// tuning): it must satisfy [`CoopTile::is_valid`] (checked on every device) and the
    /// device's limits, and applies only to products that run on the tensor cores.
    pub coop_tile: Option<CoopTile>,
}

impl MatmulOptions<'_> {
    /// Whether the products are f16 (for operands `a` and `b`).
    fn half(&self, a: &Tensor, b: &Tensor) -> bool {
        self.f16_inputs || a.dtype() == DType::F16 || b.dtype() == DType::F16
    }
}

/// `A · B` for `a: [.., m, k]`, `b: [.., k, n]` (see [`matmul_with`]).
///
/// # Errors
/// As [`matmul_with`].
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor, Error> {
    matmul_with(a, b, &MatmulOptions::default())
}

/// The shapes of one matmul after the arguments were checked.
#[derive(Clone, Debug)]
struct Dims {
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    a_bstride: usize,
    b_bstride: usize,
    out_shape: Vec<usize>,
}

fn dims(a: &Tensor, b: &Tensor, o: &MatmulOptions<'_>) -> Result<Dims, Error> {
    // Static names: a formatted one would allocate on every launch, not just on error.
    for (name, t) in [("matmul (a)", a), ("matmul (b)", b)] {
        if t.dtype() != DType::F16 {
            t.expect_dtype(name, DType::F32)?;
        }
    }
    if let Some(dt) = o.out_dtype
        && dt == DType::U32
    {
        return Err(Error::InvalidArgument {
            op: "matmul".into(),
            detail: "out_dtype U32: a matmul's result is f32 or f16; pass None (f32) or Some(DType::F16)".into(),
        });
    }
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() < 2 || sb.len() < 2 {
        return Err(mismatch(
            "matmul",
            format!(
                "both operands need rank >= 2 ([.., rows, cols]), got a {sa:?} and b {sb:?}; reshape a vector to [1, n] or [n, 1]"
            ),
        ));
    }
    let (ra, ca) = (sa[sa.len() - 2], sa[sa.len() - 1]);
    let (rb, cb) = (sb[sb.len() - 2], sb[sb.len() - 1]);
    let (m, k) = if o.transpose_a { (ca, ra) } else { (ra, ca) };
    let (k2, n) = if o.transpose_b { (cb, rb) } else { (rb, cb) };
    if k != k2 {
        return Err(mismatch(
            "matmul",
            format!(
                "inner dimensions differ: op(a) is [{m}, {k}] (a {sa:?}, transpose_a = {}) but op(b) is [{k2}, {n}] (b {sb:?}, transpose_b = {}); expected b to have {k} {}",
                o.transpose_a,
                o.transpose_b,
                if o.transpose_b { "columns" } else { "rows" }
            ),
        ));
    }
    let (la, lb) = (&sa[..sa.len() - 2], &sb[..sb.len() - 2]);
    // Checked: the batch dims of an empty operand (`[2^40, 2^40, 0, 5]`) may overflow.
    let batch_of = |l: &[usize], name: &str| {
        Size::product(l).counted(|| format!("matmul: batch of {name} (dims {l:?})"))
    };
    let (ba, bb) = (batch_of(la, "a")?, batch_of(lb, "b")?);
    // One matrix of each operand. These overflow only for an operand with batch 0 (its
    // element count is checked), whose output is empty too: nothing is launched then.
    let a_mat = (Size::of(m) * k).get().unwrap_or(0);
    let b_mat = (Size::of(k) * n).get().unwrap_or(0);
    let (batch, lead, a_bstride, b_bstride) = match (la.is_empty(), lb.is_empty()) {
        (true, true) => (1, vec![], 0, 0),
        (false, true) => (ba, la.to_vec(), a_mat, 0),
        (true, false) => (bb, lb.to_vec(), 0, b_mat),
        (false, false) => {
            if la != lb {
                return Err(mismatch(
                    "matmul",
                    format!(
                        "batch dimensions differ: a {sa:?} has batch {la:?}, b {sb:?} has batch {lb:?}; use equal batch dimensions, or a rank-2 operand to broadcast it"
                    ),
                ));
            }
            (ba, la.to_vec(), a_mat, b_mat)
        }
    };
    if let Some(bias) = o.bias {
        bias.expect_dtype("matmul (bias)", DType::F32)?;
        if bias.len() != n || bias.shape().iter().rev().skip(1).any(|&d| d != 1) {
            return Err(mismatch(
                "matmul",
                format!(
                    "bias has shape {:?}, expected [{n}] (one value per column of C)",
                    bias.shape()
                ),
            ));
        }
    }
    let mut out_shape = lead;
    out_shape.extend([m, n]);
    let limit = u32::MAX as usize;
    let out_len = Size::product(&[batch, m, n]).get();
    for (what, len) in [
        ("a", Some(a.len())),
        ("b", Some(b.len())),
        ("output", out_len),
    ] {
        match len {
            Some(l) if l <= limit => {}
            _ => {
                return Err(Error::TooLarge {
                    what: format!("matmul: elements of {what}"),
                    requested: len.map_or(u64::MAX, |l| l as u64),
                    limit: limit as u64,
                });
            }
        }
    }
    Ok(Dims {
        m,
        n,
        k,
        batch,
        a_bstride,
        b_bstride,
        out_shape,
    })
}

/// Whether a workgroup of `threads` (along x) with `workgroup_bytes` of workgroup memory
/// fits `dev`'s limits: the one check behind [`TileConfig::fits`] and [`CoopTile::fits`].
pub(crate) fn within_limits(dev: &Device, threads: u32, workgroup_bytes: u32) -> bool {
    let l = &dev.info().limits;
    threads <= l.max_compute_invocations_per_workgroup
        && threads <= l.max_compute_workgroup_size_x
        && workgroup_bytes <= l.max_compute_workgroup_storage_size
}

impl TileConfig {
    /// Whether this tile is valid and within `dev`'s limits (threads per workgroup,
    /// workgroup memory).
    pub fn fits(&self, dev: &Device) -> bool {
        self.is_valid() && within_limits(dev, self.threads(), self.workgroup_bytes())
    }

    /// The tile `op` runs on: `forced` (a caller's choice) when it fits `dev`, else the
    /// automatic choice of `choose`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `forced` is not a tile the generator supports
    /// ([`TileConfig::is_valid`]: a zero dimension, say); [`Error::TooLarge`] when it does
    /// not fit the device, or when no tile does.
    pub(crate) fn pick(
        op: &str,
        dev: &Device,
        forced: Option<TileConfig>,
        choose: impl FnOnce() -> Option<TileConfig>,
    ) -> Result<TileConfig, Error> {
        let limit = dev.info().limits.max_compute_workgroup_storage_size.into();
        // A shape the generator cannot build is a bad argument, not a limit of this device.
        if let Some(t) = forced
            && let Some(reason) = t.invalid_reason()
        {
            return Err(Error::InvalidArgument {
                op: op.into(),
                detail: format!(
                    "tile {t:?} is not one the matmul generator supports: {reason}; pass one of TileConfig::PRESETS, or None for the automatic choice"
                ),
            });
        }
        match forced {
            Some(t) if t.fits(dev) => Ok(t),
            Some(t) => Err(Error::TooLarge {
                what: format!(
                    "{op}: tile {t:?} ({} threads, {} bytes of workgroup memory)",
                    t.threads(),
                    t.workgroup_bytes()
                ),
                requested: t.workgroup_bytes().into(),
                limit,
            }),
            None => choose().ok_or_else(|| Error::TooLarge {
                what: format!("{op}: the smallest tile's workgroup memory"),
                requested: TileConfig::SMALL.workgroup_bytes().into(),
                limit,
            }),
        }
    }
}

fn fits(dev: &Device, tile: &TileConfig) -> bool {
    tile.fits(dev)
}

/// The automatic tile choice: the largest block that still gives enough workgroups to
/// fill a big GPU (about two per SM on a 132-SM part), since a large block has the most
/// arithmetic per byte of workgroup memory read; but not a block that C fills less than
/// three quarters of when a smaller one fills it (attention's batched `[256, 64]`
/// products ran at 18 TFLOP/s on an H200 in half-empty 128 x 128 blocks).
fn choose_tile(dev: &Device, m: usize, n: usize, batch: usize) -> Option<TileConfig> {
    let padded = |t: &TileConfig| {
        m.div_ceil(t.bm as usize) * t.bm as usize * n.div_ceil(t.bn as usize) * t.bn as usize
    };
    let filled = |t: &TileConfig| 4 * m * n >= 3 * padded(t);
    let blocks = |t: &TileConfig| m.div_ceil(t.bm as usize) * n.div_ceil(t.bn as usize) * batch;
    // Measured on an H200 (BENCHMARKS.md): at 4096³ the 128×128 tile with BK = 16 ran at
    // 40.2 TFLOP/s against 36.5 with BK = 8; it needs 33 KB of workgroup memory, so
    // adapters with a 32 KB limit (lavapipe) take the BK = 8 tile instead.
    let ladder = [
        (TileConfig::LARGE_K16, 192),
        (TileConfig::LARGE, 192),
        (TileConfig::WIDE, 192),
        (TileConfig::MEDIUM, 64),
    ];
    let enough = |&(t, min_blocks): &(TileConfig, usize)| fits(dev, &t) && blocks(&t) >= min_blocks;
    if let Some(&(t, _)) = ladder.iter().find(|c| enough(c) && filled(&c.0)) {
        return Some(t);
    }
    if let Some(&(t, _)) = ladder.iter().find(|c| enough(c)) {
        return Some(t);
    }
    [TileConfig::SMALL, TileConfig::MEDIUM, TileConfig::LARGE]
        .into_iter()
        .find(|t| fits(dev, t))
}

/// The generated variants, by tile shape, flags and epilogue hash.
static KERNELS: Variants<(Variant, u64)> = Variants::new();

/// The kernel for `v` (and `epi`), generated and validated on first use.
fn kernel(v: &Variant, epi: Option<&Epilogue>) -> Result<&'static RawKernel, Error> {
    let key = (*v, epi.map_or(0, Epilogue::hash));
    KERNELS.get(&key, || {
        let text = codegen::generate(v, epi.map_or("", Epilogue::wgsl));
        ("matmul".to_string(), text)
    })
}

/// The WGSL of every matmul variant tang can generate without an epilogue: every tile
/// preset, transpose, vec4 and bias combination (for validation; kernels with an
/// epilogue are validated when they are first generated).
pub(crate) fn kernels() -> Vec<crate::spec::Source> {
    let mut out = Vec::new();
    for (i, tile) in TileConfig::PRESETS.into_iter().enumerate() {
        for flags in 0u32..64 {
            // Below 64 the epilogue bit is clear.
            let v = Variant::from_bits(tile, flags);
            out.push((
                format!("matmul_tile{i}_flags{flags:02}"),
                codegen::generate(&v, ""),
            ));
        }
    }
    // f16 operands and rounded f32 operands on the f32 tile, each layout and alignment.
    for flags in 0u32..16 {
        for (ea, eb) in [
            (codegen::Elem::F16, codegen::Elem::F16),
            (codegen::Elem::F32AsF16, codegen::Elem::F16),
            (codegen::Elem::F32AsF16, codegen::Elem::F32AsF16),
        ] {
            let v = Variant {
                ea,
                eb,
                ..Variant::from_bits(TileConfig::LARGE, flags)
            };
            out.push((
                format!("matmul_f16_flags{flags:02}_{ea:?}_{eb:?}"),
                codegen::generate(&v, ""),
            ));
        }
    }
    // The tensor-core kernel: every flag without a bias or an epilogue.
    for bits in 0u32..512 {
        let v = coop::CoopVariant::from_bits(bits);
        out.push((format!("matmul_coop_{bits:03}"), coop::generate(&v, "")));
    }
    out
}

/// `C = op(A) · op(B) (+ bias) |> epilogue`.
///
/// Shapes: `op(a)` is `[.., m, k]` (`a` is `[.., k, m]` when `transpose_a`), `op(b)` is
/// `[.., k, n]` (`b` is `[.., n, k]` when `transpose_b`); the result is `[.., m, n]`.
/// Batch dimensions (everything before the last two) must be equal, or one operand is
/// rank 2 and is used for every batch. `bias` has `n` elements. Any sizes work
/// (including `k = 0`, where C is the bias passed through the epilogue).
///
/// # Errors
/// [`Error::ShapeMismatch`] (the message gives the expected shape), [`Error::DType`] for
/// a u32 tensor, [`Error::InvalidArgument`] for a forced `tile` or `coop_tile` the
/// generator does not support, [`Error::TooLarge`] for more than 2^32 - 1 elements in one
/// operand or a forced tile the device cannot run, [`Error::Shader`] (a bug) if a
/// generated shader fails validation.
pub fn matmul_with(a: &Tensor, b: &Tensor, o: &MatmulOptions<'_>) -> Result<Tensor, Error> {
    let d = dims(a, b, o)?;
    CoopTile::check_forced(o.coop_tile)?;
    let dev = a.device();
    let half = o.half(a, b);
    let out_dtype = o.out_dtype.unwrap_or(DType::F32);
    let on_tensor_cores = half && o.tile.is_none() && dev.info().tensor_cores;
    let splits = split_k(&d, o, on_tensor_cores);
    if splits > 1 {
        let c = matmul_split_k(a, b, &d, splits, half, o.coop_tile)?;
        return crate::ops::to_dtype(&c, out_dtype);
    }
    if on_tensor_cores && let Some(tile) = CoopTile::choose(dev, a, b, o, &d)? {
        return matmul_coop(a, b, o, &d, out_dtype, tile);
    }
    if out_dtype != DType::F32 {
        // The f32 tile stores f32; the rounding to f16 is one pass more.
        let f32_out = MatmulOptions {
            out_dtype: None,
            ..*o
        };
        return crate::ops::to_dtype(&matmul_with(a, b, &f32_out)?, out_dtype);
    }
    let out = dev.empty(&d.out_shape, DType::F32)?;
    if out.is_empty() {
        return Ok(out);
    }
    let tile = TileConfig::pick("matmul", dev, o.tile, || {
        choose_tile(dev, d.m, d.n, d.batch)
    })?;
    let v = Variant {
        tile,
        ta: o.transpose_a,
        tb: o.transpose_b,
        // vec4 access needs a 16-byte binding: an empty operand (k = 0) stays scalar.
        va: (if o.transpose_a { d.m } else { d.k }).is_multiple_of(4) && !a.is_empty(),
        vb: (if o.transpose_b { d.k } else { d.n }).is_multiple_of(4) && !b.is_empty(),
        vc: d.n.is_multiple_of(4),
        bias: o.bias.is_some(),
        epilogue: o.epilogue.is_some(),
        ea: codegen::Elem::of(a.dtype(), half),
        eb: codegen::Elem::of(b.dtype(), half),
    };
    let k = kernel(&v, o.epilogue)?;
    let (params, grid) = grid_of(dev, &d, [tile.bm, tile.bn, tile.bk], o)?;
    let mut tensors = vec![a, b];
    tensors.extend(o.bias);
    tensors.push(&out);
    codegen::layout(&v).dispatch(k, &[], &params, &tensors, grid)?;
    Ok(out)
}

/// The params and workgroup grid of a launch of `block` (`[bm, bn, bk]`) over `d`.
fn grid_of(
    dev: &Device,
    d: &Dims,
    block: [u32; 3],
    o: &MatmulOptions<'_>,
) -> Result<(codegen::MatmulParams, [u32; 3]), Error> {
    let shape = Shape {
        m: d.m as u32,
        n: d.n as u32,
        k: d.k as u32,
        a_bstride: d.a_bstride as u32,
        b_bstride: d.b_bstride as u32,
        batch: d.batch as u32,
    };
    let max = dev.info().limits.max_compute_workgroups_per_dimension;
    codegen::launch_shape(&shape, block, o.transpose_a, o.transpose_b, max).ok_or_else(|| {
        Error::TooLarge {
            what: "matmul: workgroups (batch x row blocks x column blocks)".into(),
            requested: (d.m.div_ceil(block[0] as usize) * d.n.div_ceil(block[1] as usize) * d.batch)
                as u64,
            limit: (max as u64).pow(3).min(u32::MAX as u64),
        }
    })
}

/// The generated tensor-core variants, by flags and epilogue hash.
static COOP_KERNELS: Variants<(coop::CoopVariant, u64)> = Variants::new();

/// `C = op(A) · op(B)` on the tensor cores (see `coop.rs`).
fn matmul_coop(
    a: &Tensor,
    b: &Tensor,
    o: &MatmulOptions<'_>,
    d: &Dims,
    out_dtype: DType,
    tile: CoopTile,
) -> Result<Tensor, Error> {
    let dev = a.device();
    let out = dev.empty(&d.out_shape, out_dtype)?;
    if out.is_empty() {
        return Ok(out);
    }
    let v = coop::CoopVariant {
        ta: o.transpose_a,
        tb: o.transpose_b,
        // Four-element access needs the contiguous extent a multiple of 4 and a binding
        // (an empty operand, k = 0, stays scalar).
        va: (if o.transpose_a { d.m } else { d.k }).is_multiple_of(4) && !a.is_empty(),
        vb: (if o.transpose_b { d.k } else { d.n }).is_multiple_of(4) && !b.is_empty(),
        vc: d.n.is_multiple_of(4),
        ha: a.dtype() == DType::F16,
        hb: b.dtype() == DType::F16,
        hc: out_dtype == DType::F16,
        kexact: d.k > 0 && d.k.is_multiple_of(tile.bk as usize),
        bias: o.bias.is_some(),
        epilogue: o.epilogue.is_some(),
        tile,
    };
    let key = (v, o.epilogue.map_or(0, Epilogue::hash));
    let k = COOP_KERNELS.get(&key, || {
        let text = coop::generate(&v, o.epilogue.map_or("", Epilogue::wgsl));
        ("matmul_coop".to_string(), text)
    })?;
    let (params, grid) = grid_of(dev, d, [tile.block_m(), tile.block_n(), tile.bk], o)?;
    let mut tensors = vec![a, b];
    tensors.extend(o.bias);
    tensors.push(&out);
    coop::layout(&v).dispatch(k, &[], &params, &tensors, grid)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::codegen::{Variant, generate};
    use super::*;

    /// Every variant of every preset tile passes naga.
    #[test]
    fn every_variant_validates() {
        let epi =
            "fn tang_epilogue(x: f32, zero: u32) -> f32 { return max(x, bitcast<f32>(zero)); }\n";
        for tile in TileConfig::PRESETS {
            assert!(tile.is_valid(), "{tile:?}");
            for bits in 0..256u32 {
                let v = Variant::from_bits(tile, bits);
                // The other flags are covered on the preset that matters most.
                if bits >= 128 || (tile != TileConfig::LARGE && bits > 32) {
                    continue;
                }
                let text = generate(&v, epi);
                if let Err(e) = tang_expr::validate(&text) {
                    panic!("{v:?}: {e}\n{text}");
                }
            }
        }
    }

    #[test]
    fn invalid_tiles_are_rejected() {
        assert!(
            !TileConfig {
                bm: 128,
                bn: 128,
                bk: 8,
                tm: 6,
                tn: 8
            }
            .is_valid()
        );
        assert!(
            !TileConfig {
                bm: 64,
                bn: 64,
                bk: 4,
                tm: 4,
                tn: 4
            }
            .is_valid()
        );
        assert!(
            !TileConfig {
                bm: 128,
                bn: 128,
                bk: 6,
                tm: 8,
                tn: 8
            }
            .is_valid()
        );
    }
}

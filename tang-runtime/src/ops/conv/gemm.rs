//! 2-D convolution as implicit GEMM on the matmul's tiles: the matmul kernel of
//! `matmul/codegen.rs` (register-blocked tiles, double-buffered staging, grouped block
//! order), with its B operand gathered from an NCHW tensor as it is loaded, so no
//! unfolded (im2col) matrix is ever written.
//!
//! One kernel text per (tile, layout, alignment, bias) serves the three products of a
//! convolution, each a batch of GEMMs `C[bat] (m × n) = A[bat] (m × k) · B[bat] (k × n)`
//! over `bat = (image · splits + split) · groups + group`:
//!
//! - forward: A the weight `[C_out/g, C_in/g · kh · kw]`, B the input's windows (rows
//!   the kernel taps, columns the output positions), C the output `[C_out/g, OH · OW]`;
//! - grad_input: A the weight with its channel axes swapped `[C_in/g, C_out/g · kh · kw]`,
//!   B `grad_out` gathered at the output position each input pixel's tap came from
//!   (the transposed convolution, zero where the stride skips it), C `grad_input`;
//! - grad_weight: A `grad_out [C_out/g, OH · OW]`, B the input's windows transposed
//!   (rows the output positions, columns the taps), C one split's part of `grad_weight`,
//!   summed over images and splits by the caller. The reduction over `N · OH · OW` is
//!   split so that enough workgroups run (`splits` pieces of each image's positions).
//!
//! The gather (`tap`) maps a position `(py, px)` of C's grid and a tap `(ch, ky, kx)` to
//! a source pixel per axis: `num = pos · mul + k · step + offset`, the source coordinate
//! `num / div`, zero when `num` is negative, not a multiple of `div`, or past the edge.
//! The forward windows are `mul = stride, step = dilation, offset = -padding, div = 1`;
//! the transposed gather is `mul = 1, step = -dilation, offset = padding, div = stride`.
//! The divisors (`PW`, `KW`, `KHW`, `QY`, `QX`) are `override` constants, so the shader
//! the driver compiles divides by constants (one pipeline per distinct geometry). The
//! forward's bias is added per row as C is stored.
//!
//! The tile follows the rows of the products (see `choose_tile`); [`with_tile`] forces
//! another, for benchmarks and tuning.

use std::cell::Cell;
use std::fmt::Write as _;

use crate::ops::matmul::TileConfig;
use crate::ops::matmul::codegen::{self, Variant};
use crate::size::Size;
use crate::spec::{Layout, Slot, Source, Variants, grid, params};
use crate::{Device, Error, Tensor};

params! {
    /// One batch of implicit GEMMs. The first fields are the matmul's (sizes, tiles,
    /// grid); then how a batch entry `bat` finds its A block (`a_img`, `a_grp`,
    /// `a_split` element offsets per image, group and split), its source planes
    /// (`src_img`, `src_grp`) and first position (`split · split_len`); the source's
    /// size; and the gather's per-axis `mul`, `step`, `offset` (see the module docs).
    struct ConvGemmParams {
        m: u32, n: u32, k: u32, k_tiles: u32, lda: u32, m_tiles: u32, n_tiles: u32,
        total: u32, grid_x: u32, grid_xy: u32, c_bstride: u32,
        groups: u32, splits: u32, a_img: u32, a_grp: u32, a_split: u32,
        src_img: u32, src_grp: u32, split_len: u32, src_h: u32, src_w: u32, src_hw: u32,
        mul_y: i32, step_y: i32, offset_y: i32, mul_x: i32, step_x: i32, offset_x: i32,
    }
}

/// The divisors of the gather, specialised per pipeline (see the module docs).
const OVERRIDES: &str = "override PW: u32 = 1u;
override KW: u32 = 1u;
override KHW: u32 = 1u;
override QY: i32 = 1;
override QX: i32 = 1;
";

/// `tap(base, pos, kid)`: the source value at C-grid position `pos` and kernel tap `kid`
/// (`ch · KHW + ky · KW + kx`), reading planes from `base`; 0 outside the source.
const TAP: &str = "
fn tap(base: u32, pos: u32, kid: u32) -> f32 {
    let py = pos / PW;
    let px = pos - py * PW;
    let ch = kid / KHW;
    let kr = kid - ch * KHW;
    let ky = kr / KW;
    let kx = kr - ky * KW;
    let ny = i32(py) * p.mul_y + i32(ky) * p.step_y + p.offset_y;
    let nx = i32(px) * p.mul_x + i32(kx) * p.step_x + p.offset_x;
    let sy = ny / QY;
    let sx = nx / QX;
    if (ny < 0 || nx < 0 || sy * QY != ny || sx * QX != nx || u32(sy) >= p.src_h || u32(sx) >= p.src_w) {
        return 0.0f;
    }
    return src[base + ch * p.src_hw + u32(sy) * p.src_w + u32(sx)];
}
";

/// The bases of batch entry `bat` (after the matmul's block origin).
const BASES: &str = "    let per_image = p.splits * p.groups;
    let image = bat / per_image;
    let within = bat - image * per_image;
    let split = within / p.groups;
    let group = within - split * p.groups;
    let a_base = image * p.a_img + group * p.a_grp + split * p.a_split;
    let src_base = image * p.src_img + group * p.src_grp;
    let pos0 = split * p.split_len;
    let c_base = bat * p.c_bstride;
";

const A: Slot = Slot::Read("a", "array<f32>");
const A4: Slot = Slot::Read("a", "array<vec4<f32>>");
const SRC: Slot = Slot::Read("src", "array<f32>");
const BIAS: Slot = Slot::Read("bias", "array<f32>");
const C: Slot = Slot::ReadWrite("c", "array<f32>");
const C4: Slot = Slot::ReadWrite("c", "array<vec4<f32>>");

/// The bindings of each variant, in order: A (vec4 when `va`), the gathered source, the
/// per-row bias when there is one, C (vec4 when `vc`); indexed by `va + 2 vc + 4 bias`.
static LAYOUTS: [Layout<ConvGemmParams>; 8] = [
    Layout::new(&[A, SRC, C]),
    Layout::new(&[A4, SRC, C]),
    Layout::new(&[A, SRC, C4]),
    Layout::new(&[A4, SRC, C4]),
    Layout::new(&[A, SRC, BIAS, C]),
    Layout::new(&[A4, SRC, BIAS, C]),
    Layout::new(&[A, SRC, BIAS, C4]),
    Layout::new(&[A4, SRC, BIAS, C4]),
];

/// What selects a kernel text: the matmul variant (tile, `tb` for the grad_weight
/// layout, `va`, `vc`) and whether a per-row bias is added on store.
type Key = (Variant, bool);

fn layout(&(v, bias): &Key) -> &'static Layout<ConvGemmParams> {
    &LAYOUTS[usize::from(v.va) + 2 * usize::from(v.vc) + 4 * usize::from(bias)]
}

/// `bias[group · m + row]`, 0 past the last row: the forward's per-channel bias.
const ROW_BIAS: &str = "
fn row_bias(group: u32, row: u32) -> f32 {
    if (row >= p.m) { return 0.0f; }
    return bias[group * p.m + row];
}
";

/// The WGSL of `key`: `v.tb` selects the grad_weight layout (B's rows are positions, its
/// columns taps); `vb`, `bias` and `epilogue` of the matmul variant are unused (B is
/// gathered, scalar; the bias here is per row, the key's flag).
fn generate(key: &Key) -> String {
    let (v, row_bias) = key;
    let t = v.tile;
    let mut w = String::with_capacity(24 * 1024);
    let _ = writeln!(
        w,
        "// tang convolution as implicit GEMM {}x{}x{} ({}x{} per thread), B {}{} (generated)",
        t.bm,
        t.bn,
        t.bk,
        t.tm,
        t.tn,
        if v.tb {
            "positions x taps"
        } else {
            "taps x positions"
        },
        if *row_bias { ", row bias" } else { "" }
    );
    w.push_str(OVERRIDES);
    w.push_str(&layout(key).declarations());
    codegen::emit_workgroup_memory(&mut w, v);
    w.push_str(TAP);
    if *row_bias {
        w.push_str(ROW_BIAS);
    }
    codegen::emit_block_origin(&mut w, v);
    w.push_str(BASES);
    // `r` is the row of B's tile in the operand's own order: a position in the forward
    // layout (B is [taps, positions]), a tap in the grad_weight layout.
    let gather = if v.tb {
        "tap(src_base, pos0 + kk, r)"
    } else {
        "tap(src_base, r, kk)"
    };
    let add = row_bias.then_some("row_bias(group, row)");
    codegen::emit_tile_loop(&mut w, v, Some(gather), add);
    w.push_str("}\n");
    w
}

/// 64 × 64 blocks with k tiles of 16, 64 threads of 8 × 8: the tile of layers with 33
/// to 64 channels per group. A thread's share of the loads and FMAs is that of the
/// larger tiles (8 × 8 per thread either way), and the small blocks come in a count that
/// spreads evenly over the SMs: the ResNet layer (64 channels, 56 × 56, batch 64) gives
/// 3136 forward blocks and covers grad_weight's 64 × 576 exactly.
const SQUARE64: TileConfig = TileConfig {
    bm: 64,
    bn: 64,
    bk: 16,
    tm: 8,
    tn: 8,
};

/// The tiles this module chooses from: per row count (128, 64, 32) the preferred one
/// first. For 64 rows the k tile of 8 comes first: on an H200 the ResNet layer (batch 64,
/// 64 -> 64 channels, 56x56, 3x3) ran forward+backward in 2.02 ms with it against 2.86 ms
/// with the k tile of 16 (`ops_bench`, `conv2d_resnet_layer_timing`).
const TILES: [TileConfig; 5] = [
    TileConfig::LARGE_K16,
    TileConfig::LARGE,
    TileConfig::MEDIUM,
    SQUARE64,
    TileConfig::SMALL,
];

thread_local! {
    static FORCED_TILE: Cell<Option<TileConfig>> = const { Cell::new(None) };
}

/// Runs `f` with every convolution launched from this thread on `tile` instead of the
/// automatic choice (for benchmarks and tuning; a tile that is not valid or does not fit
/// the device makes those launches fail with [`Error::TooLarge`]). Launches are recorded
/// on the calling thread, so other threads are unaffected.
pub fn with_tile<R>(tile: TileConfig, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<TileConfig>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED_TILE.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FORCED_TILE.with(|c| c.replace(Some(tile))));
    f()
}

/// The tile for products of `m` rows: blocks of 128 rows above 64, of 64 rows above 32,
/// else 32 (a larger block would compute rows that do not exist); the first of those
/// that fits the device, else the smallest that fits.
fn choose_tile(dev: &Device, m: usize) -> Option<TileConfig> {
    let rows = if m > 64 {
        128
    } else if m > 32 {
        64
    } else {
        32
    };
    let fitting = || TILES.into_iter().filter(|t| t.fits(dev));
    fitting()
        .find(|t| t.bm == rows)
        .or_else(|| fitting().next_back())
}

/// The generated kernels, by variant.
static KERNELS: Variants<Key> = Variants::new();

/// The variant for `tile` and the flags that change the text.
fn variant(tile: TileConfig, positions_along_k: bool, va: bool, vc: bool) -> Variant {
    Variant {
        tile,
        ta: false,
        tb: positions_along_k,
        va,
        vb: false,
        vc,
        bias: false,
        epilogue: false,
        ea: codegen::Elem::F32,
        eb: codegen::Elem::F32,
    }
}

/// Every kernel this module can produce: each tile, both layouts, each alignment, with
/// and without a bias.
pub(crate) fn kernels() -> Vec<Source> {
    let mut out = Vec::new();
    for (i, tile) in TILES.into_iter().enumerate() {
        for flags in 0u32..16 {
            let v = variant(tile, flags & 1 != 0, flags & 2 != 0, flags & 4 != 0);
            let key = (v, flags & 8 != 0);
            out.push((format!("conv_gemm_tile{i}_flags{flags:02}"), generate(&key)));
        }
    }
    out
}

/// One axis of the gather: source coordinate `(pos · mul + k · step + offset) / div`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Axis {
    /// Factor of the C-grid position.
    pub(crate) mul: i32,
    /// Factor of the kernel tap.
    pub(crate) step: i32,
    /// Constant term.
    pub(crate) offset: i32,
    /// Divisor (a tap reads only where it divides exactly).
    pub(crate) div: i32,
}

/// One batch of implicit GEMMs (see the module docs for the three uses). Sizes are
/// elements; the caller checked that every offset and tensor length fits in u32 and
/// the gather's arithmetic in i32.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConvGemm {
    /// Rows, columns and reduction length of one GEMM.
    pub(crate) m: usize,
    /// Columns of C.
    pub(crate) n: usize,
    /// Reduction length (for split reductions, of one split).
    pub(crate) k: usize,
    /// Images, splits per image and groups: the batch is their product.
    pub(crate) images: usize,
    /// Pieces each image's reduction is split into (1 unless the reduction runs over
    /// positions).
    pub(crate) splits: usize,
    /// Convolution groups.
    pub(crate) groups: usize,
    /// A's row stride (elements).
    pub(crate) lda: usize,
    /// A's offset per image, group and split.
    pub(crate) a_offsets: [usize; 3],
    /// The source's offset per image and group (its planes are `src_size` apart).
    pub(crate) src_offsets: [usize; 2],
    /// The source's `[height, width]`.
    pub(crate) src_size: [usize; 2],
    /// Width of C's grid of positions.
    pub(crate) positions_width: usize,
    /// The kernel's `[kh, kw]`.
    pub(crate) kernel: [usize; 2],
    /// The gather along height and width.
    pub(crate) axes: [Axis; 2],
    /// B's rows are positions (grad_weight) instead of taps.
    pub(crate) positions_along_k: bool,
}

/// `v` as a u32 kernel quantity, or [`Error::TooLarge`] naming `what`.
fn word(op: &str, what: &str, v: usize) -> Result<u32, Error> {
    let v = Size::of(v).at_most(u32::MAX.into(), || format!("{op}: {what}"))?;
    // In range: `at_most` checked it.
    Ok(v as u32)
}

/// Runs `g`: `a` is A, `src` the gathered tensor, `row_bias` (`groups · m` values, one
/// per row of each group's C) added on store, `out` receives C (`batch · m · n`
/// elements, batch entries `m · n` apart).
///
/// # Errors
/// [`Error::TooLarge`] when no tile fits the device or the grid is too large;
/// [`Error::Shader`] (a bug) if the generated text fails validation.
pub(crate) fn run(
    op: &str,
    g: &ConvGemm,
    a: &Tensor,
    src: &Tensor,
    row_bias: Option<&Tensor>,
    out: &Tensor,
) -> Result<(), Error> {
    let batch = g.images * g.splits * g.groups;
    if out.is_empty() || batch == 0 {
        return Ok(());
    }
    let dev = out.device();
    let tile = TileConfig::pick(op, dev, FORCED_TILE.with(Cell::get), || {
        choose_tile(dev, g.m)
    })?;
    let a_aligned = [g.lda, g.a_offsets[0], g.a_offsets[1], g.a_offsets[2]]
        .iter()
        .all(|x| x.is_multiple_of(4));
    let v = variant(
        tile,
        g.positions_along_k,
        a_aligned && !a.is_empty(),
        g.n.is_multiple_of(4),
    );
    let key = (v, row_bias.is_some());
    let kernel = KERNELS.get(&key, || ("conv2d_gemm".to_string(), generate(&key)))?;
    let m_tiles = g.m.div_ceil(tile.bm as usize);
    let n_tiles = g.n.div_ceil(tile.bn as usize);
    let total = m_tiles * n_tiles * batch;
    let workgroups = grid(dev, op, total as u64)?;
    let w = |what: &str, v: usize| word(op, what, v);
    let params = ConvGemmParams {
        m: w("rows", g.m)?,
        n: w("columns", g.n)?,
        k: w("reduction length", g.k)?,
        k_tiles: w("k tiles", g.k.div_ceil(tile.bk as usize))?,
        lda: w("row stride of A", g.lda)?,
        m_tiles: w("row blocks", m_tiles)?,
        n_tiles: w("column blocks", n_tiles)?,
        total: w("workgroups", total)?,
        grid_x: workgroups[0],
        grid_xy: workgroups[0] * workgroups[1],
        c_bstride: w("elements of one product", g.m * g.n)?,
        groups: w("groups", g.groups)?,
        splits: w("splits", g.splits)?,
        a_img: w("offset of A per image", g.a_offsets[0])?,
        a_grp: w("offset of A per group", g.a_offsets[1])?,
        a_split: w("offset of A per split", g.a_offsets[2])?,
        src_img: w("offset of the source per image", g.src_offsets[0])?,
        src_grp: w("offset of the source per group", g.src_offsets[1])?,
        split_len: w("positions per split", g.k)?,
        src_h: w("source height", g.src_size[0])?,
        src_w: w("source width", g.src_size[1])?,
        src_hw: w("source plane", g.src_size[0] * g.src_size[1])?,
        mul_y: g.axes[0].mul,
        step_y: g.axes[0].step,
        offset_y: g.axes[0].offset,
        mul_x: g.axes[1].mul,
        step_x: g.axes[1].step,
        offset_x: g.axes[1].offset,
    };
    let constants = [
        ("PW", g.positions_width as f64),
        ("KW", g.kernel[1] as f64),
        ("KHW", (g.kernel[0] * g.kernel[1]) as f64),
        ("QY", f64::from(g.axes[0].div)),
        ("QX", f64::from(g.axes[1].div)),
    ];
    let tensors: &[&Tensor] = match row_bias {
        Some(bias) => &[a, src, bias, out],
        None => &[a, src, out],
    };
    layout(&key).dispatch(kernel, &constants, &params, tensors, workgroups)
}

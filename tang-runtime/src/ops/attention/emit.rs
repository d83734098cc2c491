//! The pieces every register-blocked attention generator (`tiled.rs`, `fwd_large.rs`,
//! `bwd_dq.rs`, `bwd_dkv.rs`) writes its WGSL with: coalesced tile loads stored transposed
//! ([`Block::load_transposed`]), swizzled indices ([`slot`], [`step_slot`]), the unrolled
//! loop over head dims, the entry point of the query-block kernels, the head of the
//! key-tile loop and the final store of a thread's four rows.

use std::fmt::Write as _;

use super::layout::KT;

/// One tile that [`Block::load_transposed`] fills: the workgroup array, its first vec4, the
/// global buffer and what to multiply each value by (`1.0` for nothing).
pub(super) struct Tile<'a> {
    dst: &'a str,
    off: u32,
    src: &'a str,
    scale: &'a str,
}

impl<'a> Tile<'a> {
    /// Buffer `src` into workgroup array `dst` from its first vec4, unscaled.
    pub(super) fn new(dst: &'a str, src: &'a str) -> Self {
        Tile {
            dst,
            off: 0,
            src,
            scale: "1.0",
        }
    }

    /// The same tile with every value multiplied by `scale` (a WGSL expression).
    pub(super) fn scaled(self, scale: &'a str) -> Self {
        Tile { scale, ..self }
    }

    /// The same tile from vec4 `off` of `dst` on (two tiles sharing one array).
    pub(super) fn at(self, off: u32) -> Self {
        Tile { off, ..self }
    }
}

/// The rows one [`Block::load_transposed`] copies: local rows `r < count`, global row
/// `base + first + r`, zero from `first + r == end` on (`base`, `first` and `end` are WGSL
/// expressions), stored with `count / 4` vec4s per line, XOR-swizzled, or one more,
/// padded (see [`Block::load_transposed`]).
pub(super) struct Rows<'a> {
    count: u32,
    swizzle: bool,
    base: &'a str,
    first: &'a str,
    end: &'a str,
}

impl<'a> Rows<'a> {
    /// `count` rows in a swizzled tile.
    pub(super) fn swizzled(count: u32, base: &'a str, first: &'a str, end: &'a str) -> Self {
        Rows {
            count,
            swizzle: true,
            base,
            first,
            end,
        }
    }

    /// `count` rows in a tile padded by one vec4 per line.
    pub(super) fn padded(count: u32, base: &'a str, first: &'a str, end: &'a str) -> Self {
        Rows {
            swizzle: false,
            ..Rows::swizzled(count, base, first, end)
        }
    }

    /// Vec4s per line of the tile.
    pub(super) fn line(&self) -> u32 {
        self.count / 4 + u32::from(!self.swizzle)
    }
}

/// The workgroup shape of one generated kernel: its threads and padded head dim.
#[derive(Clone, Copy)]
pub(super) struct Block {
    pub(super) threads: u32,
    pub(super) dp: u32,
}

impl Block {
    /// Emits a loop that copies `rows` rows of `dp` (padded) dims from global memory into
    /// workgroup tiles stored transposed, `[dp][line vec4s]` with row `r` at component
    /// `r % 4` of vec4 `r / 4`.
    ///
    /// Coalescing: the 32 lanes of a warp cover 8 consecutive dims of 4 consecutive rows, so
    /// each global load instruction reads four full 32-byte sectors; the older mapping (rows
    /// fastest) read one float from each of 32 rows. The transposed stores then put the 8
    /// dims of a warp 4 (or more) vec4s apart: with an odd line (padded tiles) they fall
    /// in 8 different bank groups; swizzled (tiles with 8 or 16 vec4s per line, which
    /// have no room for padding in 32 KiB), the vec4 slot is XORed with `c % 8`, which does
    /// the same. Readers of a swizzled tile must apply the same XOR (see [`slot`]).
    pub(super) fn load_transposed(self, w: &mut String, ind: &str, rows: Rows, tiles: &[Tile]) {
        let Block { threads, dp } = self;
        let Rows {
            count,
            swizzle,
            base,
            first,
            end,
        } = rows;
        let line = rows.line();
        assert!(
            count.is_multiple_of(4)
                && dp.is_multiple_of(8)
                && (count * dp).is_multiple_of(threads)
                && threads.is_multiple_of(32)
        );
        assert!(!swizzle || (line >= 8 && line.is_power_of_two()));
        let cb = dp / 8;
        let _ = writeln!(
            w,
            "{ind}for (var e = tid; e < {n}u; e += {threads}u) {{
{ind}    let blk = e / 32u;
{ind}    let c = (blk % {cb}u) * 8u + e % 8u;
{ind}    let r = (blk / {cb}u) * 4u + (e / 8u) % 4u;
{ind}    let at = c * {line}u + {rv};",
            n = count * dp,
            rv = if swizzle {
                "((r / 4u) ^ (c % 8u))"
            } else {
                "r / 4u"
            },
        );
        for (i, _) in tiles.iter().enumerate() {
            let _ = writeln!(w, "{ind}    var x{i} = 0.0;");
        }
        let _ = writeln!(
            w,
            "{ind}    if ({first} + r < {end} && c < d) {{
{ind}        let gi = ({base} + {first} + r) * d + c;"
        );
        for (i, t) in tiles.iter().enumerate() {
            let _ = writeln!(w, "{ind}        x{i} = {}[gi];", t.src);
        }
        let _ = writeln!(w, "{ind}    }}");
        for (i, t) in tiles.iter().enumerate() {
            let _ = writeln!(
                w,
                "{ind}    {}[{}u + at][r % 4u] = x{i} * {};",
                t.dst, t.off, t.scale
            );
        }
        let _ = writeln!(w, "{ind}}}");
    }
}

/// Emits `for (var c0 = 0u; c0 < dp; c0 += 8u)` with its eight steps written out (naga
/// does not unroll loops), each a block whose lines `step(w, u)` writes for dim `c0 + u`.
pub(super) fn unrolled_dims(w: &mut String, ind: &str, dp: u32, step: impl Fn(&mut String, u32)) {
    let _ = writeln!(w, "{ind}for (var c0 = 0u; c0 < {dp}u; c0 += 8u) {{");
    for u in 0..8 {
        let _ = writeln!(w, "{ind}    {{");
        step(w, u);
        let _ = writeln!(w, "{ind}    }}");
    }
    let _ = writeln!(w, "{ind}}}");
}

/// The vec4 index of vec4 `rv` of dim `c0 + u` (step `u` of [`unrolled_dims`]) in a
/// swizzled tile with `line` vec4s per dim.
pub(super) fn step_slot(u: u32, line: u32, rv: &str) -> String {
    slot(&format!("c0 + {u}u"), line, rv, &format!("{u}u"))
}

/// Emits the head of the loop over tiles of [`KT`] keys of the small forward and the dq
/// pass: a barrier (every read of the previous tile is done), then the tile's `tiles`
/// (K, or K and V) stored transposed and swizzled, `[dp][32 keys]`.
pub(super) fn key_tile_loop(w: &mut String, block: Block, tiles: &[Tile]) {
    let _ = writeln!(
        w,
        "    for (var t0 = 0u; t0 < n_keys; t0 += {KT}u) {{
        workgroupBarrier();"
    );
    let rows = Rows::swizzled(KT, "kvrow", "t0", "n_keys");
    block.load_transposed(w, "        ", rows, tiles);
}

/// Emits the final store of a thread's four rows: row `i < 4` (component `i` of the
/// accumulators) is `{var} = {first} + 4u * ry + i`, stored when `{var} < p.tq` from
/// `base = ({row_base} + {var}) * d` by the lines `row(w, comp)` writes.
pub(super) fn store_rows(
    w: &mut String,
    var: &str,
    first: &str,
    row_base: &str,
    row: impl Fn(&mut String, &str),
) {
    for (i, comp) in ["x", "y", "z", "w"].iter().enumerate() {
        let _ = writeln!(
            w,
            "    {{
        let {var} = {first} + 4u * ry + {i}u;
        if ({var} < p.tq) {{
            let base = ({row_base} + {var}) * d;"
        );
        row(w, comp);
        w.push_str("        }\n    }\n");
    }
}

/// The vec4 index of vec4 `rv` of dim `c` in a swizzled tile with `line` vec4s per dim
/// (WGSL; `c8` is `c % 8`, often a constant of the unrolled loop).
pub(super) fn slot(c: &str, line: u32, rv: &str, c8: &str) -> String {
    format!("({c}) * {line}u + (({rv}) ^ ({c8}))")
}

/// Emits the entry point of a kernel over blocks of `rows` query rows of one (batch,
/// head), `2 rows` threads (the forward and the dq pass): thread `(ry, cx)` with
/// `ry = tid % (rows / 4)`, the block `qb` (the last one first: it sees the most keys;
/// `note` is written before it), the head `h`, its kv head `g`, the block's first row
/// `row0` and the heads' first rows `head_row` and `kvrow`.
pub(super) fn query_block_main(w: &mut String, rows: u32, note: &str) {
    let _ = write!(
        w,
        "@compute @workgroup_size({threads})
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {{
    let ry = tid % {ry_n}u;
    let cx = tid / {ry_n}u;
{note}    let qb = nwg.x - 1u - wg.x;
    let h = wg.y;
    let b = wg.z;
    let g = h / (p.heads / p.kv_heads);
    let d = p.d;
    let row0 = qb * {rows}u;
    let head_row = (b * p.heads + h) * p.tq;
    let kvrow = (b * p.kv_heads + g) * p.tk_stride;
",
        threads = 2 * rows,
        ry_n = rows / 4,
    );
}

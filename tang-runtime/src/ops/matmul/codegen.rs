//! The matmul shader generator: one WGSL text per (tile, layout, alignment, bias,
//! epilogue) variant, with every constant baked in and the inner loops unrolled in the
//! text, so the SPIR-V handed to the driver already has the register-blocked shape
//! (naga does not unroll loops, and a driver may not promote a dynamically indexed
//! private array to registers).
//!
//! Scheme (the classic register-blocked SGEMM):
//! - A workgroup computes a `bm x bn` block of C; each thread a `tm x tn` micro-tile
//!   held in `tm * tn / 4` vec4 accumulators. With `tm = 8` a thread owns rows
//!   `4 ty .. 4 ty + 4` and `bm/2 + 4 ty ..`, so a warp reads each operand as a few
//!   contiguous or broadcast vec4s (conflict-free) and its stores are coalesced.
//! - Both operands are staged in workgroup memory as `[bk][rows]` (A transposed), so the
//!   inner product reads `vec4`s along m and along n: per k step a thread issues
//!   `tm/4 + tn/4` vec4 loads for `tm * tn` FMAs.
//! - Double buffering with a register prefetch: the global loads of tile `t + 1` are
//!   issued before the FMAs of tile `t` and stored to the other buffer afterwards, so
//!   there is one barrier per k tile and global latency hides behind the arithmetic.
//! - Global loads are `vec4` when the operand's contiguous dimension is a multiple of 4
//!   (the tensors start at offset 0, so every row then starts 16-byte aligned); bounds
//!   guards are only evaluated on edge tiles (a workgroup-uniform branch).
//! - Workgroups are ordered in groups of `GROUP_M` block rows so the ones running at the
//!   same time share panels of A and B in L2.

use std::fmt::Write as _;

use super::TileConfig;
pub use super::elem::Elem;
use super::elem::elem_helpers;
use super::store::{CStore, emit_c_store};
use crate::spec::{Layout, Slot, params};

/// Block rows walked together by consecutive workgroups (L2 reuse).
const GROUP_M: u32 = 8;

/// Everything that changes the shader text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Variant {
    /// The tile shape.
    pub tile: TileConfig,
    /// A is stored `[k, m]`.
    pub ta: bool,
    /// B is stored `[n, k]`.
    pub tb: bool,
    /// A's contiguous dimension is a multiple of 4 (vec4 loads).
    pub va: bool,
    /// B's contiguous dimension is a multiple of 4.
    pub vb: bool,
    /// n is a multiple of 4 (vec4 stores of C and loads of the bias).
    pub vc: bool,
    /// A bias row is bound (binding 3) and added on store.
    pub bias: bool,
    /// An epilogue function `tang_epilogue` is applied on store.
    pub epilogue: bool,
    /// How A's elements are read (f32, f32 rounded to f16, or f16 storage).
    pub ea: Elem,
    /// How B's elements are read.
    pub eb: Elem,
}

impl Variant {
    /// The variant of `tile` whose flags are the low bits of `bits`, in field order: `ta`
    /// (bit 0), `tb`, `va`, `vb`, `vc`, `bias`, `epilogue` (bit 6); for enumerating them.
    pub(crate) fn from_bits(tile: TileConfig, bits: u32) -> Variant {
        let bit = |k: u32| bits & (1 << k) != 0;
        Variant {
            tile,
            ta: bit(0),
            tb: bit(1),
            va: bit(2),
            vb: bit(3),
            vc: bit(4),
            bias: bit(5),
            epilogue: bit(6),
            ea: Elem::F32,
            eb: Elem::F32,
        }
    }
}

/// The entry point of every generated matmul shader.
pub const ENTRY: &str = "main";

params! {
    /// The uniform values of one launch: the shapes, the strides the kernel indexes
    /// with, the grid it unflattens its workgroup id with, and `zero` (always 0), which
    /// an epilogue builds its zero and non-finite constants from so that the shader
    /// compiler cannot fold them (`tang_expr::scalar_fn`).
    struct MatmulParams {
        m: u32,
        n: u32,
        k: u32,
        k_tiles: u32,
        a_bstride: u32,
        b_bstride: u32,
        c_bstride: u32,
        lda: u32,
        ldb: u32,
        m_tiles: u32,
        n_tiles: u32,
        total: u32,
        grid_x: u32,
        grid_xy: u32,
        zero: u32,
    }
}

/// The shapes of one launch, before the tile is chosen.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Rows of C.
    pub m: u32,
    /// Columns of C.
    pub n: u32,
    /// The inner dimension.
    pub k: u32,
    /// Elements between consecutive matrices of A (0: A is broadcast over the batch).
    pub a_bstride: u32,
    /// Elements between consecutive matrices of B (0: B is broadcast over the batch).
    pub b_bstride: u32,
    /// Matrices in the batch.
    pub batch: u32,
}

/// The params and storage bindings of variant `v`: `a`, `b`, the bias when `v` has one,
/// and `c` (vec4 elements where `v` allows them).
pub fn layout(v: &Variant) -> Layout<MatmulParams, Vec<Slot>> {
    let ty = |vec: bool| {
        if vec {
            "array<vec4<f32>>"
        } else {
            "array<f32>"
        }
    };
    let mut slots = vec![
        Slot::Read("a", v.ea.storage(v.va)),
        Slot::Read("b", v.eb.storage(v.vb)),
    ];
    if v.bias {
        slots.push(Slot::Read("bias", ty(v.vc)));
    }
    slots.push(Slot::ReadWrite("c", ty(v.vc)));
    Layout::with_slots(slots)
}

/// Params and workgroup grid for a launch of blocks of `[bm, bn, bk]` (a tile's).
/// Returns `None` when the grid does not fit in `max_per_dim` per dimension.
pub fn launch_shape(
    s: &Shape,
    [bm, bn, bk]: [u32; 3],
    ta: bool,
    tb: bool,
    max_per_dim: u32,
) -> Option<(MatmulParams, [u32; 3])> {
    let m_tiles = s.m.div_ceil(bm);
    let n_tiles = s.n.div_ceil(bn);
    let total = (m_tiles as u64) * (n_tiles as u64) * (s.batch as u64);
    if total > u32::MAX as u64 {
        return None;
    }
    let total = total as u32;
    let gx = total.min(max_per_dim).max(1);
    let rest = total.div_ceil(gx);
    let gy = rest.min(max_per_dim).max(1);
    let gz = rest.div_ceil(gy).max(1);
    if gz > max_per_dim {
        return None;
    }
    let params = MatmulParams {
        m: s.m,
        n: s.n,
        k: s.k,
        k_tiles: s.k.div_ceil(bk),
        a_bstride: s.a_bstride,
        b_bstride: s.b_bstride,
        c_bstride: s.m * s.n,
        lda: if ta { s.m } else { s.k },
        ldb: if tb { s.k } else { s.n },
        m_tiles,
        n_tiles,
        total,
        grid_x: gx,
        grid_xy: gx * gy,
        zero: 0,
    };
    Some((params, [gx, gy, gz]))
}

/// One operand's staging plan.
struct Operand<'a> {
    /// `a` or `b` (the buffer) and `sa`/`sb` (its workgroup array).
    name: char,
    /// Rows of the tile (bm for A, bn for B).
    rows: u32,
    /// Elements along k are contiguous in memory (A not transposed, B transposed).
    kcontig: bool,
    /// vec4 global loads.
    vec: bool,
    /// Padding of each `[rows]` line in workgroup memory.
    pad: u32,
    /// A WGSL expression of `r` (row of the tile's operand) and `kk` (index along k)
    /// that replaces the plain read: an implicit-GEMM gather (scalar operands only).
    load: Option<&'a str>,
    /// How its elements are read.
    elem: Elem,
}

impl Operand<'_> {
    fn width(&self) -> u32 {
        if self.vec { 4 } else { 1 }
    }
    fn line(&self) -> u32 {
        self.rows + self.pad
    }
    /// Floats in one buffer of the staged tile.
    fn buf(&self, bk: u32) -> u32 {
        bk * self.line()
    }
    /// Prefetch registers per thread: the operand's part of one k tile, in units of
    /// `width` floats, spread over the threads.
    fn registers(&self, v: &Variant) -> u32 {
        self.rows * v.tile.bk / self.width() / v.tile.threads()
    }
    /// Units along the operand's contiguous dimension in memory: k when `kcontig`, else
    /// the tile's rows.
    fn per_line(&self, bk: u32) -> u32 {
        if self.kcontig {
            bk / self.width()
        } else {
            self.rows / self.width()
        }
    }
}

/// Writes one block at `indent` per prefetch register `i` of `op`: it declares the
/// register's unit `u = lid + i * threads` and holds what `body` writes for `i`.
fn each_register(
    w: &mut String,
    op: &Operand,
    v: &Variant,
    indent: &str,
    mut body: impl FnMut(&mut String, u32),
) {
    let t = v.tile.threads();
    for i in 0..op.registers(v) {
        let _ = writeln!(w, "{indent}{{\n{indent}    let u = lid + {}u;", i * t);
        body(w, i);
        let _ = writeln!(w, "{indent}}}");
    }
}

/// Emits the statements that load the operand's part of k tile `kt` (a WGSL expression)
/// into the prefetch registers `p<name><i>`, guarded or not.
fn emit_loads(w: &mut String, op: &Operand, v: &Variant, guarded: bool, kt: &str) {
    let bk = v.tile.bk;
    let wd = op.width();
    let per = op.per_line(bk);
    let n = op.name;
    let (r0, rmax, ld, base) = if n == 'a' {
        ("m0", "p.m", "p.lda", "a_base")
    } else {
        ("n0", "p.n", "p.ldb", "b_base")
    };
    each_register(w, op, v, "        ", |w, i| {
        if op.kcontig {
            let _ = writeln!(
                w,
                "            let r = {r0} + u / {per}u;\n            let kk = {kt} * {bk}u + (u % {per}u) * {wd}u;"
            );
            if op.load.is_none() {
                let _ = writeln!(w, "            let gi = {base} + r * {ld} + kk;");
            }
        } else {
            let _ = writeln!(
                w,
                "            let r = {r0} + (u % {per}u) * {wd}u;\n            let kk = {kt} * {bk}u + u / {per}u;"
            );
            if op.load.is_none() {
                let _ = writeln!(w, "            let gi = {base} + kk * {ld} + r;");
            }
        }
        let load = match op.load {
            Some(expr) => expr.to_string(),
            None => op.elem.convert(n, op.vec),
        };
        if guarded {
            // With vec4 loads the contiguous extent is a multiple of 4 and the vector
            // starts at a multiple of 4, so checking its first element is exact.
            let zero = if op.vec { "vec4<f32>()" } else { "0.0f" };
            let _ = writeln!(
                w,
                "            p{n}{i} = {zero};\n            if (r < {rmax} && kk < p.k) {{ p{n}{i} = {load}; }}"
            );
        } else {
            let _ = writeln!(w, "            p{n}{i} = {load};");
        }
    });
}

/// Emits the stores of the prefetch registers into workgroup buffer `sel` (a WGSL u32).
fn emit_stage(w: &mut String, op: &Operand, v: &Variant, sel: &str) {
    let wd = op.width();
    let per = op.per_line(v.tile.bk);
    let n = op.name;
    let line = op.line();
    let buf = op.buf(v.tile.bk);
    each_register(w, op, v, "    ", |w, i| {
        if op.kcontig {
            let _ = writeln!(
                w,
                "        let s = {sel} * {buf}u + (u % {per}u) * {wd}u * {line}u + u / {per}u;"
            );
            if op.vec {
                // Transposing store: four scalars into four lines (component writes).
                for (j, c) in ['x', 'y', 'z', 'w'].iter().enumerate() {
                    let off = j as u32 * line;
                    let _ = writeln!(
                        w,
                        "        s{n}[(s + {off}u) >> 2u][(s + {off}u) & 3u] = p{n}{i}.{c};"
                    );
                }
            } else {
                let _ = writeln!(w, "        s{n}[s >> 2u][s & 3u] = p{n}{i};");
            }
        } else {
            let _ = writeln!(
                w,
                "        let s = {sel} * {buf}u + (u / {per}u) * {line}u + (u % {per}u) * {wd}u;"
            );
            if op.vec {
                let _ = writeln!(w, "        s{n}[s >> 2u] = p{n}{i};");
            } else {
                let _ = writeln!(w, "        s{n}[s >> 2u][s & 3u] = p{n}{i};");
            }
        }
    });
}

/// The staging plans of `v`'s operands; `b_load` replaces B's plain read (see
/// [`Operand::load`]).
fn operands<'a>(v: &Variant, b_load: Option<&'a str>) -> (Operand<'a>, Operand<'a>) {
    let opa = Operand {
        name: 'a',
        rows: v.tile.bm,
        kcontig: !v.ta,
        vec: v.va,
        pad: if v.ta { 0 } else { 4 },
        load: None,
        elem: v.ea,
    };
    let opb = Operand {
        name: 'b',
        rows: v.tile.bn,
        kcontig: v.tb,
        vec: v.vb && b_load.is_none(),
        pad: if v.tb { 4 } else { 0 },
        load: b_load,
        elem: v.eb,
    };
    (opa, opb)
}

fn ty(vec: bool) -> &'static str {
    if vec { "vec4<f32>" } else { "f32" }
}

/// The WGSL of `v`, with `epilogue` (the text of `fn tang_epilogue(x: f32, zero: u32) -> f32` and
/// its helpers) pasted in when `v.epilogue` is set.
pub fn generate(v: &Variant, epilogue: &str) -> String {
    let mut w = String::with_capacity(16 * 1024);
    let _ = writeln!(
        w,
        "// tang matmul {}x{}x{} ({}x{} per thread), A{} B{} (generated)",
        v.tile.bm,
        v.tile.bn,
        v.tile.bk,
        v.tile.tm,
        v.tile.tn,
        if v.ta { "^T" } else { "" },
        if v.tb { "^T" } else { "" }
    );
    w.push_str(&layout(v).declarations());
    if v.ea != Elem::F32 || v.eb != Elem::F32 {
        w.push_str(&elem_helpers());
    }
    emit_workgroup_memory(&mut w, v);
    if v.epilogue {
        w.push_str(epilogue);
        w.push('\n');
    }
    emit_block_origin(&mut w, v);
    w.push_str(
        "    let a_base = bat * p.a_bstride;
    let b_base = bat * p.b_bstride;
    let c_base = bat * p.c_bstride;
",
    );
    emit_tile_loop(&mut w, v, None, None);
    w.push_str("}\n");
    w
}

/// The workgroup arrays `sa` and `sb` (both buffers of both operands) of `v`.
pub(crate) fn emit_workgroup_memory(w: &mut String, v: &Variant) {
    let (opa, opb) = operands(v, None);
    let bk = v.tile.bk;
    let _ = writeln!(
        w,
        "var<workgroup> sa: array<vec4<f32>, {}>;",
        2 * opa.buf(bk) / 4
    );
    let _ = writeln!(
        w,
        "var<workgroup> sb: array<vec4<f32>, {}>;",
        2 * opb.buf(bk) / 4
    );
}

/// The entry point's signature and the block this workgroup computes: `bat` (the batch
/// entry), `m0`, `n0` (its first row and column of C), `tx`, `ty` (the thread's place in
/// it) and `full_mn` (no edge). Reads `p.grid_x`, `p.grid_xy`, `p.total`, `p.m_tiles`,
/// `p.n_tiles`, `p.m` and `p.n`; leaves the function open.
pub(crate) fn emit_block_origin(w: &mut String, v: &Variant) {
    let TileConfig { bm, bn, tn, .. } = v.tile;
    emit_grouped_origin(w, v.tile.threads(), bm, bn);
    let _ = writeln!(
        w,
        "    let tx = lid % {}u;
    let ty = lid / {}u;
    let full_mn = m0 + {bm}u <= p.m && n0 + {bn}u <= p.n;",
        bn / tn,
        bn / tn
    );
}

/// The entry point of a matmul kernel of `threads` threads and `bm` x `bn` blocks of C, up
/// to the block's origin: `bat` (the batch entry), `m0` and `n0`, with the workgroups in
/// grouped order. Shared by the f32 tile and the tensor-core kernel; leaves the function
/// open.
pub(crate) fn emit_grouped_origin(w: &mut String, threads: u32, bm: u32, bn: u32) {
    let _ = writeln!(
        w,
        "@compute @workgroup_size({threads})
fn {ENTRY}(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{
    let lin = wg.x + wg.y * p.grid_x + wg.z * p.grid_xy;
    if (lin >= p.total) {{ return; }}
    let per = p.m_tiles * p.n_tiles;
    let bat = lin / per;
    let rem = lin - bat * per;
    // Grouped order: {GROUP_M} block rows at a time share A and B panels in L2.
    let width = {GROUP_M}u * p.n_tiles;
    let grp = rem / width;
    let first_m = grp * {GROUP_M}u;
    let gsize = min(p.m_tiles - first_m, {GROUP_M}u);
    let rr = rem - grp * width;
    let m0 = (first_m + rr % gsize) * {bm}u;
    let n0 = (rr / gsize) * {bn}u;"
    );
}

/// The k loop and the store of C: accumulators, double-buffered staging, the FMAs, and
/// the store with bias and epilogue. Reads `p.m`, `p.n`, `p.k`, `p.k_tiles`, `p.lda`,
/// `p.ldb`, and the bases `a_base`, `b_base` (not with `b_load`) and `c_base`, which
/// the caller defines after [`emit_block_origin`]. `b_load` replaces B's plain read by a
/// gather (a WGSL expression of `r` and `kk`, see [`Operand::load`]); `row_add` (an f32
/// WGSL expression of `row`) is added to every element of a row of C as it is stored.
pub(crate) fn emit_tile_loop(
    w: &mut String,
    v: &Variant,
    b_load: Option<&str>,
    row_add: Option<&str>,
) {
    let tile = v.tile;
    let (bm, bn, bk, tm, tn) = (tile.bm, tile.bn, tile.bk, tile.tm, tile.tn);
    let (opa, opb) = operands(v, b_load);
    for i in 0..tm {
        for j in 0..tn / 4 {
            let _ = writeln!(w, "    var c{i}_{j} = vec4<f32>();");
        }
    }
    for op in [&opa, &opb] {
        for i in 0..op.registers(v) {
            let _ = writeln!(w, "    var p{}{i}: {};", op.name, ty(op.vec));
        }
    }
    // Loads of k tile `kt` into the prefetch registers (guarded only on edge tiles).
    let loads = |w: &mut String, kt: &str| {
        let _ = writeln!(w, "    if (full_mn && ({kt} + 1u) * {bk}u <= p.k) {{");
        emit_loads(w, &opa, v, false, kt);
        emit_loads(w, &opb, v, false, kt);
        w.push_str("    } else {\n");
        emit_loads(w, &opa, v, true, kt);
        emit_loads(w, &opb, v, true, kt);
        w.push_str("    }\n");
    };

    w.push_str("    if (p.k_tiles > 0u) {\n");
    loads(w, "0u");
    emit_stage(w, &opa, v, "0u");
    emit_stage(w, &opb, v, "0u");
    w.push_str("    }\n    workgroupBarrier();\n");
    w.push_str("    for (var t = 0u; t < p.k_tiles; t++) {\n");
    w.push_str("        let cur = t & 1u;\n        let has_next = t + 1u < p.k_tiles;\n");
    w.push_str("        if (has_next) {\n");
    let mut inner = String::new();
    loads(&mut inner, "(t + 1u)");
    w.push_str(&inner);
    w.push_str("        }\n");
    let _ = writeln!(
        w,
        "        let oa = cur * {}u + ty;\n        let ob = cur * {}u + tx;",
        opa.buf(bk) / 4,
        opb.buf(bk) / 4
    );
    for kk in 0..bk {
        let la = kk * opa.line() / 4;
        let lb = kk * opb.line() / 4;
        let _ = writeln!(w, "        {{\n            let a0 = sa[oa + {la}u];");
        if tm == 8 {
            let _ = writeln!(w, "            let a1 = sa[oa + {}u];", la + bm / 8);
        }
        let _ = writeln!(w, "            let b0 = sb[ob + {lb}u];");
        if tn == 8 {
            let _ = writeln!(w, "            let b1 = sb[ob + {}u];", lb + bn / 8);
        }
        for i in 0..tm {
            let a = format!("a{}.{}", i / 4, ['x', 'y', 'z', 'w'][(i % 4) as usize]);
            for j in 0..tn / 4 {
                let _ = writeln!(
                    w,
                    "            c{i}_{j} = fma(vec4<f32>({a}), b{j}, c{i}_{j});"
                );
            }
        }
        w.push_str("        }\n");
    }
    w.push_str("        if (has_next) {\n");
    let mut st = String::new();
    emit_stage(&mut st, &opa, v, "(cur ^ 1u)");
    emit_stage(&mut st, &opb, v, "(cur ^ 1u)");
    w.push_str(&st);
    w.push_str("        }\n        workgroupBarrier();\n    }\n");

    // Store: bias and epilogue applied on the way out.
    for i in 0..tm {
        let roff = if i < 4 {
            format!("ty * 4u + {i}u")
        } else {
            format!("{}u + ty * 4u + {}u", bm / 2, i - 4)
        };
        let _ = writeln!(w, "    {{\n        let row = m0 + {roff};");
        if let Some(add) = row_add {
            // Evaluated for every row of the tile, also those past p.m that are not
            // stored: the expression guards its own reads.
            let _ = writeln!(w, "        let row_add = {add};");
        }
        for j in 0..tn / 4 {
            let _ = writeln!(
                w,
                "        {{\n            let col = n0 + tx * 4u + {}u;\n            var v = c{i}_{j};",
                j * bn / 2
            );
            if row_add.is_some() {
                w.push_str("            v = v + row_add;\n");
            }
            let store = CStore {
                vc: v.vc,
                bias: v.bias,
                epilogue: v.epilogue,
                half: false,
            };
            emit_c_store(w, "            ", "v", store);
            w.push_str("        }\n");
        }
        w.push_str("    }\n");
    }
}

// Shared by the row kernels (row_*.wgsl): the dims in vec4s, the two staged tiles of rows
// (keys and values in the forward and the dq pass, queries and output gradients in the
// dk/dv pass) and the staging of one tile. Each kernel's prelude defines `load4_a` and
// `load4_b` (what the tiles hold) and its other masked loads and stores (`rows.rs`).

const DP4: u32 = DP / 4u;
const DH4: u32 = DH / 4u;

var<workgroup> ta: array<vec4<f32>, TILE * DP4>;
var<workgroup> tb: array<vec4<f32>, TILE * DP4>;

// Stages TILE rows from `t0` into `ta` and `tb`: row `r` of `ta` starts at
// `a_at + r * a_row` (of `tb`: `b_at + r * b_row`), rows from `end` on are zeros. Spread
// over the NT threads of the workgroup; the caller puts the barriers around it.
fn stage(tid: u32, t0: u32, end: u32, a_at: u32, a_row: u32, b_at: u32, b_row: u32, d: u32) {
    for (var e = tid; e < TILE * DP4; e += NT) {
        let r = t0 + e / DP4;
        let c = (e % DP4) * 4u;
        let ok = r < end;
        ta[e] = load4_a(a_at + r * a_row + c, c, d, ok);
        tb[e] = load4_b(b_at + r * b_row + c, c, d, ok);
    }
}

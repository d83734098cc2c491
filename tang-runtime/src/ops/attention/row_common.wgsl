// Shared by the row kernels (row_*.wgsl): the dims in vec4s, the two staged tiles of rows
// (keys and values in the forward and the dq pass, queries and output gradients in the
// dk/dv pass) and the staging of one tile. Each kernel's prelude defines `load4_a` and
// `load4_b` (what the tiles hold) and its other masked loads and stores (`rows.rs`).

const DP4: u32 = DP / 4u;
const DH4: u32 = DH / 4u;

var<workgroup> ta: array<vec4<f32>, TILE * DP4>;
var<workgroup> tb: array<vec4<f32>, TILE * DP4>;

// Stages TILE rows from `t0` into `ta` and `tb`: row `r` starts at `row_base + r * d`,
// rows from `end` on are zeros. Spread over the NT threads of the workgroup; the caller
// puts the barriers around it.
fn stage(tid: u32, t0: u32, end: u32, row_base: u32, d: u32) {
    for (var e = tid; e < TILE * DP4; e += NT) {
        let r = t0 + e / DP4;
        let c = (e % DP4) * 4u;
        let base = row_base + r * d + c;
        let ok = r < end;
        ta[e] = load4_a(base, c, d, ok);
        tb[e] = load4_b(base, c, d, ok);
    }
}

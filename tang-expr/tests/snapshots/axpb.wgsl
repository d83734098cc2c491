// tang kernel `axpb` (generated)
struct Params {
    n: u32,
    d1: u32,
    d2: u32,
    d3: u32,
    s_x: vec4<u32>,
    u_a: f32,
    u_b: f32,
    zero: u32,
}

override tang_read0: u32 = 0u;
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in_x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out_y: array<vec4<f32>>;

fn tang_offset(e: u32, s: vec4<u32>) -> u32 {
    let r1 = e / params.d3;
    let r2 = r1 / params.d2;
    let c0 = r2 / params.d1;
    return c0 * s.x + (r2 - c0 * params.d1) * s.y + (r1 - r2 * params.d2) * s.z + (e - r1 * params.d3) * s.w;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // thread q computes elements i .. i + 4
    let q = gid.x + gid.y * nwg.x * 256u;
    let i = q * 4u;
    if (i >= params.n) { return; }
    var x_x: vec4<f32>;
    switch tang_read0 {
        case 0u: { x_x = in_x[q]; }
        case 1u: { x_x = vec4<f32>(in_x[0][0]); }
        case 2u: {
            // the four lanes share a row of the launch: one offset, then the row's stride
            let o = tang_offset(i, params.s_x);
            let s = params.s_x.w;
            if (s == 1u && (o & 3u) == 0u) { x_x = in_x[o >> 2u]; }
            else if (s == 0u) { x_x = vec4<f32>(in_x[o >> 2u][o & 3u]); }
            else { for (var l = 0u; l < 4u; l++) { let j = o + l * s; x_x[l] = in_x[j >> 2u][j & 3u]; } }
        }
        default: {
            for (var l = 0u; l < 4u; l++) { let j = tang_offset(min(i + l, params.n - 1u), params.s_x); x_x[l] = in_x[j >> 2u][j & 3u]; }
        }
    }
    let v3 = fma(vec4<f32>(params.u_a), x_x, vec4<f32>(params.u_b));
    if (i + 4u <= params.n) {
        out_y[q] = v3;
    } else {
        for (var l = 0u; l < 4u; l++) {
            if (i + l < params.n) {
                out_y[q][l] = v3[l];
            }
        }
    }
}

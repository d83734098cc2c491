// tang kernel `axpb` (generated)
struct Params {
    n: u32,
    p_x: u32,
    u_a: f32,
    u_b: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in_x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out_y: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // thread q computes elements i .. i + 4
    let q = gid.x + gid.y * nwg.x * 256u;
    let i = q * 4u;
    if (i >= params.n) { return; }
    var x_x: vec4<f32>;
    if (params.p_x == params.n) { x_x = in_x[q]; } else {
        for (var l = 0u; l < 4u; l++) { let j = (i + l) % params.p_x; x_x[l] = in_x[j >> 2u][j & 3u]; }
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

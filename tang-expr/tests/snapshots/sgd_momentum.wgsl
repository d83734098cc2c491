// tang kernel `sgd_momentum` (generated)
struct Params {
    n: u32,
    p_g: u32,
    u_lr: f32,
    u_mu: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in_g: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> io_p: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> io_m: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // thread q computes elements i .. i + 4
    let q = gid.x + gid.y * nwg.x * 256u;
    let i = q * 4u;
    if (i >= params.n) { return; }
    var x_g: vec4<f32>;
    if (params.p_g == params.n) { x_g = in_g[q]; } else {
        for (var l = 0u; l < 4u; l++) { let j = (i + l) % params.p_g; x_g[l] = in_g[j >> 2u][j & 3u]; }
    }
    let x_p = io_p[q];
    let x_m = io_m[q];
    let v5 = fma(vec4<f32>(params.u_mu), x_m, x_g);
    let v6 = (vec4<f32>(params.u_lr) * v5);
    let v7 = (x_p - v6);
    if (i + 4u <= params.n) {
        io_p[q] = v7;
        io_m[q] = v5;
    } else {
        for (var l = 0u; l < 4u; l++) {
            if (i + l < params.n) {
                io_p[q][l] = v7[l];
                io_m[q][l] = v5[l];
            }
        }
    }
}

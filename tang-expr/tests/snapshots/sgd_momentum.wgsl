// tang kernel `sgd_momentum` (generated)
struct Params {
    n: u32,
    p_g: u32,
    u_lr: f32,
    u_mu: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in_g: array<f32>;
@group(0) @binding(2) var<storage, read_write> io_p: array<f32>;
@group(0) @binding(3) var<storage, read_write> io_m: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= params.n) { return; }
    let x_g = in_g[select(i % params.p_g, i, params.p_g == params.n)];
    let x_p = io_p[i];
    let x_m = io_m[i];
    let v5 = fma(params.u_mu, x_m, x_g);
    let v6 = (params.u_lr * v5);
    let v7 = (x_p - v6);
    io_p[i] = v7;
    io_m[i] = v5;
}

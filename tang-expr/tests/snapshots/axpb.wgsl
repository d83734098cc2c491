// tang kernel `axpb` (generated)
struct Params {
    n: u32,
    p_x: u32,
    u_a: f32,
    u_b: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in_x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out_y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= params.n) { return; }
    let x_x = in_x[select(i % params.p_x, i, params.p_x == params.n)];
    let v3 = fma(params.u_a, x_x, params.u_b);
    out_y[i] = v3;
}

// tang kernel `gelu_grad` (generated)
struct Params {
    n: u32,
    p_x: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in_x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out_y: array<f32>;
@group(0) @binding(3) var<storage, read_write> out_d_y_x: array<f32>;

fn tang_gelu_tanh(x: f32) -> f32 {
    let u = clamp(0.7978846f * (x + 0.044715f * x * x * x), -15.0f, 15.0f);
    return 0.5f * x * (1.0f + tanh(u));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i >= params.n) { return; }
    let x_x = in_x[select(i % params.p_x, i, params.p_x == params.n)];
    let v1 = tang_gelu_tanh(x_x);
    let v7 = (x_x * x_x);
    let v8 = (x_x * v7);
    let v9 = (0.044715f * v8);
    let v10 = (x_x + v9);
    let v11 = (0.7978846f * v10);
    let v12 = tanh(clamp(v11, -15.0f, 15.0f));
    let v13 = (1.0f + v12);
    let v14 = (0.5f * v13);
    let v15 = (v12 * v12);
    let v16 = (1.0f - v15);
    let v17 = (0.13414499f * v7);
    let v18 = (1.0f + v17);
    let v19 = (0.7978846f * v18);
    let v20 = (x_x * 0.5f);
    let v21 = (v16 * v20);
    let v22 = (v19 * v21);
    let v23 = (v14 + v22);
    out_y[i] = v1;
    out_d_y_x[i] = v23;
}

// tang kernel `gelu_grad` (generated)
struct Params {
    n: u32,
    d1: u32,
    d2: u32,
    d3: u32,
    s_x: vec4<u32>,
    zero: u32,
}

override tang_read0: u32 = 0u;
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in_x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out_y: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out_d_y_x: array<vec4<f32>>;

fn tang_offset(e: u32, s: vec4<u32>) -> u32 {
    let r1 = e / params.d3;
    let r2 = r1 / params.d2;
    let c0 = r2 / params.d1;
    return c0 * s.x + (r2 - c0 * params.d1) * s.y + (r1 - r2 * params.d2) * s.z + (e - r1 * params.d3) * s.w;
}

fn tang_gelu_tanh(x: vec4<f32>) -> vec4<f32> {
    let u = clamp(0.7978846f * (x + 0.044715f * x * x * x), vec4<f32>((-15.0f)), vec4<f32>(15.0f));
    return select(0.5f * x * (1.0f + tanh(u)), x, tang_nan(x));
}

fn tang_nan(x: vec4<f32>) -> vec4<bool> {
    // on the bits: drivers may fold `x != x` to false
    return (bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
}

fn tang_tanh(x: vec4<f32>) -> vec4<f32> {
    // tanh(±15) is ±1 in f32; some drivers compute tanh through exp, which overflows
    return select(tanh(clamp(x, vec4<f32>((-15.0f)), vec4<f32>(15.0f))), x, tang_nan(x));
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
    let v1 = tang_gelu_tanh(x_x);
    let v7 = (x_x * x_x);
    let v8 = (x_x * v7);
    let v9 = (vec4<f32>(0.044715f) * v8);
    let v10 = (x_x + v9);
    let v11 = (vec4<f32>(0.7978846f) * v10);
    let v12 = tang_tanh(v11);
    let v13 = (vec4<f32>(1.0f) + v12);
    let v14 = (vec4<f32>(0.5f) * v13);
    let v15 = (v12 * v12);
    let v16 = (vec4<f32>(1.0f) - v15);
    let v17 = (vec4<f32>(0.13414499f) * v7);
    let v18 = (vec4<f32>(1.0f) + v17);
    let v19 = (vec4<f32>(0.7978846f) * v18);
    let v20 = (x_x * vec4<f32>(0.5f));
    let v21 = (v16 * v20);
    let v22 = (v19 * v21);
    let v23 = (v14 + v22);
    if (i + 4u <= params.n) {
        out_y[q] = v1;
        out_d_y_x[q] = v23;
    } else {
        for (var l = 0u; l < 4u; l++) {
            if (i + l < params.n) {
                out_y[q][l] = v1[l];
                out_d_y_x[q][l] = v23[l];
            }
        }
    }
}

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
@group(0) @binding(1) var<storage, read> in_x: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> out_y: array<vec2<u32>>;

fn tang_offset(e: u32, s: vec4<u32>) -> u32 {
    let r1 = e / params.d3;
    let r2 = r1 / params.d2;
    let c0 = r2 / params.d1;
    return c0 * s.x + (r2 - c0 * params.d1) * s.y + (r1 - r2 * params.d2) * s.z + (e - r1 * params.d3) * s.w;
}

fn f16_bits_to_f32(h: u32) -> u32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0x1fu) { return sign | 0x7f800000u | (m << 13u); }
    if (e == 0u) {
        // Subnormal (or zero): m * 2^-24, a normal f32 (the product is exact).
        return sign | bitcast<u32>(f32(m) * 5.9604644775390625e-8);
    }
    return sign | ((e + 112u) << 23u) | (m << 13u);
}

fn f32_to_f16_bits(x: u32) -> u32 {
    let sign = (x >> 16u) & 0x8000u;
    let a = x & 0x7fffffffu;
    // Every case is computed and one selected: no branch per element (the three ranges
    // were branches, which cost more than the arithmetic they skipped).
    // Normal: rebias the exponent and round the 13 dropped bits to nearest even; a carry
    // steps the exponent, and from 65520 on (inf too) the result reaches inf, where
    // `min` holds it.
    let normal = min((a + 0xc8000fffu + ((a >> 13u) & 1u)) >> 13u, 0x7c00u);
    // NaN keeps the quiet bit and its payload's top bits.
    let nan = 0x7e00u | ((a >> 13u) & 0x3ffu);
    // Below 2^-14 (f16 subnormals and zero): adding 0.5 puts the value, rounded to
    // nearest even by the (correctly rounded) f32 sum, in the low mantissa bits.
    let small = bitcast<u32>(bitcast<f32>(a) + 0.5) - 0x3f000000u;
    return sign | select(select(normal, nan, a > 0x7f800000u), small, a < 0x38800000u);
}

fn tang_h1(w: u32) -> f32 {
    return bitcast<f32>(f16_bits_to_f32(w & 0xffffu));
}

fn tang_h4(w: vec2<u32>) -> vec4<f32> {
    return vec4<f32>(tang_h1(w.x), tang_h1(w.x >> 16u), tang_h1(w.y), tang_h1(w.y >> 16u));
}

fn tang_f2(a: f32, b: f32) -> u32 {
    return f32_to_f16_bits(bitcast<u32>(a)) | (f32_to_f16_bits(bitcast<u32>(b)) << 16u);
}

fn tang_f4(v: vec4<f32>) -> vec2<u32> {
    return vec2<u32>(tang_f2(v.x, v.y), tang_f2(v.z, v.w));
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // thread q computes elements i .. i + 4
    let q = gid.x + gid.y * nwg.x * 256u;
    let i = q * 4u;
    if (i >= params.n) { return; }
    var x_x: vec4<f32>;
    switch tang_read0 {
        case 0u: { x_x = tang_h4(in_x[q]); }
        case 1u: { x_x = vec4<f32>(tang_h1(in_x[0].x)); }
        case 2u: {
            // the four lanes share a row of the launch: one offset, then the row's stride
            let o = tang_offset(i, params.s_x);
            let s = params.s_x.w;
            if (s == 1u && (o & 3u) == 0u) { x_x = tang_h4(in_x[o >> 2u]); }
            else if (s == 0u) { x_x = vec4<f32>(tang_h1(in_x[o >> 2u][(o >> 1u) & 1u] >> ((o & 1u) << 4u))); }
            else { for (var l = 0u; l < 4u; l++) { let j = o + l * s; x_x[l] = tang_h1(in_x[j >> 2u][(j >> 1u) & 1u] >> ((j & 1u) << 4u)); } }
        }
        default: {
            for (var l = 0u; l < 4u; l++) { let j = tang_offset(min(i + l, params.n - 1u), params.s_x); x_x[l] = tang_h1(in_x[j >> 2u][(j >> 1u) & 1u] >> ((j & 1u) << 4u)); }
        }
    }
    let v3 = fma(vec4<f32>(params.u_a), x_x, vec4<f32>(params.u_b));
    if (i + 4u <= params.n) {
        out_y[q] = tang_f4(v3);
    } else {
        let k = params.n - i;
        let w_out_y = tang_f4(v3);
        if (k >= 2u) { out_y[q].x = w_out_y.x; } else { out_y[q].x = (w_out_y.x & 0xffffu) | (out_y[q].x & 0xffff0000u); }
        if (k == 3u) { out_y[q].y = (w_out_y.y & 0xffffu) | (out_y[q].y & 0xffff0000u); }
    }
}

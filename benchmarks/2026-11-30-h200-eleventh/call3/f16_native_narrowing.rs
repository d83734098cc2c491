//! EXPERIMENT: the adapter's own f32 -> f16 conversions (`pack2x16float`, `f16(x)`)
//! against tang's round-to-nearest-even narrowing, over every f32 bit pattern, with the
//! mismatches counted by class and the first ones printed.

use tang_runtime::tang_expr::kernel::{F16_BITS_TO_F32_WGSL, F32_TO_F16_BITS_WGSL};
use tang_runtime::{Binding, RawKernel, Tensor};
use tang_testing::devices;

#[test]
#[ignore = "2^32 inputs: a GPU experiment"]
fn native_narrowing_against_nearest_even_over_every_f32() {
    let text = format!(
        "enable f16;
{F32_TO_F16_BITS_WGSL}
{F16_BITS_TO_F32_WGSL}
struct P {{ base: u32, pad0: u32, pad1: u32, pad2: u32 }}
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>>;
fn kind_of(a: u32) -> u32 {{
    if (a > 0x7f800000u) {{ return 0u; }}
    if (a >= 0x477ff000u) {{ return 1u; }}
    if (a < 0x38800000u) {{ return 2u; }}
    return 3u;
}}
fn note(slot: u32, x: u32) {{
    let c = kind_of(x & 0x7fffffffu);
    atomicAdd(&out[slot * 8u + c], 1u);
    let k = atomicAdd(&out[64u + slot], 1u);
    if (k < 16u) {{ atomicStore(&out[128u + slot * 16u + k], x); }}
}}
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {{
    let x = p.base + g.x + g.y * n.x * 256u;
    let f = bitcast<f32>(x);
    let want = f32_to_f16_bits(x);
    let want_w = f16_bits_to_f32(want);
    let is_nan = (x & 0x7fffffffu) > 0x7f800000u;
    // pack2x16float
    let pk = pack2x16float(vec2<f32>(f, 0.0)) & 0xffffu;
    let pk_nan = (pk & 0x7fffu) > 0x7c00u;
    if (select(pk != want, !pk_nan, is_nan)) {{ note(0u, x); }}
    // f16(x), widened back exactly
    let h = f16(f);
    let hw = bitcast<u32>(f32(h));
    let h_nan = (hw & 0x7fffffffu) > 0x7f800000u;
    if (select(hw != want_w, !h_nan, is_nan)) {{ note(1u, x); }}
    // unpack2x16float of the wanted bits (widening check)
    let uw = bitcast<u32>(unpack2x16float(want).x);
    if (select(uw != want_w, false, is_nan)) {{ note(2u, x); }}
}}"
    );
    let kernel = RawKernel::checked("native_narrowing", Box::leak(text.into_boxed_str()), "main");
    let dev = &devices()[0];
    let out = Tensor::from_u32(dev, &vec![0u32; 128 + 3 * 16], &[128 + 3 * 16]).unwrap();
    let chunk: u64 = 1 << 24;
    let t0 = std::time::Instant::now();
    let chunks: u64 = std::env::var("TANG_NARROW_CHUNKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    for c in 0..chunks {
        let c = c * (256 / chunks);
        let base = (c * chunk) as u32;
        let params: Vec<u8> = [base, 0u32, 0, 0].iter().flat_map(|w| w.to_le_bytes()).collect();
        dev.dispatch_raw(
            &kernel,
            &[],
            &[Binding::Uniform(&params), Binding::ReadWrite(&out)],
            [256, (chunk / 256 / 256) as u32, 1],
        )
        .unwrap();
    }
    let got = out.to_vec_u32().unwrap();
    println!("{:.1} s on {}", t0.elapsed().as_secs_f64(), dev.info().name);
    for (slot, what) in ["pack2x16float", "f16(x)", "unpack2x16float"].iter().enumerate() {
        let c = &got[slot * 8..slot * 8 + 4];
        println!(
            "{what}: mismatches nan {} overflow {} subnormal/zero {} normal {}; first: {}",
            c[0],
            c[1],
            c[2],
            c[3],
            got[128 + slot * 16..128 + slot * 16 + 16.min(got[64 + slot] as usize)]
                .iter()
                .map(|x| format!("{x:#010x}({:e})", f32::from_bits(*x)))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
}

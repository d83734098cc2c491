//! f16 conversions and f16 tensors: casts against the `half` crate bit for bit (round to
//! nearest even, subnormals, inf, NaN), both the form the device runs (the adapter's
//! `pack2x16float` and `unpack2x16float` where tang swaps them in) and the portable integer
//! forms; uploads and downloads of odd lengths. The f16 products are `dense_f16`.

use half::f16;
use tang_runtime::ops::to_dtype;
use tang_runtime::{DType, Tensor};
use tang_testing::devices;

/// f32 values that exercise every branch of the rounding: halfway cases both ways,
/// subnormals and the smallest ones that round to zero or up, the largest finite value
/// and the ones that overflow, signed zeros, inf and NaN.
fn special_values() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        65504.0,
        65519.99,
        65520.0,
        -65520.0,
        1.0e9,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        5.960_464_5e-8, // 2^-24: the smallest f16 subnormal
        2.980_232_2e-8, // 2^-25: halfway to zero, rounds to even (0)
        2.980_233e-8,   // just above: rounds up to 2^-24
        8.940_697e-8,   // 1.5 * 2^-24: halfway, rounds to even (2^-23)
        6.097_555e-5,   // the largest subnormal
        6.103_515_6e-5, // the smallest normal
        1.000_488_3,    // 1 + 2^-11: halfway, rounds to even (1)
        1.001_464_8,    // 1 + 3 * 2^-11: halfway, rounds to even (1 + 2^-9)
        2049.0,
        2051.0,
    ];
    // Every f16 neighbourhood: each finite f16 value and the points a quarter, a half
    // (the ties) and three quarters of an ulp above it.
    for bits in 0u16..0x7c00 {
        let x = f16::from_bits(bits).to_f32();
        let ulp = f16::from_bits(bits + 1).to_f32() - x;
        for d in [0.0, 0.25, 0.5, 0.75] {
            v.push(x + d * ulp);
            v.push(-(x + d * ulp));
        }
    }
    v
}

fn same_bits(got: f16, want: f16) -> bool {
    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
}

#[test]
fn f32_to_f16_rounds_as_half_does() {
    for dev in devices() {
        let mut x = special_values();
        x.truncate(x.len() / 4 * 4);
        // A multiple of 4 (four elements a thread) and one element fewer (two a thread).
        for n in [x.len(), x.len() - 1] {
            let t = Tensor::from_slice(&dev, &x[..n], &[n]).unwrap();
            let h = to_dtype(&t, DType::F16).unwrap();
            assert_eq!(h.dtype(), DType::F16);
            assert_eq!(h.shape(), &[n]);
            let got = h.to_vec_f16().unwrap();
            for (i, (&g, &xi)) in got.iter().zip(&x).enumerate() {
                let want = f16::from_f32(xi);
                assert!(
                    same_bits(g, want),
                    "n {n}, element {i}: {xi:e} -> {:#06x}, half gives {:#06x}",
                    g.to_bits(),
                    want.to_bits()
                );
            }
        }
    }
}

#[test]
fn f16_to_f32_is_exact_for_every_value() {
    let dev = &devices()[0];
    let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    // Every value four a thread, and all but the last one a thread each.
    for n in [all.len(), all.len() - 1] {
        let h = Tensor::from_f16(dev, &all[..n], &[n]).unwrap();
        let back = to_dtype(&h, DType::F32).unwrap().to_vec().unwrap();
        assert_eq!(back.len(), n);
        for (i, (&g, &h)) in back.iter().zip(&all).enumerate() {
            let want = h.to_f32();
            assert!(
                g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                "n {n}, bits {i:#06x}: got {g:e}, want {want:e}"
            );
        }
    }
    let h = Tensor::from_f16(dev, &all, &[all.len()]).unwrap();
    // And through the host path of `to_vec` (widened on the host).
    let host = h.to_vec().unwrap();
    assert_eq!(host.len(), all.len());
}

/// A checked kernel named `name` (entry point `main`): `conversion` (a portable f16
/// conversion's WGSL) with its function `func` renamed to `name`, which the device's
/// native swap leaves alone, followed by `body`.
fn renamed_kernel(
    conversion: &str,
    func: &str,
    name: &'static str,
    body: &str,
) -> tang_runtime::RawKernel {
    let renamed = conversion.replace(&format!("fn {func}("), &format!("fn {name}("));
    assert_ne!(
        renamed, conversion,
        "the conversion's function is not `{func}`"
    );
    let text = format!("{renamed}\n{body}");
    tang_runtime::RawKernel::checked(name, Box::leak(text.into_boxed_str()), "main")
}

/// The portable widening (integer arithmetic), which adapters without `unpack2x16float`
/// run: every kernel carries it and the runtime swaps in the instruction on adapters that
/// have it (all those the tests run on), so here it runs under another name, which the
/// swap leaves alone, over every f16 value.
#[test]
fn the_portable_widening_is_exact_for_every_value() {
    use tang_runtime::Binding;
    use tang_runtime::tang_expr::kernel::F16_BITS_TO_F32_WGSL;
    let body = "
@group(0) @binding(0) var<storage, read> h: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&h)) {
        out[2u * g.x] = bitcast<f32>(portable_widen(h[g.x] & 0xffffu));
        out[2u * g.x + 1u] = bitcast<f32>(portable_widen(h[g.x] >> 16u));
    }
}";
    let kernel = renamed_kernel(
        F16_BITS_TO_F32_WGSL,
        "f16_bits_to_f32",
        "portable_widen",
        body,
    );
    let dev = &devices()[0];
    let words: Vec<u32> = (0..=u16::MAX / 2)
        .map(|i| u32::from(2 * i) | (u32::from(2 * i + 1) << 16))
        .collect();
    let h = Tensor::from_u32(dev, &words, &[words.len()]).unwrap();
    let out = Tensor::zeros(dev, &[2 * words.len()]).unwrap();
    let groups = (words.len() as u32).div_ceil(64);
    dev.dispatch_raw(
        &kernel,
        &[],
        &[Binding::Read(&h), Binding::ReadWrite(&out)],
        [groups, 1, 1],
    )
    .unwrap();
    let got = out.to_vec().unwrap();
    assert_eq!(got.len(), 1 << 16);
    for (bits, g) in got.iter().enumerate() {
        let want = f16::from_bits(bits as u16).to_f32();
        assert!(
            g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
            "bits {bits:#06x}: got {g:e}, want {want:e}"
        );
    }
}

/// The portable narrowing (integer arithmetic, round to nearest even), which adapters whose
/// `pack2x16float` rounds otherwise (or was not probed: browsers) run: the runtime swaps
/// in `pack2x16float` where the device's probe found it rounds the same (the adapters the
/// tests run on), so here it runs under another name, which the swap leaves alone, over
/// every f16 neighbourhood and the special values, bit for bit against `half` (NaN
/// payloads included).
#[test]
fn the_portable_narrowing_rounds_as_half_does() {
    use tang_runtime::Binding;
    use tang_runtime::tang_expr::kernel::F32_TO_F16_BITS_WGSL;
    let body = "
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&x)) {
        out[g.x] = portable_narrow(x[g.x]);
    }
}";
    let kernel = renamed_kernel(
        F32_TO_F16_BITS_WGSL,
        "f32_to_f16_bits",
        "portable_narrow",
        body,
    );
    let dev = &devices()[0];
    let mut x: Vec<u32> = special_values().iter().map(|v| v.to_bits()).collect();
    // NaNs with payloads, quiet and signalling, of both signs.
    x.extend([
        0x7fc0_0000u32,
        0x7f80_0001,
        0xffc0_1234,
        0x7fbf_e000,
        0xff80_2000,
    ]);
    let t = Tensor::from_u32(dev, &x, &[x.len()]).unwrap();
    let out = Tensor::from_u32(dev, &vec![0; x.len()], &[x.len()]).unwrap();
    dev.dispatch_raw(
        &kernel,
        &[],
        &[Binding::Read(&t), Binding::ReadWrite(&out)],
        [(x.len() as u32).div_ceil(64), 1, 1],
    )
    .unwrap();
    let got = out.to_vec_u32().unwrap();
    for (&xi, &g) in x.iter().zip(&got) {
        let want = f16::from_f32(f32::from_bits(xi)).to_bits();
        assert_eq!(
            g,
            u32::from(want),
            "{xi:#010x} ({:e}): got {g:#06x}, half gives {want:#06x}",
            f32::from_bits(xi)
        );
    }
}

/// The rounding the device's kernels run (`pack2x16float` where the device's probe found
/// it rounds to nearest even, `DeviceInfo::native_f16_rounding`) gives the portable form's
/// bits, NaN included, on every f32 on a GPU (2^32 inputs, a tenth of a second on an
/// H200) and on 2^28 of them spread over every exponent and low-bit pattern on a software
/// adapter.
#[test]
fn the_device_rounding_matches_the_portable_form() {
    use tang_runtime::Binding;
    use tang_runtime::tang_expr::kernel::F32_TO_F16_BITS_WGSL;
    // The device's form (swapped in when the module is made) beside the portable one.
    let body = format!(
        "{F32_TO_F16_BITS_WGSL}
struct P {{ base: u32, stride: u32, pad0: u32, pad1: u32 }}
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> out: array<atomic<u32>>;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {{
    // Index i of the run is input i * stride (mod 2^32): an odd stride visits every f32
    // once over 2^32 indices, and a large one spreads a prefix of them over the range.
    let x = (p.base + g.x + g.y * n.x * 256u) * p.stride;
    if (f32_to_f16_bits(x) != portable_narrow(x)) {{
        let k = atomicAdd(&out[0], 1u);
        if (k < 8u) {{ atomicStore(&out[1u + k], x); }}
    }}
}}"
    );
    let kernel = renamed_kernel(
        F32_TO_F16_BITS_WGSL,
        "f32_to_f16_bits",
        "portable_narrow",
        &body,
    );
    for dev in devices() {
        // 16 chunks of 2^24 inputs (2^28) with the golden-ratio stride on a software
        // adapter, every f32 in order on a GPU.
        let (chunks, stride) = if dev.info().is_software {
            (16u64, 0x9e37_79b1u32)
        } else {
            (256, 1)
        };
        let out = Tensor::from_u32(&dev, &[0; 9], &[9]).unwrap();
        for c in 0..chunks {
            let base = (c << 24) as u32;
            let params: Vec<u8> = [base, stride, 0, 0]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect();
            dev.dispatch_raw(
                &kernel,
                &[],
                &[Binding::Uniform(&params), Binding::ReadWrite(&out)],
                [256, 256, 1],
            )
            .unwrap();
        }
        let got = out.to_vec_u32().unwrap();
        assert_eq!(
            got[0],
            0,
            "{} (native rounding {}): {} inputs round differently, e.g. {:x?}",
            dev.info().name,
            dev.info().native_f16_rounding,
            got[0],
            &got[1..1 + (got[0] as usize).min(8)]
        );
    }
}

/// The adapters the tests run on (lavapipe, NVIDIA's Vulkan driver) pass the probe, so the
/// native rounding is what the other tests exercise there (the portable form has its own
/// test above).
#[test]
fn the_test_adapters_round_natively() {
    for dev in devices() {
        if dev.info().backend == wgpu::Backend::Vulkan {
            assert!(dev.info().native_f16_rounding, "{}", dev.info().name);
        }
    }
}

#[test]
fn odd_lengths_round_trip_and_u32_goes_through_f32() {
    let dev = &devices()[0];
    for n in [1usize, 3, 5, 257] {
        let x: Vec<f16> = (0..n)
            .map(|i| f16::from_f32(i as f32 * 0.5 - 3.0))
            .collect();
        let t = Tensor::from_f16(dev, &x, &[n]).unwrap();
        assert_eq!(t.to_vec_f16().unwrap(), x, "n = {n}");
        // The async read (the browser's) widens as the blocking one does.
        let widened: Vec<f32> = x.iter().map(|h| h.to_f32()).collect();
        assert_eq!(
            pollster::block_on(t.to_vec_async()).unwrap(),
            widened,
            "n = {n} async"
        );
        let f = to_dtype(&t, DType::F32).unwrap();
        let h = to_dtype(&f, DType::F16).unwrap();
        assert_eq!(h.to_vec_f16().unwrap(), x, "n = {n} through f32");
    }
    let ids = Tensor::from_u32(dev, &[0, 7, 70000], &[3]).unwrap();
    let h = to_dtype(&ids, DType::F16).unwrap();
    // 70000 is past f16's largest finite value (65504).
    assert_eq!(h.to_vec().unwrap(), vec![0.0, 7.0, f32::INFINITY]);
    assert_eq!(
        to_dtype(&h, DType::U32).unwrap().to_vec_u32().unwrap()[1],
        7
    );
    // Wrong element types are clear errors, not panics.
    assert!(h.to_vec_u32().is_err());
    assert!(
        Tensor::from_slice(dev, &[1.0], &[1])
            .unwrap()
            .to_vec_f16()
            .is_err()
    );
}

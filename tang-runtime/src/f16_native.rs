//! The f16 conversions in WGSL in the form each device runs. Kernels are written with the
//! portable integer forms ([`F16_BITS_TO_F32_WGSL`], [`F32_TO_F16_BITS_WGSL`], which need
//! nothing of the adapter and round to nearest even); [`for_device`] swaps in the
//! adapter's own instructions when the shader module is made (`pipeline.rs`), as
//! `wide_mul` does for the 64-bit product, where they give the same bits:
//!
//! - **Widening** becomes `unpack2x16float` where the adapter has it (wgpu's
//!   `DownlevelFlags::SHADER_F16_IN_F32`: Vulkan, Metal, DX12, GL and browsers; Mesa's
//!   llvmpipe only with `SHADER_F16`). It is exact by definition (every f16 value is an f32
//!   value). The integer form cost more than the memory f16 saves: an f16 tanh-GELU over
//!   64M elements ran in 0.189 ms against 0.136 ms in f32 on an H200 (BENCHMARKS.md,
//!   2026-11-29 (fifth session)).
//! - **Narrowing** becomes `pack2x16float` only where the device showed, when it was made,
//!   that its `pack2x16float` rounds to nearest even ([`probe_native_narrowing`]): WGSL
//!   leaves that rounding to the implementation, and tang rounds as PyTorch and the `half`
//!   crate do. NaN keeps tang's form (quiet bit, the payload's top bits) either way. On an
//!   H200 `pack2x16float` gave the integer form's bits on all 2^32 f32 inputs, and with it
//!   the f16 tanh-GELU over 64M elements ran 0.137 -> 0.126 ms forward and 0.177 -> 0.167
//!   ms backward, the character GPT's AMP step 1% faster (BENCHMARKS.md, 2026-11-30
//!   (eleventh session)); lavapipe passes the probe too. Browsers keep the integer form:
//!   the probe's answer cannot be waited for there.

use std::borrow::Cow;

use crate::cast::{F16_BITS_TO_F32_WGSL, F32_TO_F16_BITS_WGSL};

/// The widening as one instruction (`SHADER_F16_IN_F32`). Only the low half of `h` is
/// read, as the portable form reads it.
const F16_BITS_TO_F32_NATIVE_WGSL: &str = "fn f16_bits_to_f32(h: u32) -> u32 {
    return bitcast<u32>(unpack2x16float(h).x);
}
";

/// The narrowing through `pack2x16float`, with NaN as the portable form makes it (the
/// quiet bit and the payload's top bits: the adapter's NaN may differ).
const F32_TO_F16_BITS_NATIVE_WGSL: &str = "fn f32_to_f16_bits(x: u32) -> u32 {
    let a = x & 0x7fffffffu;
    let nan = ((x >> 16u) & 0x8000u) | 0x7e00u | ((a >> 13u) & 0x3ffu);
    let native = pack2x16float(vec2<f32>(bitcast<f32>(x), 0.0)) & 0xffffu;
    return select(native, nan, a > 0x7f800000u);
}
";

/// Which conversions a device runs as the adapter's own instructions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct NativeF16 {
    /// `unpack2x16float` for widening ([`adapter_has_native`]).
    pub widen: bool,
    /// `pack2x16float` for narrowing ([`probe_native_narrowing`]).
    pub narrow: bool,
}

/// Whether the adapter runs `unpack2x16float` and `pack2x16float` (the f16-in-f32
/// builtins).
pub(crate) fn adapter_has_native(adapter: &wgpu::Adapter) -> bool {
    adapter
        .get_downlevel_capabilities()
        .flags
        .contains(wgpu::DownlevelFlags::SHADER_F16_IN_F32)
}

/// `wgsl` as a device with `native` runs it. Every shader module is made through this.
pub(crate) fn for_device(wgsl: &str, native: NativeF16) -> Cow<'_, str> {
    let mut text = Cow::Borrowed(wgsl);
    if native.widen && text.contains(F16_BITS_TO_F32_WGSL) {
        text = Cow::Owned(text.replace(F16_BITS_TO_F32_WGSL, F16_BITS_TO_F32_NATIVE_WGSL));
    }
    if native.narrow && text.contains(F32_TO_F16_BITS_WGSL) {
        text = Cow::Owned(text.replace(F32_TO_F16_BITS_WGSL, F32_TO_F16_BITS_NATIVE_WGSL));
    }
    text
}

/// Threads of the probe: eight f32 inputs around each of the 65,536 f16 bit patterns.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))] // browsers do not run the probe
const PROBE_THREADS: u32 = 8 << 16;

/// The probe: thread `i` takes the f16 with bits `h = i >> 3` and one of eight f32
/// inputs around it (the value, one f32 step either side, the midpoint to the next f16
/// and one step either side of it, a value just short of the midpoint, and an f32 whose
/// high half is `h`, which spans every exponent: overflow, underflow, inf, NaN), and
/// counts the inputs where the native narrowing's bits differ from the portable form's.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))] // browsers do not run the probe
fn probe_wgsl() -> String {
    let native = F32_TO_F16_BITS_NATIVE_WGSL.replace("fn f32_to_f16_bits(", "fn native_narrow(");
    format!(
        "{F32_TO_F16_BITS_WGSL}
{F16_BITS_TO_F32_WGSL}
{native}
@group(0) @binding(0) var<storage, read_write> bad: array<atomic<u32>>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
    let i = g.x;
    if (i >= {PROBE_THREADS}u) {{ return; }}
    let h = i >> 3u;
    let sign = (h & 0x8000u) << 16u;
    let m = h & 0x7fffu;
    let v = f16_bits_to_f32(h);
    // The magnitude halfway to the next f16 (65520 past the largest finite one).
    var mid = v;
    if (m < 0x7bffu) {{
        let next = f16_bits_to_f32(m + 1u);
        mid = sign | bitcast<u32>((bitcast<f32>(v & 0x7fffffffu) + bitcast<f32>(next)) * 0.5);
    }} else if (m == 0x7bffu) {{
        mid = sign | 0x477ff000u;
    }}
    var x = v;
    switch (i & 7u) {{
        case 1u: {{ x = v + 1u; }}
        case 2u: {{ x = v - 1u; }}
        case 3u: {{ x = mid; }}
        case 4u: {{ x = mid + 1u; }}
        case 5u: {{ x = mid - 1u; }}
        case 6u: {{ x = v + 0xfffu; }}
        case 7u: {{ x = (h << 16u) | (h ^ 0x5a5au); }}
        default: {{}}
    }}
    if (native_narrow(x) != f32_to_f16_bits(x)) {{
        atomicAdd(&bad[0], 1u);
    }}
}}
"
    )
}

/// In a browser: `false`, the portable form (the probe's answer cannot be waited for in a
/// synchronous call there).
#[cfg(target_arch = "wasm32")]
pub(crate) fn probe_native_narrowing(_device: &wgpu::Device, _queue: &wgpu::Queue) -> bool {
    false
}

/// Whether this device's `pack2x16float`, as [`for_device`] uses it, gives the portable
/// narrowing's bits on the probe's inputs (see [`probe_wgsl`]): one small dispatch, and
/// one read back, when the device is made. Only for an adapter with the f16-in-f32
/// builtins ([`adapter_has_native`]); `false` (keep the portable form) on an error.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn probe_native_narrowing(device: &wgpu::Device, queue: &wgpu::Queue) -> bool {
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("tang f16 narrowing probe"),
        source: wgpu::ShaderSource::Wgsl(probe_wgsl().into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("tang f16 narrowing probe"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let counter = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("tang f16 narrowing probe"),
        size: 16,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("tang f16 narrowing probe readback"),
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: counter.as_entire_binding(),
        }],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.dispatch_workgroups(PROBE_THREADS / 64, 1, 1);
    }
    encoder.copy_buffer_to_buffer(&counter, 0, &readback, 0, 16);
    queue.submit([encoder.finish()]);
    if pollster::block_on(scope.pop()).is_some() {
        return false;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    readback.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r.is_ok());
    });
    if device.poll(wgpu::PollType::wait_indefinitely()).is_err() || rx.recv() != Ok(true) {
        return false;
    }
    let bad = match readback.get_mapped_range(..) {
        Ok(bytes) => u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
        Err(_) => return false,
    };
    readback.unmap();
    bad == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel for the test: its f16 form is what the kernel macros make of every
    /// elementwise function.
    #[crate::kernel]
    fn halve(x: f32) -> f32 {
        x * 0.5
    }

    /// The swaps reach the f16 form of a generated elementwise kernel, each on its own
    /// switch, and what they make passes naga (the hand-written kernels' swapped forms are
    /// validated with the rest of the registry by the workspace's shader test).
    #[test]
    fn the_native_conversions_replace_the_portable_ones_and_validate() {
        assert_eq!(halve(3.0), 1.5); // the function itself runs on the CPU
        let desc = halve::KERNEL;
        let (text, _) = desc
            .wgsl_f16()
            .expect("an elementwise kernel has an f16 form");
        for (widen, narrow) in [(true, false), (false, true), (true, true)] {
            let swapped = for_device(text, NativeF16 { widen, narrow });
            assert!(matches!(swapped, Cow::Owned(_)));
            assert_eq!(swapped.contains("unpack2x16float"), widen);
            assert_eq!(swapped.contains("e == 0x1fu"), !widen);
            assert_eq!(swapped.contains("pack2x16float(vec2<f32>"), narrow);
            assert_eq!(swapped.contains("0xc8000fffu"), !narrow);
            tang_expr::validate(&swapped).unwrap_or_else(|e| panic!("{e}\n{swapped}"));
        }
        assert!(matches!(
            for_device(text, NativeF16::default()),
            Cow::Borrowed(_)
        ));
        let both = NativeF16 {
            widen: true,
            narrow: true,
        };
        assert!(matches!(for_device(desc.wgsl(), both), Cow::Borrowed(_)));
    }

    /// The probe's text passes naga.
    #[test]
    fn the_probe_validates() {
        let text = probe_wgsl();
        tang_expr::validate(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
}

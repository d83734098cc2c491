//! Pipeline cache, buffer pool and batching counters.

mod runtime_support;

use runtime_support::{add, axpy, devices, random};
use tang_runtime::{Binding, Device, DeviceOptions, RawKernel, Tensor};

#[test]
fn relaunch_creates_no_pipeline_or_module() {
    for dev in devices() {
        let x = Tensor::from_slice(&dev, &random(64, 1), &[64]).unwrap();
        dev.launch(add(), &[&x, &x], &[], &[]).unwrap();
        let before = dev.stats();
        for _ in 0..20 {
            dev.launch(add(), &[&x, &x], &[], &[]).unwrap();
        }
        dev.sync().unwrap();
        let after = dev.stats();
        assert_eq!(after.pipelines_created, before.pipelines_created);
        assert_eq!(after.shader_modules_created, before.shader_modules_created);
        assert_eq!(after.launches, before.launches + 20);
        // A different kernel is one more of each.
        dev.launch(axpy(), &[&x, &x], &[], &[2.0]).unwrap();
        let third = dev.stats();
        assert_eq!(third.pipelines_created, after.pipelines_created + 1);
        assert_eq!(
            third.shader_modules_created,
            after.shader_modules_created + 1
        );
    }
}

#[test]
fn memory_stays_bounded_over_ten_thousand_launch_drop_cycles() {
    let dev = Device::new().unwrap();
    let x = Tensor::from_slice(&dev, &random(1000, 2), &[1000]).unwrap();
    let mut acc = Tensor::zeros(&dev, &[1000]).unwrap();
    // Built once: each `add()` emits, validates and leaks a new descriptor (most of the
    // test's time when it was called per launch).
    let add = add();
    for _ in 0..100 {
        acc = dev.launch(add, &[&acc, &x], &[], &[]).unwrap().remove(0);
    }
    dev.sync().unwrap();
    let warm = dev.stats();
    for _ in 0..10_000 {
        acc = dev.launch(add, &[&acc, &x], &[], &[]).unwrap().remove(0);
    }
    let got = acc.to_vec().unwrap();
    let s = dev.stats();
    assert!(
        s.allocations - warm.allocations <= 4,
        "pool misses: {} -> {}",
        warm.allocations,
        s.allocations
    );
    assert!(
        s.bytes_in_use + s.bytes_pooled <= warm.bytes_in_use + warm.bytes_pooled + 4 * 4096,
        "{warm:?} -> {s:?}"
    );
    assert!(
        s.submits >= 10_000 / 256,
        "batches submit on their own: {s:?}"
    );
    let xs = random(1000, 2);
    let want: Vec<f32> = xs
        .iter()
        .map(|&v| (0..10_100).fold(0.0f32, |a, _| a + v))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn batch_size_option_bounds_unsubmitted_work() {
    let dev = Device::with_options(DeviceOptions {
        batch_size: 4,
        ..DeviceOptions::default()
    })
    .unwrap();
    let x = Tensor::from_slice(&dev, &[1.0; 8], &[8]).unwrap();
    let before = dev.stats().submits;
    for _ in 0..12 {
        dev.launch(add(), &[&x, &x], &[], &[]).unwrap();
    }
    assert_eq!(dev.stats().submits - before, 3);
}

const DOUBLE: RawKernel = RawKernel::checked(
    "double",
    "struct P { n: u32, scale: f32 }\n\
     override BLOCK: u32 = 64u;\n\
     @group(0) @binding(0) var<uniform> p: P;\n\
     @group(0) @binding(1) var<storage, read> a: array<f32>;\n\
     @group(0) @binding(2) var<storage, read_write> b: array<f32>;\n\
     @compute @workgroup_size(BLOCK) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n\
       if (g.x < p.n) { b[g.x] = a[g.x] * p.scale; }\n\
     }",
    "main",
);

#[test]
fn dispatch_raw_with_uniforms_and_override_constants() {
    for dev in devices() {
        let n = 1000u32;
        let a = random(n as usize, 3);
        let at = Tensor::from_slice(&dev, &a, &[n as usize]).unwrap();
        let bt = Tensor::zeros(&dev, &[n as usize]).unwrap();
        let mut params = n.to_ne_bytes().to_vec();
        params.extend(3.0f32.to_ne_bytes());
        for block in [64.0, 128.0] {
            let groups = n.div_ceil(block as u32);
            dev.dispatch_raw(
                &DOUBLE,
                &[("BLOCK", block)],
                &[
                    Binding::Uniform(&params),
                    Binding::Read(&at),
                    Binding::ReadWrite(&bt),
                ],
                [groups, 1, 1],
            )
            .unwrap();
            assert_eq!(
                bt.to_vec().unwrap(),
                a.iter().map(|v| v * 3.0).collect::<Vec<_>>()
            );
        }
        let s = dev.stats();
        dev.dispatch_raw(
            &DOUBLE,
            &[("BLOCK", 64.0)],
            &[
                Binding::Uniform(&params),
                Binding::Read(&at),
                Binding::ReadWrite(&bt),
            ],
            [16, 1, 1],
        )
        .unwrap();
        assert_eq!(dev.stats().pipelines_created, s.pipelines_created);
    }
}

#[test]
fn device_is_shareable_across_threads() {
    let dev = Device::new().unwrap();
    // Many threads reading at once: wgpu delivers a finished read from whichever thread
    // polls, so this is where a read could return before its data arrived.
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let dev = dev.clone();
            std::thread::spawn(move || {
                let x = random(500, t);
                let xt = Tensor::from_slice(&dev, &x, &[500]).unwrap();
                let mut acc = xt.clone();
                let mut want = x.clone();
                for step in 0..200 {
                    acc = dev.launch(add(), &[&acc, &xt], &[], &[]).unwrap().remove(0);
                    for (w, v) in want.iter_mut().zip(&x) {
                        *w += v;
                    }
                    if step % 5 == 4 {
                        assert_eq!(acc.to_vec().unwrap(), want, "thread {t} step {step}");
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let _: &Device = &dev;
}

/// Writes `7.0` at every index up to `p.n`, whatever the length of `out`: with wgpu's
/// runtime checks on, the writes past the binding are clamped or dropped.
const WRITES_PAST_THE_END: RawKernel = RawKernel::checked(
    "writes_past_the_end",
    "struct P { n: u32 }\n\
     @group(0) @binding(0) var<uniform> p: P;\n\
     @group(0) @binding(1) var<storage, read_write> out: array<f32>;\n\
     @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n\
       if (g.x < p.n) { out[g.x] = 7.0; }\n\
     }",
    "main",
);

#[test]
fn a_user_kernel_runs_with_runtime_checks() {
    assert!(!WRITES_PAST_THE_END.is_trusted());
    assert!(!DOUBLE.is_trusted());
    for dev in devices() {
        let before = Tensor::from_slice(&dev, &[1.0; 4], &[4]).unwrap();
        let out = Tensor::from_slice(&dev, &[0.0; 4], &[4]).unwrap();
        let after = Tensor::from_slice(&dev, &[2.0; 4], &[4]).unwrap();
        let n = 4096u32;
        dev.dispatch_raw(
            &WRITES_PAST_THE_END,
            &[],
            &[Binding::Uniform(&n.to_le_bytes()), Binding::ReadWrite(&out)],
            [n / 64, 1, 1],
        )
        .unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![7.0; 4]);
        assert_eq!(before.to_vec().unwrap(), vec![1.0; 4]);
        assert_eq!(after.to_vec().unwrap(), vec![2.0; 4]);
    }
}

/// A pool full of sizes the program no longer uses makes room for the sizes it uses now:
/// after one pass over a new size, repeating the work allocates nothing.
#[test]
fn a_full_pool_of_old_sizes_makes_room_for_new_ones() {
    let dev = Device::with_options(DeviceOptions {
        pool_limit: Some(1 << 20),
        ..DeviceOptions::default()
    })
    .unwrap();
    // Sixteen 64 KiB buffers fill the 1 MiB pool.
    let old: Vec<Tensor> = (0..16)
        .map(|_| Tensor::zeros(&dev, &[16384]).unwrap())
        .collect();
    drop(old);
    dev.sync().unwrap();
    assert_eq!(dev.stats().bytes_pooled, 1 << 20);
    // Eight tensors of another size class (80,000 bytes -> 81,920).
    let work = || {
        let ts: Vec<Tensor> = (0..8)
            .map(|_| Tensor::zeros(&dev, &[20_000]).unwrap())
            .collect();
        drop(ts);
        dev.sync().unwrap();
    };
    work();
    let first = dev.stats();
    work();
    work();
    let after = dev.stats();
    assert_eq!(
        after.allocations, first.allocations,
        "{first:?} -> {after:?}"
    );
    assert!(after.bytes_pooled <= 1 << 20, "{after:?}");
}

/// A training step repeats the same launches on tensors of the same sizes: from the second
/// repetition on, the pool hands every tensor the buffer it had before, so every launch
/// finds the bind group of the previous repetition and none is created. (Handing out the
/// buffer returned last would rotate the buffers of a size between repetitions.)
#[test]
fn a_repeated_step_creates_no_bind_groups() {
    for dev in devices() {
        let x = Tensor::from_slice(&dev, &random(256, 5), &[256]).unwrap();
        let step = || {
            let mut live = Vec::new();
            let mut t = x.clone();
            for _ in 0..4 {
                t = dev.launch(add(), &[&t, &x], &[], &[]).unwrap().remove(0);
                live.push(Some(t.clone()));
            }
            drop(t);
            let sum = live[3]
                .as_ref()
                .unwrap()
                .to_vec()
                .unwrap()
                .iter()
                .sum::<f32>();
            // Dropped in an order under which a last-in-first-out pool hands the four
            // tensors of the next step a rotation of these buffers that repeats only
            // every fourth step.
            for i in [0, 1, 3, 2] {
                live[i] = None;
            }
            sum
        };
        let first = step();
        step();
        let before = dev.stats();
        for _ in 0..4 {
            assert_eq!(step(), first);
        }
        let after = dev.stats();
        assert_eq!(after.launches - before.launches, 16);
        assert_eq!(
            after.bind_groups_created, before.bind_groups_created,
            "{before:?} -> {after:?}"
        );
        assert_eq!(after.allocations, before.allocations);
    }
}

/// After a wait the GPU is idle, so the first launches go out in a small batch instead of
/// waiting for a full one; the batches after it double.
#[test]
fn the_first_batch_after_a_wait_is_submitted_early() {
    let dev = Device::new().unwrap();
    let x = Tensor::from_slice(&dev, &[1.0; 8], &[8]).unwrap();
    dev.sync().unwrap();
    let submits = || dev.stats().submits;
    let before = submits();
    for _ in 0..15 {
        dev.launch(add(), &[&x, &x], &[], &[]).unwrap();
    }
    assert_eq!(submits(), before);
    dev.launch(add(), &[&x, &x], &[], &[]).unwrap();
    assert_eq!(submits(), before + 1, "the first 16 launches");
    for _ in 0..32 {
        dev.launch(add(), &[&x, &x], &[], &[]).unwrap();
    }
    assert_eq!(submits(), before + 2, "then 32");
    for _ in 0..63 {
        dev.launch(add(), &[&x, &x], &[], &[]).unwrap();
    }
    assert_eq!(submits(), before + 2, "then 64");
    dev.sync().unwrap();
    assert_eq!(submits(), before + 3);
}

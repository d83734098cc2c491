//! Host cost of a launch against the device's state: the time to record tiny launches must
//! not grow with the number of cached pipelines, pooled buffers or live tensors (the
//! `tiny_add` benchmark case runs after every other case of its program). Ignored in
//! `cargo test`: timings on a shared CI machine say nothing. Run:
//!
//! ```text
//! cargo test --release -p tang-runtime --test launch_host_cost -- --ignored --nocapture
//! ```
//!
//! It prints microseconds per launch (recording only, then recording plus the wait) on a
//! fresh device and after the device has cached many pipelines, pooled many buffers and
//! holds many live tensors, and fails when the second is more than 1.5 times the first.
//! On a loaded machine wall times are noisy; the steady measure there is the recording
//! thread's instruction count, which must be the same before and after the state grows:
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='*tiny_launch_cost*' <test binary> --ignored
//! ```

use std::time::Instant;

use tang_runtime::{Binding, Device, RawKernel, Tensor, kernel};

/// `x += 1` in place: the benchmark's tiny launch.
#[kernel]
fn add_one(x: &mut f32) {
    *x += 1.0;
}

/// A kernel specialised by an `override` constant: each value is its own pipeline.
const SCALE: RawKernel = RawKernel::checked(
    "scale",
    "override factor: f32 = 1.0;\n\
     @group(0) @binding(0) var<storage, read_write> x: array<f32>;\n\
     @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n\
       if (g.x < arrayLength(&x)) { x[g.x] = x[g.x] * factor; }\n\
     }",
    "main",
);

/// Median microseconds per launch over `repeats` rounds of `launches` tiny launches:
/// `(recording only, recording plus the final wait)`.
fn tiny_launch_cost(dev: &Device, t: &Tensor, launches: usize, repeats: usize) -> (f64, f64) {
    let mut record = Vec::new();
    let mut total = Vec::new();
    for _ in 0..repeats {
        let start = Instant::now();
        for _ in 0..launches {
            add_one::launch(dev, t).expect("launch");
        }
        let recorded = start.elapsed();
        dev.sync().expect("sync");
        let done = start.elapsed();
        record.push(recorded.as_secs_f64() * 1e6 / launches as f64);
        total.push(done.as_secs_f64() * 1e6 / launches as f64);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(&mut record), median(&mut total))
}

/// Fills the device's state as a long program does: `pipelines` cached pipelines, a pool
/// of buffers of many size classes, `live` tensors held, and many launches already run.
fn grow_state(dev: &Device, pipelines: usize, live: usize) -> Vec<Tensor> {
    let x = Tensor::from_slice(dev, &[1.0; 256], &[256]).expect("upload");
    for i in 0..pipelines {
        let factor = 1.0 + i as f64 / pipelines as f64;
        dev.dispatch_raw(
            &SCALE,
            &[("factor", factor)],
            &[Binding::ReadWrite(&x)],
            [4, 1, 1],
        )
        .expect("dispatch");
    }
    // Tensors of many sizes: dropped ones fill the pool, kept ones stay live.
    let mut kept = Vec::new();
    for i in 0..live * 2 {
        let n = 64 + (i * 997) % (1 << 16);
        let t = Tensor::zeros(dev, &[n]).expect("alloc");
        add_one::launch(dev, &t).expect("launch");
        if i % 2 == 0 {
            kept.push(t);
        }
    }
    dev.sync().expect("sync");
    kept
}

#[test]
#[ignore = "a timing for a quiet machine: run with --ignored --nocapture"]
fn tiny_launch_host_cost_is_flat_in_the_device_state() {
    let dev = Device::new().expect("a device");
    println!("device: {}", dev.info().name);
    let t = Tensor::from_slice(&dev, &vec![0.0; 1024], &[1024]).expect("upload");
    tiny_launch_cost(&dev, &t, 1000, 3);
    let (fresh_record, fresh_total) = tiny_launch_cost(&dev, &t, 1000, 9);
    println!("fresh device: {fresh_record:.2} us/launch recording, {fresh_total:.2} with the wait");
    let kept = grow_state(&dev, 400, 2000);
    let s = dev.stats();
    println!(
        "state: {} pipelines, {} live tensors, {} pooled bytes, {} launches so far",
        s.pipelines_created,
        kept.len(),
        s.bytes_pooled,
        s.launches
    );
    tiny_launch_cost(&dev, &t, 1000, 3);
    let (grown_record, grown_total) = tiny_launch_cost(&dev, &t, 1000, 9);
    println!("grown device: {grown_record:.2} us/launch recording, {grown_total:.2} with the wait");
    // Every timed launch ran: the CPU function applied as often gives the same value.
    let mut want = 0.0;
    for _ in 0..(3 + 9 + 3 + 9) * 1000 {
        add_one(&mut want);
    }
    assert_eq!(t.to_vec().expect("read")[0], want);
    assert!(
        grown_record < fresh_record * 1.5,
        "recording a launch went from {fresh_record:.2} to {grown_record:.2} us as the device's state grew"
    );
}

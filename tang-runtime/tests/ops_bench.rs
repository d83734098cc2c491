//! Throughput of the layout ops against a plain copy of the same bytes, for a real GPU
//! (ignored in `cargo test`: timings on a shared CI machine say nothing). Run:
//!
//! ```text
//! cargo test --release -p tang-runtime --test ops_bench -- --ignored --nocapture
//! ```
//!
//! Each case prints milliseconds per op and its ratio to the copy (read + write of the
//! same bytes through `ops::clone`); the attention permute's target is >= 0.70 of copy.

use std::time::Instant;

use tang_runtime::{Device, Error, Tensor, ops};

/// Median milliseconds per call of `op` over 11 timed batches of `reps` calls each.
fn time(dev: &Device, reps: usize, mut op: impl FnMut() -> Result<Tensor, Error>) -> f64 {
    for _ in 0..3 {
        op().expect("warm-up");
    }
    dev.sync().expect("sync");
    let mut ms: Vec<f64> = (0..11)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                op().expect("op");
            }
            dev.sync().expect("sync");
            t.elapsed().as_secs_f64() * 1e3 / reps as f64
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

#[test]
#[ignore = "a benchmark for a real GPU: run with --ignored --nocapture"]
fn layout_ops_against_copy_bandwidth() {
    let dev = Device::new().expect("a GPU");
    println!("device: {}", dev.info().name);
    let cases: [(&str, &[usize], &[usize]); 3] = [
        (
            "permute [64,256,6,64] -> [64,6,256,64]",
            &[64, 256, 6, 64],
            &[0, 2, 1, 3],
        ),
        (
            "permute [64,6,256,64] -> [64,256,6,64]",
            &[64, 6, 256, 64],
            &[0, 2, 1, 3],
        ),
        (
            "permute [64,512,768] -> [64,768,512]",
            &[64, 512, 768],
            &[0, 2, 1],
        ),
    ];
    for (name, shape, dims) in cases {
        let n: usize = shape.iter().product();
        let x = Tensor::zeros(&dev, shape).expect("alloc");
        let reps = 20;
        let copy = time(&dev, reps, || ops::clone(&x));
        let permute = time(&dev, reps, || ops::permute(&x, dims));
        let gbps = |ms: f64| 2.0 * 4.0 * n as f64 / ms / 1e6;
        println!(
            "{name}: {permute:.3} ms ({:.0} GB/s), copy {copy:.3} ms ({:.0} GB/s), ratio {:.2}",
            gbps(permute),
            gbps(copy),
            copy / permute
        );
    }
}

//! Throughput of the layout ops against a plain copy of the same bytes, for a real GPU
//! (ignored in `cargo test`: timings on a shared CI machine say nothing). Run:
//!
//! ```text
//! cargo test --release -p tang-runtime --test ops_bench -- --ignored --nocapture
//! ```
//!
//! Each layout case prints milliseconds per op and its ratio to the copy (read + write of
//! the same bytes through `ops::clone`); the attention permute's target is >= 0.70 of
//! copy. The conv2d case prints milliseconds for a ResNet-style layer. The broadcast-add
//! case prints `[R, R] + [R, R]`, `+ [R, 1]` and `+ [R]` against the copy of `[R, R]`
//! (`TANG_BENCH_ROWS` sets R, default 4096; the target is >= 0.85 of copy).

use std::time::Instant;

use tang_runtime::ops::TileConfig;
use tang_runtime::ops::conv_gemm;
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

/// A ResNet-style layer (batch 64, 64 -> 64 channels, 56x56, 3x3, padding 1, bias) on a
/// real GPU: forward, backward (grad_input, grad_weight, grad_bias) and forward +
/// backward in ms, with the automatic tile and then with other tiles forced (ignored in
/// `cargo test`: timings on a shared CI machine say nothing).
/// Run, with PyTorch's counterpart (fp32, TF32 off) in the same run:
///
/// ```text
/// cargo test --release -p tang-runtime --test ops_bench -- --ignored --nocapture conv2d
/// python3 examples/scripts/torch_ops_anchors.py
/// ```
#[test]
#[ignore = "a benchmark for a real GPU: run with --ignored --nocapture"]
fn conv2d_resnet_layer_timing() {
    let dev = Device::new().expect("a GPU");
    println!("device: {}", dev.info().name);
    let (xs, ws) = ([64, 64, 56, 56], [64, 64, 3, 3]);
    let cv = ops::Conv2d {
        padding: [1, 1],
        ..ops::Conv2d::default()
    };
    let t = |shape: &[usize], seed| {
        let n = shape.iter().product();
        Tensor::from_slice(&dev, &tang_testing::random(n, seed), shape).expect("upload")
    };
    let (x, w, b) = (t(&xs, 1), t(&ws, 2), t(&[64], 3));
    let g = t(&xs, 4);
    // 2 · N · C_out · OH · OW · C_in · kh · kw per product; the backward has two.
    let flops = 2.0 * 64.0 * 64.0 * 56.0 * 56.0 * 64.0 * 9.0;
    let rate = |products: f64, ms: f64| products * flops / ms / 1e9;
    let run = |label: &str| {
        let fwd = time(&dev, 10, || ops::conv2d(&x, &w, Some(&b), &cv));
        let bwd = time(&dev, 10, || {
            Ok(ops::conv2d_backward(&g, &x, &w, Some(&b), &cv)?.grad_input)
        });
        let both = time(&dev, 10, || {
            ops::conv2d(&x, &w, Some(&b), &cv)?;
            Ok(ops::conv2d_backward(&g, &x, &w, Some(&b), &cv)?.grad_input)
        });
        println!(
            "conv2d [64,64,56,56] * [64,64,3,3] pad 1, {label}: forward {fwd:.3} ms ({:.1} TFLOP/s), backward {bwd:.3} ms ({:.1} TFLOP/s), forward+backward {both:.3} ms ({:.1} TFLOP/s)",
            rate(1.0, fwd),
            rate(2.0, bwd),
            rate(3.0, both)
        );
    };
    run("automatic tile");
    // Other tiles for every product, for tuning the automatic choice.
    let tile = |bm, bn, bk| TileConfig {
        bm,
        bn,
        bk,
        tm: 8,
        tn: 8,
    };
    for t in [
        tile(64, 128, 16),
        tile(64, 64, 8),
        tile(128, 64, 16),
        tile(128, 128, 16),
    ] {
        if t.fits(&dev) {
            conv_gemm::with_tile(t, || run(&format!("tile {}x{}x{}", t.bm, t.bn, t.bk)));
        }
    }
}

#[test]
#[ignore = "a benchmark for a real GPU: run with --ignored --nocapture"]
fn broadcast_add_against_copy_bandwidth() {
    let dev = Device::new().expect("a GPU");
    println!("device: {}", dev.info().name);
    let r: usize = std::env::var("TANG_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4096);
    let a = Tensor::from_slice(&dev, &tang_testing::random(r * r, 1), &[r, r]).expect("upload");
    let reps = 20;
    let copy = time(&dev, reps, || ops::clone(&a));
    let gbps = |ms: f64, floats: usize| 4.0 * floats as f64 / ms / 1e6;
    println!(
        "copy [{r},{r}]: {copy:.3} ms ({:.1} GB/s)",
        gbps(copy, 2 * r * r)
    );
    for (kind, shape) in [("same", vec![r, r]), ("col", vec![r, 1]), ("row", vec![r])] {
        let len: usize = shape.iter().product();
        let b = Tensor::from_slice(&dev, &tang_testing::random(len, 2), &shape).expect("upload");
        let add = time(&dev, reps, || ops::add(&a, &b));
        println!(
            "broadcast_add_{r}x{r}_{kind}: {add:.3} ms ({:.1} GB/s), copy/add {:.2}",
            gbps(add, 2 * r * r + len),
            copy / add
        );
    }
}

//! Closures over tensors: `map` and `fused_forward_backward` against CPU results.

mod runtime_support;

use runtime_support::{devices, random};
use tang_runtime::Tensor;

#[test]
fn map_matches_the_cpu_and_is_cached() {
    for dev in devices() {
        let x = random(1000, 1);
        let y = random(1000, 2);
        let xt = Tensor::from_slice(&dev, &x, &[10, 100]).unwrap();
        let yt = Tensor::from_slice(&dev, &y, &[10, 100]).unwrap();
        let out = dev.map(&[&xt, &yt], |v| v[0] * v[1] + 1.0).unwrap();
        assert_eq!(out.shape(), &[10, 100]);
        let got = out.to_vec().unwrap();
        for i in 0..1000 {
            let want = x[i] * y[i] + 1.0;
            assert!(
                (got[i] - want).abs() <= 1e-6 * want.abs().max(1.0),
                "{i}: {} vs {want}",
                got[i]
            );
        }
        let s = dev.stats();
        for _ in 0..5 {
            dev.map(&[&xt, &yt], |v| v[0] * v[1] + 1.0).unwrap();
        }
        assert_eq!(dev.stats().pipelines_created, s.pipelines_created);
    }
}

#[test]
fn fused_forward_backward_gives_value_and_partials() {
    for dev in devices() {
        let x = random(513, 3);
        let y = random(513, 4);
        let xt = Tensor::from_slice(&dev, &x, &[513]).unwrap();
        let yt = Tensor::from_slice(&dev, &y, &[513]).unwrap();
        let outs = dev
            .fused_forward_backward(&[&xt, &yt], |v| v[0] * v[0] * v[1] + v[1].sin())
            .unwrap();
        assert_eq!(outs.len(), 3);
        let (f, dx, dy) = (
            outs[0].to_vec().unwrap(),
            outs[1].to_vec().unwrap(),
            outs[2].to_vec().unwrap(),
        );
        for i in 0..513 {
            let (a, b) = (x[i] as f64, y[i] as f64);
            let close = |g: f32, w: f64| (g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0);
            assert!(close(f[i], a * a * b + b.sin()), "f {i}");
            assert!(close(dx[i], 2.0 * a * b), "dx {i}");
            assert!(close(dy[i], a * a + b.cos()), "dy {i}");
        }
    }
}

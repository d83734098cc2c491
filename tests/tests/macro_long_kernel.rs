//! A kernel long enough that its WGSL is split into several functions (more than 256
//! statements, see `tang-expr/src/codegen/parts.rs`) computes on the GPU what its CPU
//! function computes: values and conditions carried from part to part, and a value of the
//! first part read by the last.

use tang_runtime::prelude::*;

/// 450 operations once unrolled: a long chain, a condition made at the start and used at
/// the end, and the input read again at the end.
#[fused_grad]
fn long_chain(x: f32, y: f32) -> f32 {
    let start = x * 0.5;
    let positive = x > 0.0;
    let mut acc = start;
    for i in 0..150 {
        acc = acc * 0.999 + (i as f32) * 1e-4 * y;
    }
    if positive {
        acc.tanh() + start
    } else {
        acc - x
    }
}

#[test]
fn a_kernel_split_into_parts_matches_its_cpu_function() {
    assert!(
        long_chain::WGSL.contains("fn part_"),
        "the kernel is not split"
    );
    assert!(long_chain::GRAD_WGSL.contains("fn part_"));
    let dev = Device::new().unwrap();
    let n = 37;
    let xs: Vec<f32> = (0..n).map(|i| (i as f32 - 18.0) * 0.37).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1.0 - i as f32 * 0.05).collect();
    let x = Tensor::from_slice(&dev, &xs, &[n]).unwrap();
    let y = Tensor::from_slice(&dev, &ys, &[n]).unwrap();
    let got = long_chain::launch(&dev, &x, &y).unwrap().to_vec().unwrap();
    let (value, [dx, dy]) = long_chain::launch_grad(&dev, &x, &y).unwrap();
    let (value, dx, dy) = (
        value.to_vec().unwrap(),
        dx.to_vec().unwrap(),
        dy.to_vec().unwrap(),
    );
    for k in 0..n {
        let want = long_chain(xs[k], ys[k]);
        let (v, [wx, wy]) = long_chain::grad(xs[k], ys[k]);
        let near = |a: f32, b: f32| (a - b).abs() <= 1e-4 * (1.0 + b.abs());
        assert!(near(got[k], want), "value at {k}: {} vs {want}", got[k]);
        assert!(near(value[k], v), "grad value at {k}");
        assert!(near(dx[k], wx) && near(dy[k], wy), "partials at {k}");
    }
}

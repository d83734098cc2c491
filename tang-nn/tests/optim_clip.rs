//! Gradient clipping on the device: the global norm against an f64 reference, PyTorch's
//! NaN behaviour, the coefficient taken inside the update kernels, and backward -> clip
//! -> step with no read back to the host (the device's count of host reads).

mod optim_common;

use optim_common::*;
use tang_nn::optim::{Adam, AdamOptions, OptimError, clip_grad_norm_, grad_norm, scale_grads_};
use tang_nn::tang_runtime::{Device, Tensor};

/// Deterministic values in [-scale, scale) (SplitMix64).
fn values(seed: u64, n: usize, scale: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

#[test]
fn the_host_read_counter_counts_reads() {
    let dev = Device::new().unwrap();
    let t = Tensor::from_slice(&dev, &[1.0, 2.0], &[2]).unwrap();
    let before = dev.stats().host_reads;
    t.to_vec().unwrap();
    t.item().unwrap_err();
    t.to_vec().unwrap();
    assert_eq!(dev.stats().host_reads, before + 2);
}

#[test]
fn global_norm_matches_an_f64_reference() {
    let dev = Device::new().unwrap();
    // Sizes past one workgroup and one row kernel, an empty tensor, a scalar.
    let shapes: [&[usize]; 5] = [&[3000], &[37, 5], &[0], &[1], &[2, 3, 700]];
    let host: Vec<Vec<f32>> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| values(i as u64 + 1, s.iter().product(), 0.5))
        .collect();
    let grads: Vec<Tensor> = host
        .iter()
        .zip(shapes)
        .map(|(v, s)| Tensor::from_slice(&dev, v, s).unwrap())
        .collect();
    let exact: f64 = host
        .iter()
        .flatten()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    let max_norm = 2.0;
    let total = clip_grad_norm_(&grads, max_norm).unwrap().item().unwrap();
    let rel = (f64::from(total) - exact).abs() / exact;
    println!("total norm {total} vs f64 {exact}: relative difference {rel:e}");
    assert!(rel < 1e-6);
    // PyTorch's coefficient, in f32 as its tensors compute it.
    let coef = (max_norm as f32 / (total + 1e-6)).min(1.0);
    assert!(coef < 1.0);
    for (g, h) in grads.iter().zip(&host) {
        for (a, b) in g.to_vec().unwrap().iter().zip(h) {
            assert_eq!(*a, *b * coef, "clipped value");
        }
    }
}

#[test]
fn a_small_norm_is_left_alone_and_nan_propagates_as_in_pytorch() {
    let dev = Device::new().unwrap();
    let g = Tensor::from_slice(&dev, &[0.3, -0.4], &[2]).unwrap();
    let norm = grad_norm([&g], 1.0).unwrap();
    assert_eq!(norm.clip_coef.item().unwrap(), 1.0);
    assert!((norm.total_norm.item().unwrap() - 0.5).abs() < 1e-7);
    // clip_coef = clamp(max_norm / (NaN + 1e-6), max=1) = NaN, and every gradient
    // becomes NaN (PyTorch's default error_if_nonfinite=False).
    let bad = Tensor::from_slice(&dev, &[f32::NAN, 1.0], &[2]).unwrap();
    let total = clip_grad_norm_([&g, &bad], 1.0).unwrap();
    assert!(total.item().unwrap().is_nan());
    assert!(g.to_vec().unwrap().iter().all(|x| x.is_nan()));
}

#[test]
fn backward_clip_step_reads_nothing_and_the_fused_coefficient_equals_clipping_first() {
    let dev = Device::new().unwrap();
    let fx = OptimFixture::load();
    let n = fx.p0.len();
    let run = |fused: bool| -> (Vec<f32>, u64) {
        let p = Tensor::from_slice(&dev, &fx.p0, &[n]).unwrap();
        let b = Tensor::from_slice(&dev, &fx.p0[..7], &[7]).unwrap();
        let mut opt =
            Adam::new([("w", p.clone()), ("b", b.clone())], AdamOptions::default()).unwrap();
        let mut reads = 0;
        for g in &fx.grads[..10] {
            // Gradients as backward leaves them: on the device, scaled up so that clipping bites.
            let gw = Tensor::from_slice(&dev, &g.iter().map(|x| x * 3.0).collect::<Vec<_>>(), &[n])
                .unwrap();
            let gb = Tensor::from_slice(&dev, &g[..7], &[7]).unwrap();
            let before = dev.stats().host_reads;
            if fused {
                let norm = grad_norm([&gw, &gb], 1.0).unwrap();
                opt.step_with_clip_coef(&[("w", &gw), ("b", &gb)], &norm.clip_coef)
                    .unwrap();
            } else {
                clip_grad_norm_([&gw, &gb], 1.0).unwrap();
                opt.step(&[("w", &gw), ("b", &gb)]).unwrap();
            }
            reads += dev.stats().host_reads - before;
        }
        let mut out = p.to_vec().unwrap();
        out.extend(b.to_vec().unwrap());
        (out, reads)
    };
    let (clipped_first, reads_a) = run(false);
    let (fused, reads_b) = run(true);
    println!(
        "host reads between clip and step over 10 steps: {reads_a} (clip in place), {reads_b} (coefficient in the update)"
    );
    assert_eq!(reads_a, 0);
    assert_eq!(reads_b, 0);
    assert_eq!(differing(std::slice::from_ref(&clipped_first), &[fused]), 0);
    assert_ne!(
        clipped_first[..n],
        fx.p0[..],
        "the steps moved the parameters"
    );
}

#[test]
fn bad_arguments_are_typed_errors() {
    let dev = Device::new().unwrap();
    let g = Tensor::from_slice(&dev, &[1.0, 2.0], &[2]).unwrap();
    assert!(matches!(
        clip_grad_norm_([&g], -1.0),
        Err(OptimError::InvalidOption {
            option: "max_norm",
            ..
        })
    ));
    assert!(matches!(
        clip_grad_norm_([&g], f64::NAN),
        Err(OptimError::InvalidOption {
            option: "max_norm",
            ..
        })
    ));
    // PyTorch returns a zero norm on the CPU; tang's norm needs a device, so it says
    // what to do instead (the divergence is documented on clip_grad_norm_).
    let e = clip_grad_norm_(std::iter::empty(), 1.0).unwrap_err();
    assert!(
        matches!(
            e,
            OptimError::NoGradients {
                function: "clip_grad_norm_"
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("is_empty"), "{e}");
    assert!(matches!(
        grad_norm(std::iter::empty(), 1.0),
        Err(OptimError::NoGradients { .. })
    ));
    let ids = Tensor::from_u32(&dev, &[1, 2], &[2]).unwrap();
    assert!(matches!(
        clip_grad_norm_([&g, &ids], 1.0),
        Err(OptimError::NotF32 { .. })
    ));
    let e = scale_grads_([&g], &g).unwrap_err();
    assert!(matches!(e, OptimError::NotScalar { .. }), "{e}");
    assert!(e.to_string().contains("one-element"), "{e}");
}

#[test]
fn roots_and_quotients_are_correctly_rounded_on_the_gpu() {
    use tang_nn::optim::kernels::{clip_coefficient, norm_from_sum_of_squares};
    let dev = Device::new().unwrap();
    let mut xs: Vec<f32> = values(7, 20_000, 1000.0)
        .iter()
        .map(|x| x.abs() + 1.0)
        .collect();
    xs.extend(values(8, 2_000, 1.0).iter().map(|x| x.abs() * 1e-20));
    xs.extend([0.0, 1e-30, 3e38, f32::INFINITY, f32::NAN, 2.0, 4.0]);
    // Norms past 2^126, whose reciprocal is subnormal (the divisor is scaled there).
    xs.extend(values(9, 200, 1.0).iter().map(|x| (x.abs() + 1.0) * 9e37));
    let n = xs.len();
    let x = Tensor::from_slice(&dev, &xs, &[n]).unwrap();
    let roots = norm_from_sum_of_squares::launch(&dev, &x, 1.0)
        .unwrap()
        .to_vec()
        .unwrap();
    let wrong_roots = (0..n)
        .filter(|&i| {
            roots[i].to_bits() != xs[i].sqrt().to_bits() && !(roots[i].is_nan() && xs[i].is_nan())
        })
        .count();
    let max_norm = 0.7f32;
    let coefs = clip_coefficient::launch(&dev, &x, max_norm, 1.0)
        .unwrap()
        .to_vec()
        .unwrap();
    // A GPU may flush a subnormal result to zero (WGSL permits it; NVIDIA does): the
    // coefficient of a norm past 2^126 / 0.7 is subnormal, and 0 is accepted for it.
    let flushed = |got: f32, want: f32| want.is_subnormal() && got == 0.0;
    let wrong_coefs = (0..n)
        .filter(|&i| {
            let c = max_norm / (xs[i] + 1e-6);
            let want = if c > 1.0 { 1.0 } else { c };
            coefs[i].to_bits() != want.to_bits()
                && !(coefs[i].is_nan() && want.is_nan())
                && !flushed(coefs[i], want)
        })
        .count();
    let subnormal = xs
        .iter()
        .filter(|&&x| (max_norm / (x + 1e-6)).is_subnormal())
        .count();
    println!(
        "{wrong_roots} of {n} square roots and {wrong_coefs} of {n} coefficients differ from the CPU's correctly rounded ones ({subnormal} coefficients are subnormal, where 0 is accepted)"
    );
    assert!(subnormal > 0, "the cases include a subnormal coefficient");
    assert_eq!(wrong_roots, 0);
    assert_eq!(wrong_coefs, 0);
}

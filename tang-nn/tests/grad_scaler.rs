//! The gradient scaler against PyTorch's algorithm: the trajectory of scales and skipped
//! steps over a scripted sequence of overflowing steps (the expected values written out
//! from `_amp_update_scale_`), the per-optimizer stages (unscale once, step once, update
//! after a check), unscale then clip, and the state dict.

use tang_nn::amp::{AmpError, GradScaler, GradScalerOptions, GradScalerState};
use tang_nn::optim::{Sgd, SgdOptions, grad_norm};
use tang_nn::tang_runtime::{Device, Tensor};

/// An SGD optimizer (lr 1) over one parameter of `n` zeros, and the parameter.
fn sgd(dev: &Device, n: usize) -> (tang_nn::optim::Optimizer<SgdOptions>, Tensor) {
    let w = Tensor::zeros(dev, &[n]).unwrap();
    let options = SgdOptions {
        lr: 1.0,
        ..SgdOptions::default()
    };
    (Sgd::new([("w", w.clone())], options).unwrap(), w)
}

#[test]
fn scale_and_skips_follow_pytorchs_update_rule() {
    let dev = Device::new().unwrap();
    let (mut opt, w) = sgd(&dev, 3);
    let options = GradScalerOptions {
        init_scale: 1024.0,
        growth_interval: 3,
        ..GradScalerOptions::default()
    };
    let mut scaler = GradScaler::new(options).unwrap();
    // Which steps overflow (an inf, a NaN, or an inf among finite values), and what
    // `_amp_update_scale_` gives after each, from its rule: on an overflow the scale
    // halves and the tracker restarts; otherwise the tracker counts up and at 3 the scale
    // doubles and the tracker restarts.
    let script: [(Option<f32>, f64, bool); 10] = [
        (None, 1024.0, true),                 // tracker 1
        (None, 1024.0, true),                 // tracker 2
        (None, 2048.0, true),                 // tracker 3 = interval: grow
        (Some(f32::INFINITY), 1024.0, false), // backoff
        (Some(f32::NAN), 512.0, false),       // backoff
        (None, 512.0, true),                  // tracker 1
        (Some(-f32::INFINITY), 256.0, false), // backoff, tracker restarts
        (None, 256.0, true),                  // 1
        (None, 256.0, true),                  // 2
        (None, 512.0, true),                  // 3: grow
    ];
    let mut expected_w = vec![0.0f32; 3];
    for (i, (bad, scale_after, taken)) in script.into_iter().enumerate() {
        let scale = scaler.get_scale() as f32;
        // The gradient of the scaled loss: (1, 2, 3) times the scale, one element bad.
        let mut g = vec![scale, 2.0 * scale, 3.0 * scale];
        if let Some(b) = bad {
            g[1] = b;
        }
        let g = Tensor::from_slice(&dev, &g, &[3]).unwrap();
        let stepped = scaler.step(&mut opt, &[("w", &g)]).unwrap();
        scaler.update().unwrap();
        assert_eq!(stepped, taken, "step {i}: taken");
        assert_eq!(scaler.get_scale(), scale_after, "step {i}: scale");
        if taken {
            // The optimizer saw the unscaled gradient (1, 2, 3).
            for (e, d) in expected_w.iter_mut().zip([1.0, 2.0, 3.0]) {
                *e -= d;
            }
            assert_eq!(g.to_vec().unwrap(), [1.0, 2.0, 3.0], "step {i}: unscaled");
        }
        assert_eq!(w.to_vec().unwrap(), expected_w, "step {i}: parameter");
    }
    assert_eq!(
        scaler.state_dict().map(|s| s.growth_tracker),
        Some(0),
        "the last step grew the scale"
    );
}

#[test]
fn the_scale_does_not_grow_past_f32() {
    let dev = Device::new().unwrap();
    let (mut opt, _) = sgd(&dev, 1);
    let options = GradScalerOptions {
        init_scale: f64::from(f32::MAX),
        growth_interval: 1,
        ..GradScalerOptions::default()
    };
    let mut scaler = GradScaler::new(options).unwrap();
    let g = Tensor::zeros(&dev, &[1]).unwrap();
    scaler.step(&mut opt, &[("w", &g)]).unwrap();
    scaler.update().unwrap();
    // PyTorch keeps the scale when the grown one would be infinite.
    assert_eq!(scaler.get_scale(), f64::from(f32::MAX));
    assert_eq!(scaler.state_dict().unwrap().growth_tracker, 0);
}

#[test]
fn unscale_once_per_iteration_and_step_does_not_unscale_again() {
    let dev = Device::new().unwrap();
    let (mut opt, w) = sgd(&dev, 2);
    let mut scaler = GradScaler::new(GradScalerOptions {
        init_scale: 4.0,
        ..GradScalerOptions::default()
    })
    .unwrap();
    let g = Tensor::from_slice(&dev, &[4.0, -8.0], &[2]).unwrap();
    let grads = [("w", &g)];
    scaler.unscale_(&opt, &grads).unwrap();
    assert_eq!(g.to_vec().unwrap(), [1.0, -2.0]);
    // A second unscale_ is PyTorch's RuntimeError, and changes nothing.
    assert!(matches!(
        scaler.unscale_(&opt, &grads),
        Err(AmpError::AlreadyUnscaled)
    ));
    assert_eq!(g.to_vec().unwrap(), [1.0, -2.0]);
    // step after unscale_ uses the unscaled gradients as they are.
    assert!(scaler.step(&mut opt, &grads).unwrap());
    assert_eq!(w.to_vec().unwrap(), [-1.0, 2.0]);
    assert!(matches!(
        scaler.step(&mut opt, &grads),
        Err(AmpError::AlreadyStepped)
    ));
    assert!(matches!(
        scaler.unscale_(&opt, &grads),
        Err(AmpError::UnscaleAfterStep)
    ));
    scaler.update().unwrap();
    // A new iteration: unscale_ and step are allowed again.
    let g2 = Tensor::from_slice(&dev, &[4.0, 4.0], &[2]).unwrap();
    assert!(scaler.step(&mut opt, &[("w", &g2)]).unwrap());
    assert_eq!(w.to_vec().unwrap(), [-2.0, 1.0]);
    scaler.update().unwrap();
    // update without a check since the last one has nothing to decide from.
    assert!(matches!(scaler.update(), Err(AmpError::NoInfChecks)));
}

#[test]
fn two_optimizers_keep_their_own_stage_and_share_the_backoff() {
    let dev = Device::new().unwrap();
    let (mut a, wa) = sgd(&dev, 1);
    let (mut b, wb) = sgd(&dev, 1);
    let mut scaler = GradScaler::new(GradScalerOptions {
        init_scale: 2.0,
        ..GradScalerOptions::default()
    })
    .unwrap();
    let ga = Tensor::from_slice(&dev, &[2.0], &[1]).unwrap();
    let gb = Tensor::from_slice(&dev, &[f32::INFINITY], &[1]).unwrap();
    assert!(scaler.step(&mut a, &[("w", &ga)]).unwrap());
    assert!(!scaler.step(&mut b, &[("w", &gb)]).unwrap());
    scaler.update().unwrap();
    assert_eq!(
        (wa.to_vec().unwrap(), wb.to_vec().unwrap()),
        (vec![-1.0], vec![0.0])
    );
    // One overflow among the optimizers backs the one scale off (PyTorch sums their
    // found_inf).
    assert_eq!(scaler.get_scale(), 1.0);
}

#[test]
fn clipping_after_unscale_clips_the_true_gradients() {
    let dev = Device::new().unwrap();
    let (mut opt, w) = sgd(&dev, 2);
    let mut scaler = GradScaler::new(GradScalerOptions::default()).unwrap();
    let s = scaler.get_scale() as f32;
    // The true gradient (3, 4) has norm 5; clipped to 1 it is (0.6, 0.8).
    let g = Tensor::from_slice(&dev, &[3.0 * s, 4.0 * s], &[2]).unwrap();
    scaler.unscale_(&opt, &[("w", &g)]).unwrap();
    let norm = grad_norm([&g], 1.0).unwrap();
    assert_eq!(norm.total_norm.to_vec().unwrap(), [5.0]);
    let taken = scaler
        .step_with_clip_coef(&mut opt, &[("w", &g)], &norm.clip_coef)
        .unwrap();
    scaler.update().unwrap();
    assert!(taken);
    let p = w.to_vec().unwrap();
    assert!(
        (p[0] + 0.6).abs() < 1e-6 && (p[1] + 0.8).abs() < 1e-6,
        "{p:?}"
    );
}

#[test]
fn the_inf_check_finds_one_bad_element_among_many_gradients() {
    let dev = Device::new().unwrap();
    // 70 parameters (more than one pack launch), one NaN in the last.
    let params: Vec<(String, Tensor)> = (0..70)
        .map(|i| (format!("p{i}"), Tensor::zeros(&dev, &[5 + i]).unwrap()))
        .collect();
    let mut opt = Sgd::new(params.clone(), SgdOptions::default()).unwrap();
    let grads: Vec<(String, Tensor)> = params
        .iter()
        .enumerate()
        .map(|(i, (name, p))| {
            let mut v = vec![2.0; p.len()];
            if i == 69 {
                v[3] = f32::NAN;
            }
            (
                name.clone(),
                Tensor::from_slice(&dev, &v, &[p.len()]).unwrap(),
            )
        })
        .collect();
    let mut scaler = GradScaler::new(GradScalerOptions {
        init_scale: 2.0,
        ..GradScalerOptions::default()
    })
    .unwrap();
    let before = dev.stats().host_reads;
    assert!(!scaler.step(&mut opt, &grads).unwrap());
    assert_eq!(dev.stats().host_reads - before, 1, "one flag read per step");
    scaler.update().unwrap();
    assert_eq!(scaler.get_scale(), 1.0);
    for (_, p) in &params {
        assert!(p.to_vec().unwrap().iter().all(|&v| v == 0.0), "skipped");
    }
    // Every finite gradient was unscaled all the same, as PyTorch's unscale_ does.
    assert_eq!(grads[0].1.to_vec().unwrap(), vec![1.0; 5]);
}

#[test]
fn a_disabled_scaler_passes_everything_through() {
    let dev = Device::new().unwrap();
    let (mut opt, w) = sgd(&dev, 1);
    let mut scaler = GradScaler::new(GradScalerOptions {
        enabled: false,
        ..GradScalerOptions::default()
    })
    .unwrap();
    let loss = tang_nn::Tensor::full(&dev, &[1], 3.0).unwrap();
    assert_eq!(scaler.scale(&loss).unwrap().to_vec().unwrap(), [3.0]);
    assert_eq!(scaler.get_scale(), 1.0);
    let g = Tensor::from_slice(&dev, &[f32::INFINITY], &[1]).unwrap();
    // No check when disabled: the optimizer steps as it is.
    assert!(scaler.step(&mut opt, &[("w", &g)]).unwrap());
    scaler.update().unwrap();
    assert_eq!(w.to_vec().unwrap(), [f32::NEG_INFINITY]);
    assert_eq!(scaler.state_dict(), None);
}

#[test]
fn the_state_dict_round_trips_through_json_with_pytorchs_keys() {
    let dev = Device::new().unwrap();
    let (mut opt, _) = sgd(&dev, 1);
    let options = GradScalerOptions {
        init_scale: 256.0,
        growth_interval: 5,
        ..GradScalerOptions::default()
    };
    let mut scaler = GradScaler::new(options).unwrap();
    let g = Tensor::from_slice(&dev, &[1.0], &[1]).unwrap();
    for _ in 0..2 {
        scaler.step(&mut opt, &[("w", &g)]).unwrap();
        scaler.update().unwrap();
    }
    let state = scaler.state_dict().unwrap();
    assert_eq!(
        state,
        GradScalerState {
            scale: 256.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 5,
            growth_tracker: 2,
        }
    );
    let json = serde_json::to_value(state).unwrap();
    for key in [
        "scale",
        "growth_factor",
        "backoff_factor",
        "growth_interval",
        "_growth_tracker",
    ] {
        assert!(json.get(key).is_some(), "{key} in {json}");
    }
    let back: GradScalerState = serde_json::from_value(json).unwrap();
    // A fresh scaler with other defaults takes all of it.
    let mut fresh = GradScaler::new(GradScalerOptions::default()).unwrap();
    fresh.load_state_dict(&back).unwrap();
    assert_eq!(fresh.state_dict(), Some(state));
    // Three more clean steps reach the interval of 5 from the restored count of 2.
    for _ in 0..3 {
        fresh.step(&mut opt, &[("w", &g)]).unwrap();
        fresh.update().unwrap();
    }
    assert_eq!(fresh.get_scale(), 512.0);
    // A state out of range is refused and changes nothing.
    let bad = GradScalerState {
        backoff_factor: 1.5,
        ..back
    };
    assert!(matches!(
        fresh.load_state_dict(&bad),
        Err(AmpError::InvalidOption {
            option: "backoff_factor",
            ..
        })
    ));
    assert_eq!(fresh.get_scale(), 512.0);
}

#[test]
fn options_out_of_range_are_refused() {
    for (options, name) in [
        (
            GradScalerOptions {
                init_scale: 0.0,
                ..GradScalerOptions::default()
            },
            "init_scale",
        ),
        (
            GradScalerOptions {
                init_scale: 1e39,
                ..GradScalerOptions::default()
            },
            "init_scale",
        ),
        (
            GradScalerOptions {
                growth_factor: 1.0,
                ..GradScalerOptions::default()
            },
            "growth_factor",
        ),
        (
            GradScalerOptions {
                backoff_factor: f64::NAN,
                ..GradScalerOptions::default()
            },
            "backoff_factor",
        ),
        (
            GradScalerOptions {
                growth_interval: 0,
                ..GradScalerOptions::default()
            },
            "growth_interval",
        ),
    ] {
        match GradScaler::new(options) {
            Err(AmpError::InvalidOption { option, .. }) => assert_eq!(option, name),
            other => panic!("{name}: {other:?}"),
        }
    }
}

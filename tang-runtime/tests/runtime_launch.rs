//! Elementwise launches against CPU results: batching, reads that flush, huge lengths,
//! broadcasting and in-place updates, with shader runtime checks on and off.

mod runtime_support;

use runtime_support::{add, axpy, coarse, devices, random, sgd, sum_diff};
use tang_runtime::{Device, Tensor};

#[test]
fn a_thousand_launches_then_one_read() {
    for dev in devices() {
        let k = add();
        let one = Tensor::full(&dev, &[1000], 1.0).unwrap();
        let mut acc = Tensor::from_slice(&dev, &random(1000, 1), &[1000]).unwrap();
        let mut want = random(1000, 1);
        for _ in 0..1000 {
            acc = dev.launch(k, &[&acc, &one], &[], &[]).unwrap().remove(0);
            for w in &mut want {
                *w += 1.0;
            }
        }
        assert_eq!(acc.to_vec().unwrap(), want);
    }
}

#[test]
fn interleaved_launches_and_reads_are_never_stale() {
    for dev in devices() {
        let k = axpy();
        // Coarse x and few-bit a: every product is exact, so the result is the same bits
        // whether or not the driver fuses the multiply-add (see `axpy`).
        let x = coarse(777, 2);
        let mut cur = random(777, 3);
        let xt = Tensor::from_slice(&dev, &x, &[777]).unwrap();
        let mut t = Tensor::from_slice(&dev, &cur, &[777]).unwrap();
        for step in 0..40 {
            let a = step as f32 * 0.25 - 3.0;
            t = dev.launch(k, &[&xt, &t], &[], &[a]).unwrap().remove(0);
            for (c, &xv) in cur.iter_mut().zip(&x) {
                *c += a * xv;
            }
            if step % 3 == 0 {
                assert_eq!(t.to_vec().unwrap(), cur, "step {step}");
            }
            // Uploads between launches (pool reuse) must not disturb pending work.
            let junk = Tensor::from_slice(&dev, &random(777, step), &[777]).unwrap();
            drop(junk);
        }
        assert_eq!(t.to_vec().unwrap(), cur);
    }
}

#[test]
fn twenty_million_and_three_elements() {
    let dev = Device::new().unwrap();
    let n = 20_000_003;
    let x = random(n, 4);
    let y = random(n, 5);
    let xt = Tensor::from_slice(&dev, &x, &[n]).unwrap();
    let yt = Tensor::from_slice(&dev, &y, &[n]).unwrap();
    let out = dev.launch(add(), &[&xt, &yt], &[], &[]).unwrap().remove(0);
    let got = out.to_vec().unwrap();
    assert_eq!(got.len(), n);
    let bad = (0..n).find(|&i| got[i] != x[i] + y[i]);
    assert_eq!(bad, None, "first mismatch");
}

#[test]
fn scalar_and_row_broadcast() {
    for dev in devices() {
        let (r, c) = (5, 7);
        let x = random(r * c, 6);
        let bias = random(c, 7);
        let xt = Tensor::from_slice(&dev, &x, &[r, c]).unwrap();
        let bt = Tensor::from_slice(&dev, &bias, &[c]).unwrap();
        let st = Tensor::from_slice(&dev, &[2.5], &[1]).unwrap();
        let row = dev.launch(add(), &[&xt, &bt], &[], &[]).unwrap().remove(0);
        assert_eq!(row.shape(), &[r, c]);
        let want: Vec<f32> = (0..r * c).map(|i| x[i] + bias[i % c]).collect();
        assert_eq!(row.to_vec().unwrap(), want);
        // Broadcast operand first: the launch shape still comes from the longest input.
        let sc = dev.launch(add(), &[&st, &xt], &[], &[]).unwrap().remove(0);
        assert_eq!(sc.shape(), &[r, c]);
        let want: Vec<f32> = x.iter().map(|v| 2.5 + v).collect();
        assert_eq!(sc.to_vec().unwrap(), want);
        let b2 = bt.reshape(&[1, c]).unwrap();
        let row2 = dev.launch(add(), &[&xt, &b2], &[], &[]).unwrap().remove(0);
        assert_eq!(row2.to_vec().unwrap(), row.to_vec().unwrap());
    }
}

#[test]
fn in_place_updates_and_multiple_outputs() {
    for dev in devices() {
        let n = 1025;
        let mut p = random(n, 8);
        let g = random(n, 9);
        let pt = Tensor::from_slice(&dev, &p, &[n]).unwrap();
        let gt = Tensor::from_slice(&dev, &g, &[n]).unwrap();
        for _ in 0..10 {
            // A power-of-two rate: exact products, the same bits with or without a fused
            // multiply-add (see `sgd`).
            let outs = dev.launch(sgd(), &[&gt], &[&pt], &[0.125]).unwrap();
            assert!(outs.is_empty());
            for (pv, gv) in p.iter_mut().zip(&g) {
                *pv -= 0.125 * gv;
            }
        }
        assert_eq!(pt.to_vec().unwrap(), p);
        let outs = dev.launch(sum_diff(), &[&pt, &gt], &[], &[]).unwrap();
        let s: Vec<f32> = p.iter().zip(&g).map(|(a, b)| a + b).collect();
        let d: Vec<f32> = p.iter().zip(&g).map(|(a, b)| a - b).collect();
        assert_eq!(outs[0].to_vec().unwrap(), s);
        assert_eq!(outs[1].to_vec().unwrap(), d);
    }
}

#[test]
fn empty_tensors_launch_and_read() {
    let dev = Device::new().unwrap();
    let e = Tensor::from_slice(&dev, &[], &[0, 3]).unwrap();
    let out = dev.launch(add(), &[&e, &e], &[], &[]).unwrap().remove(0);
    assert_eq!(out.shape(), &[0, 3]);
    assert!(out.to_vec().unwrap().is_empty());
}

#[test]
fn async_read_and_u32_round_trip() {
    let dev = Device::new().unwrap();
    let x = random(300, 10);
    let t = Tensor::from_slice(&dev, &x, &[300]).unwrap();
    let y = dev.launch(add(), &[&t, &t], &[], &[]).unwrap().remove(0);
    let got = pollster::block_on(y.to_vec_async()).unwrap();
    assert_eq!(got, x.iter().map(|v| v + v).collect::<Vec<_>>());
    let ids: Vec<u32> = (0..100).map(|i| i * 7919).collect();
    let it = Tensor::from_u32(&dev, &ids, &[10, 10]).unwrap();
    assert_eq!(it.to_vec_u32().unwrap(), ids);
    let z = Tensor::zeros(&dev, &[3, 3]).unwrap();
    assert_eq!(z.to_vec().unwrap(), vec![0.0; 9]);
    let f = Tensor::full(&dev, &[4], -1.5).unwrap();
    assert_eq!(f.to_vec().unwrap(), vec![-1.5; 4]);
    f.write(&[1.0, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(f.item().ok(), None);
    assert_eq!(f.to_vec().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn write_after_pending_launch_keeps_order() {
    let dev = Device::new().unwrap();
    let a = Tensor::from_slice(&dev, &[1.0, 2.0], &[2]).unwrap();
    let out = dev.launch(add(), &[&a, &a], &[], &[]).unwrap().remove(0);
    // The launch above is recorded, not submitted: the write must not overtake it.
    a.write(&[10.0, 20.0]).unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![2.0, 4.0]);
    assert_eq!(a.to_vec().unwrap(), vec![10.0, 20.0]);
}

#[test]
fn profiling_counts_every_dispatch_by_kernel_and_grid() {
    for dev in devices() {
        let needed = tang_runtime::wgpu::Features::TIMESTAMP_QUERY
            | tang_runtime::wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES;
        if !dev.info().features.contains(needed) {
            // The call must say why, not fail later.
            let e = dev.start_profiling().unwrap_err();
            assert!(matches!(e, tang_runtime::Error::Unsupported { .. }), "{e}");
            continue;
        }
        let k = add();
        let one = Tensor::full(&dev, &[4096], 1.0).unwrap();
        let mut acc = Tensor::full(&dev, &[4096], 0.0).unwrap();
        // Recorded before profiling starts: not counted.
        acc = dev.launch(k, &[&acc, &one], &[], &[]).unwrap().remove(0);
        let small = Tensor::full(&dev, &[10], 1.0).unwrap();
        dev.start_profiling().unwrap();
        // More dispatches than one query set holds (2048), so the profiler must submit
        // mid-batch and keep counting.
        for _ in 0..2100 {
            acc = dev.launch(k, &[&acc, &one], &[], &[]).unwrap().remove(0);
        }
        let _ = dev.launch(k, &[&small, &small], &[], &[]).unwrap();
        let profile = dev.finish_profiling().unwrap();
        assert_eq!(acc.to_vec().unwrap(), vec![2101.0; 4096]);
        assert_eq!(profile.launches(), 2101, "{profile:?}");
        assert_eq!(profile.kernels.len(), 2, "two grids, two rows: {profile:?}");
        // Sorted largest first: 2,100 launches over 4,096 elements take longer than one
        // over 10.
        assert_eq!(profile.kernels[0].launches, 2100, "{profile:?}");
        assert!(
            profile.kernels[0].gpu_ns > profile.kernels[1].gpu_ns,
            "{profile:?}"
        );
        assert!(profile.table(5, 1).contains("total"));
        // Profiling ended: a second finish is an error that says what to do.
        let e = dev.finish_profiling().unwrap_err();
        assert!(e.to_string().contains("start_profiling"), "{e}");
    }
}

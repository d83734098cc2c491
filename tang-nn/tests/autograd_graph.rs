//! Graph tests of the autograd engine: fan-in sums, a diamond, a parameter used twice, an
//! unreached parameter, `no_grad`, a 100,000-op chain, in-place writes after save, and the
//! buffer pool staying flat across steps.

use tang_nn::autograd::{Error, RawTensor, Tensor, no_grad};
use tang_nn::tang_runtime::Device;

fn param(dev: &Device, v: &[f32], shape: &[usize]) -> Tensor {
    Tensor::parameter(RawTensor::from_slice(dev, v, shape).unwrap())
}

fn grad_of(grads: &tang_nn::autograd::Gradients, t: &Tensor) -> Vec<f32> {
    grads.get(t).expect("a gradient").to_vec().unwrap()
}

#[test]
fn fan_in_is_summed() {
    let dev = tang_testing::device();
    let a = param(&dev, &[1.0, -2.0, 3.0], &[3]);
    let b = a.add(&a).unwrap();
    let c = b.add(&b).unwrap();
    assert_eq!(c.to_vec().unwrap(), vec![4.0, -8.0, 12.0]);
    let grads = c.sum_all().unwrap().backward().unwrap();
    assert_eq!(grad_of(&grads, &a), vec![4.0; 3]);
    assert_eq!(grads.len(), 1);
}

#[test]
fn diamond_and_parameter_used_twice() {
    let dev = tang_testing::device();
    let a = param(&dev, &[0.5, -1.5], &[2]);
    // a -> (2a, 3a) -> 2a + 3a - a: d/da = 4 through three paths.
    let left = a.mul_scalar(2.0).unwrap();
    let right = a.mul_scalar(3.0).unwrap();
    let d = left.add(&right).unwrap().sub(&a).unwrap();
    let grads = d.sum_all().unwrap().backward().unwrap();
    assert_eq!(grad_of(&grads, &a), vec![4.0, 4.0]);

    // w used twice in one matmul: loss = sum(w · w), d/dw = (1 wᵀ + wᵀ 1).
    let w = param(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let grads = w.matmul(&w).unwrap().sum_all().unwrap().backward().unwrap();
    // d/dw_ij sum_k,l (w w)_kl = sum_l w_jl + sum_k w_ki
    let want = [
        1.0 + 2.0 + 1.0 + 3.0,
        3.0 + 4.0 + 1.0 + 3.0,
        1.0 + 2.0 + 2.0 + 4.0,
        3.0 + 4.0 + 2.0 + 4.0,
    ];
    assert_eq!(grad_of(&grads, &w), want.to_vec());
}

#[test]
fn unreached_parameter_has_no_gradient_and_constants_none() {
    let dev = tang_testing::device();
    let used = param(&dev, &[1.0, 2.0], &[2]);
    let unused = param(&dev, &[3.0, 4.0], &[2]);
    let x = Tensor::constant(RawTensor::from_slice(&dev, &[5.0, 6.0], &[2]).unwrap());
    let _other_branch = unused.mul_scalar(2.0).unwrap();
    let grads = used.add(&x).unwrap().sum_all().unwrap().backward().unwrap();
    assert!(grads.get(&unused).is_none());
    assert!(grads.get(&x).is_none());
    assert_eq!(grad_of(&grads, &used), vec![1.0, 1.0]);
    assert_eq!(grads.len(), 1);
}

#[test]
fn no_grad_records_nothing() {
    let dev = tang_testing::device();
    let w = param(&dev, &[1.0, 2.0], &[2]);
    let y = no_grad(|| w.mul_scalar(2.0).unwrap().sum_all().unwrap());
    assert!(!y.requires_grad());
    assert!(!y.has_grad_fn());
    assert_eq!(y.backward().unwrap_err(), Error::NoGradient);
    // Recording is back on after the closure.
    assert!(w.mul_scalar(2.0).unwrap().has_grad_fn());
}

#[test]
fn second_backward_reports_freed_graph() {
    let dev = tang_testing::device();
    let w = param(&dev, &[1.0, 2.0], &[2]);
    let loss = w.relu().unwrap().sum_all().unwrap();
    loss.backward().unwrap();
    assert!(!loss.has_grad_fn(), "saved state freed after backward");
    assert_eq!(loss.backward().unwrap_err(), Error::GraphFreed);
}

const CHAIN: usize = 100_000;

/// A chain of `CHAIN` reshapes (views: no kernel per op, so the test is about the graph).
fn long_chain(a: &Tensor) -> Tensor {
    let mut x = a.clone();
    for i in 0..CHAIN {
        let shape: &[usize] = if i % 2 == 0 { &[3, 2] } else { &[2, 3] };
        x = x.reshape(shape).unwrap();
    }
    x
}

#[test]
fn hundred_thousand_op_chain_backward_and_drop() {
    let dev = tang_testing::device();
    let a = param(&dev, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let x = long_chain(&a);
    let grads = x
        .mul_scalar(3.0)
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(grad_of(&grads, &a), vec![3.0; 6]);
    drop(x);
    // An unbackpropagated chain dropped from its end unlinks in a loop.
    let y = long_chain(&a);
    drop(y);
}

#[test]
fn in_place_write_after_save_is_caught() {
    let dev = tang_testing::device();
    let w = param(&dev, &[1.0, -1.0, 2.0, 0.5], &[2, 2]);
    let x = Tensor::constant(RawTensor::from_slice(&dev, &[1.0, 2.0], &[1, 2]).unwrap());
    let loss = x.matmul(&w).unwrap().sum_all().unwrap();
    x.fill_(0.0).unwrap(); // matmul saved x for dw
    match loss.backward() {
        Err(Error::ModifiedAfterSave {
            op: "matmul",
            saved: 0,
            now: 1,
        }) => {}
        other => panic!("expected ModifiedAfterSave, got {other:?}"),
    }

    // Through a view: a reshape shares the counter of its input.
    let h = w.mul_scalar(1.0).unwrap();
    let r = h.relu().unwrap().sum_all().unwrap();
    let view = h.reshape(&[4]).unwrap();
    assert!(matches!(
        view.add_(&view, 1.0),
        Err(Error::InPlaceOnGraph { op: "add_" })
    ));
    no_grad(|| view.mul_(2.0)).unwrap();
    assert!(matches!(
        r.backward(),
        Err(Error::ModifiedAfterSave { op: "relu", .. })
    ));
}

/// One step of a small MLP: forward, cross-entropy, backward.
fn step(w1: &Tensor, w2: &Tensor, x: &Tensor, y: &Tensor) -> tang_nn::autograd::Gradients {
    let h = x.matmul(w1).unwrap().relu().unwrap();
    let loss = h.matmul(w2).unwrap().cross_entropy(y, None).unwrap();
    loss.backward().unwrap()
}

#[test]
fn pool_bytes_stay_flat_and_dropped_graph_returns_to_baseline() {
    let dev = tang_testing::device();
    let mut rng = tang_testing::Rng::new(7);
    let w1 = param(&dev, &rng.vec(4 * 8, 0.5), &[4, 8]);
    let w2 = param(&dev, &rng.vec(8 * 3, 0.5), &[8, 3]);
    let x = Tensor::constant(RawTensor::from_slice(&dev, &rng.vec(5 * 4, 1.0), &[5, 4]).unwrap());
    let y = Tensor::from_u32(&dev, &[0, 1, 2, 1, 0], &[5]).unwrap();
    dev.sync().unwrap();
    let baseline = dev.stats().bytes_in_use;

    drop(step(&w1, &w2, &x, &y));
    dev.sync().unwrap();
    let after_first = dev.stats().bytes_in_use;
    for _ in 0..30 {
        drop(step(&w1, &w2, &x, &y));
    }
    dev.sync().unwrap();
    assert_eq!(
        dev.stats().bytes_in_use,
        after_first,
        "bytes in use grew over steps"
    );
    assert_eq!(after_first, baseline, "a finished step left buffers in use");

    // A forward whose graph is never backpropagated frees everything when dropped.
    let h = x.matmul(&w1).unwrap().relu().unwrap();
    let loss = h.matmul(&w2).unwrap().cross_entropy(&y, None).unwrap();
    drop(h);
    assert!(dev.stats().bytes_in_use > baseline);
    drop(loss);
    dev.sync().unwrap();
    assert_eq!(dev.stats().bytes_in_use, baseline);
}

#[test]
fn backward_reads_nothing_back() {
    // Submits happen at a read, an explicit sync, or after `batch_size` launches: with a
    // batch larger than the pass, a backward that reads nothing submits nothing.
    let dev = Device::with_options(tang_nn::tang_runtime::DeviceOptions {
        batch_size: u32::MAX,
        ..Default::default()
    })
    .unwrap();
    let mut rng = tang_testing::Rng::new(3);
    let w1 = param(&dev, &rng.vec(4 * 8, 0.5), &[4, 8]);
    let w2 = param(&dev, &rng.vec(8 * 3, 0.5), &[8, 3]);
    let x = Tensor::constant(RawTensor::from_slice(&dev, &rng.vec(5 * 4, 1.0), &[5, 4]).unwrap());
    let y = Tensor::from_u32(&dev, &[0, 1, 2, 1, 0], &[5]).unwrap();
    let h = x.matmul(&w1).unwrap().gelu().unwrap();
    let loss = h
        .matmul(&w2)
        .unwrap()
        .log_softmax()
        .unwrap()
        .cross_entropy(&y, None)
        .unwrap();
    dev.sync().unwrap();
    let before = dev.stats();
    let grads = loss.backward().unwrap();
    let after = dev.stats();
    assert!(after.launches > before.launches, "backward ran kernels");
    assert_eq!(
        after.submits, before.submits,
        "backward submitted work (a read back)"
    );
    assert_eq!(grads.len(), 2);
}

/// The long form of the pool test: 10,000 steps end within 1% of the bytes in use after
/// step 100 (about 17 s in debug on lavapipe, so kept out of CI); run with
/// `cargo test -p tang-nn --test autograd_graph -- --ignored pool_soak`.
#[test]
#[ignore = "10,000 training steps: about 17 s in debug on lavapipe"]
fn pool_soak_ten_thousand_steps() {
    let dev = tang_testing::device();
    let mut rng = tang_testing::Rng::new(11);
    let w1 = param(&dev, &rng.vec(16 * 32, 0.3), &[16, 32]);
    let w2 = param(&dev, &rng.vec(32 * 5, 0.3), &[32, 5]);
    let x = Tensor::constant(RawTensor::from_slice(&dev, &rng.vec(8 * 16, 1.0), &[8, 16]).unwrap());
    let y = Tensor::from_u32(&dev, &[0, 1, 2, 3, 4, 0, 1, 2], &[8]).unwrap();
    let mut at_100 = 0;
    for i in 1..=10_000 {
        drop(step(&w1, &w2, &x, &y));
        if i == 100 {
            dev.sync().unwrap();
            at_100 = dev.stats().bytes_in_use + dev.stats().bytes_pooled;
        }
    }
    dev.sync().unwrap();
    let end = dev.stats().bytes_in_use + dev.stats().bytes_pooled;
    assert!(
        end.abs_diff(at_100) * 100 <= at_100,
        "pool bytes {end} after 10,000 steps, {at_100} after step 100"
    );
}

/// An add hands its upstream gradient to both inputs without a launch; the residual
/// pattern `x + f(x)` then sums into that shared gradient out of place, and every
/// gradient handed back owns its buffer.
#[test]
fn add_gradients_pass_through_and_never_alias() {
    let dev = tang_testing::device();
    let a = param(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let b = param(&dev, &[0.5, -1.0, 2.0, 0.0], &[2, 2]);
    let sum = a.add(&b).unwrap();
    let loss = sum.mul(&sum).unwrap().sum_all().unwrap();
    dev.sync().unwrap();
    let before = dev.stats().launches;
    let grads = loss.backward().unwrap();
    dev.sync().unwrap();
    // The seed, sum_all's backward, mul's (both gradients in one launch) and their sum
    // (`sum * sum` uses `sum` twice); the add passes `g` on without a launch, and one
    // copy makes a's and b's gradients two buffers.
    assert_eq!(dev.stats().launches - before, 5);
    let (ga, gb) = (grads.get(&a).unwrap(), grads.get(&b).unwrap());
    assert!(!ga.data().same_buffer(gb.data()));
    let want = [3.0, 2.0, 10.0, 8.0]; // 2 (a + b)
    assert_eq!(ga.to_vec().unwrap(), want);
    assert_eq!(gb.to_vec().unwrap(), want);
    // Writing into one gradient leaves the other as it was.
    ga.add_(&gb, 1.0).unwrap();
    assert_eq!(gb.to_vec().unwrap(), want);

    // x + relu(x) * 3: the add's gradient for x is shared with the branch's until the
    // branch's gradient is summed into it, out of place.
    let x = param(&dev, &[1.0, -2.0], &[2]);
    let y = x.add(&x.relu().unwrap().mul_scalar(3.0).unwrap()).unwrap();
    let g = y.sum_all().unwrap().backward().unwrap();
    assert_eq!(g.get(&x).unwrap().to_vec().unwrap(), [4.0, 1.0]);
    // x + x: both gradients are the one `g`.
    let g = x.add(&x).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(g.get(&x).unwrap().to_vec().unwrap(), [2.0, 2.0]);
}

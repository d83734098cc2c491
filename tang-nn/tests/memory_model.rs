//! The buffer pool under a training loop of tang layers: forward (embedding, linear,
//! layer norm, GELU, dropout), a composed loss (cross-entropy with label smoothing),
//! backward and an in-place update, step after step. The bytes the device holds (in use
//! plus pooled) after step 300 (CI) or 10,000 (ignored soak) stay within 1% of those after
//! step 100, every finished step returns the bytes in use to the baseline, and a
//! forward that is never backpropagated returns everything when dropped.

use tang_nn::Module;
use tang_nn::autograd::{Tensor, no_grad};
use tang_nn::nn::functional::{CrossEntropyOptions, cross_entropy_with};
use tang_nn::nn::{Dropout, Embedding, GELU, LayerNorm, Linear};
use tang_nn::rng::SplitMix64;
use tang_nn::tang_runtime::Device;

#[derive(Module)]
struct Small {
    wte: Embedding,
    fc: Linear,
    ln: LayerNorm,
    act: GELU,
    drop: Dropout,
    head: Linear,
}

impl Small {
    fn new(dev: &Device) -> Small {
        let mut rng = SplitMix64::new(3);
        Small {
            wte: Embedding::new(dev, 11, 16, &mut rng).unwrap(),
            fc: Linear::new(dev, 16, 32, true, &mut rng).unwrap(),
            ln: LayerNorm::new(dev, 32, 1e-5, false).unwrap(),
            act: GELU::default(),
            drop: Dropout::new(0.1).unwrap(),
            head: Linear::new(dev, 32, 11, false, &mut rng).unwrap(),
        }
    }

    fn loss(&self, ids: &Tensor, targets: &Tensor) -> Tensor {
        let h = self.fc.forward(&self.wte.forward(ids).unwrap()).unwrap();
        let h = self
            .drop
            .forward(&self.act.forward(&self.ln.forward(&h).unwrap()).unwrap());
        let logits = self.head.forward(&h.unwrap()).unwrap();
        let opts = CrossEntropyOptions {
            label_smoothing: 0.1,
            ..CrossEntropyOptions::default()
        };
        cross_entropy_with(&logits, targets, &opts).unwrap()
    }
}

/// One training step: forward, backward, `p -= 0.01 g` for every parameter.
fn step(model: &Small, ids: &Tensor, targets: &Tensor) {
    let grads = model.loss(ids, targets).backward().unwrap();
    no_grad(|| {
        for p in model.parameters() {
            let g = grads.get(&p).unwrap();
            p.add_(&g, -0.01).unwrap();
        }
    });
}

/// Bytes the device holds for tensors, in use or pooled for reuse.
fn held(dev: &Device) -> u64 {
    dev.sync().unwrap();
    let s = dev.stats();
    s.bytes_in_use + s.bytes_pooled
}

fn run(steps: usize) {
    let dev = tang_testing::device();
    let model = Small::new(&dev);
    let ids = Tensor::from_u32(&dev, &[1, 5, 2, 9, 0, 3, 7, 10], &[8]).unwrap();
    let targets = Tensor::from_u32(&dev, &[5, 2, 9, 0, 3, 7, 10, 1], &[8]).unwrap();
    dev.sync().unwrap();
    let baseline = dev.stats().bytes_in_use;
    let mut at_100 = 0;
    for i in 1..=steps {
        step(&model, &ids, &targets);
        if i == 100 {
            at_100 = held(&dev);
        }
        if i % 100 == 0 {
            dev.sync().unwrap();
            assert_eq!(
                dev.stats().bytes_in_use,
                baseline,
                "step {i} left buffers in use"
            );
        }
    }
    let end = held(&dev);
    println!("held after step 100: {at_100} bytes; after step {steps}: {end} bytes");
    assert!(
        end.abs_diff(at_100) * 100 <= at_100,
        "{end} bytes after {steps} steps, {at_100} after step 100"
    );

    // A forward that is never backpropagated frees its graph when dropped.
    let loss = model.loss(&ids, &targets);
    assert!(dev.stats().bytes_in_use > baseline);
    drop(loss);
    dev.sync().unwrap();
    assert_eq!(dev.stats().bytes_in_use, baseline);
}

#[test]
fn three_hundred_steps_stay_flat() {
    run(300);
}

/// The long form; run with
/// `cargo test -p tang-nn --test memory_model -- --ignored --nocapture`.
#[test]
#[ignore = "10,000 training steps: minutes in debug on lavapipe"]
fn ten_thousand_steps_stay_within_one_percent() {
    run(10_000);
}

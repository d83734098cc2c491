// Code lines (after rustfmt and black; comments, docstrings and blank lines excluded,
// `use`/`import` lines included): 46 here against 40 in the PyTorch twin (1.15x).
//! A CNN on the bundled digits: SGD with momentum and a cosine schedule, evaluated under
//! `no_grad`, saved and reloaded with identical logits. PyTorch twin:
//! `examples/scripts/cnn_digits_torch.py`.

use tang_examples::digits::Digits;
use tang_nn::nn::{Conv2d, Conv2dOptions, Flatten, Linear, MaxPool2d, ReLU, Sequential};
use tang_nn::optim::{Sgd, SgdOptions};
use tang_nn::prelude::*;
use tang_nn::safetensors::{load_model, save_model};
use tang_nn::{metrics::accuracy, rng::SplitMix64, schedule::Schedule};

fn cnn(dev: &Device, rng: &mut SplitMix64) -> Result<Sequential, tang_nn::autograd::Error> {
    let pad = Conv2dOptions::default().padding([1, 1]);
    Ok(Sequential::new()
        .append(Conv2d::new(dev, 1, 16, [3, 3], pad, rng)?)
        .append(ReLU)
        .append(MaxPool2d::new([2, 2]))
        .append(Flatten::default())
        .append(Linear::new(dev, 16 * 4 * 4, 10, true, rng)?))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::new()?;
    let mut rng = SplitMix64::new(0);
    let (train, test) = Digits::bundled()?.split(0.2, &mut rng);
    let model = cnn(&dev, &mut rng)?;
    let mut opt = Sgd::new(
        model.named_parameters(),
        SgdOptions::default().lr(0.05).momentum(0.9),
    )?;
    let schedule = Schedule::cosine_annealing_lr(0.05, 300, 0.0)?;
    for step in 0..300 {
        let batch: Vec<usize> = (0..64).map(|i| (step * 64 + i) % train.len()).collect();
        let (x, y) = train.select(&batch).to_device(&dev)?;
        let loss = F::cross_entropy(&model.forward(&x.reshape(&[-1, 1, 8, 8])?)?, &y)?;
        opt.set_lr(schedule.lr(step as u64));
        opt.step(&loss.backward()?)?;
    }
    model.eval();
    let (x, y) = test.to_device(&dev)?;
    let x = x.reshape(&[-1, 1, 8, 8])?;
    let logits = no_grad(|| model.forward(&x))?;
    println!("test accuracy {:.3}", accuracy(&logits, &y)?.item()?);
    save_model(&model, "cnn.safetensors")?;
    let reloaded = cnn(&dev, &mut SplitMix64::new(1))?;
    load_model(&reloaded, "cnn.safetensors", true)?;
    assert_eq!(
        no_grad(|| reloaded.forward(&x))?.to_vec()?,
        logits.to_vec()?
    );
    Ok(())
}

//! Gradient accumulation: the gradients of 4 micro-batches of 8, each loss scaled by
//! 1/4, accumulated, equal (within 1e-6) the gradient of one batch of 32. PyTorch twin:
//! `examples/scripts/grad_accum_torch.py`.

use tang_nn::nn::{Linear, ReLU, Sequential, functional::Reduction};
use tang_nn::{prelude::*, rng::SplitMix64};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::new()?;
    let mut rng = SplitMix64::new(0);
    let model = Sequential::new()
        .append(Linear::new(&dev, 16, 32, true, &mut rng)?)
        .append(ReLU)
        .append(Linear::new(&dev, 32, 1, true, &mut rng)?);
    let mut g = Generator::new(0);
    let x = Tensor::randn(&dev, &[32, 16], &mut g)?;
    let y = Tensor::randn(&dev, &[32, 1], &mut g)?;
    let loss = |x: &Tensor, y: &Tensor| F::mse_loss(&model.forward(x)?, y, Reduction::Mean);
    let full = loss(&x, &y)?.backward()?;
    let mut acc = Gradients::default();
    for i in 0..4 {
        let micro = loss(&x.narrow(0, 8 * i, 8)?, &y.narrow(0, 8 * i, 8)?)?;
        acc.accumulate((micro / 4.0)?.backward()?)?;
    }
    for (name, p) in model.named_parameters() {
        let a = full.get(&p).ok_or("no grad")?;
        let b = acc.get(&p).ok_or("no grad")?;
        let err = (&a - &b)?.abs()?.to_vec()?.into_iter().fold(0.0, f32::max);
        assert!(err <= 1e-6, "{name}: {err}");
        println!("{name}: max difference {err:.1e}");
    }
    Ok(())
}

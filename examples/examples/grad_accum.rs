// Code lines (after rustfmt and black; comments, docstrings and blank lines excluded,
// `use`/`import` lines included): 18 here against 15 in the PyTorch twin (1.20x).
//! Gradient accumulation: the gradients of 4 micro-batches of 8, each loss scaled by
//! 1/4, accumulated, equal (within 1e-6) the gradient of one batch of 32. PyTorch twin:
//! `examples/scripts/grad_accum_torch.py`.

use tang_nn::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::new()?;
    let mut s = nn::Seeded::new(&dev, 0);
    let model = sequential![s.linear(16, 32)?, nn::ReLU, s.linear(32, 1)?];
    let (x, y) = (s.randn(&[32, 16])?, s.randn(&[32, 1])?);
    let full = F::mse_loss(&model.forward(&x)?, &y)?.backward()?;
    let mut acc = Gradients::default();
    for (xb, yb) in x.chunk(4, 0)?.iter().zip(y.chunk(4, 0)?) {
        acc.accumulate((F::mse_loss(&model.forward(xb)?, &yb)? / 4.0)?.backward()?)?;
    }
    for (name, p) in model.named_parameters() {
        let err = full.max_abs_diff(&acc, &p)?;
        assert!(err <= 1e-6, "{name}: {err}");
        println!("{name}: max difference {err:.1e}");
    }
    Ok(())
}

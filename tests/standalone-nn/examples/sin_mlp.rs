// Code lines (after rustfmt and black; comments, docstrings and blank lines excluded,
// `use`/`import` lines included): 30 here against 26 in the PyTorch twin (1.15x).
//! An MLP fitting sin(x) with MSE and Adam, through a custom activation written as a
//! plain `f32` function: `#[fused_grad]` makes its kernel and its gradient, in a crate
//! that depends only on tang-nn. PyTorch twin: `sin_mlp_torch.py` beside this file.

use tang_nn::optim::{Adam, AdamOptions};
use tang_nn::prelude::*;

#[fused_grad]
fn soft_relu(x: f32) -> f32 {
    (4.0 * x).softplus() / 4.0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dev = Device::new()?;
    let mut s = nn::Seeded::new(&dev, 0);
    let model = sequential![
        s.linear(1, 64)?,
        nn::Fused(soft_relu::FUSED),
        s.linear(64, 1)?
    ];
    let xs: Vec<f32> = (0..256).map(|i| -3.0 + 6.0 * i as f32 / 255.0).collect();
    let ys: Vec<f32> = xs.iter().map(|v| v.sin()).collect();
    let x = Tensor::from_slice(&dev, &xs, &[256, 1])?;
    let y = Tensor::from_slice(&dev, &ys, &[256, 1])?;
    let mut opt = Adam::new(model.named_parameters(), AdamOptions::default().lr(1e-2))?;
    let (_, [slope]) = soft_relu::grad(0.5); // the CPU twin of the generated gradient
    assert!((slope - (soft_relu(0.501) - soft_relu(0.499)) / 0.002).abs() < 1e-3);
    for step in 0..=1000 {
        let loss = F::mse_loss(&model.forward(&x)?, &y)?;
        opt.step(&loss.backward()?)?;
        if step % 200 == 0 {
            println!("step {step}: mse {:.5}", loss.item()?);
        }
    }
    Ok(())
}

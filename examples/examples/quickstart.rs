//! The README's example, runnable: a `#[fused_grad]` GELU compiled to WGSL at build
//! time, launched on the GPU (value, then value and derivative in one dispatch), and
//! compared with the same Rust function and its generated CPU gradient twin.
//!
//! `cargo run --release -p tang-examples --example quickstart`

use tang_examples::report::Report;
use tang_runtime::{Device, Tensor, fused_grad};

/// GELU, tanh approximation (as in GPT-2 and PyTorch's `approximate="tanh"`).
#[fused_grad]
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044_715 * x * x * x)).tanh())
}

/// Points from -6 to 6: both tails and the curved middle.
const POINTS: usize = 4097;

fn main() -> Result<(), Report> {
    let dev = Device::new()?; // best GPU; software Vulkan without one
    let info = dev.info();
    println!(
        "adapter: {} ({:?}, {:?})",
        info.name, info.backend, info.device_type
    );

    // The README's lines.
    let x = Tensor::from_slice(&dev, &[-1.0, 0.0, 2.0], &[3])?;
    let y = gelu::launch(&dev, &x)?; // WGSL generated and naga-checked at build time
    let (value, [dy_dx]) = gelu::grad(2.0); // the CPU twin: same function, with its gradient
    println!("gelu([-1, 0, 2]) on the GPU = {:?}", y.to_vec()?);
    println!("gelu(2) = {value}, d gelu/dx (2) = {dy_dx} on the CPU");

    // The whole range: GPU value and derivative (one fused dispatch) against the CPU.
    let xs: Vec<f32> = (0..POINTS)
        .map(|i| -6.0 + 12.0 * i as f32 / (POINTS - 1) as f32)
        .collect();
    let x = Tensor::from_slice(&dev, &xs, &[POINTS])?;
    let (value, [grad]) = gelu::launch_grad(&dev, &x)?;
    let (gpu_v, gpu_d) = (value.to_vec()?, grad.to_vec()?);
    let (mut err_v, mut err_d) = (0f32, 0f32);
    for (i, &xi) in xs.iter().enumerate() {
        // The plain function for the value, its generated twin for the derivative.
        let (_, [d]) = gelu::grad(xi);
        err_v = err_v.max((gpu_v[i] - gelu(xi)).abs());
        err_d = err_d.max((gpu_d[i] - d).abs());
    }
    println!(
        "{POINTS} points in [-6, 6]: max |GPU - CPU| value {err_v:.2e}, derivative {err_d:.2e}"
    );
    Ok(())
}

//! Times one optimizer step of tang-nn's AdamW (PyTorch's arithmetic, exact multiply-adds,
//! correctly rounded division and square root) over many parameters, with and without
//! the clip coefficient from `grad_norm`, to compare with the bench program's plain Adam
//! kernel (`adam_step_124M`) and PyTorch's fused Adam in the same run.
//!
//! ```text
//! cargo run --release -p tang-nn --example optim_step            # 124M parameters
//! cargo run --release -p tang-nn --example optim_step -- 12000000
//! ```
//! Prints the median milliseconds per step over 20 steps after 5 warm-up steps (each
//! timed to the GPU's completion), and the bandwidth at 28 bytes per parameter (p, m, v
//! read and written, g read).

use std::time::Instant;

use tang_nn::optim::{AdamW, AdamWOptions, grad_norm};
use tang_nn::tang_runtime::{Device, Tensor};

/// Tensors the parameters are split into (as the bench program's Adam case).
const TENSORS: usize = 12;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let total: usize = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 124_000_000,
    };
    let dev = Device::new()?;
    let each = (total / TENSORS).max(1);
    let mut params = Vec::new();
    let mut grads = Vec::new();
    for i in 0..TENSORS {
        let values: Vec<f32> = (0..each)
            .map(|k| (((k * 7 + i * 13) % 1000) as f32 - 500.0) * 1e-3)
            .collect();
        params.push((
            format!("layer{i}.weight"),
            Tensor::from_slice(&dev, &values, &[each])?,
        ));
        grads.push((
            format!("layer{i}.weight"),
            Tensor::from_slice(&dev, &values, &[each])?,
        ));
    }
    let mut opt = AdamW::new(params, AdamWOptions::default())?;
    let gb = (each * TENSORS) as f64 * 28.0 / 1e9;
    println!("device: {}", dev.info().name);
    for clipped in [false, true] {
        let mut ms = Vec::new();
        for rep in 0..25 {
            let start = Instant::now();
            if clipped {
                let norm = grad_norm(grads.iter().map(|(_, g)| g), 1.0)?;
                opt.step_with_clip_coef(&grads, &norm.clip_coef)?;
            } else {
                opt.step(&grads)?;
            }
            dev.sync()?;
            if rep >= 5 {
                ms.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
        ms.sort_by(f64::total_cmp);
        let median = ms[ms.len() / 2];
        println!(
            "adamw_step{} {} params: {median:.3} ms/step median, {:.0} GB/s (28 B/param)",
            if clipped { "_with_grad_norm" } else { "" },
            each * TENSORS,
            gb / (median / 1e3)
        );
    }
    Ok(())
}

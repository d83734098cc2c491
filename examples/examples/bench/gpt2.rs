//! GPT-2 small's training step, the model `Gpt::from_pretrained` gives for the Hub's
//! `gpt2`: `models::gpt::Gpt` with vocab 50,257, 12 layers, 12 heads, width 768 (124M
//! parameters), biases, the tanh GELU, the tied head, dropout 0, at T 1024 and batch 8 in
//! fp32: forward, cross-entropy, backward and an AdamW step (nanoGPT's lr 6e-4, betas
//! 0.9/0.95, weight decay 0.1), timed with the GPU finished.
//!
//! - `gpt2_124M_T1024_B8_step`: ms per step and thousands of tokens per second.
//! - `gpt2_124M_T1024_B8_step_amp`: the same step in mixed precision, as PyTorch's fp16
//!   autocast + GradScaler step (the forward under `autocast(F16)`, the loss scaled, the
//!   scaler's step and update): the products and attention on the tensor cores where the
//!   device has them.
//!
//! The device memory a step needs is printed beside it: tang's `Stats` have no peak
//! counter, so what is printed is what the buffer pool holds after the steps (buffers in
//! use and free ones kept for reuse, rounded to the pool's size classes), with the new
//! buffers one more step allocates. When that step allocates none, every buffer it used
//! came from what the pool holds, so the figure covers the step's peak: the counterpart
//! of `torch.cuda.max_memory_reserved`; when it allocates some, the pool's cap made it
//! give buffers back and the peak is higher. `examples/scripts/torch_gpt2_step.py` is PyTorch's
//! step at the same shape, with `max_memory_allocated` and `max_memory_reserved`.
//! `--tiny` runs `gpt2_124M_T1024_B8_step_tiny` (2 layers, 2 heads, width 64, T 64,
//! batch 2, GPT-2's vocabulary) to check the case on a software adapter.

use tang_nn::Module;
use tang_nn::amp::{GradScaler, GradScalerOptions, autocast};
use tang_nn::autograd::Tensor;
use tang_nn::models::gpt::{Gpt, GptConfig};
use tang_nn::nn::Approximate;
use tang_nn::nn::functional::cross_entropy;
use tang_nn::optim::{AdamW, AdamWOptions, decay_groups};
use tang_nn::rng::SplitMix64;
use tang_runtime::{DType, Device};

use super::Report;
use super::elementwise::warm_up;
use super::training::{print_step_profile, time_step};

/// The errors of a step.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// GPT-2's vocabulary.
const VOCAB: usize = 50_257;

/// Runs the case's steps (in mixed precision with `amp`); returns `(ms per step, pool
/// bytes after the steps)`.
fn gpt2_case(
    dev: &Device,
    config: &GptConfig,
    batch: usize,
    reps: usize,
    amp: bool,
) -> Result<(f64, u64), BoxError> {
    let model = Gpt::new(dev, config, 1337)?;
    let adamw = AdamWOptions::default().lr(6e-4).betas((0.9, 0.95));
    let groups = decay_groups(model.named_parameters(), 0.1).to_vec();
    let mut opt = AdamW::with_groups(groups, adamw)?;
    let t = config.block_size;
    let mut rng = SplitMix64::new(17);
    let ids: Vec<u32> = (0..batch * (t + 1))
        .map(|_| (rng.next_u64() % VOCAB as u64) as u32)
        .collect();
    // Each row's targets are its ids shifted by one, as a language model's batch.
    let (x, y): (Vec<u32>, Vec<u32>) = ids
        .chunks(t + 1)
        .flat_map(|row| row[..t].iter().copied().zip(row[1..].iter().copied()))
        .unzip();
    let x = Tensor::from_u32(dev, &x, &[batch, t])?;
    let y = Tensor::from_u32(dev, &y, &[batch * t])?;
    println!(
        "  {:.1}M parameters, {} tokens per step",
        model.num_params() as f64 / 1e6,
        batch * t
    );
    let mut scaler = if amp {
        Some(GradScaler::new(GradScalerOptions::default())?)
    } else {
        None
    };
    let mut step = || -> Result<(), BoxError> {
        let loss = {
            let _autocast = if amp {
                Some(autocast(DType::F16)?)
            } else {
                None
            };
            let logits = model.forward(&x)?.reshape(&[(batch * t) as i64, -1])?;
            cross_entropy(&logits, &y)?
        };
        match &mut scaler {
            Some(scaler) => {
                let grads = scaler.scale(&loss)?.backward()?;
                scaler.step(&mut opt, &grads)?;
                scaler.update()?;
            }
            None => opt.step(&loss.backward()?)?,
        }
        Ok(())
    };
    let ms = time_step(dev, reps, &mut step)?;
    print_step_profile(dev, &mut step)?;
    let before = dev.stats();
    step()?;
    dev.sync()?;
    let stats = dev.stats();
    let pool = stats.bytes_in_use + stats.bytes_pooled;
    println!(
        "  pool after the steps: {:.1} MB in use, {:.1} MB free, {:.1} MB held; {} new buffers in one more step (0: the held bytes cover the step's peak; tang has no peak counter)",
        stats.bytes_in_use as f64 / 1e6,
        stats.bytes_pooled as f64 / 1e6,
        pool as f64 / 1e6,
        stats.allocations.saturating_sub(before.allocations)
    );
    Ok((ms, pool))
}

/// Runs the GPT-2 small step (`tiny`: a small body with GPT-2's vocabulary).
pub fn run(dev: &Device, quick: bool, tiny: bool, report: &mut Report) {
    let name = if tiny {
        "gpt2_124M_T1024_B8_step_tiny"
    } else {
        "gpt2_124M_T1024_B8_step"
    };
    if !report.wants(name) {
        return;
    }
    for amp in [false, true] {
        let name = if amp {
            format!("{name}_amp")
        } else {
            name.to_string()
        };
        if report.wants(&name) {
            run_case(dev, quick, tiny, &name, amp, report);
        }
    }
}

/// Runs one GPT-2 small step case (`tiny`: a small body with GPT-2's vocabulary).
fn run_case(dev: &Device, quick: bool, tiny: bool, name: &str, amp: bool, report: &mut Report) {
    // nanoGPT's GPT-2 small with the Hub's vocabulary and GELU.
    let gpt2 = GptConfig {
        vocab_size: VOCAB,
        gelu: Approximate::Tanh,
        ..GptConfig::gpt2()
    };
    let (config, batch) = if tiny {
        let small = GptConfig {
            block_size: 64,
            n_layer: 2,
            n_head: 2,
            n_kv_head: 2,
            n_embd: 64,
            ..gpt2
        };
        (small, 2)
    } else {
        (gpt2, 8)
    };
    if !tiny && let Err(e) = warm_up(dev, if quick { 0.1 } else { 0.5 }) {
        return report.fail("warm-up", &e);
    }
    println!("{name}:");
    match gpt2_case(dev, &config, batch, if quick || tiny { 3 } else { 10 }, amp) {
        Ok((ms, pool)) => {
            let tokens = (batch * config.block_size) as f64;
            report.add_rate(name, ms, tokens / ms, "ktok/s");
            report.add_rate(&format!("{name}_pool"), ms, pool as f64 / 1e6, "MB held");
        }
        Err(e) => report.fail(name, &e),
    }
}

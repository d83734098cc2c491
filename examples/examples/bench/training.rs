//! Whole training steps through tang-nn (forward, `backward`, the optimizer step), the
//! models exactly as `torch_anchors.py` defines them:
//!
//! - `mlp_784_1024_1024_10_b1024_step` and `mlp_64_128_10_b64_step`: `nn.Sequential` of
//!   Linears with ReLUs, cross-entropy, Adam (lr 1e-3).
//! - `gpt_char_6x384_T256_B64_step_fp32`: 6 blocks of pre-norm attention and MLP at width
//!   384, 6 heads, vocab 81, T 256, B 64; LayerNorms and Linears with biases, an untied
//!   head without bias, tanh GELU, cross-entropy, AdamW with PyTorch's defaults. tang's
//!   attention is the fused causal kernel.
//! - `gpt_char_6x384_T256_B64_step_amp`: the same model and step in mixed precision, as
//!   PyTorch's fp16 autocast + GradScaler step: the forward under `autocast(F16)` (the
//!   Linears' products in f16, attention, norms and the loss in f32), the loss scaled,
//!   `scaler.step` (unscale, the inf/NaN check and its one read, AdamW) and
//!   `scaler.update`. Beside each GPT case the device memory of its step is printed: the
//!   pool of a fresh device after two steps (the pool keeps every buffer it was given, so
//!   what it holds covers the step's peak; tang has no peak counter).
//!
//! Each step is timed with the GPU finished, as the other cases. The GPT case also reports
//! the host's share of a step (`..._host`): the time from the start of a step to the
//! submission of its last launch (recording the graph, backward's bookkeeping, encoding
//! and submitting) against the whole step with the GPU finished, medians of single steps;
//! the launches, submits and new buffers of one step are printed beside it, and the GPU
//! time of a step per kernel (`Device::start_profiling`).
//! `--tiny` shrinks every case (names suffixed `_tiny`) to check the cases on a software
//! adapter.

use std::time::Instant;

use tang_nn::Module;
use tang_nn::amp::{GradScaler, GradScalerOptions, autocast};
use tang_nn::autograd::Tensor;
use tang_nn::nn::functional::cross_entropy;
use tang_nn::nn::{
    AttnMask, CausalSelfAttention, CausalSelfAttentionConfig, Embedding, LayerNorm, Linear, ReLU,
    Sequential, scaled_dot_product_attention,
};
use tang_nn::optim::{Adam, AdamOptions, AdamW, AdamWOptions, Algorithm, Optimizer};
use tang_nn::rng::SplitMix64;
use tang_runtime::{DType, Device, Tensor as RawTensor};

use super::Report;
use super::elementwise::{random, time};

/// The errors of a training step (autograd, optimizer, device).
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One pre-norm transformer block of `torch_anchors.py`'s GPT.
#[derive(Module)]
struct BenchBlock {
    ln1: LayerNorm,
    attn: CausalSelfAttention,
    ln2: LayerNorm,
    fc: Linear,
    fc2: Linear,
}

/// `torch_anchors.py`'s character GPT: token and position embeddings, the blocks, a final
/// LayerNorm and an untied head without bias.
#[derive(Module)]
struct BenchGpt {
    tok: Embedding,
    pos: Embedding,
    blocks: Vec<BenchBlock>,
    ln: LayerNorm,
    head: Linear,
}

/// The GPT's sizes.
#[derive(Clone, Copy)]
struct GptSize {
    vocab: usize,
    block: usize,
    width: usize,
    layers: usize,
    heads: usize,
    batch: usize,
}

impl BenchGpt {
    fn new(dev: &Device, s: GptSize, rng: &mut SplitMix64) -> Result<BenchGpt, BoxError> {
        let w = s.width;
        let attn = CausalSelfAttentionConfig::new(w, s.heads);
        let mut blocks = Vec::with_capacity(s.layers);
        for _ in 0..s.layers {
            blocks.push(BenchBlock {
                ln1: LayerNorm::new(dev, w, 1e-5, true)?,
                attn: CausalSelfAttention::new(dev, &attn, rng)?,
                ln2: LayerNorm::new(dev, w, 1e-5, true)?,
                fc: Linear::new(dev, w, 4 * w, true, rng)?,
                fc2: Linear::new(dev, 4 * w, w, true, rng)?,
            });
        }
        Ok(BenchGpt {
            tok: Embedding::new(dev, s.vocab, w, rng)?,
            pos: Embedding::new(dev, s.block, w, rng)?,
            blocks,
            ln: LayerNorm::new(dev, w, 1e-5, true)?,
            head: Linear::new(dev, w, s.vocab, false, rng)?,
        })
    }

    /// Logits `[B * T, vocab]` of `idx [B, T]`.
    fn forward(&self, idx: &Tensor, pos: &Tensor) -> Result<Tensor, BoxError> {
        let mut x = self.tok.forward(idx)?.add(&self.pos.forward(pos)?)?;
        for b in &self.blocks {
            x = x.add(&b.attn.forward(&b.ln1.forward(&x)?)?)?;
            let h = b.fc.forward(&b.ln2.forward(&x)?)?.gelu()?;
            x = x.add(&b.fc2.forward(&h)?)?;
        }
        let logits = self.head.forward(&self.ln.forward(&x)?)?;
        let rows = idx.numel();
        Ok(logits.reshape(&[rows, logits.shape()[2]])?)
    }
}

/// `backward` of `loss` and one optimizer step.
fn backward_and_step<A: Algorithm>(loss: &Tensor, opt: &mut Optimizer<A>) -> Result<(), BoxError> {
    let grads = loss.backward()?;
    opt.step(&grads)?;
    Ok(())
}

/// Random class labels in `0..classes`.
fn labels(dev: &Device, n: usize, classes: usize, seed: u64) -> Result<Tensor, BoxError> {
    let mut rng = SplitMix64::new(seed);
    let ids: Vec<u32> = (0..n)
        .map(|_| (rng.next_u64() % classes as u64) as u32)
        .collect();
    Ok(Tensor::from_u32(dev, &ids, &[n])?)
}

/// Times `step` (a whole training step) as the other cases, with the GPU finished; the
/// first error of a step fails the case.
pub(super) fn time_step(
    dev: &Device,
    reps: usize,
    mut step: impl FnMut() -> Result<(), BoxError>,
) -> Result<f64, BoxError> {
    let mut failure = None;
    let ms = time(dev, 3, reps, || {
        if let Err(e) = step()
            && failure.is_none()
        {
            failure = Some(e);
        }
        Ok(())
    })?;
    match failure {
        Some(e) => Err(e),
        None => Ok(ms),
    }
}

/// An MLP step: `Sequential` of Linears (`sizes[i] -> sizes[i + 1]`) with ReLUs between,
/// cross-entropy on random labels, Adam lr 1e-3.
fn mlp_case(dev: &Device, sizes: &[usize], batch: usize, reps: usize) -> Result<f64, BoxError> {
    let mut rng = SplitMix64::new(7);
    let mut model = Sequential::new();
    for (i, w) in sizes.windows(2).enumerate() {
        if i > 0 {
            model = model.append(ReLU);
        }
        model = model.append(Linear::new(dev, w[0], w[1], true, &mut rng)?);
    }
    let mut opt = Adam::new(model.named_parameters(), AdamOptions::default())?;
    let x = RawTensor::from_slice(dev, &random(batch * sizes[0], 11), &[batch, sizes[0]])?;
    let x = Tensor::constant(x);
    let y = labels(dev, batch, sizes[sizes.len() - 1], 13)?;
    time_step(dev, reps, || {
        let loss = cross_entropy(&model.forward(&x)?, &y)?;
        backward_and_step(&loss, &mut opt)
    })
}

/// A GPT training step: the model, its optimizer, a fixed batch and, in mixed
/// precision, the loss scaler.
struct GptStep {
    model: BenchGpt,
    opt: Optimizer<AdamWOptions>,
    /// `Some` in mixed precision.
    scaler: Option<GradScaler>,
    idx: Tensor,
    tgt: Tensor,
    pos: Tensor,
}

impl GptStep {
    fn new(dev: &Device, s: GptSize, amp: bool) -> Result<GptStep, BoxError> {
        let model = BenchGpt::new(dev, s, &mut SplitMix64::new(5))?;
        let opt = AdamW::new(model.named_parameters(), AdamWOptions::default())?;
        let n = s.batch * s.block;
        let idx = labels(dev, n, s.vocab, 17)?.reshape(&[s.batch, s.block])?;
        let tgt = labels(dev, n, s.vocab, 19)?;
        // Uploaded (not `arange` on the GPU) so that the host knows the ids are in range
        // and the embeddings launch no id check.
        let positions: Vec<u32> = (0..s.block as u32).collect();
        let pos = Tensor::from_u32(dev, &positions, &[s.block])?;
        let scaler = if amp {
            Some(GradScaler::new(GradScalerOptions::default())?)
        } else {
            None
        };
        Ok(GptStep {
            model,
            opt,
            scaler,
            idx,
            tgt,
            pos,
        })
    }

    /// One step: PyTorch's plain step in f32, its AMP recipe in mixed precision.
    fn run(&mut self) -> Result<(), BoxError> {
        let Some(scaler) = &mut self.scaler else {
            let loss = cross_entropy(&self.model.forward(&self.idx, &self.pos)?, &self.tgt)?;
            return backward_and_step(&loss, &mut self.opt);
        };
        let loss = {
            let _autocast = autocast(DType::F16)?;
            cross_entropy(&self.model.forward(&self.idx, &self.pos)?, &self.tgt)?
        };
        let grads = scaler.scale(&loss)?.backward()?;
        scaler.step(&mut self.opt, &grads)?;
        scaler.update()?;
        Ok(())
    }
}

/// The device memory of a GPT step: what the pool of a fresh device holds after two
/// steps (buffers in use and free), in bytes.
fn gpt_step_memory(s: GptSize, amp: bool) -> Result<u64, BoxError> {
    let dev = Device::new()?;
    let mut step = GptStep::new(&dev, s, amp)?;
    for _ in 0..2 {
        step.run()?;
    }
    dev.sync()?;
    let stats = dev.stats();
    Ok(stats.bytes_in_use + stats.bytes_pooled)
}

/// The GPT step (f32, or mixed precision with `amp`), and the host's part of a single
/// step with that single step's whole time: `(step ms, host ms, single step ms)`.
fn gpt_case(dev: &Device, s: GptSize, amp: bool, reps: usize) -> Result<(f64, f64, f64), BoxError> {
    let mut gpt = GptStep::new(dev, s, amp)?;
    let mut step = || gpt.run();
    let ms = time_step(dev, reps, &mut step)?;
    // What the host does per step, to read the host share against.
    let before = dev.stats();
    step()?;
    dev.sync()?;
    let after = dev.stats();
    println!(
        "  one GPT step: {} launches, {} submits ({:.3} ms finishing and submitting them), {} new buffers, {} new bind groups",
        after.launches.saturating_sub(before.launches),
        after.submits.saturating_sub(before.submits),
        after
            .submit_time
            .saturating_sub(before.submit_time)
            .as_secs_f64()
            * 1e3,
        after.allocations.saturating_sub(before.allocations),
        after
            .bind_groups_created
            .saturating_sub(before.bind_groups_created)
    );
    // Single steps: the host's part ends when the last launch is submitted (`flush`),
    // the step when the GPU has finished it.
    let (mut host, mut whole) = (Vec::new(), Vec::new());
    for _ in 0..reps.max(3) {
        dev.sync()?;
        let t = Instant::now();
        step()?;
        dev.flush()?;
        host.push(t.elapsed().as_secs_f64() * 1e3);
        dev.sync()?;
        whole.push(t.elapsed().as_secs_f64() * 1e3);
    }
    print_step_profile(dev, &mut step)?;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Ok((ms, median(&mut host), median(&mut whole)))
}

/// Prints where the GPU time of one `step` goes, per kernel and grid (two steps profiled,
/// the table divided by two); nothing where the device cannot time its work.
pub(super) fn print_step_profile(
    dev: &Device,
    step: &mut impl FnMut() -> Result<(), BoxError>,
) -> Result<(), BoxError> {
    if dev.start_profiling().is_ok() {
        for _ in 0..2 {
            step()?;
        }
        let profile = dev.finish_profiling()?;
        println!(
            "  GPU time of one GPT step by kernel:\n{}",
            profile.table(40, 2)
        );
    }
    Ok(())
}

/// Causal attention of the GPT step's shape through autograd, forward and backward of
/// `attention(q, k, v)` with a random output gradient: the fused kernel (`explicit = false`) or PyTorch eager's
/// explicit `softmax(q kᵀ / √d + mask) v` (the path an additive mask takes), to tell which
/// one a short sequence should take.
fn attention_case(
    dev: &Device,
    shape: [usize; 4],
    explicit: bool,
    reps: usize,
) -> Result<f64, BoxError> {
    let n: usize = shape.iter().product();
    let leaf = |seed| -> Result<Tensor, BoxError> {
        let t = RawTensor::from_slice(dev, &random(n, seed), &shape)?;
        Ok(Tensor::parameter(t))
    };
    let (q, k, v) = (leaf(31)?, leaf(37)?, leaf(41)?);
    let g = RawTensor::from_slice(dev, &random(n, 43), &shape)?;
    // The causal mask written out as an additive one takes the explicit path.
    let t = shape[2];
    let tril: Vec<f32> = (0..t * t)
        .map(|e| {
            if e % t <= e / t {
                0.0
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect();
    let additive = Tensor::constant(RawTensor::from_slice(dev, &tril, &[t, t])?);
    let mask = if explicit {
        AttnMask::Additive(&additive)
    } else {
        AttnMask::Causal
    };
    time_step(dev, reps, || {
        let y = scaled_dot_product_attention(&q, &k, &v, mask, None)?;
        y.backward_with(g.clone())?;
        Ok(())
    })
}

/// Runs the training-step cases (`tiny`: small shapes, for a software adapter).
pub fn run(dev: &Device, quick: bool, tiny: bool, report: &mut Report) {
    let suffix = if tiny { "_tiny" } else { "" };
    let reps = if quick || tiny { 3 } else { 10 };
    let mlps: [(&str, &[usize], usize); 2] = if tiny {
        [
            ("mlp_784_1024_1024_10_b1024_step", &[64, 32, 32, 10], 16),
            ("mlp_64_128_10_b64_step", &[64, 128, 10], 64),
        ]
    } else {
        [
            (
                "mlp_784_1024_1024_10_b1024_step",
                &[784, 1024, 1024, 10],
                1024,
            ),
            ("mlp_64_128_10_b64_step", &[64, 128, 10], 64),
        ]
    };
    for (name, sizes, batch) in mlps {
        let name = format!("{name}{suffix}");
        if report.wants(&name) {
            match mlp_case(dev, sizes, batch, reps) {
                Ok(ms) => report.add(&name, ms),
                Err(e) => report.fail(&name, &e),
            }
        }
    }
    let shape = if tiny {
        [2, 2, 16, 16]
    } else {
        [64, 6, 256, 64]
    };
    for (path, explicit) in [("fused", false), ("explicit", true)] {
        let name = format!("attention_gpt_B64_H6_T256_d64_{path}_fwd_bwd{suffix}");
        if report.wants(&name) {
            match attention_case(dev, shape, explicit, reps) {
                Ok(ms) => report.add(&name, ms),
                Err(e) => report.fail(&name, &e),
            }
        }
    }
    let size = if tiny {
        GptSize {
            vocab: 81,
            block: 16,
            width: 32,
            layers: 2,
            heads: 2,
            batch: 2,
        }
    } else {
        GptSize {
            vocab: 81,
            block: 256,
            width: 384,
            layers: 6,
            heads: 6,
            batch: 64,
        }
    };
    for (precision, amp) in [("fp32", false), ("amp", true)] {
        let name = format!("gpt_char_6x384_T256_B64_step_{precision}{suffix}");
        if !report.wants(&name) {
            continue;
        }
        match gpt_case(dev, size, amp, reps) {
            Ok((ms, host, whole)) => {
                let tokens = (size.batch * size.block) as f64;
                report.add_rate(&name, ms, tokens / ms, "ktok/s");
                let share = 100.0 * host / whole;
                report.add_rate(&format!("{name}_host"), host, share, "% of step");
            }
            Err(e) => report.fail(&name, &e),
        }
        match gpt_step_memory(size, amp) {
            Ok(bytes) => println!(
                "  {name}: {:.1} MB in the pool of a fresh device after two steps",
                bytes as f64 / 1e6
            ),
            Err(e) => report.fail(&format!("{name}_memory"), &e),
        }
    }
}

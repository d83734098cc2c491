//! A character-level GPT trained on the Rust book: nanoGPT's shakespeare_char recipe on
//! tang-nn, the same recipe as `examples/scripts/train_char_gpt_torch.py` (same split,
//! schedule, parameter groups and evaluation).
//!
//! 6 layers, 6 heads, 384 wide, block 256, batch 64, dropout 0.2, no biases, tied
//! embedding and head, exact GELU; AdamW (betas 0.9/0.99, weight decay 0.1 on 2-D
//! parameters only), clipping at 1.0, warmup 100 steps then cosine from 1e-3 to 1e-4 at
//! 5,000 steps; the validation loss over 200 batches every 250 steps; a 90/10 split in
//! order. Batches are gathered on the GPU (`DeviceTokenBatcher`); the run writes
//! `metrics.jsonl`, `loss.png` and checkpoints into `--out`, prints the best validation
//! loss and a sample drawn through the KV cache with temperature 0.8 and top-k 40.
//!
//! ```text
//! cargo run --release -p tang-examples --example train_char_gpt -- --out runs/char-gpt
//! cargo run --release -p tang-examples --example train_char_gpt -- --out runs/char-gpt --resume
//! cargo run --release -p tang-examples --example train_char_gpt -- --out runs/char-gpt-amp --amp
//! ```
//!
//! `--amp` trains in mixed precision (PyTorch's `torch.autocast(dtype=torch.float16)` with
//! a `GradScaler`, as the trainer's `amp` option runs it); validation runs under autocast
//! too.
//!
//! `--help` lists the options and their defaults. A quick check on a software adapter:
//! `--steps 20 --batch 4 --block 32 --layers 2 --heads 2 --width 64 --eval-interval 10
//! --eval-iters 2`.

use std::collections::BTreeSet;

use clap::Parser;
use tang_examples::resume::resume_or_refuse;
use tang_nn::data::DeviceTokenBatcher;
use tang_nn::models::gpt::{Gpt, GptConfig, SampleOptions};
use tang_nn::nn::functional::cross_entropy;
use tang_nn::optim::{AdamW, AdamWOptions, decay_groups};
use tang_nn::schedule::Schedule;
use tang_nn::train::{StepContext, Throughput, Trainer, TrainerOptions};
use tang_nn::{Device, Module, Tensor};

/// The errors the closures given to the trainer return.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The recipe's fixed hyper-parameters (nanoGPT's shakespeare_char config).
const DROPOUT: f32 = 0.2;
const LR: f64 = 1e-3;
const MIN_LR: f64 = 1e-4;
const WARMUP: u64 = 100;
const LR_DECAY_ITERS: u64 = 5000;
const WEIGHT_DECAY: f64 = 0.1;
const BETAS: (f64, f64) = (0.9, 0.99);
const CLIP: f64 = 1.0;
/// The training split's share of the corpus (the rest, at the end, is validation).
const TRAIN_FRACTION: f64 = 0.9;
/// The bundled corpus, the default of `--data`.
const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/rust-book.txt");

/// Trains nanoGPT's character-level recipe on a text file.
#[derive(Parser)]
struct Cli {
    /// Optimizer steps.
    #[arg(long, default_value_t = 5000)]
    steps: u64,
    /// Sequences per batch.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Context length in characters (the model's block size).
    #[arg(long, default_value_t = 256)]
    block: usize,
    /// Transformer blocks.
    #[arg(long, default_value_t = 6)]
    layers: usize,
    /// Attention heads per block.
    #[arg(long, default_value_t = 6)]
    heads: usize,
    /// Embedding width.
    #[arg(long, default_value_t = 384)]
    width: usize,
    /// Steps between validation-loss evaluations.
    #[arg(long, default_value_t = 250)]
    eval_interval: u64,
    /// Batches per validation-loss evaluation.
    #[arg(long, default_value_t = 200)]
    eval_iters: u64,
    /// Random seed (initialization, dropout, batches and sampling).
    #[arg(long, default_value_t = 1337)]
    seed: u64,
    /// Directory for metrics.jsonl, loss.png and the checkpoints.
    #[arg(long, default_value = "runs/char-gpt")]
    out: String,
    /// The training text.
    #[arg(long, default_value = DATA)]
    data: String,
    /// Characters to sample after training [default: block - 1].
    #[arg(long)]
    sample_tokens: Option<usize>,
    /// Continue from the latest checkpoint in --out.
    #[arg(long)]
    resume: bool,
    /// Mixed precision (PyTorch's AMP recipe): the matmuls in f16 on the tensor cores
    /// where the adapter has them, the loss scaled by a GradScaler, f32 master weights.
    #[arg(long)]
    amp: bool,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Cli {
        steps,
        batch,
        block,
        layers,
        heads,
        width,
        eval_interval,
        eval_iters,
        seed,
        out,
        data,
        sample_tokens,
        resume,
        amp,
    } = Cli::parse();
    let tokens = batch
        .checked_mul(block)
        .ok_or("--batch x --block overflows")?;
    if eval_iters == 0 {
        return Err("--eval-iters must be at least 1".into());
    }

    // The vocabulary is the corpus's sorted characters, as in the PyTorch script.
    let text = std::fs::read_to_string(&data).map_err(|e| format!("reading {data}: {e}"))?;
    let chars: Vec<char> = text.chars().collect::<BTreeSet<_>>().into_iter().collect();
    let ids: Vec<u32> = text
        .chars()
        .map(|c| chars.binary_search(&c).map_or(0, |i| i as u32))
        .collect();
    let n = (TRAIN_FRACTION * ids.len() as f64) as usize;
    let (train_ids, val_ids) = ids.split_at(n);

    let dev = Device::new()?;
    let config = GptConfig {
        vocab_size: chars.len(),
        block_size: block,
        n_layer: layers,
        n_head: heads,
        n_kv_head: heads,
        n_embd: width,
        dropout: DROPOUT,
        bias: false,
        ..GptConfig::gpt2()
    };
    let model = Gpt::new(&dev, &config, seed)?;
    let params = model.named_parameters();
    let count = model.num_params();
    println!(
        "adapter {}, {:.2}M parameters, vocab {}, train {} val {} chars",
        dev.info().name,
        count as f64 / 1e6,
        chars.len(),
        train_ids.len(),
        val_ids.len()
    );
    let adamw = AdamWOptions::default().lr(LR).betas(BETAS);
    let opt = AdamW::with_groups(decay_groups(params, WEIGHT_DECAY).to_vec(), adamw)?;

    // Training and validation windows come from separate streams; evaluation `e` reads
    // the validation batches `e * eval_iters ..`, so every evaluation sees new windows
    // and a resumed run sees the same ones.
    let train_batches = DeviceTokenBatcher::new(&dev, train_ids, batch, block, seed)?;
    let val_batches = DeviceTokenBatcher::new(&dev, val_ids, batch, block, seed ^ 0x5eed)?;
    let loss_of = |x: &Tensor, y: &Tensor| -> Result<Tensor, BoxError> {
        let logits = model.forward(x)?.flatten(0)?;
        let logits = logits.reshape(&[tokens as i64, -1])?;
        Ok(cross_entropy(&logits, &y.flatten(0)?)?)
    };
    let forward = |ctx: &mut StepContext<'_>| -> Result<Tensor, BoxError> {
        let (x, y) = train_batches.batch(ctx.step)?;
        loss_of(&x, &y)
    };
    // The mean of `eval_iters` batch losses, summed on the device and read back once.
    let mut evaluate = |ctx: &mut StepContext<'_>| -> Result<f64, BoxError> {
        let first = (ctx.step / eval_interval.max(1)).saturating_mul(eval_iters);
        let mut sum: Option<Tensor> = None;
        for k in 0..eval_iters {
            let (x, y) = val_batches.batch(first.saturating_add(k))?;
            let loss = loss_of(&x, &y)?;
            sum = Some(match sum {
                None => loss,
                Some(s) => s.add(&loss)?,
            });
        }
        let sum = sum.ok_or("no evaluation batches")?.item()?;
        Ok(f64::from(sum) / eval_iters as f64)
    };

    let options = TrainerOptions {
        log_every: 50,
        eval_every: eval_interval,
        checkpoint_every: eval_interval,
        clip_grad_norm: Some(CLIP),
        amp,
        throughput: Some(Throughput::Tokens(tokens as u64)),
        flops_per_step: Some(model.flops_per_token() * tokens as f64),
        seed,
        ..TrainerOptions::new(steps)
    };
    let mut trainer = Trainer::new(&model, opt, &out, options)?
        .with_schedule(Schedule::warmup_cosine(LR, MIN_LR, WARMUP, LR_DECAY_ITERS)?);
    resume_or_refuse(&mut trainer, resume, &out)?;
    let start = trainer.state().step;
    println!("step {start}: val {:.4}", trainer.evaluate(&mut evaluate)?);
    let summary = trainer.fit_with_eval(forward, &mut evaluate)?;
    let best = trainer.state().best_metric.unwrap_or(f64::NAN);
    println!("best val loss {best:.4}");
    println!(
        "{} steps; checkpoint {}; metrics and loss.png in {out}",
        summary.steps,
        summary.checkpoint.path().display()
    );

    // Sampling: eval mode (no dropout), the prompt token 0 as in the PyTorch script, each
    // new token one cached forward on the GPU. By default the sample fills one block:
    // past it the window slides and every absolute position moves, so `generate` has to
    // recompute the window for each further token.
    model.eval();
    let sample = SampleOptions {
        max_new_tokens: sample_tokens.unwrap_or(block.saturating_sub(1)),
        temperature: 0.8,
        top_k: Some(40),
        seed,
        ..SampleOptions::default()
    };
    let rows = model.generate(&[vec![0]], &sample)?;
    let text: String = rows[0].iter().map(|&i| chars[i as usize]).collect();
    std::fs::write(std::path::Path::new(&out).join("sample.txt"), &text)?;
    println!("sample:\n{text}");
    Ok(())
}

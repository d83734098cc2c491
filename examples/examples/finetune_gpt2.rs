//! Fine-tuning GPT-2 on the Rust book: nanoGPT's `finetune_shakespeare` recipe on tang.
//!
//! `--init DIR` loads a Hugging Face GPT-2 checkpoint of any size from a local directory
//! (`config.json` + `model.safetensors` or its shards, as `save_pretrained` writes it or
//! the Hub serves it: `gpt2`, `gpt2-medium`, `gpt2-xl`, ...); without it the run starts
//! from a randomly initialised GPT-2 small (124M) and says so, so the command runs on any
//! machine. The text is the Rust book, tokenized with GPT-2's BPE, split 90/10 in order.
//!
//! The recipe (nanoGPT's `config/finetune_shakespeare.py` over `train.py`'s defaults):
//! block 1024, batch 1 with 32 gradient-accumulation steps, a constant learning rate of
//! 3e-5, AdamW (betas 0.9/0.95, weight decay 0.1 on 2-D parameters), clipping at 1.0,
//! dropout 0, 20 iterations, the validation loss over 40 batches every 5. The `Trainer`
//! takes one loss per step: a step's loss is the mean of its micro-batches' losses, so
//! its gradient is the accumulated one (nanoGPT's `loss / gradient_accumulation_steps`)
//! while the micro-batches share one graph (the memory of the whole batch). Evaluation,
//! `metrics.jsonl`, `loss.png` and checkpoints (`--resume` continues from the latest)
//! go through the `Trainer` into `--out`; at the end the model is written in Hugging
//! Face's format into `--out`/hf (`GPT2LMHeadModel.from_pretrained` loads it), with the
//! logits of a validation window in `--out`/hf_logits.safetensors (what
//! `examples/scripts/check_hf_roundtrip.py` compares with transformers'), and a sample is
//! drawn through the KV cache with temperature, top-k and top-p.
//!
//! ```text
//! cargo run --release -p tang-examples --example finetune_gpt2 -- --init path/to/gpt2
//! ```
//!
//! On a software adapter (a minute or two), a small random GPT-2 or the test checkpoint:
//!
//! ```text
//! cargo run --release -p tang-examples --example finetune_gpt2 -- --n-layer 2 --n-head 2 \
//!     --n-embd 64 --block-size 64 --gradient-accumulation-steps 2 --max-iters 4 \
//!     --eval-interval 2 --eval-iters 2 --max-new-tokens 20 --out runs/finetune-tiny
//! cargo run --release -p tang-examples --example finetune_gpt2 -- \
//!     --init ../shared/fixtures/hf/gpt2-lmhead --gradient-accumulation-steps 2 \
//!     --max-iters 4 --eval-interval 2 --eval-iters 2 --max-new-tokens 20 --out runs/finetune-fixture
//! ```
//!
//! A checkpoint whose vocabulary is smaller than GPT-2's 50,257 tokens (a test checkpoint)
//! gets the ids it lacks replaced by its last id, with a notice of how many.

use std::path::PathBuf;

use clap::Parser;
use tang_examples::resume::resume_or_refuse;
use tang_nn::data::DeviceTokenBatcher;
use tang_nn::models::gpt::{Gpt, GptConfig, SampleOptions};
use tang_nn::models::gpt2_hub::pretrained_config;
use tang_nn::nn::Approximate;
use tang_nn::nn::functional::cross_entropy;
use tang_nn::optim::{AdamW, AdamWOptions, decay_groups};
use tang_nn::safetensors::{FloatDtype, HostTensor, StateDict, save_file};
use tang_nn::tokenizer::{GPT2_VOCAB_SIZE, Gpt2Tokenizer};
use tang_nn::train::{StepContext, Throughput, Trainer, TrainerOptions};
use tang_nn::{Device, Module, Tensor, no_grad};

/// The errors the closures given to the trainer return.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The training split's share of the tokens (the rest, at the end, is validation).
const TRAIN_FRACTION: f64 = 0.9;

/// nanoGPT's finetune_shakespeare recipe; defaults are its values.
#[derive(Parser, Debug)]
#[command(about = "Fine-tune GPT-2 on the Rust book (nanoGPT's finetune_shakespeare recipe)")]
struct Options {
    /// A local Hugging Face GPT-2 checkpoint directory (config.json + model.safetensors);
    /// without it, a randomly initialised GPT-2 small.
    #[arg(long)]
    init: Option<PathBuf>,
    /// Where metrics, checkpoints and the fine-tuned model (hf/) go.
    #[arg(long, default_value = "runs/finetune-gpt2")]
    out: PathBuf,
    /// The text to fine-tune on.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/data/rust-book.txt"))]
    data: PathBuf,
    /// Optimizer steps in total.
    #[arg(long, default_value_t = 20)]
    max_iters: u64,
    /// Steps between evaluations (and checkpoints).
    #[arg(long, default_value_t = 5)]
    eval_interval: u64,
    /// Validation batches per evaluation.
    #[arg(long, default_value_t = 40)]
    eval_iters: u64,
    /// Windows per micro-batch.
    #[arg(long, default_value_t = 1)]
    batch_size: usize,
    /// Micro-batches per optimizer step.
    #[arg(long, default_value_t = 32)]
    gradient_accumulation_steps: u64,
    /// Tokens per window (at most the model's n_positions).
    #[arg(long, default_value_t = 1024)]
    block_size: usize,
    /// The constant learning rate.
    #[arg(long, default_value_t = 3e-5)]
    learning_rate: f64,
    /// Dropout while fine-tuning (the checkpoint's own is replaced, as nanoGPT does).
    #[arg(long, default_value_t = 0.0)]
    dropout: f32,
    /// Layers of the random GPT-2 (without --init).
    #[arg(long, default_value_t = 12, conflicts_with = "init")]
    n_layer: usize,
    /// Heads of the random GPT-2 (without --init).
    #[arg(long, default_value_t = 12, conflicts_with = "init")]
    n_head: usize,
    /// Width of the random GPT-2 (without --init).
    #[arg(long, default_value_t = 768, conflicts_with = "init")]
    n_embd: usize,
    /// Seed of the initialisation, the batches, dropout and sampling.
    #[arg(long, default_value_t = 1337)]
    seed: u64,
    /// Continue from the latest checkpoint in --out.
    #[arg(long)]
    resume: bool,
    /// The sample's prompt.
    #[arg(long, default_value = "Ownership in Rust")]
    prompt: String,
    /// Tokens to sample after the prompt.
    #[arg(long, default_value_t = 200)]
    max_new_tokens: usize,
    /// Sampling temperature.
    #[arg(long, default_value_t = 0.8)]
    temperature: f32,
    /// Sample among the k most likely tokens (0: all).
    #[arg(long, default_value_t = 200)]
    top_k: usize,
    /// Sample within the top-p nucleus (1: no cut).
    #[arg(long, default_value_t = 0.95)]
    top_p: f32,
}

/// The model: the checkpoint in `--init`, or a random GPT-2 small of the given sizes.
fn model(dev: &Device, o: &Options) -> Result<Gpt, Box<dyn std::error::Error>> {
    let Some(dir) = &o.init else {
        // GPT-2 (nanoGPT's defaults with the Hub's vocabulary and GELU) at these sizes.
        let config = GptConfig {
            vocab_size: GPT2_VOCAB_SIZE,
            block_size: o.block_size,
            n_layer: o.n_layer,
            n_head: o.n_head,
            n_kv_head: o.n_head,
            n_embd: o.n_embd,
            dropout: o.dropout,
            gelu: Approximate::Tanh,
            ..GptConfig::gpt2()
        };
        println!(
            "no --init: starting from a randomly initialised GPT-2 ({} layers, {} heads, width {}); \
             pass --init DIR to fine-tune a pretrained checkpoint",
            o.n_layer, o.n_head, o.n_embd
        );
        return Ok(Gpt::new(dev, &config, o.seed)?);
    };
    // GPT.from_pretrained(init_from, dict(dropout=dropout))
    let mut config = pretrained_config(dir)?;
    config.dropout = o.dropout;
    let gpt = Gpt::new(dev, &config, o.seed)?;
    gpt.load_pretrained(dir)?;
    println!("loaded {}", dir.display());
    Ok(gpt)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = Options::parse();
    if o.eval_iters == 0 || o.gradient_accumulation_steps == 0 || o.batch_size == 0 {
        return Err(
            "--eval-iters, --gradient-accumulation-steps and --batch-size must be at least 1"
                .into(),
        );
    }
    let dev = Device::new()?;
    let model = model(&dev, &o)?;
    let c = *model.config();
    let block = o.block_size.min(c.block_size);
    if block < o.block_size {
        println!("block size {block}: the model's n_positions");
    }

    let tok = Gpt2Tokenizer::new()?;
    let mut ids = tok.encode_file(&o.data)?;
    let unknown = ids
        .iter()
        .filter(|&&id| id as usize >= c.vocab_size)
        .count();
    if unknown > 0 {
        println!(
            "the checkpoint knows {} tokens, GPT-2's tokenizer {GPT2_VOCAB_SIZE}: {unknown} of {} \
             tokens replaced by id {}",
            c.vocab_size,
            ids.len(),
            c.vocab_size - 1
        );
        let last = (c.vocab_size - 1) as u32;
        ids.iter_mut()
            .filter(|id| **id > last)
            .for_each(|id| *id = last);
    }
    let n = (TRAIN_FRACTION * ids.len() as f64) as usize;
    let (train_ids, val_ids) = ids.split_at(n);
    println!(
        "adapter {}, {:.2}M parameters, train {} val {} tokens",
        dev.info().name,
        model.num_params() as f64 / 1e6,
        train_ids.len(),
        val_ids.len()
    );

    let (batch, accum) = (o.batch_size, o.gradient_accumulation_steps);
    let tokens = batch * block;
    let adamw = AdamWOptions::default()
        .lr(o.learning_rate)
        .betas((0.9, 0.95));
    let opt = AdamW::with_groups(decay_groups(model.named_parameters(), 0.1).to_vec(), adamw)?;
    let train_batches = DeviceTokenBatcher::new(&dev, train_ids, batch, block, o.seed)?;
    let val_batches = DeviceTokenBatcher::new(&dev, val_ids, batch, block, o.seed ^ 0x5eed)?;
    let loss_of = |x: &Tensor, y: &Tensor| -> Result<Tensor, BoxError> {
        let logits = model.forward(x)?.reshape(&[tokens as i64, -1])?;
        Ok(cross_entropy(&logits, &y.flatten(0)?)?)
    };
    // The mean loss of `n` batches of `batches` from batch `first` on, in one graph.
    let mean_loss =
        |batches: &DeviceTokenBatcher, first: u64, n: u64| -> Result<Tensor, BoxError> {
            let mut sum: Option<Tensor> = None;
            for k in 0..n {
                let (x, y) = batches.batch(first.saturating_add(k))?;
                let loss = loss_of(&x, &y)?;
                sum = Some(match sum {
                    None => loss,
                    Some(s) => s.add(&loss)?,
                });
            }
            Ok((sum.ok_or("no batches")? / n as f32)?)
        };
    // Step `s` reads micro-batches `s * accum ..`: a resumed run reads the same ones.
    let forward = |ctx: &mut StepContext<'_>| -> Result<Tensor, BoxError> {
        mean_loss(&train_batches, ctx.step.saturating_mul(accum), accum)
    };
    // Evaluation `e` reads the validation batches `e * eval_iters ..`.
    let eval_iters = o.eval_iters;
    let eval_interval = o.eval_interval.max(1);
    let mut evaluate = |ctx: &mut StepContext<'_>| -> Result<f64, BoxError> {
        let first = (ctx.step / eval_interval).saturating_mul(eval_iters);
        Ok(f64::from(
            mean_loss(&val_batches, first, eval_iters)?.item()?,
        ))
    };

    let step_tokens = tokens as u64 * accum;
    let options = TrainerOptions {
        log_every: 1,
        eval_every: eval_interval,
        checkpoint_every: eval_interval,
        clip_grad_norm: Some(1.0),
        throughput: Some(Throughput::Tokens(step_tokens)),
        flops_per_step: Some(model.flops_per_token() * step_tokens as f64),
        seed: o.seed,
        ..TrainerOptions::new(o.max_iters)
    };
    let out = o.out.display().to_string();
    let mut trainer = Trainer::new(&model, opt, &o.out, options)?;
    resume_or_refuse(&mut trainer, o.resume, &out)?;
    let start = trainer.state().step;
    println!("step {start}: val {:.4}", trainer.evaluate(&mut evaluate)?);
    let summary = trainer.fit_with_eval(forward, &mut evaluate)?;
    println!(
        "{} steps; best val loss {:.4}; checkpoint {}",
        summary.steps,
        trainer.state().best_metric.unwrap_or(f64::NAN),
        summary.checkpoint.path().display()
    );
    drop(trainer);

    let hf = o.out.join("hf");
    model.save_pretrained(&hf)?;
    println!(
        "Hugging Face checkpoint of the final weights in {}",
        hf.display()
    );
    model.eval();
    // The logits of a validation window beside it, which
    // `examples/scripts/check_hf_roundtrip.py` compares with transformers' on that checkpoint.
    let (x, _) = val_batches.batch(0)?;
    let logits = no_grad(|| model.forward(&x))?;
    let ids: Vec<i64> = x.to_vec_u32()?.into_iter().map(i64::from).collect();
    let mut io = StateDict::new();
    io.insert("input_ids", HostTensor::from_i64(&ids, x.shape())?);
    io.insert(
        "logits",
        HostTensor::from_f32(&logits.to_vec()?, logits.shape())?,
    );
    let path = o.out.join("hf_logits.safetensors");
    save_file(&path, &io, FloatDtype::F32, &Default::default())?;
    println!("its logits of a validation window in {}", path.display());

    let mut prompt = tok.encode(&o.prompt);
    prompt.retain(|&id| (id as usize) < c.vocab_size);
    if prompt.is_empty() {
        prompt.push(0);
    }
    let sample = SampleOptions::default()
        .max_new_tokens(o.max_new_tokens)
        .temperature(o.temperature)
        .top_k((o.top_k > 0).then_some(o.top_k))
        .top_p((o.top_p < 1.0).then_some(o.top_p))
        .seed(o.seed);
    let rows = model.generate(&[prompt], &sample)?;
    let text = String::from_utf8_lossy(&tok.decode_bytes(&rows[0])?).into_owned();
    std::fs::write(o.out.join("sample.txt"), &text)?;
    println!("sample:\n{text}");
    Ok(())
}

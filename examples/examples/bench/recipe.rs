//! The training steps users run: `train_char_gpt`'s recipe through the `Trainer`, at the
//! recipe's own shape and at GPT-2-small's body.
//!
//! - `gpt_recipe_6x384_T256_B64`: nanoGPT's shakespeare_char recipe as
//!   `examples/train_char_gpt.rs` runs it: `models::gpt::Gpt` (no biases, tied head, exact
//!   GELU, dropout 0.2) on the Rust book's characters, windows gathered on the GPU by
//!   `DeviceTokenBatcher`, AdamW (betas 0.9/0.99) over two decay groups, clipping at 1.0,
//!   the warmup-cosine schedule, one `Trainer::step` a step with logging off.
//! - `gpt_recipe_12x768_T1024_B8`: the same recipe at GPT-2-small's body (85.8M
//!   parameters).
//! - `_amp` after either name: the same step under `TrainerOptions::amp` (f16 autocast
//!   and a GradScaler, as `train_char_gpt --amp` trains).
//!
//! Each case prints what a step costs beside its time: launches, submits, device buffers
//! created, host reads, the pool's bytes, CPU time (user and system) per step, the host's
//! part of a step, and the GPU time per kernel (`Device::start_profiling`).
//! `examples/scripts/torch_gpt_recipe.py` is the PyTorch twin, by the same names (its
//! `_amp` cases: fp16 autocast with a GradScaler).

use std::collections::BTreeSet;
use std::time::Instant;

use tang_nn::Module;
use tang_nn::data::DeviceTokenBatcher;
use tang_nn::models::gpt::{Gpt, GptConfig};
use tang_nn::nn::functional::cross_entropy;
use tang_nn::optim::{AdamW, AdamWOptions, decay_groups};
use tang_nn::schedule::Schedule;
use tang_nn::train::{StepContext, Trainer, TrainerOptions};
use tang_runtime::Device;

use super::Report;
use super::training::time_step;

/// The errors of a recipe step.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The recipe's shape: layers, heads, width, block, batch.
#[derive(Clone, Copy)]
struct RecipeShape {
    layers: usize,
    heads: usize,
    width: usize,
    block: usize,
    batch: usize,
}

/// CPU time of this process so far, user and system, in seconds (Linux: `/proc/self/stat`;
/// `None` elsewhere).
fn cpu_seconds() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    // The kernel reports them in USER_HZ, 100 on every Linux architecture tang runs on.
    Some((ticks(11)? / 100.0, ticks(12)? / 100.0))
}

/// Runs one recipe case and prints its costs; returns `(ms per step, host ms)`.
fn recipe_case(
    dev: &Device,
    s: RecipeShape,
    amp: bool,
    reps: usize,
) -> Result<(f64, f64), BoxError> {
    let text = include_str!("../../data/rust-book.txt");
    let chars: Vec<char> = text.chars().collect::<BTreeSet<_>>().into_iter().collect();
    let ids: Vec<u32> = text
        .chars()
        .map(|c| chars.binary_search(&c).map_or(0, |i| i as u32))
        .collect();
    let config = GptConfig {
        vocab_size: chars.len(),
        block_size: s.block,
        n_layer: s.layers,
        n_head: s.heads,
        n_kv_head: s.heads,
        n_embd: s.width,
        dropout: 0.2,
        bias: false,
        ..GptConfig::gpt2()
    };
    let model = Gpt::new(dev, &config, 1337)?;
    let adamw = AdamWOptions::default().lr(1e-3).betas((0.9, 0.99));
    let groups = decay_groups(model.named_parameters(), 0.1).to_vec();
    let opt = AdamW::with_groups(groups, adamw)?;
    let batches = DeviceTokenBatcher::new(dev, &ids, s.batch, s.block, 1337)?;
    let tokens = s.batch * s.block;
    let out = std::env::temp_dir().join(format!("tang-bench-recipe-{}", std::process::id()));
    let options = TrainerOptions {
        log_every: u64::MAX,
        eval_every: 0,
        checkpoint_every: 0,
        clip_grad_norm: Some(1.0),
        handle_ctrl_c: false,
        amp,
        ..TrainerOptions::new(u64::MAX)
    };
    let mut trainer = Trainer::new(&model, opt, &out, options)?
        .with_schedule(Schedule::warmup_cosine(1e-3, 1e-4, 100, 5000)?);
    let mut forward = |ctx: &mut StepContext<'_>| -> Result<_, BoxError> {
        let (x, y) = batches.batch(ctx.step)?;
        let logits = model.forward(&x)?.reshape(&[tokens as i64, -1])?;
        Ok(cross_entropy(&logits, &y.flatten(0)?)?)
    };
    let mut step = || -> Result<(), BoxError> {
        trainer.step(&mut forward)?;
        Ok(())
    };
    let ms = time_step(dev, reps, &mut step)?;

    // What a step costs the host and the driver, over steps run back to back as a
    // training loop runs them (the GPU finished once at the end).
    let counted = reps.max(5);
    dev.sync()?;
    let (before, cpu_before, t) = (dev.stats(), cpu_seconds(), Instant::now());
    for _ in 0..counted {
        step()?;
    }
    dev.sync()?;
    let wall = t.elapsed().as_secs_f64() * 1e3 / counted as f64;
    let (after, cpu_after) = (dev.stats(), cpu_seconds());
    let per = |a: u64, b: u64| a.saturating_sub(b) as f64 / counted as f64;
    println!(
        "  recipe step, {counted} back to back: {wall:.2} ms each; per step {:.0} launches, {:.1} submits, {:.2} new buffers, {:.2} host reads; pool {:.1} MB free, {:.1} MB in use",
        per(after.launches, before.launches),
        per(after.submits, before.submits),
        per(after.allocations, before.allocations),
        per(after.host_reads, before.host_reads),
        after.bytes_pooled as f64 / 1e6,
        after.bytes_in_use as f64 / 1e6,
    );
    if let (Some(b), Some(a)) = (cpu_before, cpu_after) {
        let (user, sys) = ((a.0 - b.0) * 1e3, (a.1 - b.1) * 1e3);
        println!(
            "  CPU per step: {:.2} ms user, {:.2} ms system ({:.0}% of user)",
            user / counted as f64,
            sys / counted as f64,
            100.0 * sys / user.max(1e-9)
        );
    }
    // The host's part of single steps: from the step's start to the submission of its
    // last launch.
    let mut host = Vec::new();
    for _ in 0..reps.max(3) {
        dev.sync()?;
        let t = Instant::now();
        step()?;
        dev.flush()?;
        host.push(t.elapsed().as_secs_f64() * 1e3);
    }
    dev.sync()?;
    host.sort_by(f64::total_cmp);
    if dev.start_profiling().is_ok() {
        for _ in 0..2 {
            step()?;
        }
        let profile = dev.finish_profiling()?;
        println!(
            "  GPU time of one recipe step by kernel:\n{}",
            profile.table(30, 2)
        );
    }
    drop(trainer);
    let _ = std::fs::remove_dir_all(&out);
    Ok((ms, host[host.len() / 2]))
}

/// Runs the recipe cases (`tiny`: small shapes, for a software adapter).
pub fn run(dev: &Device, quick: bool, tiny: bool, report: &mut Report) {
    let reps = if quick || tiny { 3 } else { 10 };
    let cases = if tiny {
        [
            ("gpt_recipe_6x384_T256_B64_tiny", (2, 2, 32, 16, 2)),
            ("gpt_recipe_12x768_T1024_B8_tiny", (2, 2, 32, 32, 1)),
        ]
    } else {
        [
            ("gpt_recipe_6x384_T256_B64", (6, 6, 384, 256, 64)),
            ("gpt_recipe_12x768_T1024_B8", (12, 12, 768, 1024, 8)),
        ]
    };
    for (base, (layers, heads, width, block, batch)) in cases {
        for amp in [false, true] {
            let name = &format!("{base}{}", if amp { "_amp" } else { "" });
            if !report.wants(name) {
                continue;
            }
            let shape = RecipeShape {
                layers,
                heads,
                width,
                block,
                batch,
            };
            println!("{name}:");
            match recipe_case(dev, shape, amp, reps) {
                Ok((ms, host)) => {
                    let tokens = (batch * block) as f64;
                    report.add_rate(name, ms, tokens / ms, "ktok/s");
                    report.add_rate(
                        &format!("{name}_host"),
                        host,
                        100.0 * host / ms,
                        "% of step",
                    );
                }
                Err(e) => report.fail(name, &e),
            }
        }
    }
}

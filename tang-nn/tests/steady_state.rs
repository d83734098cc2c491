//! A training loop in steady state costs the device nothing but its launches: after a few
//! warm-up steps, steps of a small GPT through the `Trainer` (the recipe of
//! `train_char_gpt`: dropout, clipping, two AdamW groups, the scheduler, windows gathered
//! on the GPU) create no device buffer and read nothing back while logging is off.

use tang_nn::Module;
use tang_nn::data::DeviceTokenBatcher;
use tang_nn::models::gpt::{Gpt, GptConfig};
use tang_nn::nn::functional::cross_entropy;
use tang_nn::optim::{AdamW, AdamWOptions, decay_groups};
use tang_nn::schedule::Schedule;
use tang_nn::tang_runtime::Device;
use tang_nn::train::{StepContext, Trainer, TrainerOptions};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[test]
fn steady_state_steps_create_no_buffer_and_read_nothing() -> Result<(), BoxError> {
    let dev = Device::new()?;
    let config = GptConfig {
        vocab_size: 16,
        block_size: 16,
        n_layer: 2,
        n_head: 2,
        n_kv_head: 2,
        n_embd: 32,
        dropout: 0.2,
        bias: false,
        ..GptConfig::gpt2()
    };
    let (batch, tokens) = (4, 4 * 16);
    let model = Gpt::new(&dev, &config, 7)?;
    let groups = decay_groups(model.named_parameters(), 0.1).to_vec();
    let opt = AdamW::with_groups(groups, AdamWOptions::default())?;
    let corpus: Vec<u32> = (0..4096u32).map(|i| (i * 7 + i / 5) % 16).collect();
    let batches = DeviceTokenBatcher::new(&dev, &corpus, batch, config.block_size, 3)?;
    let out = std::env::temp_dir().join(format!("tang-steady-state-{}", std::process::id()));
    let options = TrainerOptions {
        log_every: u64::MAX,
        clip_grad_norm: Some(1.0),
        handle_ctrl_c: false,
        ..TrainerOptions::new(u64::MAX)
    };
    let mut trainer = Trainer::new(&model, opt, &out, options)?
        .with_schedule(Schedule::warmup_cosine(1e-3, 1e-4, 10, 100)?);
    let mut forward = |ctx: &mut StepContext<'_>| -> Result<_, BoxError> {
        let (x, y) = batches.batch(ctx.step)?;
        let logits = model.forward(&x)?.reshape(&[tokens as i64, -1])?;
        Ok(cross_entropy(&logits, &y.flatten(0)?)?)
    };
    // Warm-up: the steps' launches fall into submitted batches at places that shift
    // from step to step (a batch is submitted every 256 launches, the first after a sync
    // at 16), so which freed buffers are idle when a step asks for one varies too; within
    // a few steps, one sync included as a logged step has, the pool holds a buffer for
    // each arrangement.
    for _ in 0..2 {
        for _ in 0..10 {
            trainer.step(&mut forward)?;
        }
        dev.sync()?;
    }
    let before = dev.stats();
    for _ in 0..50 {
        let report = trainer.step(&mut forward)?;
        assert!(report.record.is_none(), "logging is off");
    }
    dev.sync()?;
    let after = dev.stats();
    assert_eq!(
        after.allocations - before.allocations,
        0,
        "device buffers created in 50 steady-state steps"
    );
    assert_eq!(
        after.host_reads - before.host_reads,
        0,
        "host reads in 50 steps with logging off"
    );
    // The steps did train: the launches ran and the loss is finite.
    assert!(after.launches > before.launches);
    drop(trainer);
    std::fs::remove_dir_all(&out)?;
    Ok(())
}

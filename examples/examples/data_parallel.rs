//! Data-parallel training over MPI, checked and measured: a small GPT trained by the
//! [`Trainer`] on every rank of `mpirun -np 2`, compared after every step across the ranks
//! and against one model trained on the ranks' batches concatenated; and the timing of a
//! GPT step with its gradients averaged over two ranks sharing one GPU, against one rank
//! with the same global batch. Needs the `mpi` feature.
//!
//! ```text
//! cargo build --release -p tang-examples --features mpi --example data_parallel
//! # the check (scripts/mpi-test.sh runs it): identical parameters on both ranks after
//! # every step; within 1e-5 of one process on the concatenated batches; the same loss
//! mpirun -np 2 target/release/examples/data_parallel --out /tmp/ddp-check
//! # a rank failing at step 3 ends the job with its error (--fail-rank 1 --fail-at 3)
//! # the overhead: two ranks on one GPU, then one rank with their global batch
//! mpirun -np 2 target/release/examples/data_parallel --mode bench --batch 32
//! target/release/examples/data_parallel --mode bench --batch 64
//! ```
//!
//! `--help` lists the options; the model's sizes default to a small GPT for the check and
//! to the char-GPT (6x384, T 256) for the bench.

use std::time::Duration;

use clap::{Parser, ValueEnum};
use tang_nn::data::DeviceTokenBatcher;
use tang_nn::distributed::{
    DdpOptions, DistributedDataParallel, ProcessGroup, Reduce, SyncTimes, process_group,
};
use tang_nn::models::gpt::{Gpt, GptConfig};
use tang_nn::nn::functional::cross_entropy;
use tang_nn::optim::{AdamW, AdamWOptions, Sgd, SgdOptions};
use tang_nn::train::{StepContext, Trainer, TrainerOptions};
use tang_nn::{Device, Module, Tensor};

/// The errors the closures given to the trainer return.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What the run does.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Train on every rank and compare with one process on the concatenated batches.
    Check,
    /// Time the step, the all-reduce and the exposed communication.
    Bench,
}

/// Data-parallel training over MPI: the two-rank check, or the overhead bench.
#[derive(Parser)]
struct Options {
    /// The check, or the bench.
    #[arg(long, value_enum, default_value_t = Mode::Check)]
    mode: Mode,
    /// Training steps (bench: timed steps).
    #[arg(long, default_value_t = 20)]
    steps: u64,
    /// The check's run directory (checkpoints, metrics).
    #[arg(long, default_value = "runs/data-parallel")]
    out: String,
    /// Check: this rank's forward fails (with --fail-at), to test that the job ends.
    #[arg(long)]
    fail_rank: Option<usize>,
    /// Check: the step at which --fail-rank fails.
    #[arg(long, default_value_t = 0)]
    fail_at: u64,
    /// Windows per rank [check 4, bench 64].
    #[arg(long)]
    batch: Option<usize>,
    /// Tokens per window [check 16, bench 256].
    #[arg(long)]
    block: Option<usize>,
    /// Transformer blocks [check 2, bench 6].
    #[arg(long)]
    layers: Option<usize>,
    /// Attention heads [check 2, bench 6].
    #[arg(long)]
    heads: Option<usize>,
    /// Width of the residual stream [check 32, bench 384].
    #[arg(long)]
    width: Option<usize>,
    /// Untimed bench steps before the timed ones.
    #[arg(long, default_value_t = 5)]
    warmup: u64,
    /// Each rank writes `rank-<r>.pid` here once training runs (for a test that kills one).
    #[arg(long)]
    pid_dir: Option<String>,
}

/// The largest difference allowed between the data-parallel model and one process
/// trained on the concatenated batches (the sums of the all-reduce and of the one big
/// batch are ordered differently).
const TOLERANCE: f32 = 1e-5;
const SEED: u64 = 1337;

fn main() -> Result<(), BoxError> {
    let o = Options::parse();
    let bench = o.mode == Mode::Bench;
    let pick = |value: Option<usize>, check: usize, bench_value: usize| {
        value.unwrap_or(if bench { bench_value } else { check })
    };
    let batch = pick(o.batch, 4, 64);
    let block = pick(o.block, 16, 256);
    let heads = pick(o.heads, 2, 6);
    let config = GptConfig {
        vocab_size: 65,
        block_size: block,
        n_layer: pick(o.layers, 2, 6),
        n_head: heads,
        n_kv_head: heads,
        n_embd: pick(o.width, 32, 384),
        // No dropout: the check compares with one process drawing other masks.
        dropout: 0.0,
        bias: false,
        ..GptConfig::gpt2()
    };
    let group = process_group()?;
    let dev = Device::new()?;
    // A corpus with structure to learn: a repeating sentence of 65 symbols' ids.
    let corpus: Vec<u32> = (0..20_000u32).map(|i| (i * 7 + i / 13) % 65).collect();
    if bench {
        return run_bench(&dev, group, &config, &corpus, batch, o.steps, o.warmup);
    }
    let group = group.ok_or("the check needs two ranks: run it under mpirun -np 2")?;
    let check = Check {
        dev: &dev,
        group,
        config: &config,
        corpus: &corpus,
        batch,
        steps: o.steps,
        out: o.out,
        fail: o.fail_rank.map(|rank| (rank, o.fail_at)),
        pid_dir: o.pid_dir.unwrap_or_default(),
    };
    check.run()
}

/// The check of `mpirun -np 2` against one process.
struct Check<'a> {
    dev: &'a Device,
    group: &'static ProcessGroup,
    config: &'a GptConfig,
    corpus: &'a [u32],
    batch: usize,
    steps: u64,
    out: String,
    fail: Option<(usize, u64)>,
    pid_dir: String,
}

impl Check<'_> {
    fn run(&self) -> Result<(), BoxError> {
        let (rank, world) = (self.group.rank(), self.group.world_size());
        // Each rank starts from other weights: the trainer must broadcast rank 0's.
        let model = Gpt::new(self.dev, self.config, SEED + rank as u64)?;
        let sgd = SgdOptions {
            lr: 0.05,
            momentum: 0.9,
            ..SgdOptions::default()
        };
        let opt = Sgd::new(model.named_parameters(), sgd)?;
        let options = TrainerOptions {
            log_every: 1,
            handle_ctrl_c: false,
            seed: SEED,
            ..TrainerOptions::new(self.steps)
        };
        let _ = std::fs::remove_dir_all(&self.out);
        self.group.barrier()?; // rank 0's clean-up is done before anyone writes
        let mut trainer = Trainer::new(&model, opt, &self.out, options)?;
        // This rank's windows (each rank draws its own stream under mpirun).
        let batches = DeviceTokenBatcher::new(
            self.dev,
            self.corpus,
            self.batch,
            self.config.block_size,
            SEED,
        )?;
        // Rank 0 trains the reference: one model from rank 0's initial weights on the
        // batches of every rank, concatenated.
        let reference = (rank == 0)
            .then(|| Reference::new(self, world))
            .transpose()?;
        let loss_of = |model: &Gpt, x: &Tensor, y: &Tensor| -> Result<Tensor, BoxError> {
            let logits = model.forward(x)?.flatten(0)?;
            let rows = x.shape().iter().product::<usize>() as i64;
            Ok(cross_entropy(
                &logits.reshape(&[rows, -1])?,
                &y.flatten(0)?,
            )?)
        };
        if !self.pid_dir.is_empty() {
            let path = std::path::Path::new(&self.pid_dir).join(format!("rank-{rank}.pid"));
            std::fs::write(path, std::process::id().to_string())?;
        }
        let fail = self.fail;
        let mut forward = |ctx: &mut StepContext<'_>| -> Result<Tensor, BoxError> {
            if fail == Some((rank, ctx.step)) {
                return Err(
                    format!("the injected failure of rank {rank} at step {}", ctx.step).into(),
                );
            }
            let (x, y) = batches.batch(ctx.step)?;
            loss_of(&model, &x, &y)
        };
        if fail.is_some() || !self.pid_dir.is_empty() {
            // The failure tests: fit, whose errors end the job.
            trainer.fit(&mut forward)?;
            return Err("the run was to fail or be killed, and it finished".into());
        }
        let mut reference = reference;
        for step in 0..self.steps {
            let report = trainer.step(&mut forward)?;
            let loss = report
                .record
                .and_then(|r| r.loss)
                .ok_or("log_every 1 logs every step")?;
            let params = flat_parameters(&model)?;
            let same = self.group.broadcast(params.clone())? == params;
            let all_same = self.group.all_reduce(vec![u8::from(!same)], Reduce::Max)? == [0];
            if !all_same {
                return Err(format!("step {step}: the ranks' parameters differ").into());
            }
            if let Some(reference) = reference.as_mut() {
                let ref_loss = reference.step(step, &loss_of)?;
                let diff = max_abs_diff(&params, &flat_parameters(&reference.model)?);
                let loss_diff = (loss - ref_loss).abs();
                println!(
                    "step {:>2}: loss {loss:.6} (one process {ref_loss:.6}), parameters equal on \
                     {world} ranks, max |ddp - one process| {diff:.1e}",
                    step + 1
                );
                if diff > TOLERANCE || loss_diff > f64::from(TOLERANCE) {
                    return Err(format!(
                        "step {step}: {diff:.2e} from one process (loss {loss_diff:.2e}), more than {TOLERANCE:.0e}"
                    )
                    .into());
                }
            }
        }
        // Rank 0 writes the checkpoint; every rank resumes it.
        let saved = trainer.save_checkpoint()?;
        let resumed = trainer.resume_latest()?;
        if resumed != Some(saved.state().step) {
            return Err(format!("resumed {resumed:?}, saved step {}", saved.state().step).into());
        }
        self.check_accumulation_and_exposed(&model, &|step| {
            let (x, y) = batches.batch(step)?;
            loss_of(&model, &x, &y)
        })?;
        if rank == 0 {
            println!(
                "{world} ranks: {} steps identical and within {TOLERANCE:.0e} of one process; \
                 checkpoint {}; no_sync accumulation and the reduction after backward agree",
                self.steps,
                saved.path().display()
            );
        }
        Ok(())
    }

    /// Averaging is linear: a `no_sync` micro-batch accumulated into the next one's
    /// synchronised backward equals the two averaged separately and summed; reducing the
    /// buckets after backward gives what reducing them during it gives.
    fn check_accumulation_and_exposed(
        &self,
        model: &Gpt,
        loss_at: &dyn Fn(u64) -> Result<Tensor, BoxError>,
    ) -> Result<(), BoxError> {
        let mut ddp = DistributedDataParallel::new(self.group, model)?;
        let local = ddp.no_sync(|ddp| ddp.backward(&loss_at(100)?).map_err(BoxError::from))?;
        let accumulated = ddp.backward_accumulating(&loss_at(101)?, local)?;
        let mut separate = ddp.backward(&loss_at(100)?)?;
        separate.accumulate(ddp.backward(&loss_at(101)?)?)?;
        let after = DdpOptions {
            overlap: false,
            ..DdpOptions::default()
        };
        let exposed = DistributedDataParallel::with_options(self.group, model, after)?
            .backward(&loss_at(100)?)?;
        let overlapped = ddp.backward(&loss_at(100)?)?;
        for (name, p) in model.named_parameters() {
            let acc = accumulated.max_abs_diff(&separate, &p)?;
            let exp = exposed.max_abs_diff(&overlapped, &p)?;
            if acc > TOLERANCE || exp > TOLERANCE {
                return Err(format!(
                    "{name}: accumulated {acc:.2e} from the separate sum, after backward {exp:.2e} from during it"
                )
                .into());
            }
        }
        Ok(())
    }
}

/// One process training on every rank's batch of a step at once.
struct Reference {
    model: Gpt,
    opt: Sgd,
    ranks: Vec<DeviceTokenBatcher>,
}

impl Reference {
    fn new(check: &Check<'_>, world: usize) -> Result<Self, BoxError> {
        let model = Gpt::new(check.dev, check.config, SEED)?;
        let sgd = SgdOptions {
            lr: 0.05,
            momentum: 0.9,
            ..SgdOptions::default()
        };
        let opt = Sgd::new(model.named_parameters(), sgd)?;
        let base = DeviceTokenBatcher::new(
            check.dev,
            check.corpus,
            check.batch,
            check.config.block_size,
            SEED,
        )?;
        let ranks = (0..world)
            .map(|r| base.clone().for_rank(r, world))
            .collect::<Result<_, _>>()?;
        Ok(Reference { model, opt, ranks })
    }

    /// One step on the ranks' batches of `step` concatenated; returns the loss.
    fn step(
        &mut self,
        step: u64,
        loss_of: &dyn Fn(&Gpt, &Tensor, &Tensor) -> Result<Tensor, BoxError>,
    ) -> Result<f64, BoxError> {
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for batcher in &self.ranks {
            let (x, y) = batcher.batch(step)?;
            xs.push(x);
            ys.push(y);
        }
        let x = Tensor::cat(&xs.iter().collect::<Vec<_>>(), 0)?;
        let y = Tensor::cat(&ys.iter().collect::<Vec<_>>(), 0)?;
        let loss = loss_of(&self.model, &x, &y)?;
        let grads = loss.backward()?;
        self.opt.step(&grads)?;
        Ok(f64::from(loss.item()?))
    }
}

/// Every parameter's values, one after another.
fn flat_parameters(model: &Gpt) -> Result<Vec<f32>, BoxError> {
    let mut out = Vec::new();
    for (_, p) in model.named_parameters() {
        out.extend(p.to_vec()?);
    }
    Ok(out)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Times GPT steps: with the gradients averaged over the ranks (overlapped with backward,
/// then after it) under mpirun, or one process.
fn run_bench(
    dev: &Device,
    group: Option<&'static ProcessGroup>,
    config: &GptConfig,
    corpus: &[u32],
    batch: usize,
    steps: u64,
    warmup: u64,
) -> Result<(), BoxError> {
    let model = Gpt::new(dev, config, SEED)?;
    let params = model.named_parameters();
    let mut opt = AdamW::new(params.clone(), AdamWOptions::default())?;
    let batches = DeviceTokenBatcher::new(dev, corpus, batch, config.block_size, SEED)?;
    let tokens = (batch * config.block_size) as i64;
    let world = group.map_or(1, ProcessGroup::world_size);
    let modes: Vec<Option<bool>> = match group {
        Some(_) => vec![Some(true), Some(false)],
        None => vec![None],
    };
    for overlap in modes {
        let ddp = match (group, overlap) {
            (Some(g), Some(overlap)) => Some(DistributedDataParallel::with_options(
                g,
                &model,
                DdpOptions {
                    overlap,
                    ..DdpOptions::default()
                },
            )?),
            _ => None,
        };
        let mut step_ms = Vec::new();
        let mut sync = Vec::new();
        for step in 0..warmup + steps {
            dev.sync()?;
            let started = std::time::Instant::now();
            let (x, y) = batches.batch(step)?;
            let logits = model.forward(&x)?.reshape(&[tokens, -1])?;
            let loss = cross_entropy(&logits, &y.flatten(0)?)?;
            let grads = match &ddp {
                Some(ddp) => ddp.backward(&loss)?,
                None => loss.backward()?,
            };
            opt.step(&grads)?;
            dev.sync()?;
            if step >= warmup {
                step_ms.push(started.elapsed().as_secs_f64() * 1e3);
                sync.push(
                    ddp.as_ref()
                        .map(DistributedDataParallel::last_sync_times)
                        .unwrap_or_default(),
                );
            }
        }
        let label = match overlap {
            Some(true) => format!("{world} ranks, overlapped"),
            Some(false) => format!("{world} ranks, after backward"),
            None => "1 rank".to_string(),
        };
        let ms = |f: fn(&SyncTimes) -> Duration| {
            median(sync.iter().map(|t| f(t).as_secs_f64() * 1e3).collect())
        };
        if group.is_none_or(|g| g.rank() == 0) {
            println!(
                "{label}: {} params, batch {batch} x {} per rank ({} global), step {:.2} ms, \
                 buckets {}, communication {:.2} ms (all-reduce {:.2} ms), exposed {:.2} ms \
                 (medians of {steps} steps on {})",
                model.num_params(),
                config.block_size,
                batch * world,
                median(step_ms),
                sync.first().map_or(0, |t| t.buckets),
                ms(|t| t.communication),
                ms(|t| t.all_reduce),
                ms(|t| t.exposed),
                dev.info().name,
            );
        }
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

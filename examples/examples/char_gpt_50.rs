// Code lines (after rustfmt and black; comments, docstrings and blank lines excluded,
// `use`/`import` lines included): 40 here against 32 in the PyTorch twin (1.25x).
//! A character-level GPT (nanoGPT's model) on the Rust book: 50 AdamW steps on batches
//! gathered on the GPU, then a sample. PyTorch twin: `examples/scripts/char_gpt_50_torch.py`.

use std::collections::BTreeSet;

use tang_nn::data::DeviceTokenBatcher;
use tang_nn::models::gpt::{Gpt, GptConfig, SampleOptions};
use tang_nn::optim::{AdamW, AdamWOptions};
use tang_nn::prelude::*;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = include_str!("../data/rust-book.txt");
    let chars: Vec<char> = text.chars().collect::<BTreeSet<_>>().into_iter().collect();
    let id = |c: char| chars.partition_point(|&k| k < c) as u32;
    let ids: Vec<u32> = text.chars().map(id).collect();
    let dev = Device::new()?;
    let config = GptConfig {
        vocab_size: chars.len(),
        block_size: 64,
        n_layer: 2,
        n_head: 4,
        n_kv_head: 4,
        n_embd: 64,
        dropout: 0.0,
        bias: false,
        ..GptConfig::gpt2()
    };
    let model = Gpt::new(&dev, &config, 0)?;
    let mut opt = AdamW::new(model.named_parameters(), AdamWOptions::default().lr(1e-3))?;
    let batches = DeviceTokenBatcher::new(&dev, &ids, 16, 64, 0)?;
    for step in 0..50 {
        let (x, y) = batches.batch(step)?;
        let logits = model.forward(&x)?.reshape(&[-1, chars.len() as i64])?;
        let loss = F::cross_entropy(&logits, &y.flatten(0)?)?;
        opt.step(&loss.backward()?)?;
        if step % 10 == 0 {
            println!("step {step}: loss {:.3}", loss.item()?);
        }
    }
    model.eval();
    let options = SampleOptions::default().temperature(0.8).top_k(Some(40));
    let sample = model.generate(&[vec![0]], &options)?;
    let text: String = sample[0].iter().map(|&i| chars[i as usize]).collect();
    println!("{text}");
    Ok(())
}

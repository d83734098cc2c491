//! Generation with the KV cache: each step's last-position logits equal a full
//! recomputation's; sampling follows nanoGPT's `generate` (top-k, the context cropped to
//! the block size) and is reproducible from its seed.

mod attention_common;

use attention_common::fixture;
use tang_nn::Module;
use tang_nn::Tensor;
use tang_nn::autograd::no_grad;
use tang_nn::models::gpt::{Gpt, GptConfig, SampleOptions};
use tang_nn::safetensors::{load_model, read_file};
use tang_nn::tang_runtime::Device;
use tang_testing::assert_close;

/// The last-position logits `[B * vocab]` of a full forward pass over `rows`.
fn full_last_logits(gpt: &Gpt, dev: &Device, rows: &[Vec<u32>]) -> Vec<f32> {
    let (b, t) = (rows.len(), rows[0].len());
    let ids: Vec<u32> = rows.concat();
    let idx = Tensor::from_u32(dev, &ids, &[b, t]).unwrap();
    let logits = no_grad(|| gpt.forward(&idx)).unwrap();
    logits.narrow(1, t - 1, 1).unwrap().to_vec().unwrap()
}

#[test]
fn cached_steps_equal_full_recomputation_on_the_fixture_gpt() {
    let dev = tang_testing::device();
    let ck = read_file(fixture("gpt.safetensors")).unwrap();
    let gpt = Gpt::new(
        &dev,
        &GptConfig::from_json(&ck.metadata["config"]).unwrap(),
        0,
    )
    .unwrap();
    load_model(&gpt, fixture("gpt.safetensors"), true).unwrap();
    gpt.eval();
    let vocab = gpt.config().vocab_size;
    let mut rows = vec![vec![3u32, 17, 42, 5, 60], vec![80, 0, 1, 2, 9]];
    let mut cache = gpt.new_cache(&dev, 2).unwrap();
    let prompt = Tensor::from_u32(&dev, &rows.concat(), &[2, 5]).unwrap();
    let mut cached = gpt.forward_with_cache(&prompt, &mut cache).unwrap();
    for step in 0..8 {
        let t = cached.shape()[1];
        let got = cached.narrow(1, t - 1, 1).unwrap().to_vec().unwrap();
        let want: Vec<f64> = full_last_logits(&gpt, &dev, &rows)
            .into_iter()
            .map(f64::from)
            .collect();
        assert_close(&format!("step {step}"), &got, &want, 1e-4, 1e-4);
        // Greedy next tokens, fed one position at a time.
        let next: Vec<u32> = got
            .chunks(vocab)
            .map(|l| (0..vocab).max_by(|&a, &b| l[a].total_cmp(&l[b])).unwrap() as u32)
            .collect();
        for (r, n) in rows.iter_mut().zip(&next) {
            r.push(*n);
        }
        let idx = Tensor::from_u32(&dev, &next, &[2, 1]).unwrap();
        cached = gpt.forward_with_cache(&idx, &mut cache).unwrap();
        assert_eq!(cache.len(), rows[0].len());
    }
}

fn small_gpt(dev: &Device) -> Gpt {
    let config = GptConfig {
        vocab_size: 11,
        block_size: 8,
        n_layer: 2,
        n_head: 4,
        n_kv_head: 2,
        n_embd: 16,
        dropout: 0.1,
        bias: true,
        ..GptConfig::gpt2()
    };
    let gpt = Gpt::new(dev, &config, 5).unwrap();
    gpt.eval();
    gpt
}

#[test]
fn greedy_generation_past_the_block_size_matches_nanogpts_cropped_loop() {
    let dev = tang_testing::device();
    let gpt = small_gpt(&dev);
    let prompts = vec![vec![1u32, 2, 3], vec![10, 9, 8]];
    let options = SampleOptions {
        max_new_tokens: 12,
        top_k: Some(1),
        ..SampleOptions::default()
    };
    let out = gpt.generate(&prompts, &options).unwrap();
    // nanoGPT's loop without a cache: crop to the block, forward, take the best token.
    let mut rows = prompts.clone();
    for _ in 0..12 {
        let cropped: Vec<Vec<u32>> = rows
            .iter()
            .map(|r| r[r.len().saturating_sub(8)..].to_vec())
            .collect();
        let logits = full_last_logits(&gpt, &dev, &cropped);
        for (r, l) in rows.iter_mut().zip(logits.chunks(11)) {
            r.push((0..11).max_by(|&a, &b| l[a].total_cmp(&l[b])).unwrap() as u32);
        }
    }
    assert_eq!(out, rows);
}

#[test]
fn sampling_is_seeded_and_stays_in_the_top_k() {
    let dev = tang_testing::device();
    let gpt = small_gpt(&dev);
    let prompts = vec![vec![4u32, 4]];
    let options = SampleOptions {
        max_new_tokens: 6,
        temperature: 2.0,
        top_k: Some(3),
        seed: 11,
        ..SampleOptions::default()
    };
    let a = gpt.generate(&prompts, &options).unwrap();
    assert_eq!(
        a,
        gpt.generate(&prompts, &options).unwrap(),
        "same seed, same tokens"
    );
    for i in 2..a[0].len() {
        let logits = full_last_logits(&gpt, &dev, &[a[0][..i].to_vec()]);
        let mut order: Vec<usize> = (0..11).collect();
        order.sort_by(|&x, &y| logits[y].total_cmp(&logits[x]));
        assert!(
            order[..3].contains(&(a[0][i] as usize)),
            "token {i} outside the top 3"
        );
    }
    for bad in [
        SampleOptions {
            temperature: 0.0,
            ..options
        },
        SampleOptions {
            top_k: Some(0),
            ..options
        },
    ] {
        assert!(gpt.generate(&prompts, &bad).is_err());
    }
    assert!(
        gpt.generate(&[vec![11]], &options)
            .unwrap_err()
            .to_string()
            .contains("vocab_size 11")
    );
    assert!(gpt.generate(&[vec![1], vec![1, 2]], &options).is_err());
}

#[test]
fn top_p_samples_only_inside_the_nucleus() {
    let dev = tang_testing::device();
    let gpt = small_gpt(&dev);
    let (temperature, p) = (4.0, 0.5);
    // A flat distribution (high temperature) leaves about half the tokens outside the
    // nucleus, so 18 draws without the cut would land outside it almost surely.
    let prompts = vec![vec![4u32, 4], vec![1, 7], vec![10, 0]];
    let options = SampleOptions::default()
        .max_new_tokens(6)
        .temperature(temperature)
        .top_p(Some(p))
        .seed(3);
    let out = gpt.generate(&prompts, &options).unwrap();
    for row in &out {
        for i in 2..row.len() {
            let logits = full_last_logits(&gpt, &dev, &[row[..i].to_vec()]);
            let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let w: Vec<f64> = logits
                .iter()
                .map(|&l| f64::from((l - max) / temperature).exp())
                .collect();
            let total: f64 = w.iter().sum();
            let mut order: Vec<usize> = (0..w.len()).collect();
            order.sort_by(|&a, &b| w[b].total_cmp(&w[a]));
            // The nucleus: the most likely tokens until their share reaches p.
            let mut before = 0.0f64;
            let nucleus: Vec<usize> = order
                .into_iter()
                .take_while(|&k| {
                    let inside = before < f64::from(p) * total;
                    before += w[k];
                    inside
                })
                .collect();
            assert!(
                nucleus.len() < w.len() && nucleus.contains(&(row[i] as usize)),
                "token {i} ({}) outside the nucleus {nucleus:?}",
                row[i]
            );
        }
    }
    for bad in [0.0, 1.5, f32::NAN] {
        let err = gpt
            .generate(&prompts, &options.top_p(Some(bad)))
            .unwrap_err();
        assert!(err.to_string().contains("top_p"), "{err}");
    }
}

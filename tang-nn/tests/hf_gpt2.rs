//! GPT-2 in Hugging Face's format against transformers (`../shared/fixtures/hf/`, made by
//! `make_hf_fixtures.py`): both key layouts load strictly and give transformers' logits,
//! loss and every gradient (under its Hugging Face name, `Conv1D` weights `[in, out]`);
//! greedy generation through the KV cache gives transformers' `generate`; a broken
//! checkpoint reports every bad key at once; what `save_pretrained` writes and a sharded
//! checkpoint load back to the same logits.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tang_nn::models::gpt::{Gpt, SampleOptions};
use tang_nn::models::gpt2_hub::{HubError, is_conv1d, pretrained_config};
use tang_nn::nn::functional::{class_indices_from_i64, cross_entropy};
use tang_nn::safetensors::{FloatDtype, HostTensor, StateDict, read_file, save_file};
use tang_nn::tang_runtime::Device;
use tang_nn::{Module, Tensor};
use tang_testing::assert_close;

/// A Hugging Face fixture (`../shared/fixtures/hf/` beside the checkout).
fn hf(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/hf")
        .join(name)
}

/// A fresh directory for one test's files.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tang-hf-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The fixture's inputs, outputs and gradients.
fn io() -> StateDict {
    read_file(hf("io.safetensors")).unwrap().tensors
}

/// The fixture's metadata.
fn io_metadata() -> BTreeMap<String, String> {
    read_file(hf("io.safetensors")).unwrap().metadata
}

/// The fixture's `input_ids` as a u32 `[B, T]` tensor.
fn input_ids(dev: &Device, io: &StateDict) -> Tensor {
    Tensor::constant(io.u32_tensor("input_ids", dev).unwrap())
}

/// `values` widened to f64, as `assert_close` takes its reference.
fn f64s(values: &[f32]) -> Vec<f64> {
    values.iter().copied().map(f64::from).collect()
}

/// `values` of a row-major `[rows, cols]` matrix, transposed.
fn transposed(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    (0..cols)
        .flat_map(|c| (0..rows).map(move |r| values[r * cols + c]))
        .collect()
}

fn logits_of(gpt: &Gpt, dev: &Device) -> Vec<f32> {
    let io = io();
    let logits = tang_nn::no_grad(|| gpt.forward(&input_ids(dev, &io))).unwrap();
    logits.to_vec().unwrap()
}

#[test]
fn both_layouts_load_strictly_and_give_transformers_logits() {
    let dev = tang_testing::device();
    let want = f64s(&io().f32_values("logits").unwrap());
    for dir in ["gpt2-lmhead", "gpt2-base"] {
        let gpt = Gpt::from_pretrained(&dev, hf(dir)).unwrap();
        gpt.eval();
        assert_close(
            &format!("{dir} logits"),
            &logits_of(&gpt, &dev),
            &want,
            1e-4,
            0.0,
        );
    }
}

#[test]
fn loss_and_every_gradient_equal_transformers_under_their_names() {
    let dev = tang_testing::device();
    let gpt = Gpt::from_pretrained(&dev, hf("gpt2-lmhead")).unwrap();
    gpt.eval();
    let io = io();
    let idx = input_ids(&dev, &io);
    let (b, t) = (idx.shape()[0], idx.shape()[1]);
    let vocab = gpt.config().vocab_size;
    // transformers' loss: position i predicts token i + 1 (the labels shifted inside).
    let ids = io.i64_values("input_ids").unwrap();
    let targets: Vec<i64> = ids.chunks(t).flat_map(|row| row[1..].to_vec()).collect();
    let targets = class_indices_from_i64(&dev, &targets, &[b * (t - 1)]).unwrap();
    let logits = gpt.forward(&idx).unwrap().narrow(1, 0, t - 1).unwrap();
    let rows = logits.reshape(&[b * (t - 1), vocab]).unwrap();
    let loss = cross_entropy(&rows, &targets).unwrap();
    let (got, want) = (loss.item().unwrap(), io.f32_values("loss").unwrap()[0]);
    let rel = ((got - want) / want).abs();
    println!("loss: tang {got} transformers {want} relative {rel:.3e}");
    assert!(rel <= 1e-5, "loss {got} vs {want}");

    let grads = loss.backward().unwrap();
    let params: BTreeMap<String, Tensor> = gpt.named_parameters().into_iter().collect();
    let mut seen = Vec::new();
    for name in io.names().filter_map(|n| n.strip_prefix("grad.")) {
        let p = params
            .get(name)
            .unwrap_or_else(|| panic!("transformers' {name} is not a tang parameter"));
        let mut got = grads.get(p).unwrap().to_vec().unwrap();
        let want = f64s(&io.f32_values(&format!("grad.{name}")).unwrap());
        if is_conv1d(name) {
            let s = p.shape();
            got = transposed(&got, s[0], s[1]);
        }
        let scale = want.iter().fold(0.0, |m: f64, g| m.max(g.abs()));
        assert_close(&format!("grad.{name}"), &got, &want, 1e-4 * scale, 0.0);
        seen.push(name.to_string());
    }
    seen.sort();
    assert_eq!(
        seen,
        params.keys().cloned().collect::<Vec<_>>(),
        "every parameter has a gradient"
    );
}

#[test]
fn greedy_generation_through_the_kv_cache_equals_transformers() {
    let dev = tang_testing::device();
    let gpt = Gpt::from_pretrained(&dev, hf("gpt2-base")).unwrap();
    gpt.eval();
    let meta = io_metadata();
    let prompt_len: usize = meta["prompt_len"].parse().unwrap();
    let new_tokens: usize = meta["new_tokens"].parse().unwrap();
    let want: Vec<u32> = io()
        .i64_values("greedy")
        .unwrap()
        .into_iter()
        .map(|v| u32::try_from(v).unwrap())
        .collect();
    // generate(do_sample=False): the most likely token each step.
    let options = SampleOptions::default()
        .max_new_tokens(new_tokens)
        .top_k(Some(1));
    let got = gpt
        .generate(&[want[..prompt_len].to_vec()], &options)
        .unwrap();
    assert_eq!(got[0], want);
}

/// The fixture's `gpt2-lmhead` weights.
fn lmhead_weights() -> StateDict {
    read_file(hf("gpt2-lmhead/model.safetensors"))
        .unwrap()
        .tensors
}

/// Writes `weights` to `dir` as a single-file checkpoint with the fixture's config.
fn write_checkpoint(dir: &Path, weights: &StateDict) {
    std::fs::copy(hf("gpt2-lmhead/config.json"), dir.join("config.json")).unwrap();
    let meta = BTreeMap::from([("format".to_string(), "pt".to_string())]);
    save_file(
        dir.join("model.safetensors"),
        weights,
        FloatDtype::F32,
        &meta,
    )
    .unwrap();
}

#[test]
fn a_missing_and_a_mis_shaped_key_are_reported_in_one_error() {
    let dev = tang_testing::device();
    let dir = temp_dir("broken");
    let mut weights = lmhead_weights();
    let names: Vec<String> = weights.names().map(str::to_string).collect();
    let (missing, misshaped) = (&names[0], &names[names.len() - 1]);
    weights.remove(missing);
    let shape = weights.get(misshaped).unwrap().shape().to_vec();
    let wrong = [shape[0] + 1];
    weights.insert(
        misshaped.clone(),
        HostTensor::from_f32(&vec![0.0; wrong[0]], &wrong).unwrap(),
    );
    write_checkpoint(&dir, &weights);
    let err = Gpt::from_pretrained(&dev, &dir).err().unwrap();
    let HubError::Keys(keys) = &err else {
        panic!("expected a key error, got {err}");
    };
    assert_eq!(keys.missing_keys, std::slice::from_ref(missing));
    assert_eq!(keys.size_mismatches.len(), 1);
    assert_eq!(keys.size_mismatches[0].key, *misshaped);
    let text = err.to_string();
    println!("{text}");
    assert!(
        text.contains(missing.as_str())
            && text.contains(misshaped.as_str())
            && text.contains("GPT2LMHeadModel")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn save_pretrained_writes_the_lmhead_layout_and_loads_back_to_the_same_logits() {
    let dev = tang_testing::device();
    let gpt = Gpt::from_pretrained(&dev, hf("gpt2-base")).unwrap();
    gpt.eval();
    let dir = temp_dir("saved");
    gpt.save_pretrained(&dir).unwrap();
    // transformers' layout: the keys and shapes GPT2LMHeadModel.save_pretrained wrote,
    // the tied head left out, and the metadata transformers requires.
    let saved = read_file(dir.join("model.safetensors")).unwrap();
    let shapes = |sd: &StateDict| sd.shapes().into_iter().collect::<BTreeMap<_, _>>();
    assert_eq!(shapes(&saved.tensors), shapes(&lmhead_weights()));
    assert_eq!(saved.metadata.get("format").map(String::as_str), Some("pt"));
    assert_eq!(pretrained_config(&dir).unwrap(), *gpt.config());
    let again = Gpt::from_pretrained(&dev, &dir).unwrap();
    again.eval();
    assert_eq!(
        logits_of(&again, &dev),
        logits_of(&gpt, &dev),
        "identical logits"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_sharded_checkpoint_loads_and_a_bad_index_is_refused() {
    let dev = tang_testing::device();
    let dir = temp_dir("sharded");
    std::fs::copy(hf("gpt2-lmhead/config.json"), dir.join("config.json")).unwrap();
    let mut weights = lmhead_weights();
    let names: Vec<String> = weights.names().map(str::to_string).collect();
    // Two shards, with what older or other writers add: a causal-mask buffer (skipped)
    // and the tied head stored anyway (tied to wte on load).
    let (first, second) = names.split_at(names.len() / 2);
    let mut shards = [StateDict::new(), StateDict::new()];
    let mut map = serde_json::Map::new();
    for (i, part) in [first, second].into_iter().enumerate() {
        let file = format!("model-0000{}-of-00002.safetensors", i + 1);
        for name in part {
            shards[i].insert(name.clone(), weights.remove(name).unwrap());
            map.insert(name.clone(), file.clone().into());
        }
    }
    let wte = shards[0]
        .get("transformer.wte.weight")
        .or(shards[1].get("transformer.wte.weight"))
        .unwrap()
        .shape()
        .to_vec();
    let zeros =
        |shape: &[usize]| HostTensor::from_f32(&vec![0.0; shape.iter().product()], shape).unwrap();
    shards[1].insert("lm_head.weight", zeros(&wte));
    shards[1].insert("transformer.h.0.attn.bias", zeros(&[1, 1, 4, 4]));
    map.insert(
        "lm_head.weight".into(),
        "model-00002-of-00002.safetensors".into(),
    );
    map.insert(
        "transformer.h.0.attn.bias".into(),
        "model-00002-of-00002.safetensors".into(),
    );
    let meta = BTreeMap::from([("format".to_string(), "pt".to_string())]);
    for (i, shard) in shards.iter().enumerate() {
        let file = format!("model-0000{}-of-00002.safetensors", i + 1);
        save_file(dir.join(file), shard, FloatDtype::F32, &meta).unwrap();
    }
    let index = serde_json::json!({"metadata": {}, "weight_map": map});
    std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    let gpt = Gpt::from_pretrained(&dev, &dir).unwrap();
    gpt.eval();
    let reference = Gpt::from_pretrained(&dev, hf("gpt2-lmhead")).unwrap();
    reference.eval();
    assert_eq!(logits_of(&gpt, &dev), logits_of(&reference, &dev));

    // An index that reaches outside the directory, and one a shard disagrees with.
    let mut outside = map.clone();
    outside.insert(
        names[0].clone(),
        "../model-00001-of-00002.safetensors".into(),
    );
    let mut elsewhere = map;
    elsewhere.insert(names[0].clone(), "model-00002-of-00002.safetensors".into());
    for (bad, needle) in [(outside, "not a file name"), (elsewhere, "disagree")] {
        let index = serde_json::json!({"weight_map": bad});
        std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
        let err = Gpt::from_pretrained(&dev, &dir).err().unwrap();
        assert!(
            matches!(err, HubError::Index { .. }) && err.to_string().contains(needle),
            "{err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_model_of_another_config_is_not_filled_from_the_checkpoint() {
    let dev = tang_testing::device();
    let config = pretrained_config(hf("gpt2-lmhead")).unwrap();
    let other = tang_nn::models::gpt::GptConfig {
        gelu: tang_nn::nn::Approximate::None,
        ..config
    };
    let gpt = Gpt::new(&dev, &other, 0).unwrap();
    let err = gpt.load_pretrained(hf("gpt2-lmhead")).unwrap_err();
    assert!(matches!(err, HubError::Config { .. }), "{err}");
    assert!(Gpt::from_pretrained(&dev, hf("no-such-checkpoint")).is_err());
}

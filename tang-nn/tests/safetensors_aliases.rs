//! Tied names come from the model, as `safetensors.torch.load_model` derives them: the
//! metadata of a file is the caller's (a config, `{"format": "pt"}`) and is never read as
//! an alias record, so a value that happens to equal a tensor's name adds no key, and a
//! tied model loads strictly whatever the metadata holds.

use std::collections::BTreeMap;

use tang_nn::Module;
use tang_nn::checkpoint::{CheckpointDir, Retention, TrainerState, load_training, save_training};
use tang_nn::models::gpt::{Gpt, GptConfig};
use tang_nn::nn::Linear;
use tang_nn::optim::{AdamW, AdamWOptions};
use tang_nn::rng::SplitMix64;
use tang_nn::safetensors::{FloatDtype, load_model, read_file, save_file, save_model_with};
use tang_nn::tang_runtime::Device;

fn scratch(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("aliases-{name}-{}", std::process::id()))
}

fn meta(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn values(model: &impl Module) -> Vec<(String, Vec<f32>)> {
    model
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, p.to_vec().unwrap()))
        .collect()
}

fn tiny_gpt(dev: &Device, seed: u64) -> Gpt {
    let config = GptConfig {
        vocab_size: 11,
        block_size: 8,
        n_layer: 1,
        n_head: 2,
        n_kv_head: 2,
        n_embd: 8,
        dropout: 0.0,
        bias: false,
        ..GptConfig::gpt2()
    };
    Gpt::new(dev, &config, seed).unwrap()
}

#[test]
fn metadata_equal_to_a_tensor_name_is_not_an_alias() {
    let dev = Device::new().unwrap();
    let a = Linear::new(&dev, 3, 2, true, &mut SplitMix64::new(0)).unwrap();
    // safetensors.torch.save_model(a, path, metadata={"format": "weight"}): "weight" is
    // also the name of a tensor of the file.
    for (i, metadata) in [
        meta(&[("format", "weight")]),
        meta(&[("format", "pt"), ("note", "bias"), ("weight", "bias")]),
    ]
    .into_iter()
    .enumerate()
    {
        let path = scratch(&format!("linear-{i}.safetensors"));
        save_model_with(&a, &path, FloatDtype::F32, &metadata).unwrap();
        let b = Linear::new(&dev, 3, 2, true, &mut SplitMix64::new(1)).unwrap();
        let report = load_model(&b, &path, true).unwrap_or_else(|e| panic!("{metadata:?}: {e}"));
        assert!(report.is_empty(), "{metadata:?}: {report:?}");
        assert_eq!(values(&b), values(&a));
        // Reading the file gives its tensors and its metadata, nothing made up.
        let file = read_file(&path).unwrap();
        let mut names: Vec<&str> = file.tensors.names().collect();
        names.sort();
        assert_eq!(names, ["bias", "weight"], "{metadata:?}");
        assert_eq!(file.metadata, metadata);
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn a_tied_model_loads_strictly_whatever_the_metadata_says() {
    let dev = Device::new().unwrap();
    let a = tiny_gpt(&dev, 0);
    // With the alias record save_model writes, and with the caller's metadata holding
    // that key instead (then no record is written: the caller's data is never
    // overwritten), PyTorch's load_model loads both: the tie is the model's.
    for (i, metadata) in [
        meta(&[("format", "pt")]),
        meta(&[
            ("transformer.wte.weight", "a note"),
            ("format", "lm_head.weight"),
        ]),
    ]
    .into_iter()
    .enumerate()
    {
        let path = scratch(&format!("gpt-{i}.safetensors"));
        save_model_with(&a, &path, FloatDtype::F32, &metadata).unwrap();
        let b = tiny_gpt(&dev, 1);
        load_model(&b, &path, true).unwrap_or_else(|e| panic!("{metadata:?}: {e}"));
        assert_eq!(values(&b), values(&a), "{metadata:?}");
        let file = read_file(&path).unwrap();
        assert!(
            !file.tensors.contains("transformer.wte.weight"),
            "the tied name is stored once"
        );
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn a_file_holding_both_tied_names_is_refused_strictly_as_pytorch_does() {
    let dev = Device::new().unwrap();
    let a = tiny_gpt(&dev, 0);
    // Both names, untied in the file (save_file of a copy): PyTorch's load_model keeps
    // one name per tie of the model, so the other is an unexpected key.
    let mut state = a.state_dict();
    let wte = a.state_dict().f32_values("transformer.wte.weight").unwrap();
    let shape = [11, 8];
    state.insert(
        "transformer.wte.weight",
        tang_nn::safetensors::HostTensor::from_f32(&wte, &shape).unwrap(),
    );
    let path = scratch("gpt-both.safetensors");
    save_file(&path, &state, FloatDtype::F32, &BTreeMap::new()).unwrap();
    let b = tiny_gpt(&dev, 1);
    let err = load_model(&b, &path, true).unwrap_err().to_string();
    assert!(err.contains("transformer.wte.weight"), "{err}");
    let report = load_model(&b, &path, false).unwrap();
    assert_eq!(report.unexpected_keys, ["transformer.wte.weight"]);
    assert_eq!(values(&b), values(&a));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_tied_model_resumes_from_its_training_checkpoint() {
    let dev = Device::new().unwrap();
    let a = tiny_gpt(&dev, 0);
    let opt = AdamW::new(a.named_parameters(), AdamWOptions::default()).unwrap();
    let root = scratch("ckpt");
    let _ = std::fs::remove_dir_all(&root);
    let dir = CheckpointDir::open(&root, Retention::default()).unwrap();
    let saved = save_training(&dir, &a, &opt, &TrainerState::default()).unwrap();
    let b = tiny_gpt(&dev, 1);
    let mut opt_b = AdamW::new(b.named_parameters(), AdamWOptions::default()).unwrap();
    load_training(&saved, &b, &mut opt_b).unwrap();
    assert_eq!(values(&b), values(&a));
    std::fs::remove_dir_all(&root).unwrap();
}

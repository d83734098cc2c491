//! Model files: PyTorch's GPT files (F32 with the tied alias, F16, BF16) load strictly
//! into the tang GPT and give PyTorch's logits; a tang save of the model is the torch
//! file (names, alias metadata, data) and loads back bit-identically; an untied model
//! saves byte for byte as `safetensors` `save_file` writes the same tensors; strict-load
//! errors use PyTorch's words.

mod attention_common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use attention_common::fixture;
use tang_nn::Module;
use tang_nn::autograd::{Tensor, no_grad};
use tang_nn::models::gpt::{Gpt, GptConfig};
use tang_nn::nn::Linear;
use tang_nn::safetensors::{FloatDtype, Header, load_model, read_file, save_model_with};
use tang_nn::tang_runtime::Device;

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tang-files-{}-{name}", std::process::id()))
}

fn bytes(path: &PathBuf) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// (header, data section) of a well-formed file.
fn split(file: &[u8]) -> (Header, &[u8]) {
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let data = &file[8 + n..];
    (
        Header::parse(&file[8..8 + n], data.len() as u64).unwrap(),
        data,
    )
}

/// A GPT built from the config in `file`'s metadata (weights not loaded).
fn gpt_for(dev: &Device, file: &PathBuf) -> (Gpt, BTreeMap<String, String>) {
    let ck = read_file(file).unwrap();
    let config = GptConfig::from_json(&ck.metadata["config"]).unwrap();
    let gpt = Gpt::new(dev, &config, 7).unwrap();
    gpt.eval();
    (gpt, ck.metadata)
}

/// The bits of every `state_dict` entry.
fn bits(m: &impl Module) -> BTreeMap<String, Vec<u32>> {
    m.state_dict()
        .iter()
        .map(|(n, t)| {
            let tang_nn::safetensors::StateTensor::Device(t) = t else {
                panic!("{n} is not on the device")
            };
            (
                n.to_string(),
                t.to_vec().unwrap().iter().map(|v| v.to_bits()).collect(),
            )
        })
        .collect()
}

#[test]
fn f32_f16_and_bf16_files_load_strictly_and_give_pytorchs_logits() {
    let dev = tang_testing::device();
    let io = read_file(fixture("gpt_io.safetensors")).unwrap().tensors;
    let idx = Tensor::constant(io.u32_tensor("idx", &dev).unwrap());
    for (file, logits) in [
        ("gpt.safetensors", "logits"),
        ("gpt_f16.safetensors", "logits_from_f16"),
        ("gpt_bf16.safetensors", "logits_from_bf16"),
    ] {
        let (gpt, _) = gpt_for(&dev, &fixture(file));
        let report = load_model(&gpt, fixture(file), true).unwrap();
        assert!(report.is_empty(), "{file}: {report:?}");
        // The file holds lm_head.weight only; the alias record fills wte, and the two
        // names stay one parameter.
        assert_eq!(gpt.lm_head.weight.id(), gpt.transformer.wte.weight.id());
        let got = gpt.forward(&idx).unwrap().to_vec().unwrap();
        let want = io.f32_values(logits).unwrap();
        let diff = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
        println!("{file}: max |logits - {logits}| = {diff:.3e}");
        assert!(diff <= 1e-4, "{file}: {diff}");
    }
}

#[test]
fn a_tang_save_is_the_torch_file_and_loads_back_bit_identically() {
    let dev = tang_testing::device();
    let (gpt, metadata) = gpt_for(&dev, &fixture("gpt.safetensors"));
    load_model(&gpt, fixture("gpt.safetensors"), true).unwrap();
    // Only the config is the caller's: the alias record comes from the tie itself.
    let config = BTreeMap::from([("config".to_string(), metadata["config"].clone())]);
    let path = temp("tied.safetensors");
    save_model_with(&gpt, &path, FloatDtype::F32, &config).unwrap();
    let (ours, torch) = (bytes(&path), bytes(&fixture("gpt.safetensors")));
    let ((h_ours, d_ours), (h_torch, d_torch)) = (split(&ours), split(&torch));
    let names = |h: &Header| h.tensors.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&h_ours), names(&h_torch));
    assert_eq!(h_ours.metadata, h_torch.metadata);
    assert_eq!(h_ours.metadata["transformer.wte.weight"], "lm_head.weight");
    assert_eq!(h_ours, h_torch);
    assert!(d_ours == d_torch, "data sections differ");

    let again = Gpt::new(&dev, gpt.config(), 99).unwrap();
    load_model(&again, &path, true).unwrap();
    assert_eq!(bits(&again), bits(&gpt));
    assert_eq!(again.lm_head.weight.id(), again.transformer.wte.weight.id());
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn an_untied_model_saves_byte_for_byte_as_save_file() {
    let dev = tang_testing::device();
    let reference = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/gpt_untied_save_file.safetensors");
    let (mut gpt, metadata) = gpt_for(&dev, &reference);
    // Untie: the head gets its own parameter.
    let head = no_grad(|| gpt.lm_head.weight.mul_scalar(1.0)).unwrap();
    gpt.lm_head = Linear {
        weight: Tensor::parameter(head.data().clone()),
        bias: None,
    };
    load_model(&gpt, &reference, true).unwrap();
    assert_ne!(gpt.lm_head.weight.id(), gpt.transformer.wte.weight.id());
    let path = temp("untied.safetensors");
    save_model_with(&gpt, &path, FloatDtype::F32, &metadata).unwrap();
    let (ours, want) = (bytes(&path), bytes(&reference));
    assert_eq!(split(&ours).0, split(&want).0);
    assert!(split(&ours).1 == split(&want).1, "data sections differ");
    assert!(ours == want, "the whole file is save_file's");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn strict_loading_reports_every_problem_in_pytorchs_words() {
    let dev = tang_testing::device();
    let (gpt, _) = gpt_for(&dev, &fixture("gpt.safetensors"));
    let small = Gpt::new(
        &dev,
        &GptConfig {
            n_layer: 1,
            block_size: 32,
            ..*gpt.config()
        },
        0,
    )
    .unwrap();
    let err = load_model(&small, fixture("gpt.safetensors"), true)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("Error(s) in loading state_dict for Gpt:"),
        "{err}"
    );
    assert!(
        err.contains("Unexpected key(s) in state_dict: \"transformer.h.1."),
        "{err}"
    );
    assert!(
        err.contains(
            "size mismatch for transformer.wpe.weight: copying a param with shape [64, 64] from \
             checkpoint, the shape in current model is [32, 64]."
        ),
        "{err}"
    );
    // Non-strict: the unexpected keys come back, the shape mismatch is still an error.
    let err = load_model(&small, fixture("gpt.safetensors"), false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("size mismatch for transformer.wpe.weight"),
        "{err}"
    );
    let err = load_model(&gpt, "no/such/file.safetensors", true)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no/such/file.safetensors"), "{err}");
}

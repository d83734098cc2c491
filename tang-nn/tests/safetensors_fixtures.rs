//! The PyTorch fixtures (`gpt*.safetensors`, `mlp.safetensors`) read and load with the
//! names, shapes and metadata PyTorch wrote; F16/BF16 widen exactly; a tang save of the
//! GPT loaded from the torch file reproduces its header entries, alias record and data
//! section, and reads back bit-identically.

mod safetensors_common;

use std::collections::BTreeMap;

use half::{bf16, f16};
use safetensors_common::{bytes, data_section, fixture, header};
use tang_nn::Module;
use tang_nn::models::gpt::{Gpt, GptConfig};
use tang_nn::safetensors::{
    Dtype, FloatDtype, StateDict, StateTensor, check_state_dict, load_file, load_model, read_bytes,
    read_file, save_bytes,
};
use tang_runtime::Device;

/// The GPT's `state_dict()` keys and shapes (keys.json's "gpt": n_layer 2, n_embd 64,
/// block_size 64, vocab_size 81, no biases).
fn gpt_keys() -> Vec<(String, Vec<usize>)> {
    let mut keys = vec![
        ("transformer.wte.weight".to_string(), vec![81, 64]),
        ("transformer.wpe.weight".to_string(), vec![64, 64]),
    ];
    for l in 0..2 {
        let p = format!("transformer.h.{l}");
        keys.push((format!("{p}.ln_1.weight"), vec![64]));
        keys.push((format!("{p}.attn.c_attn.weight"), vec![192, 64]));
        keys.push((format!("{p}.attn.c_proj.weight"), vec![64, 64]));
        keys.push((format!("{p}.ln_2.weight"), vec![64]));
        keys.push((format!("{p}.mlp.c_fc.weight"), vec![256, 64]));
        keys.push((format!("{p}.mlp.c_proj.weight"), vec![64, 256]));
    }
    keys.push(("transformer.ln_f.weight".to_string(), vec![64]));
    keys.push(("lm_head.weight".to_string(), vec![81, 64]));
    keys
}

const GPT_CONFIG: &str = "{\"n_layer\": 2, \"n_head\": 4, \"n_embd\": 64, \"block_size\": 64, \
                          \"vocab_size\": 81, \"bias\": false}";

fn sorted_shapes(state: &StateDict) -> Vec<(String, Vec<usize>)> {
    let mut s = state.shapes();
    s.sort();
    s
}

/// The keys `safetensors.torch.save_model` stores for the GPT: the tied
/// `transformer.wte.weight` is left out (kept as `lm_head.weight`, first in string order).
fn gpt_file_keys() -> Vec<(String, Vec<usize>)> {
    let mut keys = gpt_keys();
    keys.retain(|(name, _)| name != "transformer.wte.weight");
    keys
}

#[test]
fn gpt_files_read_with_torch_names_shapes_dtypes_and_metadata() {
    let mut want = gpt_file_keys();
    want.sort();
    for (file, dtype) in [
        ("gpt.safetensors", Dtype::F32),
        ("gpt_f16.safetensors", Dtype::F16),
        ("gpt_bf16.safetensors", Dtype::BF16),
    ] {
        let ck = read_file(fixture(file)).unwrap();
        assert_eq!(sorted_shapes(&ck.tensors), want, "{file}");
        for (name, t) in ck.tensors.iter() {
            assert_eq!(t.dtype(), dtype, "{file} {name}");
        }
        assert_eq!(ck.metadata["config"], GPT_CONFIG, "{file}");
        // save_model's record of the tie, kept as the file's metadata (load_model takes
        // the tie from the model, not from here).
        assert_eq!(
            ck.metadata["transformer.wte.weight"], "lm_head.weight",
            "{file}"
        );
        check_state_dict("GPT", gpt_file_keys(), &ck.tensors, true).unwrap();
    }
}

#[test]
fn mlp_file_reads_with_sequential_names() {
    let ck = read_file(fixture("mlp.safetensors")).unwrap();
    assert_eq!(
        sorted_shapes(&ck.tensors),
        vec![
            ("0.bias".to_string(), vec![128]),
            ("0.weight".to_string(), vec![128, 64]),
            ("2.bias".to_string(), vec![10]),
            ("2.weight".to_string(), vec![10, 128]),
        ]
    );
    assert!(ck.metadata.is_empty());
}

#[test]
fn io_fixture_keeps_i64_ids_on_the_host_and_rejects_negative_ids_as_u32() {
    let dev = Device::new().unwrap();
    let ck = load_file(fixture("gpt_io.safetensors"), &dev).unwrap();
    let idx = ck.tensors.get("idx").unwrap();
    assert!(matches!(idx, StateTensor::Host(h) if h.dtype() == Dtype::I64));
    assert!(matches!(
        ck.tensors.get("logits").unwrap(),
        StateTensor::Device(_)
    ));
    let ids = ck.tensors.i64_values("idx").unwrap();
    let on_device = ck.tensors.u32_tensor("idx", &dev).unwrap();
    assert_eq!(on_device.shape(), &[4, 64]);
    let back: Vec<i64> = on_device
        .to_vec_u32()
        .unwrap()
        .into_iter()
        .map(i64::from)
        .collect();
    assert_eq!(back, ids);
    // targets hold -100 (PyTorch's ignore index) in row 0's first five positions.
    let err = ck.tensors.u32_tensor("targets", &dev).unwrap_err();
    assert_eq!(err.kind(), "value_out_of_range");
    assert!(err.to_string().contains("-100 at index 0"), "{err}");
}

/// Every tensor of a state dict as f32 bit patterns, by name.
fn bits(state: &StateDict) -> BTreeMap<String, Vec<u32>> {
    state
        .names()
        .map(|n| {
            let v = state.f32_values(n).unwrap();
            (n.to_string(), v.iter().map(|x| x.to_bits()).collect())
        })
        .collect()
}

#[test]
fn half_precision_files_equal_the_f32_weights_rounded_to_nearest_even() {
    let dev = Device::new().unwrap();
    let f32s = bits(&read_file(fixture("gpt.safetensors")).unwrap().tensors);
    for (file, round) in [
        (
            "gpt_f16.safetensors",
            (|x: f32| f16::from_f32(x).to_f32()) as fn(f32) -> f32,
        ),
        ("gpt_bf16.safetensors", |x: f32| bf16::from_f32(x).to_f32()),
    ] {
        // Through the device: loaded as f32 tensors, downloaded.
        let loaded = load_file(fixture(file), &dev).unwrap();
        let got = bits(&loaded.tensors);
        let mut changed = 0usize;
        for (name, want) in &f32s {
            let rounded: Vec<u32> = want
                .iter()
                .map(|&b| round(f32::from_bits(b)).to_bits())
                .collect();
            changed += rounded.iter().zip(want).filter(|(a, b)| a != b).count();
            assert_eq!(&got[name], &rounded, "{file} {name}");
        }
        // The rounding is not a no-op on these weights.
        assert!(changed > 1000, "{file}: only {changed} values changed");
    }
}

#[test]
fn saving_the_f32_gpt_as_f16_or_bf16_gives_torchs_bytes() {
    let ck = read_file(fixture("gpt.safetensors")).unwrap();
    for (file, float) in [
        ("gpt_f16.safetensors", FloatDtype::F16),
        ("gpt_bf16.safetensors", FloatDtype::BF16),
        ("gpt.safetensors", FloatDtype::F32),
    ] {
        let ours = save_bytes(&ck.tensors, float, &ck.metadata).unwrap();
        let torch = bytes(&fixture(file));
        assert_eq!(header(&ours), header(&torch), "{file}");
        assert!(data_section(&ours) == data_section(&torch), "{file}");
    }
}

#[test]
fn a_tang_save_of_the_loaded_gpt_matches_torchs_file_and_loads_back_bit_identically() {
    let dev = Device::new().unwrap();
    let torch = bytes(&fixture("gpt.safetensors"));
    let gpt = Gpt::new(&dev, &GptConfig::from_json(GPT_CONFIG).unwrap(), 0).unwrap();
    assert!(
        load_model(&gpt, fixture("gpt.safetensors"), true)
            .unwrap()
            .is_empty()
    );
    // The model's state dict holds the tie (two names, one buffer).
    let state = gpt.state_dict();
    assert!(
        state
            .get("lm_head.weight")
            .unwrap()
            .is_tied_to(state.get("transformer.wte.weight").unwrap())
    );
    // Only the config is the caller's metadata: the alias record is rebuilt from the tie.
    let user = BTreeMap::from([("config".to_string(), GPT_CONFIG.to_string())]);
    let ours = save_bytes(&state, FloatDtype::F32, &user).unwrap();
    let (h_ours, h_torch) = (header(&ours), header(&torch));
    let names = |h: &tang_nn::safetensors::Header| -> Vec<String> {
        h.tensors.iter().map(|t| t.name.clone()).collect()
    };
    assert_eq!(names(&h_ours), names(&h_torch));
    assert_eq!(h_ours.metadata, h_torch.metadata);
    assert_eq!(
        h_ours.metadata["transformer.wte.weight"], "lm_head.weight",
        "the dropped name maps to the kept one"
    );
    assert_eq!(h_ours, h_torch);
    assert!(data_section(&ours) == data_section(&torch));
    let again = read_bytes(&ours).unwrap();
    let loaded = load_file(fixture("gpt.safetensors"), &dev).unwrap();
    assert_eq!(bits(&again.tensors), bits(&loaded.tensors));
    assert_eq!(again.tensors.len(), gpt_file_keys().len());
}

//! tang's writer against files written by the format's own writer
//! (`data/make_safetensors_reference.py`): same tensor order, header and data bytes, in
//! F32, F16 and BF16; tied entries and user metadata as `save_model` handles them.

mod safetensors_common;

use std::collections::BTreeMap;

use safetensors_common::{bytes, data_file, data_section, header, header_len, header_text};
use tang_nn::safetensors::{
    FloatDtype, HostTensor, StateDict, check_state_dict, read_bytes, save_bytes, save_file,
};
use tang_runtime::{Device, Tensor};

/// `floats(n)` of the reference script: exact binary values, then halfway cases of F16
/// and BF16, then specials.
fn floats(n: usize) -> Vec<f32> {
    let ties = [
        1.0 + 2f32.powi(-11),
        1.0 + 3.0 * 2f32.powi(-11),
        1.0 + 2f32.powi(-8),
        1.0 + 3.0 * 2f32.powi(-8),
        -(1.0 + 2f32.powi(-11)),
        65520.0,
        2f32.powi(-25),
        3.0 * 2f32.powi(-26),
        1e-40f64 as f32,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    (0..n)
        .map(|i| match ties.get(i) {
            Some(&t) => t,
            None => {
                let r = (i as u64 * 2_654_435_761) % (1 << 24);
                (r as f32 - (1u32 << 23) as f32) * 2f32.powi(-17)
            }
        })
        .collect()
}

/// The reference script's tensors, inserted in its order (floats on the device, ids on
/// the host, counts as a u32 device tensor).
fn reference_state(dev: &Device) -> StateDict {
    let f = |v: &[f32], shape: &[usize]| Tensor::from_slice(dev, v, shape).unwrap();
    let mut s = StateDict::new();
    s.insert("layer.weight", f(&floats(12), &[3, 4]));
    let bias: Vec<f32> = floats(4).iter().map(|v| v * 0.5).collect();
    s.insert("layer.bias", f(&bias, &[4]));
    s.insert(
        "ids",
        HostTensor::from_i64(&[0, 5, -100, 1 << 40, 80], &[5]).unwrap(),
    );
    s.insert(
        "counts",
        Tensor::from_u32(dev, &[7, 0, u32::MAX], &[3]).unwrap(),
    );
    s.insert("empty", HostTensor::from_f32(&[], &[0, 3]).unwrap());
    s.insert("scalar", f(&[2.5], &[]));
    s.insert("a.first", f(&floats(6), &[2, 1, 3]));
    s
}

fn reference_metadata() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("format".to_string(), "pt".to_string()),
        (
            "note".to_string(),
            "quote \" backslash \\ newline \n tab \t ünï".to_string(),
        ),
    ])
}

#[test]
fn untied_tensors_are_written_byte_for_byte_as_the_reference_writer_does() {
    let dev = Device::new().unwrap();
    let state = reference_state(&dev);
    for (file, float) in [
        ("save_file_f32.safetensors", FloatDtype::F32),
        ("save_file_f16.safetensors", FloatDtype::F16),
        ("save_file_bf16.safetensors", FloatDtype::BF16),
    ] {
        let want = bytes(&data_file(file));
        let ours = save_bytes(&state, float, &reference_metadata()).unwrap();
        // Same tensor order, dtypes, shapes, offsets and metadata; the reference writer
        // orders its metadata map arbitrarily, so the header text may differ only there.
        assert_eq!(header(&ours), header(&want), "{file}");
        assert_eq!(header_len(&ours), header_len(&want), "{file}");
        let tensors_part = |h: String| h[h.find("},\"").unwrap()..].to_string();
        assert_eq!(
            tensors_part(header_text(&ours)),
            tensors_part(header_text(&want)),
            "{file}"
        );
        assert!(
            header_text(&ours).contains(r#""note":"quote \" backslash \\ newline \n tab \t ünï""#),
            "{file}: escaped as the reference writer escapes"
        );
        assert!(data_section(&ours) == data_section(&want), "{file}");
    }
}

#[test]
fn a_save_file_reloads_bit_identically_with_ids_and_counts() {
    let dev = Device::new().unwrap();
    let state = reference_state(&dev);
    let path = std::env::temp_dir().join(format!("tang-st-{}.safetensors", std::process::id()));
    save_file(&path, &state, FloatDtype::F32, &reference_metadata()).unwrap();
    let back = tang_nn::safetensors::read_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(back.metadata, reference_metadata());
    for name in ["layer.weight", "layer.bias", "scalar", "a.first", "empty"] {
        let (a, b) = (
            state.f32_values(name).unwrap(),
            back.tensors.f32_values(name).unwrap(),
        );
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b), "{name}");
    }
    assert_eq!(
        back.tensors.i64_values("ids").unwrap(),
        [0, 5, -100, 1 << 40, 80]
    );
    assert_eq!(
        back.tensors.i64_values("counts").unwrap(),
        [7, 0, i64::from(u32::MAX)]
    );
    check_state_dict("Reference", state.shapes(), &back.tensors, true).unwrap();
}

#[test]
fn tied_entries_are_written_once_and_recorded_without_overwriting_user_metadata() {
    let dev = Device::new().unwrap();
    let w = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let ids = HostTensor::from_i64(&[3, 1], &[2]).unwrap();
    let mut s = StateDict::new();
    s.insert("z.embed", w.clone());
    s.insert("head", w.clone());
    s.insert("y.ids", ids.clone());
    s.insert("x.ids", ids);
    s.insert("c", w);
    let user = BTreeMap::from([("z.embed".to_string(), "mine".to_string())]);
    let file = save_bytes(&s, FloatDtype::F32, &user).unwrap();
    let h = header(&file);
    let names: Vec<&str> = h.tensors.iter().map(|t| t.name.as_str()).collect();
    // One copy of each storage, under the first name in string order.
    assert_eq!(names, ["x.ids", "c"]);
    assert_eq!(
        h.metadata,
        BTreeMap::from([
            ("z.embed".to_string(), "mine".to_string()),
            ("head".to_string(), "c".to_string()),
            ("y.ids".to_string(), "x.ids".to_string()),
        ])
    );
    // Reading gives the stored tensors only, as safetensors.torch.load_file does (a
    // model's ties are the model's: load_model takes them from it); the records stay
    // metadata.
    let back = read_bytes(&file).unwrap();
    let mut names: Vec<&str> = back.tensors.names().collect();
    names.sort();
    assert_eq!(names, ["c", "x.ids"]);
    assert_eq!(back.metadata, h.metadata);
}

#[test]
fn a_reshaped_view_of_a_buffer_is_saved_as_its_own_tensor() {
    let dev = Device::new().unwrap();
    let w = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    let mut s = StateDict::new();
    s.insert("w", w.clone());
    s.insert("flat", w.reshape(&[6]).unwrap());
    let back = read_bytes(&save_bytes(&s, FloatDtype::F32, &BTreeMap::new()).unwrap()).unwrap();
    assert!(back.metadata.is_empty());
    assert_eq!(back.tensors.get("flat").unwrap().shape(), &[6]);
    assert_eq!(
        back.tensors.f32_values("flat").unwrap(),
        back.tensors.f32_values("w").unwrap()
    );
}

#[test]
fn a_tensor_named_like_the_metadata_key_is_refused() {
    let mut s = StateDict::new();
    s.insert("__metadata__", HostTensor::from_f32(&[1.0], &[1]).unwrap());
    let err = save_bytes(&s, FloatDtype::F32, &BTreeMap::new()).unwrap_err();
    assert_eq!(err.kind(), "reserved_name", "{err}");
}

//! Strict and non-strict state-dict checks, reported in PyTorch's words.

use tang_nn::safetensors::{HostTensor, IncompatibleKeys, StateDict, check_state_dict};

fn state(entries: &[(&str, &[usize])]) -> StateDict {
    let mut s = StateDict::new();
    for &(name, shape) in entries {
        let n: usize = shape.iter().product();
        s.insert(name, HostTensor::from_f32(&vec![0.0; n], shape).unwrap());
    }
    s
}

const MODEL: &[(&str, &[usize])] = &[
    ("0.weight", &[128, 64]),
    ("0.bias", &[128]),
    ("2.weight", &[10, 128]),
    ("2.bias", &[10]),
];

#[test]
fn a_matching_state_dict_loads_strictly() {
    let found = state(MODEL);
    assert_eq!(
        check_state_dict("Sequential", MODEL.iter().copied(), &found, true),
        Ok(IncompatibleKeys::default())
    );
}

#[test]
fn strict_loading_reports_every_problem_at_once_in_pytorchs_words() {
    let found = state(&[
        ("0.weight", &[128, 64]),
        ("0.bias", &[64]),
        ("2.weight", &[10, 64]),
        ("extra.weight", &[3]),
        ("extra.bias", &[3]),
    ]);
    let err = check_state_dict("Sequential", MODEL.iter().copied(), &found, true).unwrap_err();
    assert_eq!(err.missing_keys, ["2.bias"]);
    assert_eq!(err.unexpected_keys, ["extra.weight", "extra.bias"]);
    assert_eq!(err.size_mismatches.len(), 2);
    assert_eq!(
        err.to_string(),
        "Error(s) in loading state_dict for Sequential:\n\
         \tMissing key(s) in state_dict: \"2.bias\". \n\
         \tUnexpected key(s) in state_dict: \"extra.weight\", \"extra.bias\". \n\
         \tsize mismatch for 0.bias: copying a param with shape [64] from checkpoint, \
         the shape in current model is [128].\n\
         \tsize mismatch for 2.weight: copying a param with shape [10, 64] from checkpoint, \
         the shape in current model is [10, 128]."
    );
}

#[test]
fn non_strict_loading_returns_missing_and_unexpected_keys() {
    let found = state(&[("0.weight", &[128, 64]), ("0.bias", &[128]), ("z", &[1])]);
    let report = check_state_dict("Sequential", MODEL.iter().copied(), &found, false).unwrap();
    assert_eq!(report.missing_keys, ["2.weight", "2.bias"]);
    assert_eq!(report.unexpected_keys, ["z"]);
}

#[test]
fn non_strict_loading_still_refuses_shape_mismatches_as_pytorch_does() {
    let found = state(&[("0.weight", &[64, 128]), ("q", &[1])]);
    let err = check_state_dict("Sequential", MODEL.iter().copied(), &found, false).unwrap_err();
    assert!(err.missing_keys.is_empty() && err.unexpected_keys.is_empty());
    assert_eq!(
        err.to_string(),
        "Error(s) in loading state_dict for Sequential:\n\
         \tsize mismatch for 0.weight: copying a param with shape [64, 128] from checkpoint, \
         the shape in current model is [128, 64]."
    );
}

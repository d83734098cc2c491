//! `metrics::accuracy` on the GPU against a host reference (ties, out-of-range targets),
//! and its typed errors for shapes and dtypes it cannot score.

use tang_nn::autograd::{Error, Tensor};
use tang_nn::metrics::accuracy;
use tang_nn::rng::SplitMix64;
use tang_nn::tang_runtime::{Device, Tensor as RawTensor};

fn device() -> Device {
    Device::new().expect("a GPU adapter (install mesa-vulkan-drivers without a GPU)")
}

/// The host reference: the first index of each row's maximum against the target.
fn reference(logits: &[f32], classes: usize, target: &[u32]) -> f64 {
    let right = logits
        .chunks(classes)
        .zip(target)
        .filter(|(row, t)| {
            let best = row
                .iter()
                .enumerate()
                .fold(0, |b, (i, &v)| if v > row[b] { i } else { b });
            best as u32 == **t
        })
        .count();
    right as f64 / target.len() as f64
}

#[test]
fn accuracy_matches_the_host_reference_with_ties_and_bad_targets() {
    let dev = device();
    let (rows, classes) = (37, 5);
    let mut rng = SplitMix64::new(4);
    // Values from a small set, so many rows have tied maxima.
    let logits: Vec<f32> = (0..rows * classes).map(|_| rng.below(3) as f32).collect();
    let mut target: Vec<u32> = (0..rows).map(|_| rng.below(classes) as u32).collect();
    target[3] = 7; // out of range: counts as wrong
    let want = reference(&logits, classes, &target);
    assert!(want > 0.1 && want < 0.9, "a mixed case: {want}");
    let input = Tensor::parameter(RawTensor::from_slice(&dev, &logits, &[rows, classes]).unwrap());
    let t = Tensor::from_u32(&dev, &target, &[rows]).unwrap();
    let got = accuracy(&input, &t).unwrap();
    assert_eq!(got.shape(), [1]);
    assert!(
        (f64::from(got.item().unwrap()) - want).abs() < 1e-6,
        "{got:?} vs {want}"
    );
    // Every row right.
    let best: Vec<u32> = logits
        .chunks(classes)
        .map(|r| {
            r.iter()
                .enumerate()
                .fold(0, |b, (i, &v)| if v > r[b] { i } else { b }) as u32
        })
        .collect();
    let all = accuracy(&input, &Tensor::from_u32(&dev, &best, &[rows]).unwrap()).unwrap();
    assert_eq!(all.item().unwrap(), 1.0);
}

#[test]
fn shapes_and_dtypes_it_cannot_score_are_typed_errors() {
    let dev = device();
    let logits = Tensor::constant(RawTensor::zeros(&dev, &[4, 3]).unwrap());
    let bad = |r: Result<Tensor, Error>| {
        let e = r.expect_err("an error");
        assert!(matches!(e, Error::Runtime(_)), "{e}");
        assert!(e.to_string().contains("accuracy"), "{e}");
    };
    let target = |n: usize| Tensor::from_u32(&dev, &vec![0; n], &[n]).unwrap();
    bad(accuracy(&logits, &target(3))); // target length
    bad(accuracy(
        &Tensor::constant(RawTensor::zeros(&dev, &[12]).unwrap()),
        &target(12),
    )); // 1-D input
    bad(accuracy(&logits, &Tensor::zeros(&dev, &[4]).unwrap())); // f32 target
    let empty = Tensor::constant(RawTensor::zeros(&dev, &[4, 0]).unwrap());
    bad(accuracy(&empty, &target(4))); // no classes
}

//! The many-tensor ops on the software adapter: `foreach_sum_of_squares` (gradient
//! clipping's per-tensor sums) against f64, and `foreach_unscale_count_non_finite` (a
//! GradScaler's unscale) against exact products; the typed errors.

use tang_runtime::ops;
use tang_runtime::{Error, Tensor};
use tang_testing::{Rng, devices};

/// Random values for the foreach tests (seeded by `seed`): lengths at and around the first
/// pass's 4,096-element chunks, an empty tensor, and more tensors than one launch binds
/// (70: two groups).
fn foreach_values(seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng::new(seed);
    [0usize, 1, 5, 4095, 4096, 4097, 70_001]
        .into_iter()
        .chain((0..63).map(|i| 1 + 37 * i))
        .map(|n| rng.vec(n, 2.0))
        .collect()
}

/// Each tensor's sum of squares against f64, over lengths at and around the first pass's
/// 4,096-element chunks, an empty tensor, and more tensors than one launch binds (70: two
/// groups); the typed errors.
#[test]
fn foreach_sum_of_squares_matches_an_f64_reference() {
    for dev in devices() {
        let values = foreach_values(11);
        let tensors: Vec<Tensor> = values
            .iter()
            .map(|v| Tensor::from_slice(&dev, v, &[v.len()]).unwrap())
            .collect();
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let got = ops::foreach_sum_of_squares(&refs)
            .unwrap()
            .to_vec()
            .unwrap();
        assert_eq!(got.len(), values.len());
        for (i, v) in values.iter().enumerate() {
            let want: f64 = v.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
            let err = (f64::from(got[i]) - want).abs();
            assert!(
                err <= 1e-5 * want.max(1e-30),
                "tensor {i} of {} elements: {} against {want}",
                v.len(),
                got[i]
            );
        }
        // Bit-identical from run to run (the order depends only on the lengths).
        assert_eq!(
            ops::foreach_sum_of_squares(&refs)
                .unwrap()
                .to_vec()
                .unwrap(),
            got
        );
        let e = ops::foreach_sum_of_squares(&[]).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        let ids = Tensor::from_u32(&dev, &[1, 2], &[2]).unwrap();
        let e = ops::foreach_sum_of_squares(&[&tensors[1], &ids]).unwrap_err();
        assert!(matches!(e, Error::DType { .. }), "{e}");
    }
}

/// `foreach_unscale_count_non_finite` (a GradScaler's unscale): every element multiplied
/// in place exactly as one f32 product, the non-finite elements (inf, -inf, NaN, placed in
/// chunks past the first and in the second launch's group) counted before the product,
/// over the same lengths as above (more tensors than one launch binds, an empty one), two
/// disjoint views of one buffer among them; the typed errors.
#[test]
fn foreach_unscale_scales_in_place_and_counts_the_non_finite() {
    for dev in devices() {
        let mut rng = Rng::new(13);
        let mut values = foreach_values(12);
        let bad = [
            (3, 4000, f32::INFINITY),
            (6, 69_999, f32::NAN),
            (69, 7, f32::NEG_INFINITY),
        ];
        for &(t, i, v) in &bad {
            values[t][i] = v;
        }
        let mut tensors: Vec<Tensor> = values
            .iter()
            .map(|v| Tensor::from_slice(&dev, v, &[v.len()]).unwrap())
            .collect();
        // Two views of one buffer (a norm's weight and bias gradients are such a pair).
        let align = dev.info().limits.min_storage_buffer_offset_alignment as usize / 4;
        let pair: Vec<f32> = rng.vec(2 * align, 2.0);
        let whole = Tensor::from_slice(&dev, &pair, &[2 * align]).unwrap();
        tensors.push(whole.view_at(0, &[align]).unwrap());
        tensors.push(whole.view_at(align, &[align]).unwrap());
        values.push(pair[..align].to_vec());
        values.push(pair[align..].to_vec());
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let inv = 1.0f32 / 3.0;
        let count = ops::foreach_unscale_count_non_finite(&refs, inv).unwrap();
        assert_eq!(count.to_vec().unwrap(), [bad.len() as f32]);
        for (i, (t, v)) in tensors.iter().zip(&values).enumerate() {
            let got = t.to_vec().unwrap();
            for (j, (&g, &x)) in got.iter().zip(v).enumerate() {
                let want = x * inv;
                assert!(
                    g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
                    "tensor {i}, element {j}: {g} against {want}"
                );
            }
        }
        let e = ops::foreach_unscale_count_non_finite(&[], inv).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        let ids = Tensor::from_u32(&dev, &[1, 2], &[2]).unwrap();
        let e = ops::foreach_unscale_count_non_finite(&[&tensors[1], &ids], inv).unwrap_err();
        assert!(matches!(e, Error::DType { .. }), "{e}");
    }
}

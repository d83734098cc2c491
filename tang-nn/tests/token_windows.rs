//! nanoGPT-style window batches: uniform offsets (a χ² test), correct windows, seeded and
//! resumable by step, and u32 tensors on the GPU.

use tang_nn::data::{DataError, TokenBatcher, WindowSampler};
use tang_runtime::Device;

#[test]
fn window_offsets_pass_a_chi_square_uniformity_test() {
    // 100 possible offsets, 500 steps of 64 windows: 32,000 draws, 320 expected per offset.
    let sampler = WindowSampler::new(2024, 64, 16, 116).unwrap();
    assert_eq!(sampler.offset_count(), 100);
    let mut counts = [0u64; 100];
    for step in 0..500 {
        for o in sampler.offsets(step).unwrap() {
            counts[o] += 1;
        }
    }
    let expected = 32_000.0 / 100.0;
    let chi2: f64 = counts
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum();
    // 99 degrees of freedom: P(χ² > 148.23) = 0.001 and P(χ² < 61.14) = 0.001 for a
    // uniform sampler. The low bound catches a sampler that is too even (cycling
    // through the offsets instead of drawing them).
    println!(
        "chi-square statistic {chi2:.2} with 99 degrees of freedom (accepted: 61.14 < x < 148.23)"
    );
    assert!(chi2 < 148.23 && chi2 > 61.14, "χ² = {chi2}");
}

#[test]
fn windows_are_corpus_slices_with_targets_shifted_by_one() {
    let corpus: Vec<u32> = (0..1000).map(|i| i * 7 + 3).collect();
    let batcher = TokenBatcher::new(corpus.clone(), 5, 8, 11).unwrap();
    for step in [0, 1, 99] {
        let offsets = batcher.sampler().offsets(step).unwrap();
        let (x, y) = batcher.host_batch(step).unwrap();
        assert_eq!(x.len(), 40);
        for (b, &o) in offsets.iter().enumerate() {
            assert!(o < 1000 - 8);
            assert_eq!(x[b * 8..b * 8 + 8], corpus[o..o + 8]);
            assert_eq!(y[b * 8..b * 8 + 8], corpus[o + 1..o + 9]);
        }
    }
    // A pure function of (seed, step): step 5 is the same whenever it is asked for.
    let again = TokenBatcher::new(corpus.clone(), 5, 8, 11).unwrap();
    assert_eq!(batcher.host_batch(5).unwrap(), again.host_batch(5).unwrap());
    assert_ne!(
        batcher.host_batch(5).unwrap(),
        batcher.host_batch(6).unwrap()
    );
    assert_ne!(
        batcher.host_batch(5).unwrap(),
        TokenBatcher::new(corpus, 5, 8, 12)
            .unwrap()
            .host_batch(5)
            .unwrap()
    );
}

#[test]
fn the_last_window_is_reachable_and_short_corpora_are_errors() {
    // block 4 in 6 tokens: offsets 0 and 1 (1 + 4 + 1 = 6 tokens used).
    let sampler = WindowSampler::new(1, 64, 4, 6).unwrap();
    let seen: std::collections::BTreeSet<usize> =
        (0..4).flat_map(|s| sampler.offsets(s).unwrap()).collect();
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [0, 1]);
    assert!(matches!(
        WindowSampler::new(1, 2, 6, 6),
        Err(DataError::CorpusTooShort {
            len: 6,
            block_size: 6
        })
    ));
    assert!(matches!(
        WindowSampler::new(1, 0, 4, 60),
        Err(DataError::InvalidOption { .. })
    ));
    assert!(matches!(
        WindowSampler::new(1, usize::MAX, 4, 60),
        Err(DataError::InvalidOption { .. })
    ));
    // A batch larger than memory is a typed error, not an abort.
    let huge = TokenBatcher::new(vec![0; 60], 1 << 60, 4, 1).unwrap();
    assert!(matches!(
        huge.host_batch(0),
        Err(DataError::InvalidOption { .. })
    ));
    assert!(matches!(
        huge.sampler().offsets(0),
        Err(DataError::InvalidOption { .. })
    ));
}

#[test]
fn batches_upload_as_u32_tensors() {
    let dev = Device::new().expect("a GPU adapter (install mesa-vulkan-drivers without a GPU)");
    let corpus: Vec<u32> = (0..300).map(|i| (i * 31) % 81).collect();
    let batcher = TokenBatcher::new(corpus, 3, 16, 4).unwrap();
    let (x, y) = batcher.batch(&dev, 7).unwrap();
    assert_eq!((x.shape(), y.shape()), (&[3, 16][..], &[3, 16][..]));
    let (hx, hy) = batcher.host_batch(7).unwrap();
    assert_eq!(x.to_vec_u32().unwrap(), hx);
    assert_eq!(y.to_vec_u32().unwrap(), hy);
}

//! nanoGPT-style window batches: uniform offsets (a χ² test), correct windows, seeded and
//! resumable by step, and u32 tensors on the GPU.

use tang_nn::data::{DataError, DeviceTokenBatcher, TokenBatcher, WindowSampler};
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
fn device_batches_equal_the_host_reference_with_one_launch_and_no_read() {
    let dev = Device::new().expect("a GPU adapter (install mesa-vulkan-drivers without a GPU)");
    let corpus: Vec<u32> = (0..300).map(|i| (i * 31) % 81).collect();
    let batcher = TokenBatcher::new(corpus.clone(), 3, 16, 4).unwrap();
    let on_device = batcher.to_device(&dev).unwrap();
    let direct = DeviceTokenBatcher::new(&dev, &corpus, 3, 16, 4).unwrap();
    for step in [0, 7, 1000] {
        dev.sync().unwrap();
        let before = dev.stats();
        let (x, y) = on_device.batch(step).unwrap();
        let after = dev.stats();
        assert_eq!(after.launches - before.launches, 1, "one gather kernel");
        assert_eq!(after.host_reads, before.host_reads);
        assert_eq!((x.shape(), y.shape()), (&[3, 16][..], &[3, 16][..]));
        let (hx, hy) = batcher.host_batch(step).unwrap();
        assert_eq!(x.to_vec_u32().unwrap(), hx);
        assert_eq!(y.to_vec_u32().unwrap(), hy);
        let (dx, _) = direct.batch(step).unwrap();
        assert_eq!(dx.to_vec_u32().unwrap(), hx);
    }
}

#[test]
fn device_window_starts_pass_a_chi_square_uniformity_test() {
    // The corpus is 0, 1, 2, ...: each window's first input token is its start, read back
    // from the GPU. 50 possible starts, 100 steps of 48 windows: 4,800 draws, 96 each.
    let dev = Device::new().unwrap();
    let corpus: Vec<u32> = (0..54).collect();
    let batcher = DeviceTokenBatcher::new(&dev, &corpus, 48, 4, 99).unwrap();
    assert_eq!(batcher.sampler().offset_count(), 50);
    let batches: Vec<_> = (0..100).map(|s| batcher.batch(s).unwrap()).collect();
    let mut counts = [0u64; 50];
    for (x, y) in &batches {
        let (x, y) = (x.to_vec_u32().unwrap(), y.to_vec_u32().unwrap());
        for (row_x, row_y) in x.chunks(4).zip(y.chunks(4)) {
            assert_eq!(row_x, [row_x[0], row_x[0] + 1, row_x[0] + 2, row_x[0] + 3]);
            assert_eq!(row_y[0], row_x[0] + 1);
            counts[row_x[0] as usize] += 1;
        }
    }
    let expected = 4_800.0 / 50.0;
    let chi2: f64 = counts
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum();
    // 49 degrees of freedom: P(χ² > 85.35) = 0.001 and P(χ² < 23.98) = 0.001.
    println!("device starts: chi-square {chi2:.2} with 49 degrees of freedom");
    assert!(chi2 < 85.35 && chi2 > 23.98, "χ² = {chi2}");
}

#[test]
fn a_batch_of_many_workgroups_and_bad_sizes() {
    // 18,000 tokens: 71 workgroups, the last one partly idle.
    let dev = Device::new().unwrap();
    let corpus: Vec<u32> = (0..5000).map(|i| i * 3).collect();
    let host = TokenBatcher::new(corpus.clone(), 300, 60, 5).unwrap();
    let (x, y) = host.to_device(&dev).unwrap().batch(3).unwrap();
    let (hx, hy) = host.host_batch(3).unwrap();
    assert_eq!(x.to_vec_u32().unwrap(), hx);
    assert_eq!(y.to_vec_u32().unwrap(), hy);
    assert!(matches!(
        DeviceTokenBatcher::new(&dev, &corpus, 2, 5000, 1),
        Err(DataError::CorpusTooShort { .. })
    ));
    assert!(matches!(
        DeviceTokenBatcher::new(&dev, &vec![0; (1 << 20) + 2], 1 << 12, 1 << 20, 1),
        Err(DataError::InvalidOption {
            what: "batch_size",
            ..
        })
    ));
}

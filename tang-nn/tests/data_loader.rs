//! The data loader's contract: seeded epochs, every sample once per epoch, `drop_last`,
//! exact resumption mid-epoch, and collation into GPU tensors.

use tang_nn::data::{DataError, DataLoader, Dataset, LoaderOptions, LoaderState};
use tang_runtime::{Device, Tensor};

/// A collate that keeps the samples, so tests see exactly which ones a batch holds.
fn keep(samples: Vec<u32>) -> Result<Vec<u32>, DataError> {
    Ok(samples)
}

fn options(batch_size: usize, shuffle: bool, drop_last: bool, seed: u64) -> LoaderOptions {
    LoaderOptions {
        batch_size,
        shuffle,
        drop_last,
        seed,
        sampler: None,
    }
}

/// The batches of one epoch.
fn epoch<C>(loader: &mut DataLoader<Vec<u32>, C>) -> Vec<Vec<u32>>
where
    C: FnMut(Vec<u32>) -> Result<Vec<u32>, DataError>,
{
    let mut batches = Vec::new();
    while let Some(b) = loader.next_batch().unwrap() {
        batches.push(b);
    }
    batches
}

#[test]
fn same_seed_same_batches_other_seed_or_epoch_other_order() {
    let data: Vec<u32> = (0..103).collect();
    let mut a = DataLoader::new(data.clone(), keep, options(8, true, false, 42)).unwrap();
    let mut b = DataLoader::new(data.clone(), keep, options(8, true, false, 42)).unwrap();
    let mut c = DataLoader::new(data, keep, options(8, true, false, 43)).unwrap();
    let (a0, a1) = (epoch(&mut a), epoch(&mut a));
    assert_eq!(a0, epoch(&mut b));
    assert_eq!(a1, epoch(&mut b));
    assert_ne!(a0, a1, "each epoch has its own order");
    assert_ne!(a0, epoch(&mut c), "another seed, another order");
    assert_ne!(a0.concat(), (0..103).collect::<Vec<_>>(), "shuffled");
}

#[test]
fn each_sample_exactly_once_per_epoch_and_in_order_without_shuffle() {
    let data: Vec<u32> = (0..103).collect();
    let mut loader = DataLoader::new(data.clone(), keep, options(8, true, false, 7)).unwrap();
    assert_eq!(loader.len(), 13);
    for e in 0..3 {
        let batches = epoch(&mut loader);
        assert_eq!(batches.len(), 13);
        assert!(batches[..12].iter().all(|b| b.len() == 8));
        assert_eq!(
            batches[12].len(),
            103 - 12 * 8,
            "the short last batch is kept"
        );
        let mut seen = batches.concat();
        seen.sort_unstable();
        assert_eq!(seen, data, "epoch {e}");
        assert_eq!(loader.state().epoch, e + 1);
    }
    let mut plain = DataLoader::new(
        data.clone(),
        keep,
        LoaderOptions {
            batch_size: 10,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(epoch(&mut plain).concat(), data, "no shuffle: index order");
}

#[test]
fn drop_last_drops_only_the_short_batch() {
    let data: Vec<u32> = (0..103).collect();
    let mut loader = DataLoader::new(data.clone(), keep, options(8, true, true, 7)).unwrap();
    assert_eq!(loader.len(), 12);
    let batches = epoch(&mut loader);
    assert_eq!(batches.len(), 12);
    assert!(batches.iter().all(|b| b.len() == 8));
    // The same order as without drop_last, minus the tail.
    let mut keep_last = DataLoader::new(data.clone(), keep, options(8, true, false, 7)).unwrap();
    assert_eq!(batches.concat(), epoch(&mut keep_last).concat()[..96]);
    // An exact multiple loses nothing.
    let mut exact = DataLoader::new(
        (0..96).collect::<Vec<u32>>(),
        keep,
        options(8, true, true, 7),
    )
    .unwrap();
    assert_eq!(epoch(&mut exact).concat().len(), 96);
    // Fewer samples than one batch: no batches at all.
    let mut tiny = DataLoader::new(vec![1u32, 2, 3], keep, options(8, false, true, 0)).unwrap();
    assert!(tiny.is_empty());
    assert!(tiny.next_batch().unwrap().is_none());
}

#[test]
fn next_batch_cycled_goes_on_into_the_next_epoch_and_refuses_an_empty_loader() {
    let data: Vec<u32> = (0..21).collect();
    // Three epochs' batches, as `next_batch` gives them with the epoch ends removed.
    let mut epochs = DataLoader::new(data.clone(), keep, options(5, true, true, 3)).unwrap();
    let expected: Vec<Vec<u32>> = (0..3).flat_map(|_| epoch(&mut epochs)).collect();
    assert_eq!(expected.len(), 12, "drop_last: 4 batches of 5 per epoch");
    let mut cycled = DataLoader::new(data, keep, options(5, true, true, 3)).unwrap();
    let got: Vec<Vec<u32>> = (0..12)
        .map(|_| cycled.next_batch_cycled().unwrap())
        .collect();
    assert_eq!(got, expected);
    assert_ne!(got[0], got[4], "epoch 1 has its own order");
    assert_eq!((cycled.state().epoch, cycled.state().position), (2, 20));
    // No batch in an epoch: an error that says why, not an endless loop.
    for (samples, drop_last) in [(3, true), (0, false)] {
        let data: Vec<u32> = (0..samples).collect();
        let mut empty = DataLoader::new(data, keep, options(8, false, drop_last, 0)).unwrap();
        let err = empty.next_batch_cycled().unwrap_err();
        assert!(
            matches!(err, DataError::NoBatches { batch_size: 8, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("batch_size"), "{err}");
    }
}

#[test]
fn resume_mid_epoch_gives_the_same_following_batches() {
    let data: Vec<u32> = (0..50).collect();
    let mut reference = DataLoader::new(data.clone(), keep, options(4, true, false, 99)).unwrap();
    let mut stream = Vec::new();
    let mut saved: Option<(LoaderState, usize)> = None;
    for i in 0..40 {
        if i == 17 {
            saved = Some((reference.state(), stream.len()));
        }
        match reference.next_batch().unwrap() {
            Some(b) => stream.push(Some(b)),
            None => stream.push(None),
        }
    }
    let (state, at) = saved.unwrap();
    assert_eq!(state.epoch, 1, "saved in the second epoch");
    assert!(state.position > 0, "mid-epoch");
    // The state goes through JSON, as in a checkpoint.
    let state: LoaderState = serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap();
    let mut resumed = DataLoader::new(data, keep, options(4, true, false, 0)).unwrap();
    resumed.resume(state).unwrap();
    let rest: Vec<_> = (at..40).map(|_| resumed.next_batch().unwrap()).collect();
    assert_eq!(rest, stream[at..]);
}

#[test]
fn bad_options_and_positions_are_typed_errors() {
    let data: Vec<u32> = (0..10).collect();
    assert!(matches!(
        DataLoader::new(data.clone(), keep, options(0, false, false, 0)),
        Err(DataError::InvalidOption {
            what: "batch_size",
            ..
        })
    ));
    // A data set longer than memory can index is a typed error, not an abort.
    struct Endless;
    impl Dataset for Endless {
        type Item = u32;
        fn len(&self) -> usize {
            usize::MAX
        }
        fn get(&self, index: usize) -> Result<u32, DataError> {
            Ok(index as u32)
        }
    }
    assert!(matches!(
        DataLoader::new(Endless, keep, LoaderOptions::default()),
        Err(DataError::InvalidOption {
            what: "dataset",
            ..
        })
    ));
    let mut loader = DataLoader::new(data, keep, options(3, false, false, 0)).unwrap();
    let err = loader
        .resume(LoaderState {
            seed: 0,
            epoch: 0,
            position: 11,
        })
        .unwrap_err();
    assert!(matches!(err, DataError::Resume { .. }), "{err}");
    assert!(
        loader
            .resume(LoaderState {
                seed: 0,
                epoch: 0,
                position: u64::MAX
            })
            .is_err()
    );
}

#[test]
fn collate_builds_gpu_tensors() {
    let dev = Device::new().expect("a GPU adapter (install mesa-vulkan-drivers without a GPU)");
    // Samples: 3 features and a class label.
    let data: Vec<([f32; 3], u32)> = (0..10)
        .map(|i| ([i as f32, 2.0 * i as f32, -1.0], i % 3))
        .collect();
    let collate = |samples: Vec<([f32; 3], u32)>| -> Result<(Tensor, Tensor), DataError> {
        let features: Vec<f32> = samples.iter().flat_map(|(x, _)| *x).collect();
        let labels: Vec<u32> = samples.iter().map(|&(_, y)| y).collect();
        Ok((
            Tensor::from_slice(&dev, &features, &[samples.len(), 3])?,
            Tensor::from_u32(&dev, &labels, &[samples.len()])?,
        ))
    };
    let mut loader = DataLoader::new(&data, collate, options(4, true, false, 5)).unwrap();
    let mut seen = Vec::new();
    while let Some((x, y)) = loader.next_batch().unwrap() {
        assert_eq!(x.shape()[1], 3);
        assert_eq!(x.shape()[0], y.shape()[0]);
        let (xs, ys) = (x.to_vec().unwrap(), y.to_vec_u32().unwrap());
        for (row, label) in xs.chunks(3).zip(ys) {
            let i = row[0] as u32;
            assert_eq!(row, [i as f32, 2.0 * i as f32, -1.0]);
            assert_eq!(label, i % 3);
            seen.push(i);
        }
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..10).collect::<Vec<_>>());
}

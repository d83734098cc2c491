//! The sharded loader (`DistributedSampler`): the ranks' shards of an epoch are disjoint
//! and cover the data set exactly once, every epoch reshuffles the same way on every rank,
//! a data set that does not divide evenly is padded as PyTorch pads it, and a shard
//! resumes mid-epoch.

use tang_nn::data::{DataError, DataLoader, DistributedSampler, LoaderOptions};

fn keep(samples: Vec<u32>) -> Result<Vec<u32>, DataError> {
    Ok(samples)
}

/// A loader of sample ids, collated as they are.
type Loader = DataLoader<Vec<u32>, fn(Vec<u32>) -> Result<Vec<u32>, DataError>>;

/// Rank `rank` of `replicas`' loader over the samples `0..len`.
fn shard_loader(len: u32, replicas: usize, rank: usize) -> Loader {
    let options = LoaderOptions {
        batch_size: 2,
        shuffle: true,
        seed: 7,
        sampler: Some(DistributedSampler::new(replicas, rank).unwrap()),
        ..LoaderOptions::default()
    };
    DataLoader::new((0..len).collect(), keep as fn(_) -> _, options).unwrap()
}

/// One epoch of `loader`, its batches joined.
fn epoch(loader: &mut Loader) -> Vec<u32> {
    let mut samples = Vec::new();
    while let Some(batch) = loader.next_batch().unwrap() {
        samples.extend(batch);
    }
    samples
}

#[test]
fn shards_cover_the_data_set_exactly_once_per_epoch_and_reshuffle_each_epoch() {
    let mut loaders: Vec<_> = (0..3).map(|r| shard_loader(12, 3, r)).collect();
    let mut orders = Vec::new();
    for _ in 0..3 {
        let shards: Vec<Vec<u32>> = loaders.iter_mut().map(epoch).collect();
        assert!(
            shards.iter().all(|s| s.len() == 4),
            "equal shards: {shards:?}"
        );
        let mut all: Vec<u32> = shards.concat();
        orders.push(all.clone());
        all.sort_unstable();
        assert_eq!(
            all,
            (0..12).collect::<Vec<_>>(),
            "every sample once: {shards:?}"
        );
    }
    assert_ne!(orders[0], orders[1], "epoch 1 is shuffled anew");
    assert_ne!(orders[1], orders[2], "epoch 2 is shuffled anew");
}

#[test]
fn an_uneven_data_set_is_padded_with_the_epochs_first_samples() {
    // 10 samples on 4 ranks: 3 each, the first 2 of the epoch's order twice (PyTorch).
    let whole = {
        let options = LoaderOptions {
            batch_size: 10,
            shuffle: true,
            seed: 7,
            sampler: Some(DistributedSampler::whole()),
            ..LoaderOptions::default()
        };
        let mut loader = DataLoader::new((0..10).collect::<Vec<u32>>(), keep, options).unwrap();
        loader.next_batch().unwrap().unwrap()
    };
    let shards: Vec<Vec<u32>> = (0..4).map(|r| epoch(&mut shard_loader(10, 4, r))).collect();
    assert!(shards.iter().all(|s| s.len() == 3));
    assert_eq!(
        shard_loader(10, 4, 0).len(),
        2,
        "2 batches of 2 from 3 samples"
    );
    let padded: Vec<u32> = whole.iter().chain(&whole[..2]).copied().collect();
    for (rank, shard) in shards.iter().enumerate() {
        let expected: Vec<u32> = padded.iter().skip(rank).step_by(4).copied().collect();
        assert_eq!(
            shard, &expected,
            "rank {rank} takes every 4th of the padded order"
        );
    }
}

#[test]
fn a_shard_resumes_mid_epoch() {
    let mut a = shard_loader(12, 3, 1);
    a.next_batch().unwrap();
    let mut b = shard_loader(12, 3, 1);
    b.resume(a.state()).unwrap();
    assert_eq!(epoch(&mut a), epoch(&mut b));
    // A position past the 4 samples of this shard's epoch is refused.
    let mut state = a.state();
    state.position = 5;
    assert!(matches!(b.resume(state), Err(DataError::Resume { .. })));
}

#[test]
fn ranks_outside_the_replicas_are_refused_and_one_process_is_one_replica() {
    assert!(matches!(
        DistributedSampler::new(2, 2),
        Err(DataError::InvalidOption { .. })
    ));
    assert!(DistributedSampler::new(0, 0).is_err());
    let here = DistributedSampler::from_env().unwrap();
    assert_eq!(
        (here.rank(), here.num_replicas()),
        (0, 1),
        "not launched by mpirun"
    );
}

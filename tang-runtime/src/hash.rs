//! The cheap integer hash of the runtime's caches: the pipeline key's hash and the maps
//! keyed by hashes, ids and sizes (pipelines, bind groups).

use std::collections::HashMap;

/// One step of the cache's hash: cheap, and well mixed enough for a hash-map index (the
/// map compares full keys, so a collision costs a comparison, never a wrong pipeline).
pub(crate) fn mix(h: u64, v: u64) -> u64 {
    (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31)
}

/// A cheap hasher for keys made of integers: hashes, ids, sizes (the [`PipelineKey`]
/// hash, the buffers of a bind group). Each integer written is one [`mix`] step; the
/// maps compare full keys, so a collision costs a comparison, never a wrong entry.
#[derive(Default)]
pub(crate) struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix(self.0, u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = mix(self.0, v);
    }
    fn write_usize(&mut self, v: usize) {
        self.0 = mix(self.0, v as u64);
    }
}

/// A map keyed by integers, hashed with [`MixHasher`].
pub(crate) type MixMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<MixHasher>>;

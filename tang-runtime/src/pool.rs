//! A size-class buffer pool: dropped tensors give their buffers back, and the next tensor of
//! a similar size takes one instead of allocating.
//!
//! Classes are four per power of two (256 B minimum), so a buffer is at most 25% larger
//! than asked for. The pool only holds buffers no recorded-but-unsubmitted command uses:
//! the device defers the return of a buffer used by the open batch until that batch is
//! submitted (see `state.rs`), because `queue.write_buffer` into a reused buffer would
//! otherwise land before the pending command that reads the old contents.
//!
//! A class hands out its least buffer (in wgpu's order of buffer handles), not the one
//! returned last. Which buffer a take gets then depends only on the set of free buffers,
//! not on the order they came back in, so a training step that repeats the same takes and
//! returns gets the same buffers for the same tensors every step, and every launch finds
//! the bind group of the previous step's (`bind_groups.rs`). Handed out last-in first-out,
//! the buffers of a class rotate between steps (a step's returns reverse its takes), and
//! most launches would bind a new combination.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Smallest buffer the pool hands out, in bytes.
pub const MIN_CLASS: u64 = 256;

/// The size class (bytes actually allocated) for a request of `bytes`, or `None` when
/// the class would not fit in 64 bits (the caller reports the request as too large).
pub fn size_class(bytes: u64) -> Option<u64> {
    if bytes <= MIN_CLASS {
        return Some(MIN_CLASS);
    }
    let hi = bytes.checked_next_power_of_two()?;
    let lo = hi / 2;
    if bytes == hi {
        return Some(hi);
    }
    // `lo < bytes < hi`, so the class is at most `hi`: no overflow below.
    let step = lo / 4;
    Some(lo + (bytes - lo).div_ceil(step) * step)
}

/// Free buffers of one size class, and when the class was last taken from or given to.
#[derive(Default)]
struct Class {
    buffers: BinaryHeap<Reverse<wgpu::Buffer>>,
    last_used: u64,
}

/// Free buffers by size class.
#[derive(Default)]
pub struct Pool {
    free: BTreeMap<u64, Class>,
    /// Counts takes and gives: the clock of `Class::last_used`.
    clock: u64,
    /// Bytes held in free lists.
    pub bytes_pooled: u64,
}

impl Pool {
    /// Takes a free buffer of exactly `class` bytes, if one is pooled.
    pub fn take(&mut self, class: u64) -> Option<wgpu::Buffer> {
        self.clock += 1;
        let entry = self.free.get_mut(&class)?;
        entry.last_used = self.clock;
        let Reverse(b) = entry.buffers.pop()?;
        self.bytes_pooled -= class;
        Some(b)
    }

    /// Returns a buffer to the pool. When the pool would hold more than `cap` bytes, the
    /// buffers of the classes used least recently are destroyed first: a program whose
    /// shapes changed (evaluation after training, one benchmark after another) keeps the
    /// buffers of the shapes it uses now, instead of a full pool of old sizes that turns
    /// every new size into an allocation.
    pub fn give(&mut self, class: u64, buffer: wgpu::Buffer, cap: u64) {
        self.clock += 1;
        while self.bytes_pooled + class > cap {
            let victim = self
                .free
                .iter()
                .filter(|(c, e)| **c != class && !e.buffers.is_empty())
                .min_by_key(|(_, e)| e.last_used)
                .map(|(c, _)| *c);
            let Some(old) = victim.and_then(|c| Some((c, self.free.get_mut(&c)?.buffers.pop()?)))
            else {
                buffer.destroy();
                return;
            };
            (old.1).0.destroy();
            self.bytes_pooled -= old.0;
        }
        self.bytes_pooled += class;
        let entry = self.free.entry(class).or_default();
        entry.last_used = self.clock;
        entry.buffers.push(Reverse(buffer));
    }

    /// Destroys every free buffer (the device ran out of memory). Not on WebAssembly,
    /// where an allocation's failure arrives too late to retry it.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn clear(&mut self) {
        for (_, entry) in std::mem::take(&mut self.free) {
            for Reverse(b) in entry.buffers {
                b.destroy();
            }
        }
        self.bytes_pooled = 0;
    }

    /// Moves every buffer into `other` (which destroys what exceeds `cap`).
    pub fn drain_into(&mut self, other: &mut Pool, cap: u64) {
        for (class, entry) in std::mem::take(&mut self.free) {
            for Reverse(b) in entry.buffers {
                other.give(class, b, cap);
            }
        }
        self.bytes_pooled = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_tight_and_monotone() {
        assert_eq!(size_class(0), Some(256));
        assert_eq!(size_class(256), Some(256));
        assert_eq!(size_class(257), Some(320));
        assert_eq!(size_class(512), Some(512));
        assert_eq!(size_class(513), Some(640));
        let mut prev = 0;
        for b in (1..100_000u64).step_by(37) {
            let c = size_class(b).unwrap();
            assert!(c >= b && c >= prev, "{b} -> {c}");
            assert!(
                c <= MIN_CLASS.max(b + b / 4 + 1),
                "{b} -> {c} wastes too much"
            );
            prev = c;
        }
    }

    #[test]
    fn classes_never_overflow() {
        // `next_power_of_two` of these overflows: the request is reported, not wrapped.
        assert_eq!(size_class((3 << 60) * 4), None);
        assert_eq!(size_class(u64::MAX), None);
        assert_eq!(size_class(1 << 63), Some(1 << 63));
        assert_eq!(size_class((1 << 62) + 1), Some((1 << 62) + (1 << 60)));
    }
}

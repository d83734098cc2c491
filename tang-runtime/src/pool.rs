//! A size-class buffer pool: dropped tensors give their buffers back, and the next tensor of
//! a similar size takes one instead of allocating.
//!
//! Classes are four per power of two (256 B minimum), so a buffer is at most 25% larger
//! than asked for. The pool only holds buffers no recorded-but-unsubmitted command uses:
//! the device defers the return of a buffer used by the open batch until that batch is
//! submitted (see `state.rs`), because `queue.write_buffer` into a reused buffer would
//! otherwise land before the pending command that reads the old contents.

use std::collections::BTreeMap;

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

/// Free buffers by size class.
#[derive(Default)]
pub struct Pool {
    free: BTreeMap<u64, Vec<wgpu::Buffer>>,
    /// Bytes held in free lists.
    pub bytes_pooled: u64,
}

impl Pool {
    /// Takes a free buffer of exactly `class` bytes, if one is pooled.
    pub fn take(&mut self, class: u64) -> Option<wgpu::Buffer> {
        let list = self.free.get_mut(&class)?;
        let b = list.pop()?;
        self.bytes_pooled -= class;
        Some(b)
    }

    /// Returns a buffer to the pool, or destroys it when the pool already holds `cap` bytes.
    pub fn give(&mut self, class: u64, buffer: wgpu::Buffer, cap: u64) {
        if self.bytes_pooled + class > cap {
            buffer.destroy();
            return;
        }
        self.bytes_pooled += class;
        self.free.entry(class).or_default().push(buffer);
    }

    /// Moves every buffer into `other` (which destroys what exceeds `cap`).
    pub fn drain_into(&mut self, other: &mut Pool, cap: u64) {
        for (class, list) in std::mem::take(&mut self.free) {
            for b in list {
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

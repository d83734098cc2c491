//! [`TileConfig`]: the block a matmul workgroup computes, the presets tang ships, and the
//! checks a tile must pass to be generated.

/// The tile shape of a matmul kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TileConfig {
    /// Rows of C per workgroup.
    pub bm: u32,
    /// Columns of C per workgroup.
    pub bn: u32,
    /// Depth of one k tile staged in workgroup memory.
    pub bk: u32,
    /// Rows of C per thread (4 or 8).
    pub tm: u32,
    /// Columns of C per thread (4 or 8).
    pub tn: u32,
}

impl TileConfig {
    /// 128 x 128 block, k tiles of 8, 8 x 8 per thread, 256 threads: large matrices.
    pub const LARGE: TileConfig = TileConfig {
        bm: 128,
        bn: 128,
        bk: 8,
        tm: 8,
        tn: 8,
    };
    /// 128 x 128 block with k tiles of 16 (half the barriers, twice the staging memory).
    pub const LARGE_K16: TileConfig = TileConfig {
        bm: 128,
        bn: 128,
        bk: 16,
        tm: 8,
        tn: 8,
    };
    /// 128 x 64 block, 8 x 8 per thread, 128 threads.
    pub const WIDE: TileConfig = TileConfig {
        bm: 128,
        bn: 64,
        bk: 8,
        tm: 8,
        tn: 8,
    };
    /// 64 x 64 block, 8 x 8 per thread, 64 threads.
    pub const MEDIUM: TileConfig = TileConfig {
        bm: 64,
        bn: 64,
        bk: 8,
        tm: 8,
        tn: 8,
    };
    /// 64 x 64 block, 4 x 4 per thread, 256 threads (more threads per block).
    pub const MEDIUM_T256: TileConfig = TileConfig {
        bm: 64,
        bn: 64,
        bk: 16,
        tm: 4,
        tn: 4,
    };
    /// 32 x 32 block, 4 x 4 per thread, 64 threads: small matrices and small limits.
    pub const SMALL: TileConfig = TileConfig {
        bm: 32,
        bn: 32,
        bk: 16,
        tm: 4,
        tn: 4,
    };

    /// Every preset tile shape, largest first (for benchmarks, tests and the list of
    /// kernels the crate validates).
    pub const PRESETS: [TileConfig; 6] = [
        TileConfig::LARGE,
        TileConfig::LARGE_K16,
        TileConfig::WIDE,
        TileConfig::MEDIUM,
        TileConfig::MEDIUM_T256,
        TileConfig::SMALL,
    ];

    /// Threads per workgroup: 0 for a tile with `tm` or `tn` 0 (never valid), and
    /// `u32::MAX` when the count does not fit (never valid either).
    pub fn threads(&self) -> u32 {
        let rows = self.bm.checked_div(self.tm).unwrap_or(0);
        let cols = self.bn.checked_div(self.tn).unwrap_or(0);
        rows.saturating_mul(cols)
    }

    /// Bytes of workgroup memory the kernel declares (both buffers of both operands,
    /// with the padding a transposing store adds); `u32::MAX` when that does not fit.
    pub fn workgroup_bytes(&self) -> u32 {
        // In u128: products of u32 fields cannot overflow there.
        let per_k = u128::from(self.bm) + 4 + u128::from(self.bn) + 4;
        u32::try_from(2 * u128::from(self.bk) * per_k * 4).unwrap_or(u32::MAX)
    }

    /// Whether the generator supports this shape: `tm, tn` in {4, 8}, the block a
    /// multiple of the micro-tile, and the vec4 loads of each tile spread evenly over
    /// the threads. Any field values are safe to pass (zeros and huge ones are invalid).
    pub fn is_valid(&self) -> bool {
        self.invalid_reason().is_none()
    }

    /// Why [`TileConfig::is_valid`] refuses this tile, in words, or `None` for a valid one.
    pub(crate) fn invalid_reason(&self) -> Option<String> {
        if !(matches!(self.tm, 4 | 8) && matches!(self.tn, 4 | 8)) {
            return Some(format!(
                "tm and tn must be 4 or 8, got {} and {}",
                self.tm, self.tn
            ));
        }
        if self.bm == 0 || self.bn == 0 || self.bk == 0 {
            return Some(format!(
                "bm, bn and bk must be positive, got {}, {} and {}",
                self.bm, self.bn, self.bk
            ));
        }
        if !self.bm.is_multiple_of(self.tm) || !self.bn.is_multiple_of(self.tn) {
            return Some("bm must be a multiple of tm, and bn of tn".into());
        }
        if !self.bk.is_multiple_of(4) {
            return Some(format!("bk must be a multiple of 4, got {}", self.bk));
        }
        let t = u64::from(self.threads());
        // In u64: `bm * bk` of two u32 fields cannot overflow there.
        let a_loads = u64::from(self.bm) * u64::from(self.bk) / 4;
        let b_loads = u64::from(self.bn) * u64::from(self.bk) / 4;
        if t == 0 || t > 1024 {
            return Some(format!(
                "(bm / tm) * (bn / tn) threads must be 1 to 1024, got {t}"
            ));
        }
        let spread = |loads: u64| loads >= t && loads.is_multiple_of(t);
        if !spread(a_loads) || !spread(b_loads) {
            return Some(format!(
                "the vec4 loads of a k tile (bm * bk / 4 = {a_loads}, bn * bk / 4 = {b_loads}) must be multiples of the {t} threads"
            ));
        }
        None
    }
}

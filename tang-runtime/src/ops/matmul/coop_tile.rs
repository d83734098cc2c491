//! [`CoopTile`]: the block a tensor-core matmul workgroup computes and how it stages its
//! operands, the presets tang ships, and the checks a tile must pass to be generated.

use super::{Dims, MatmulOptions};
use crate::{DType, Device, Error, Tensor};

/// The block shape and staging of the tensor-core matmul (`coop_mat16x16` fragments).
///
/// A workgroup is `sg_m x sg_n` subgroups of 32 threads; each subgroup holds
/// `frag_m x frag_n` 16 x 16 f32 accumulators, so the workgroup computes a
/// `16 sg_m frag_m` x `16 sg_n frag_n` block of C. Operands are staged in workgroup memory
/// `bk` deep, in `stages` buffers (2: the next k tile is written while the current one
/// multiplies, one barrier per k tile; 1: two barriers per k tile, half the memory).
///
/// ```
/// use tang_runtime::ops::CoopTile;
/// let t = CoopTile::DEFAULT;
/// assert_eq!((t.block_m(), t.block_n(), t.threads()), (128, 128, 128));
/// assert!(t.is_valid());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CoopTile {
    /// Subgroups along m.
    pub sg_m: u32,
    /// Subgroups along n.
    pub sg_n: u32,
    /// 16 x 16 fragments per subgroup along m.
    pub frag_m: u32,
    /// 16 x 16 fragments per subgroup along n.
    pub frag_n: u32,
    /// Depth of one staged k tile (a multiple of 16).
    pub bk: u32,
    /// Workgroup-memory buffers per operand (1 or 2).
    pub stages: u32,
    /// Fragments of C a subgroup passes through workgroup memory at once on the way out
    /// (1, or `frag_n`: a whole row of fragments per barrier pair).
    pub store_frags: u32,
    /// Groups of `sg_m x sg_n` subgroups that share the block and split each staged k
    /// tile between them (1 or 2): group `g` multiplies the tile's 16-deep steps `g`,
    /// `g + kgroups`, ..., and the groups' accumulators are added as C leaves. Two
    /// groups give a workgroup twice the subgroups without smaller fragments per
    /// subgroup (more fragments loaded per product) or a wider block (fewer workgroups).
    pub kgroups: u32,
}

impl CoopTile {
    /// 128 x 128 block, four subgroups of 4 x 4 fragments, k tiles of 32, one staging
    /// buffer and one fragment of C at a time through workgroup memory.
    pub const DEFAULT: CoopTile = CoopTile {
        sg_m: 2,
        sg_n: 2,
        frag_m: 4,
        frag_n: 4,
        bk: 32,
        stages: 1,
        store_frags: 1,
        kgroups: 1,
    };

    /// The tiles the benchmark sweeps and the tests check, the default first: two k
    /// groups ([`CoopTile::FEW_BLOCKS`], chosen for products of few blocks), eight
    /// subgroups (256 x 128, chosen for f16 `Aᵀ·B`, and 128 x 256), two staging buffers
    /// (one barrier per k tile) and a row of fragments per store. On an H200 none beat
    /// the default elsewhere, nor did tiles with less workgroup memory or fewer registers
    /// per subgroup (k tiles of 16; 64 x 128, 128 x 64, 64 x 64 blocks; 128 x 128 blocks
    /// of 8 or 16 subgroups): their figures are in BENCHMARKS.md (2026-11-28), and any of
    /// them can still be forced through [`crate::ops::MatmulOptions::coop_tile`].
    ///
    /// Why the larger ones lose: NVIDIA's Vulkan driver fits two of the default's
    /// workgroups (23,040 bytes of workgroup memory at `A·B`) on an SM, and still does with
    /// up to 1,536 bytes more each, but one only with 2,048 bytes more (4096³: 270 -> 156
    /// TFLOP/s; BENCHMARKS.md, 2026-11-29 (night)), so a tile past 24 KiB of workgroup
    /// memory halves the subgroups an SM interleaves (two buffers: 44 KiB; a row of
    /// fragments per store: 36 KiB). Registers are what keeps it at two: a second k tile
    /// in flight in registers (the loop unrolled by two) ran 19% slower. Two k groups
    /// with 64-deep k tiles (44 KiB, one workgroup of eight subgroups per SM) are the
    /// exception where a product has too few blocks to give every SM two workgroups
    /// for its whole length (4096³: 254 TFLOP/s, 90% of the default's; 384 blocks: up to
    /// 23% faster than the default). Each subgroup then multiplies two 16-deep steps per
    /// barrier pair, as the default's do; with 32-deep tiles (one step each) two k
    /// groups ran at half the default's speed.
    pub const PRESETS: [CoopTile; 6] = {
        const D: CoopTile = CoopTile::DEFAULT;
        [
            D,
            CoopTile::FEW_BLOCKS,
            CoopTile { sg_m: 4, ..D },
            CoopTile { sg_n: 4, ..D },
            CoopTile { stages: 2, ..D },
            CoopTile {
                store_frags: 4,
                ..D
            },
        ]
    };

    /// Rows of C per workgroup.
    pub fn block_m(&self) -> u32 {
        16u32.saturating_mul(self.sg_m).saturating_mul(self.frag_m)
    }

    /// Columns of C per workgroup.
    pub fn block_n(&self) -> u32 {
        16u32.saturating_mul(self.sg_n).saturating_mul(self.frag_n)
    }

    /// Threads per workgroup.
    pub fn threads(&self) -> u32 {
        32u32
            .saturating_mul(self.sg_m)
            .saturating_mul(self.sg_n)
            .saturating_mul(self.kgroups)
    }

    /// Halves of padding after every staged line (unpadded lines ran 2-3x slower on an
    /// H200: bank conflicts of the fragment loads).
    pub(crate) const PAD: u32 = 8;

    /// Halves of one operand's staging buffer: `rows` lines of `bk + PAD` when k is
    /// contiguous in memory, else `bk` lines of `rows + PAD`, whichever is larger (the
    /// kernel sizes both operands for either order).
    fn staging_halves(&self, rows: u32) -> u64 {
        let (r, k, pad) = (u64::from(rows), u64::from(self.bk), u64::from(Self::PAD));
        (r * (k + pad)).max(k * (r + pad))
    }

    /// Bytes of workgroup memory the kernel declares: both operands' staging buffers and
    /// the f32 scratch C leaves through; `u32::MAX` when that does not fit a u32.
    pub fn workgroup_bytes(&self) -> u32 {
        let staged = self.staging_halves(self.block_m()) + self.staging_halves(self.block_n());
        let scratch = u64::from(self.sg_m)
            * u64::from(self.sg_n)
            * u64::from(self.kgroups)
            * 256
            * u64::from(self.store_frags);
        u32::try_from(2 * u64::from(self.stages) * staged + 4 * scratch).unwrap_or(u32::MAX)
    }

    /// Whether the generator supports this tile (a forced tile it does not support is refused with the reason).
    pub fn is_valid(&self) -> bool {
        self.invalid_reason().is_none()
    }

    /// Whether this tile is valid and fits `dev`'s workgroup limits.
    pub fn fits(&self, dev: &Device) -> bool {
        self.is_valid() && super::within_limits(dev, self.threads(), self.workgroup_bytes())
    }

    /// Why [`CoopTile::is_valid`] refuses this tile, in words, or `None` for a valid one.
    pub(crate) fn invalid_reason(&self) -> Option<String> {
        if !(1..=4).contains(&self.sg_m) || !(1..=4).contains(&self.sg_n) {
            return Some(format!(
                "sg_m and sg_n must be 1 to 4, got {} and {}",
                self.sg_m, self.sg_n
            ));
        }
        if !(1..=4).contains(&self.frag_m) || !(1..=4).contains(&self.frag_n) {
            return Some(format!(
                "frag_m and frag_n must be 1 to 4, got {} and {}",
                self.frag_m, self.frag_n
            ));
        }
        if !matches!(self.bk, 16 | 32 | 48 | 64) {
            return Some(format!("bk must be 16, 32, 48 or 64, got {}", self.bk));
        }
        if !matches!(self.kgroups, 1 | 2) || !self.bk.is_multiple_of(16 * self.kgroups.max(1)) {
            return Some(format!(
                "kgroups must be 1 or 2 and split bk into 16-deep steps evenly, got {} with bk {}",
                self.kgroups, self.bk
            ));
        }
        if !matches!(self.stages, 1 | 2) {
            return Some(format!("stages must be 1 or 2, got {}", self.stages));
        }
        if self.store_frags != 1 && self.store_frags != self.frag_n {
            return Some(format!(
                "store_frags must be 1 or frag_n ({}), got {}",
                self.frag_n, self.store_frags
            ));
        }
        // Each thread prefetches whole four-element units of both operands.
        let t = self.threads();
        for (name, rows) in [("A", self.block_m()), ("B", self.block_n())] {
            let units = rows * self.bk / 4;
            if units < t || !units.is_multiple_of(t) {
                return Some(format!(
                    "the four-element loads of {name}'s k tile ({units}) must be a multiple of the {t} threads"
                ));
            }
        }
        None
    }

    /// [`Error::InvalidArgument`] unless `forced` (a caller's [`MatmulOptions::coop_tile`])
    /// is one the generator supports. Checked on every device, with tensor cores or
    /// without, so a bad tile is refused where it is written, not only where it would run.
    pub(crate) fn check_forced(forced: Option<CoopTile>) -> Result<(), Error> {
        match forced.and_then(|t| t.invalid_reason().map(|r| (t, r))) {
            Some((t, reason)) => Err(Error::InvalidArgument {
                op: "matmul".into(),
                detail: format!(
                    "coop_tile {t:?} is not one the tensor-core generator supports: {reason}; pass one of CoopTile::PRESETS, or None for the automatic choice"
                ),
            }),
            None => Ok(()),
        }
    }

    /// The default block with two k groups and 64-deep k tiles: eight subgroups, 44 KiB of
    /// workgroup memory, one workgroup per SM. The automatic choice for products of f16
    /// tensors with at most 512 of the default's blocks, `Aᵀ·B` excepted (on an H200
    /// 9-23% faster there, slower from 1,024 blocks up: BENCHMARKS.md, 2026-11-29 (sixth
    /// session)); [`crate::ops::MatmulOptions::coop_tile`] forces a tile either way.
    pub const FEW_BLOCKS: CoopTile = CoopTile {
        bk: 64,
        kgroups: 2,
        ..CoopTile::DEFAULT
    };

    /// The most workgroups of the default block for which [`CoopTile::FEW_BLOCKS`] is chosen.
    const FEW_BLOCKS_MAX: usize = 512;

    /// The tensor-core tile for `A · B` (`a`, `b` as given, `d` their dimensions):
    /// `forced` (already checked by [`CoopTile::check_forced`]) when it fits `dev`, else
    /// the automatic choice, or `None` when no tile fits (the f32 tile runs then). The
    /// automatic choice is the default 128 x 128 block, except:
    /// - `Aᵀ·B` of f16 tensors (weight gradients, split over k): 256 x 128 blocks (eight
    ///   subgroups) ran 8-16% faster on an H200: 1152x384x16384 151 TFLOP/s against 131,
    ///   384x384 104 against 96, 1536x384 163 against 140, 4096x4096x1024 241 against 225.
    ///   With f32 operands rounded on load (autocast) the same block ran slower (106
    ///   against 114), so they keep the default. BENCHMARKS.md, 2026-11-28.
    ///   Where m is not a multiple of 4 (GPT-2's LM head: its vocabulary of 50,257 rows) A
    ///   loads one element at a time, and 128 x 256 blocks, which load half as many rows
    ///   of A per product, ran 20% faster: 50257x768x8192 257 TFLOP/s against 210
    ///   (BENCHMARKS.md, 2026-11-29 (seventh session)).
    /// - Other products of f16 tensors with at most [`CoopTile::FEW_BLOCKS_MAX`] default
    ///   blocks: [`CoopTile::FEW_BLOCKS`]. Two of the default's workgroups share an SM, so
    ///   384 of them (the GPT's products with 384 outputs per row over 16,384 tokens, and
    ///   GPT-2's with 768 over 8,192) leave most SMs one workgroup for the second half of
    ///   the product; eight subgroups on one block keep each SM's tensor cores fed. On an
    ///   H200 (BENCHMARKS.md, 2026-11-29 (sixth session)): 16384x384x1536 183 -> 224
    ///   TFLOP/s, 16384x384x1152 178 -> 209, 16384x384x384 138 -> 151, GPT-2's
    ///   8192x768x3072 199 -> 243; with 1,024 blocks or more it loses (4096x4096x1024 254
    ///   -> 218, 4096³ 282 -> 254).
    ///
    /// Not chosen, though faster alone: 96 x 128 blocks for the GPT's products with 384
    /// outputs per row (384 default blocks) ran 11-17% faster timed one product at a time
    /// (16384 x 384 x 1536 NN: 201 TFLOP/s against 181), and 20% slower inside the AMP
    /// training step (31 such products: 3.26 ms against 2.73). BENCHMARKS.md, 2026-11-29
    /// (evening).
    ///
    /// # Errors
    /// [`Error::TooLarge`] for a forced tile that does not fit the device.
    pub(super) fn choose(
        dev: &Device,
        a: &Tensor,
        b: &Tensor,
        o: &MatmulOptions<'_>,
        d: &Dims,
    ) -> Result<Option<CoopTile>, Error> {
        let forced = o.coop_tile;
        if let Some(t) = forced {
            if !t.fits(dev) {
                return Err(Error::TooLarge {
                    what: format!(
                        "matmul: coop_tile {t:?} ({} threads, {} bytes of workgroup memory)",
                        t.threads(),
                        t.workgroup_bytes()
                    ),
                    requested: u64::from(t.workgroup_bytes()),
                    limit: u64::from(dev.info().limits.max_compute_workgroup_storage_size),
                });
            }
            return Ok(Some(t));
        }
        let f16_tensors = a.dtype() == DType::F16 && b.dtype() == DType::F16;
        let blocks = d
            .batch
            .saturating_mul(d.m.div_ceil(128))
            .saturating_mul(d.n.div_ceil(128));
        // A's rows load four elements at a time only where its contiguous extent is a
        // multiple of 4 (`Aᵀ·B`: m).
        let a_t_b = o.transpose_a && !o.transpose_b;
        let a_by_fours = d.m.is_multiple_of(4);
        let preferred = Self::automatic(f16_tensors, a_t_b, a_by_fours, blocks);
        Ok([preferred, CoopTile::DEFAULT]
            .into_iter()
            .find(|t| t.fits(dev)))
    }

    /// The block [`CoopTile::choose`] prefers for a product of f16 tensors or not,
    /// `Aᵀ·B` or not (then `a_by_fours`: whether m is a multiple of 4), of `blocks`
    /// default blocks.
    fn automatic(f16_tensors: bool, a_t_b: bool, a_by_fours: bool, blocks: usize) -> CoopTile {
        match (f16_tensors, a_t_b) {
            (true, true) if a_by_fours => CoopTile {
                sg_m: 4,
                ..CoopTile::DEFAULT
            },
            (true, true) => CoopTile {
                sg_n: 4,
                ..CoopTile::DEFAULT
            },
            (true, false) if blocks <= Self::FEW_BLOCKS_MAX => CoopTile::FEW_BLOCKS,
            _ => CoopTile::DEFAULT,
        }
    }
}

impl Default for CoopTile {
    fn default() -> Self {
        CoopTile::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_matches_the_measured_kernel() {
        let t = CoopTile::DEFAULT;
        assert!(t.is_valid());
        // Two operands of [128][32 + 8] halves and one fragment of f32 per subgroup.
        assert_eq!(t.workgroup_bytes(), 2 * 2 * 128 * 40 * 2 / 2 + 4 * 4 * 256);
    }

    #[test]
    fn the_automatic_choice_follows_the_measured_shapes() {
        let tall = CoopTile {
            sg_m: 4,
            ..CoopTile::DEFAULT
        };
        let wide = CoopTile {
            sg_n: 4,
            ..CoopTile::DEFAULT
        };
        for blocks in [1, 384, 1024] {
            assert_eq!(CoopTile::automatic(true, true, true, blocks), tall);
            assert_eq!(CoopTile::automatic(true, true, false, blocks), wide);
            for fours in [true, false] {
                let auto = |f16, a_t_b| CoopTile::automatic(f16, a_t_b, fours, blocks);
                assert_eq!(auto(false, true), CoopTile::DEFAULT);
                assert_eq!(auto(false, false), CoopTile::DEFAULT);
            }
        }
        assert_eq!(
            CoopTile::automatic(true, false, true, 384),
            CoopTile::FEW_BLOCKS
        );
        assert_eq!(
            CoopTile::automatic(true, false, true, 512),
            CoopTile::FEW_BLOCKS
        );
        assert_eq!(
            CoopTile::automatic(true, false, true, 513),
            CoopTile::DEFAULT
        );
        assert!(wide.is_valid() && CoopTile::PRESETS.contains(&wide));
        assert!(CoopTile::FEW_BLOCKS.is_valid());
    }

    #[test]
    fn presets_are_valid_and_distinct() {
        for (i, t) in CoopTile::PRESETS.iter().enumerate() {
            assert!(t.is_valid(), "{t:?}: {:?}", t.invalid_reason());
            assert!(!CoopTile::PRESETS[..i].contains(t), "{t:?} twice");
        }
    }

    #[test]
    fn bad_tiles_say_why() {
        let bad = [
            CoopTile {
                sg_m: 0,
                ..CoopTile::DEFAULT
            },
            CoopTile {
                frag_n: 5,
                ..CoopTile::DEFAULT
            },
            CoopTile {
                bk: 24,
                ..CoopTile::DEFAULT
            },
            CoopTile {
                stages: 3,
                ..CoopTile::DEFAULT
            },
            CoopTile {
                store_frags: 2,
                ..CoopTile::DEFAULT
            },
            CoopTile {
                kgroups: 3,
                ..CoopTile::DEFAULT
            },
            // Two groups cannot split one 16-deep step.
            CoopTile {
                kgroups: 2,
                bk: 16,
                ..CoopTile::DEFAULT
            },
            // 64 x 64 block, 512 threads: 64 * 16 / 4 = 256 units cannot spread over them.
            CoopTile {
                sg_m: 4,
                sg_n: 4,
                frag_m: 1,
                frag_n: 1,
                bk: 16,
                ..CoopTile::DEFAULT
            },
        ];
        for t in bad {
            assert!(t.invalid_reason().is_some(), "{t:?}");
        }
    }
}

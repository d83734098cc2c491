//! Philox4x32-10 (Salmon et al., SC'11), the counter-based generator behind every random
//! op, and its CPU twin. Integer-only mixing (32x32 -> 64-bit products, built from 16-bit
//! halves on devices without 64-bit integers), so the bits are the same on every adapter
//! and here.
//!
//! A [`PhiloxStream`] is a key (the seed) and the high half of the counter (the stream's
//! offset); element `i` of a draw is word `i % 4` of the block at counter
//! `[i / 4 (low, high), offset (low, high)]`. Dropout's decisions are 16-bit halves of the
//! words, eight per block over a patch of two rows by four columns ([`dropout_block`]).

/// Philox4x32 multipliers and Weyl key increments.
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// The 24-bit grid uniform floats live on: `(bits >> 8) * 2^-24`, an exact conversion
/// and an exact scaling, so the GPU and CPU values agree bit for bit.
pub(crate) const UNIFORM_SCALE: f32 = 1.0 / 16_777_216.0;

/// Ten rounds of Philox4x32 on `counter` under `key` (Random123's `philox4x32_R(10, ...)`).
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (counter, key);
    for round in 0..10 {
        if round > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let p0 = u64::from(M0) * u64::from(c[0]);
        let p1 = u64::from(M1) * u64::from(c[2]);
        c = [
            (p1 >> 32) as u32 ^ c[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ c[3] ^ k[1],
            p0 as u32,
        ];
    }
    c
}

/// One stream of random words: a seed and an offset (see the module doc). A
/// [`Generator`](super::Generator) hands out a fresh stream per draw; the same stream
/// always gives the same values, on the GPU and on the CPU ([`PhiloxStream::bits`] and
/// friends are the CPU twin).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PhiloxStream {
    /// The key.
    pub seed: u64,
    /// The high half of the counter.
    pub offset: u64,
}

impl PhiloxStream {
    /// The four words of block `b`.
    pub fn block(&self, b: u64) -> [u32; 4] {
        philox4x32_10(
            [
                b as u32,
                (b >> 32) as u32,
                self.offset as u32,
                (self.offset >> 32) as u32,
            ],
            [self.seed as u32, (self.seed >> 32) as u32],
        )
    }

    /// Word `i` of the stream.
    pub fn bits(&self, i: u64) -> u32 {
        self.block(i / 4)[(i % 4) as usize]
    }

    /// Uniform number `i` in `[0, 1)`: the top 24 bits of word `i` times 2^-24 (the value
    /// [`rand`](super::rand) gives, bit for bit).
    pub fn uniform(&self, i: u64) -> f32 {
        (self.bits(i) >> 8) as f32 * UNIFORM_SCALE
    }

    /// Normal number `i` (Box-Muller in f64 on words `2k` and `2k + 1` of its pair): the
    /// value [`randn`](super::randn) approximates (the GPU's `log`/`cos`/`sin` are not
    /// correctly rounded).
    pub fn normal(&self, i: u64) -> f64 {
        let pair = i & !1;
        let u1 = f64::from((self.bits(pair) >> 8) + 1) * f64::from(UNIFORM_SCALE);
        let u2 = f64::from(self.bits(pair + 1) >> 8) * f64::from(UNIFORM_SCALE);
        let r = (-2.0 * u1.ln()).sqrt();
        let theta = std::f64::consts::PI * (2.0 * u2 - 1.0);
        if i.is_multiple_of(2) {
            r * theta.cos()
        } else {
            r * theta.sin()
        }
    }

    /// Whether dropout with `threshold` (see [`dropout_threshold`]) keeps element `i` of a
    /// tensor whose last dimension is `row_len`: see [`dropout_block`] for which 16 bits
    /// decide it.
    pub fn keeps(&self, row_len: u64, i: u64, threshold: u32) -> bool {
        let (block, word, shift) = dropout_block(row_len, i);
        (self.block(block)[word] >> shift) & 0xFFFF >= threshold
    }
}

/// Where dropout's decision of element `i` of a tensor whose last dimension is `row_len`
/// lies: `(block, word, shift)`, its 16 bits being `(word of block) >> shift`.
///
/// The tensor is seen as a matrix of rows of `row_len`; one Philox block decides a patch of
/// two rows (`2r`, `2r + 1`) by four columns (`4g .. 4g + 3`), block number
/// `r * ceil(row_len / 4) + g`: words 0 and 1 hold the even row's four decisions (low half
/// first), words 2 and 3 the odd row's. Eight 16-bit decisions per block halve the
/// generator's work against one 32-bit word per element, and the two-row patch lets a
/// kernel thread holding a 4 x 4 block of attention weights (rows x keys) make two blocks
/// instead of four; `p` is thereby rounded to a multiple of 2^-16.
pub fn dropout_block(row_len: u64, i: u64) -> (u64, usize, u32) {
    let row_len = row_len.max(1);
    let (row, col) = (i / row_len, i % row_len);
    let block = (row / 2) * row_len.div_ceil(4) + col / 4;
    let word = 2 * (row % 2) + (col % 4) / 2;
    (block, word as usize, 16 * (col % 2) as u32)
}

/// Dropout drops an element when its 16 bits (see [`dropout_block`]) are below this:
/// `round(p * 2^16)` (so `p = 1` drops everything and `p = 0` nothing).
pub fn dropout_threshold(p: f32) -> u32 {
    (f64::from(p) * 65_536.0).round() as u32
}

#[cfg(test)]
mod tests {
    use super::{dropout_block, philox4x32_10};
    use std::collections::HashSet;

    /// Each block's eight 16-bit slots decide one element each: two rows by four columns,
    /// the even row in words 0 and 1, and an odd last row or a short last patch leaves the
    /// rest unused.
    #[test]
    fn dropout_patches_are_two_rows_by_four_columns() {
        let (rows, cols) = (5u64, 6u64);
        let mut seen = HashSet::new();
        for i in 0..rows * cols {
            let (block, word, shift) = dropout_block(cols, i);
            let (row, col) = (i / cols, i % cols);
            assert_eq!(block, (row / 2) * 2 + col / 4, "element {i}");
            assert_eq!(word as u64, 2 * (row % 2) + (col % 4) / 2, "element {i}");
            assert_eq!(u64::from(shift), 16 * (col % 2), "element {i}");
            assert!(
                seen.insert((block, word, shift)),
                "element {i} shares a slot"
            );
        }
        // A vector is one row: four elements per block, in words 0 and 1.
        assert_eq!(dropout_block(7, 6), (1, 1, 0));
        assert_eq!(dropout_block(0, 0), (0, 0, 0));
    }

    /// Random123's published known-answer vectors for Philox4x32-10.
    #[test]
    fn known_answers() {
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }
}

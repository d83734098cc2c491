//! The one interface of every attention kernel: the params struct and the bindings of the
//! forward, the dq pass and the dk/dv pass; and the tile shapes of the register-blocked
//! passes with the workgroup memory each needs, which the generators and the kernel choice
//! (`kernels.rs`) read from here. The row-per-thread kernels (`row_*.wgsl`) and
//! the register-blocked ones generated at run time declare them from here.

use crate::spec::{Layout, Slot, params};

params! {
    /// Problem sizes of one attention call, shared by the three passes.
    struct AttentionParams {
        batch: u32,
        heads: u32,
        kv_heads: u32,
        /// Query rows per head.
        tq: u32,
        /// Rows per kv head in the k/v buffers (the cache capacity when decoding).
        tk_stride: u32,
        /// Cached positions before the first query row: row `i` sees keys `0..=past + i`.
        past: u32,
        d: u32,
        /// The softmax scale times log2(e) (scores are kept in log2 units).
        scale_log2: f32,
        scale: f32,
        /// 1: query row `i` sees keys `0..=past + i`; 0: every key (no cache then).
        causal: u32,
        /// Dropout on the weights (`attention/dropout.rs`): weights whose 16 Philox bits
        /// are below this are dropped; 0 for no dropout.
        drop_threshold: u32,
        /// The factor of kept weights, `1 / (1 - p)`.
        drop_scale: f32,
        /// The dropout stream's seed and offset, low and high words.
        drop_seed_lo: u32,
        drop_seed_hi: u32,
        drop_offset_lo: u32,
        drop_offset_hi: u32,
    }
}

/// The slots of a pass: `f32` buffers it reads, then `f32` buffers it writes.
macro_rules! f32_slots {
    (read: $($read:literal),+; write: $($write:literal),+) => {
        &[$(Slot::Read($read, "array<f32>"),)+ $(Slot::ReadWrite($write, "array<f32>"),)+]
    };
}

/// The forward: `q, k, v` in, `o` and the per-row log-sum-exp `lse` out.
pub(super) const FWD_SLOTS: &[Slot] = f32_slots!(read: "q", "k", "v"; write: "o", "lse");

/// The dq pass: `dq` and the per-row `delta = rowsum(dO * O)` out.
pub(super) const DQ_SLOTS: &[Slot] =
    f32_slots!(read: "q", "k", "v", "o", "go", "lse"; write: "dq", "delta");

/// The dk/dv pass.
pub(super) const DKV_SLOTS: &[Slot] =
    f32_slots!(read: "q", "k", "v", "go", "lse", "delta"; write: "dk", "dv");

/// The forward with K and V read four elements at a time (head dims a multiple of 4).
pub(super) const FWD4_SLOTS: &[Slot] = &[
    Slot::Read("q", "array<f32>"),
    Slot::Read("k", "array<vec4<f32>>"),
    Slot::Read("v", "array<vec4<f32>>"),
    Slot::ReadWrite("o", "array<f32>"),
    Slot::ReadWrite("lse", "array<f32>"),
];

/// The forward's declarations.
pub(super) const FWD: Layout<AttentionParams> = Layout::new(FWD_SLOTS);
/// The declarations of the forward reading K and V by fours.
pub(super) const FWD4: Layout<AttentionParams> = Layout::new(FWD4_SLOTS);
/// The dq pass's declarations.
pub(super) const DQ: Layout<AttentionParams> = Layout::new(DQ_SLOTS);
/// The dk/dv pass's declarations.
pub(super) const DKV: Layout<AttentionParams> = Layout::new(DKV_SLOTS);

/// Query rows per workgroup.
pub const ROWS: u32 = 64;
/// Threads per workgroup.
pub const THREADS: u32 = 128;
// `query_block_main` writes the entry point of `2 rows` threads.
const _: () = assert!(THREADS == 2 * ROWS);
/// Keys per tile.
pub(super) const KT: u32 = 32;
/// Keys per tile of the forward in this (small) shape.
pub const FWD_KEYS: u32 = KT;

/// Bytes of workgroup memory of the forward kernel for padded head dim `dp`.
pub const fn fwd_shared_bytes(dp: u32) -> u32 {
    let kp = if dp * KT > KT * ROWS {
        dp * KT
    } else {
        KT * ROWS
    };
    4 * (dp * ROWS + kp + KT * dp)
}

/// Line of the K^T and V^T tiles in vec4s (the 32 keys), swizzled rather than padded: one
/// more vec4 per line would take the small shape of the dq pass past 32 KiB at DP = 64.
pub(super) const KT_LINE: u32 = KT / 4;

/// Bytes of workgroup memory of the dq pass for padded head dim `dp` and `rows` rows.
pub const fn dq_shared_bytes(dp: u32, rows: u32) -> u32 {
    // Q^T and dO^T [dp][rows], K^T [dp][32 keys], V^T then dS (dS needs 32 keys x rows)
    let vt = if dp * KT > KT * rows {
        dp * KT
    } else {
        KT * rows
    };
    4 * (2 * dp * rows + dp * KT_LINE * 4 + vt)
}

/// Keys per workgroup of the dk/dv pass.
pub const DKV_KEYS: u32 = 32;

/// Bytes of workgroup memory of the dk/dv pass for padded head dim `dp` and `threads`
/// threads (query tile `threads / 4`).
pub const fn dkv_shared_bytes(dp: u32, threads: u32) -> u32 {
    let qt = threads / 4;
    let ql = qt / 4 + 1;
    // K^T and V^T [dp][32 keys], Q^T and dO^T [dp][ql vec4s], P and dS [qt queries][32 keys]
    4 * (2 * dp * DKV_KEYS + 2 * dp * ql * 4 + 2 * qt * DKV_KEYS)
}

/// Tile shape of the two backward passes. [`BWD_SMALL`] fits the 32 KiB of workgroup memory
/// of lavapipe and most GPUs at DP = 64; [`BWD_LARGE`] needs 48 KiB there (NVIDIA; 28 KiB
/// at DP = 32) and doubles the dq block's rows (K and V tiles shared by twice the queries)
/// and the dk/dv pass's query tile and threads (twice the work per barrier, 128-thread
/// workgroups: more warps per SM for the same workgroup memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BwdShape {
    /// Query rows per workgroup of the dq pass (its threads: twice that).
    pub dq_rows: u32,
    /// Threads per workgroup of the dk/dv pass (its query tile: a quarter of that).
    pub dkv_threads: u32,
}

/// The backward tile shape that fits 32 KiB of workgroup memory at DP = 64.
pub const BWD_SMALL: BwdShape = BwdShape {
    dq_rows: 32,
    dkv_threads: 64,
};

/// The backward tile shape for devices with room for it (48 KiB at DP = 64).
pub const BWD_LARGE: BwdShape = BwdShape {
    dq_rows: 64,
    dkv_threads: 128,
};

impl BwdShape {
    /// Threads per workgroup of the dq pass.
    pub const fn dq_threads(self) -> u32 {
        2 * self.dq_rows
    }

    /// Bytes of workgroup memory of the larger of the two passes at padded head dim `dp`.
    pub const fn shared_bytes(self, dp: u32) -> u32 {
        let a = dq_shared_bytes(dp, self.dq_rows);
        let b = dkv_shared_bytes(dp, self.dkv_threads);
        if a > b { a } else { b }
    }
}

const _: () = assert!(
    fwd_shared_bytes(64) <= 32 * 1024
        && BWD_SMALL.shared_bytes(64) <= 32 * 1024
        && BWD_LARGE.shared_bytes(64) <= 48 * 1024
        && BWD_LARGE.shared_bytes(32) <= 32 * 1024
);

/// Keys per tile of the large forward (`fwd_large.rs`).
pub(super) const LARGE_KT: u32 = 64;

/// Vec4s per line of the large forward's K^T, Q^T and P tiles: 64 keys or 64 rows.
pub(super) const LARGE_LINE: u32 = 16;

/// Vec4 lengths of the large forward's workgroup arrays `(qs, kp, vs)` at padded head
/// dim `dp`.
pub(super) const fn large_lens(dp: u32) -> (u32, u32, u32) {
    let k = dp * LARGE_LINE;
    let p = LARGE_KT * LARGE_LINE;
    let v = LARGE_KT * dp / 4;
    // The row-max partials: 8 column groups x 16 vec4s of rows.
    let mx = 8 * LARGE_LINE;
    (
        dp * LARGE_LINE,
        if k > p { k } else { p },
        if v > mx { v } else { mx },
    )
}

/// Bytes of workgroup memory of the large forward at padded head dim `dp`.
pub(super) const fn large_shared_bytes(dp: u32) -> u32 {
    let (q, kp, v) = large_lens(dp);
    16 * (q + kp + v)
}

// 48 KiB (NVIDIA) at DP = 64; 32 KiB (lavapipe, so CI runs this kernel) at DP = 32.
const _: () = assert!(large_shared_bytes(64) <= 48 * 1024 && large_shared_bytes(32) <= 32 * 1024);

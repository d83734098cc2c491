//! The one interface of every attention kernel: the params struct and the bindings of the
//! forward, the dq pass and the dk/dv pass. The row-per-thread kernels (`row_*.wgsl`) and
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

/// The forward's declarations.
pub(super) const FWD: Layout<AttentionParams> = Layout::new(FWD_SLOTS);
/// The dq pass's declarations.
pub(super) const DQ: Layout<AttentionParams> = Layout::new(DQ_SLOTS);
/// The dk/dv pass's declarations.
pub(super) const DKV: Layout<AttentionParams> = Layout::new(DKV_SLOTS);

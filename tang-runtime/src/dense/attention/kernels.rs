//! Which attention kernels exist and which one a device runs: the row-per-thread variants
//! (every head dim up to 128, any device with 32 KiB of workgroup memory) and the
//! register-blocked ones of `tiled.rs`, `fwd_large.rs`, `bwd_dq.rs` and `bwd_dkv.rs`
//! (head dims 17 to 64), each in the tile shape the device has room for.

use std::sync::OnceLock;

use super::{bwd_dkv, bwd_dq, fwd_large, tiled};
use crate::{Device, RawKernel};

/// One compiled shape of the kernels: padded head dim and tile sizes.
pub(super) struct Variant {
    /// Head dim the kernel is compiled for (the real one is at most this).
    pub(super) dp: usize,
    /// Threads per row.
    pub(super) split: u32,
    /// Bytes of workgroup memory the largest of the three kernels uses.
    pub(super) shared_bytes: u32,
    pub(super) fwd: RawKernel,
    pub(super) bwd_dq: RawKernel,
    pub(super) bwd_dkv: RawKernel,
}

/// Rows (queries in the forward and dq pass, keys in the dk/dv pass) per workgroup; the
/// `shader!` macro writes the same number into the WGSL.
pub(super) const ROWS: u32 = 64;

/// WGSL constants for one variant, followed by a kernel body.
macro_rules! shader {
    ($dp:literal, $dh:literal, $split:literal, $tile:literal, $ch:literal, $file:literal) => {
        concat!(
            "const DP: u32 = ",
            $dp,
            "u;\nconst DH: u32 = ",
            $dh,
            "u;\nconst SPLIT: u32 = ",
            $split,
            "u;\nconst ROWS: u32 = 64u;\nconst RPT: u32 = 2u;\nconst TILE: u32 = ",
            $tile,
            "u;\nconst CH: u32 = ",
            $ch,
            "u;\n",
            include_str!($file)
        )
    };
}

macro_rules! variant {
    ($dp:literal, $dh:literal, $split:literal, $tile:literal, $ch:literal) => {
        Variant {
            dp: $dp,
            split: $split,
            // K/V (or Q/dO) tiles plus the two partial-sum exchange buffers of the backward.
            shared_bytes: 4 * (2 * $tile * $dp + 2 * $split * $ch * 64),
            fwd: RawKernel::new(
                concat!("attention_fwd_d", $dp),
                shader!($dp, $dh, $split, $tile, $ch, "row_fwd.wgsl"),
                "main",
            ),
            bwd_dq: RawKernel::new(
                concat!("attention_bwd_dq_d", $dp),
                shader!($dp, $dh, $split, $tile, $ch, "row_bwd_dq.wgsl"),
                "main",
            ),
            bwd_dkv: RawKernel::new(
                concat!("attention_bwd_dkv_d", $dp),
                shader!($dp, $dh, $split, $tile, $ch, "row_bwd_dkv.wgsl"),
                "main",
            ),
        }
    };
}

/// Head dims 16, 32, 64 and 128: (DP, DH, SPLIT, TILE, CH), each within 32 KiB.
pub(super) const VARIANTS: [Variant; 4] = [
    variant!(16, 16, 1, 64, 16),
    variant!(32, 32, 1, 64, 16),
    variant!(64, 32, 2, 32, 16),
    variant!(128, 32, 4, 16, 8),
];

/// The register-blocked kernels of one padded head dim: the forward and both backward
/// passes in the small tile shape, and all three in the large one.
pub(super) struct Tiled {
    fwd: RawKernel,
    fwd_large: RawKernel,
    bwd_dq: RawKernel,
    bwd_dkv: RawKernel,
    bwd_dq_large: RawKernel,
    bwd_dkv_large: RawKernel,
}

/// The register-blocked kernels for padded head dims 32 and 64, generated once.
fn tiled_kernels() -> &'static [Tiled; 2] {
    static KERNELS: OnceLock<[Tiled; 2]> = OnceLock::new();
    KERNELS.get_or_init(|| {
        let leak = |text: String| -> &'static str { Box::leak(text.into_boxed_str()) };
        [32, 64].map(|dp| {
            let name =
                |kind: &str| -> &'static str { leak(format!("attention_{kind}_tiled_d{dp}")) };
            let (small, large) = (tiled::BWD_SMALL, tiled::BWD_LARGE);
            Tiled {
                fwd: RawKernel::new(name("fwd"), leak(tiled::forward(dp)), "main"),
                fwd_large: RawKernel::new(name("fwd_large"), leak(fwd_large::forward(dp)), "main"),
                bwd_dq: RawKernel::new(
                    name("bwd_dq"),
                    leak(bwd_dq::backward_dq(dp, small.dq_rows)),
                    "main",
                ),
                bwd_dkv: RawKernel::new(
                    name("bwd_dkv"),
                    leak(bwd_dkv::backward_dkv(dp, small.dkv_threads)),
                    "main",
                ),
                bwd_dq_large: RawKernel::new(
                    name("bwd_dq_large"),
                    leak(bwd_dq::backward_dq(dp, large.dq_rows)),
                    "main",
                ),
                bwd_dkv_large: RawKernel::new(
                    name("bwd_dkv_large"),
                    leak(bwd_dkv::backward_dkv(dp, large.dkv_threads)),
                    "main",
                ),
            }
        })
    })
}

/// The register-blocked kernels a device runs for one head dim, with the forward's keys
/// per tile and the backward's tile shape.
pub(super) struct TiledPick {
    pub(super) fwd: &'static RawKernel,
    pub(super) fwd_keys: u32,
    pub(super) bwd_dq: &'static RawKernel,
    pub(super) bwd_dkv: &'static RawKernel,
    pub(super) shape: tiled::BwdShape,
}

/// The register-blocked kernels for head dim `d`, when there are ones for it and the
/// device has room: head dims 17 to 64 (padded to 32 or 64). Smaller and larger head dims
/// use the row-per-thread kernels: at D <= 16 a row's work is too small to block, and at
/// D = 128 the Q tile alone would fill 32 KiB of workgroup memory. Each pass takes its
/// large tile shape where the device has room for it (48 KiB at DP = 64: NVIDIA; 32 KiB
/// at DP = 32: every device that runs these kernels, lavapipe included) and the small one
/// elsewhere.
pub(super) fn tiled_for(dev: &Device, d: usize) -> Option<TiledPick> {
    let (dp, idx) = match d {
        17..=32 => (32, 0),
        33..=64 => (64, 1),
        _ => return None,
    };
    let limits = &dev.info().limits;
    let fits = |shared: u32, threads: u32| {
        shared <= limits.max_compute_workgroup_storage_size
            && threads <= limits.max_compute_invocations_per_workgroup
    };
    let bwd_fits = |shape: tiled::BwdShape| {
        fits(
            shape.shared_bytes(dp),
            shape.dq_threads().max(shape.dkv_threads),
        )
    };
    let k = &tiled_kernels()[idx];
    let (fwd, fwd_keys) = if fits(fwd_large::shared_bytes(dp), tiled::THREADS) {
        (&k.fwd_large, fwd_large::KT)
    } else if fits(tiled::fwd_shared_bytes(dp), tiled::THREADS) {
        (&k.fwd, tiled::FWD_KEYS)
    } else {
        return None;
    };
    let (bwd_dq, bwd_dkv, shape) = if bwd_fits(tiled::BWD_LARGE) {
        (&k.bwd_dq_large, &k.bwd_dkv_large, tiled::BWD_LARGE)
    } else if bwd_fits(tiled::BWD_SMALL) {
        (&k.bwd_dq, &k.bwd_dkv, tiled::BWD_SMALL)
    } else {
        return None;
    };
    Some(TiledPick {
        fwd,
        fwd_keys,
        bwd_dq,
        bwd_dkv,
        shape,
    })
}

/// Number of WGSL sources [`shaders`] returns.
const SHADER_COUNT: usize = 24;

/// Every WGSL source of this module as `(name, source)`: forward, dq pass and dk/dv pass
/// for each head-dim variant of the row-per-thread kernels, then for padded head dims 32
/// and 64 the register-blocked forward and backward passes in the small tile shape and
/// the three in the large one (for validation in tests and tooling: a device with 32 KiB
/// of workgroup memory never runs the large shapes at DP = 64).
pub fn shaders() -> [(&'static str, &'static str); SHADER_COUNT] {
    let mut out = [("", ""); SHADER_COUNT];
    let kernels = VARIANTS
        .iter()
        .flat_map(|v| [v.fwd, v.bwd_dq, v.bwd_dkv])
        .chain(tiled_kernels().iter().flat_map(|t| {
            [
                t.fwd,
                t.bwd_dq,
                t.bwd_dkv,
                t.fwd_large,
                t.bwd_dq_large,
                t.bwd_dkv_large,
            ]
        }));
    for (slot, k) in out.iter_mut().zip(kernels) {
        *slot = (k.name, k.wgsl);
    }
    out
}

/// The tile shape of the register-blocked backward on `dev` for head dim `d`, as
/// `(query rows per workgroup of the dq pass, threads per workgroup of the dk/dv pass)`:
/// `(64, 128)` for the large shape, `(32, 64)` for the small one; `None` where the
/// row-per-thread kernels run. For tests and benchmark printouts.
#[doc(hidden)]
pub fn backward_tiles(dev: &Device, d: usize) -> Option<(u32, u32)> {
    tiled_for(dev, d).map(|t| (t.shape.dq_rows, t.shape.dkv_threads))
}

/// Keys per tile of the register-blocked forward on `dev` for head dim `d`: 64 for the
/// large shape, 32 for the small one; `None` where the row-per-thread kernel runs. For
/// tests and benchmark printouts.
#[doc(hidden)]
pub fn forward_tiles(dev: &Device, d: usize) -> Option<u32> {
    tiled_for(dev, d).map(|t| t.fwd_keys)
}

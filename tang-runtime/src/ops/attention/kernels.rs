//! Which attention kernels exist and which one a device runs: the row-per-thread variants
//! (every head dim up to 128, any device with 32 KiB of workgroup memory) and the
//! register-blocked ones of `tiled.rs`, `fwd_large.rs`, `bwd_dq.rs` and `bwd_dkv.rs`
//! (head dims 17 to 64), each in the tile shape the device has room for.

use super::dropout::DROPOUT_WGSL;
use super::layout::{self, AttentionParams, DKV_SLOTS, DQ_SLOTS, FWD_SLOTS};
use super::rows::{load4, staged, store4};
use super::{bwd_dkv, bwd_dq, fwd_large, tiled};
use crate::ops::random::PHILOX_WGSL;
use crate::spec::{Layout, Source, Spec, Variants};
use crate::{Device, Error, RawKernel};

/// One compiled shape of the kernels: padded head dim and tile sizes.
pub(super) struct Variant {
    /// Head dim the kernel is compiled for (the real one is at most this).
    pub(super) dp: usize,
    /// Threads per row.
    pub(super) split: u32,
    /// Bytes of workgroup memory the largest of the three kernels uses.
    pub(super) shared_bytes: u32,
    pub(super) fwd: Spec<AttentionParams>,
    pub(super) bwd_dq: Spec<AttentionParams>,
    pub(super) bwd_dkv: Spec<AttentionParams>,
}

/// Rows (queries in the forward and dq pass, keys in the dk/dv pass) per workgroup; the
/// `shader!` macro writes the same number into the WGSL.
pub(super) const ROWS: u32 = 64;

/// WGSL constants for one variant, followed by a kernel body (the declarations come from
/// `layout.rs`).
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

// The WGSL pieces of each pass, the same for every variant: the staging with what its
// tiles hold, then the pass's other masked loads and stores.
// The dropout factors (`attention/dropout.rs`) come first.
const FWD_PIECES: &[&str] = &[
    PHILOX_WGSL,
    DROPOUT_WGSL,
    staged!(a = k, b = v),
    load4!(q = q),
    store4!(o),
];
const DQ_PIECES: &[&str] = &[
    PHILOX_WGSL,
    DROPOUT_WGSL,
    staged!(a = k, b = v),
    load4!(q = q),
    load4!(go = go),
    store4!(dq),
];
const DKV_PIECES: &[&str] = &[
    PHILOX_WGSL,
    DROPOUT_WGSL,
    staged!(a = q, b = go),
    load4!(k = k),
    load4!(v = v),
    store4!(dk),
    store4!(dv),
];

macro_rules! variant {
    ($dp:literal, $dh:literal, $split:literal, $tile:literal, $ch:literal) => {
        Variant {
            dp: $dp,
            split: $split,
            // K/V (or Q/dO) tiles plus the two partial-sum exchange buffers of the backward.
            shared_bytes: 4 * (2 * $tile * $dp + 2 * $split * $ch * 64),
            fwd: Spec::new(
                concat!("attention_fwd_d", $dp),
                FWD_PIECES,
                FWD_SLOTS,
                shader!($dp, $dh, $split, $tile, $ch, "row_fwd.wgsl"),
            ),
            bwd_dq: Spec::new(
                concat!("attention_bwd_dq_d", $dp),
                DQ_PIECES,
                DQ_SLOTS,
                shader!($dp, $dh, $split, $tile, $ch, "row_bwd_dq.wgsl"),
            ),
            bwd_dkv: Spec::new(
                concat!("attention_bwd_dkv_d", $dp),
                DKV_PIECES,
                DKV_SLOTS,
                shader!($dp, $dh, $split, $tile, $ch, "row_bwd_dkv.wgsl"),
            ),
        }
    };
}

/// Head dims 16, 32, 64 and 128: (DP, DH, SPLIT, TILE, CH), each within 32 KiB.
pub(super) static VARIANTS: [Variant; 4] = [
    variant!(16, 16, 1, 64, 16),
    variant!(32, 32, 1, 64, 16),
    variant!(64, 32, 2, 32, 16),
    variant!(128, 32, 4, 16, 8),
];

/// One register-blocked kernel of a padded head dim: the forward or a backward pass, in
/// the small or the large tile shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Pass {
    Fwd,
    FwdLarge,
    /// The large forward reading K and V four elements at a time (head dims a multiple
    /// of 4; `fwd_large.rs`).
    FwdLarge4,
    BwdDq,
    BwdDkv,
    BwdDqLarge,
    BwdDkvLarge,
}

impl Pass {
    const ALL: [Pass; 7] = [
        Pass::Fwd,
        Pass::BwdDq,
        Pass::BwdDkv,
        Pass::FwdLarge,
        Pass::FwdLarge4,
        Pass::BwdDqLarge,
        Pass::BwdDkvLarge,
    ];

    /// The kernel's name and WGSL for padded head dim `dp`.
    fn generate(self, dp: u32) -> (String, String) {
        let (small, large) = (layout::BWD_SMALL, layout::BWD_LARGE);
        let (kind, text) = match self {
            Pass::Fwd => ("fwd", tiled::forward(dp)),
            Pass::FwdLarge => ("fwd_large", fwd_large::forward(dp, false)),
            Pass::FwdLarge4 => ("fwd_large4", fwd_large::forward(dp, true)),
            Pass::BwdDq => ("bwd_dq", bwd_dq::backward_dq(dp, small.dq_rows)),
            Pass::BwdDkv => ("bwd_dkv", bwd_dkv::backward_dkv(dp, small.dkv_threads)),
            Pass::BwdDqLarge => ("bwd_dq_large", bwd_dq::backward_dq(dp, large.dq_rows)),
            Pass::BwdDkvLarge => (
                "bwd_dkv_large",
                bwd_dkv::backward_dkv(dp, large.dkv_threads),
            ),
        };
        (format!("attention_{kind}_tiled_d{dp}"), text)
    }

    /// The bindings of a forward pass's kernel ([`layout::FWD4`] for the one reading K
    /// and V by fours).
    fn forward_layout(self) -> &'static Layout<AttentionParams> {
        if self == Pass::FwdLarge4 {
            &layout::FWD4
        } else {
            &layout::FWD
        }
    }
}

/// The register-blocked kernels, by padded head dim (32 or 64) and pass.
static TILED: Variants<(u32, Pass)> = Variants::new();

/// The register-blocked kernel of `pass` for padded head dim `dp`, generated and
/// validated on first use.
fn tiled_kernel(dp: u32, pass: Pass) -> Result<&'static RawKernel, Error> {
    TILED.get(&(dp, pass), || pass.generate(dp))
}

/// The register-blocked kernels a device runs for one head dim, with the forward's keys
/// per tile and the backward's tile shape.
pub(super) struct TiledPick {
    pub(super) fwd: &'static RawKernel,
    /// The forward's bindings ([`layout::FWD4`] where it reads K and V by fours).
    pub(super) fwd_layout: &'static Layout<AttentionParams>,
    pub(super) fwd_keys: u32,
    pub(super) bwd_dq: &'static RawKernel,
    pub(super) bwd_dkv: &'static RawKernel,
    pub(super) shape: layout::BwdShape,
}

/// The register-blocked kernels for head dim `d`, when there are ones for it and the
/// device has room: head dims 17 to 64 (padded to 32 or 64). Smaller and larger head dims
/// use the row-per-thread kernels: at D <= 16 a row's work is too small to block, and at
/// D = 128 the Q tile alone would fill 32 KiB of workgroup memory. Each pass takes its
/// large tile shape where the device has room for it (48 KiB at DP = 64: NVIDIA; 32 KiB
/// at DP = 32: every device that runs these kernels, lavapipe included) and the small one
/// elsewhere.
///
/// # Errors
/// [`Error::Shader`] when a generated kernel fails validation (a bug of this crate).
pub(super) fn tiled_for(dev: &Device, d: usize) -> Result<Option<TiledPick>, Error> {
    let dp = match d {
        17..=32 => 32,
        33..=64 => 64,
        _ => return Ok(None),
    };
    let limits = &dev.info().limits;
    let fits = |shared: u32, threads: u32| {
        shared <= limits.max_compute_workgroup_storage_size
            && threads <= limits.max_compute_invocations_per_workgroup
    };
    let bwd_fits = |shape: layout::BwdShape| {
        fits(
            shape.shared_bytes(dp),
            shape.dq_threads().max(shape.dkv_threads),
        )
    };
    let (fwd, fwd_keys) = if fits(layout::large_shared_bytes(dp), layout::THREADS) {
        // K and V by fours where the head dim allows: a quarter of the loads.
        let pass = if d.is_multiple_of(4) {
            Pass::FwdLarge4
        } else {
            Pass::FwdLarge
        };
        (pass, layout::LARGE_KT)
    } else if fits(layout::fwd_shared_bytes(dp), layout::THREADS) {
        (Pass::Fwd, layout::FWD_KEYS)
    } else {
        return Ok(None);
    };
    let (bwd_dq, bwd_dkv, shape) = if bwd_fits(layout::BWD_LARGE) {
        (Pass::BwdDqLarge, Pass::BwdDkvLarge, layout::BWD_LARGE)
    } else if bwd_fits(layout::BWD_SMALL) {
        (Pass::BwdDq, Pass::BwdDkv, layout::BWD_SMALL)
    } else {
        return Ok(None);
    };
    Ok(Some(TiledPick {
        fwd: tiled_kernel(dp, fwd)?,
        fwd_layout: fwd.forward_layout(),
        fwd_keys,
        bwd_dq: tiled_kernel(dp, bwd_dq)?,
        bwd_dkv: tiled_kernel(dp, bwd_dkv)?,
        shape,
    }))
}

/// Every WGSL source of this module: forward, dq pass and dk/dv pass for each head-dim
/// variant of the row-per-thread kernels, then for padded head dims 32 and 64 the
/// register-blocked forward and backward passes in the small tile shape and the three in
/// the large one (a device with 32 KiB of workgroup memory never runs the large shapes at
/// DP = 64, so only this list validates them there).
pub(crate) fn kernels() -> Vec<Source> {
    VARIANTS
        .iter()
        .flat_map(|v| [v.fwd.source(), v.bwd_dq.source(), v.bwd_dkv.source()])
        .chain(
            [32, 64]
                .into_iter()
                .flat_map(|dp| Pass::ALL.map(|p| p.generate(dp))),
        )
        .chain(super::materialized::kernels())
        .chain(super::coop_fwd::kernels())
        .chain(super::coop_bwd::kernels())
        .chain(super::split::kernels())
        .collect()
}

/// The tile shape of the register-blocked backward on `dev` for head dim `d`, as
/// `(query rows per workgroup of the dq pass, threads per workgroup of the dk/dv pass)`:
/// `(64, 128)` for the large shape, `(32, 64)` for the small one; `None` where the
/// row-per-thread kernels run. For tests and benchmark printouts.
#[doc(hidden)]
pub fn backward_tiles(dev: &Device, d: usize) -> Option<(u32, u32)> {
    tiled_for(dev, d)
        .ok()
        .flatten()
        .map(|t| (t.shape.dq_rows, t.shape.dkv_threads))
}

/// Keys per tile of the register-blocked forward on `dev` for head dim `d`: 64 for the
/// large shape, 32 for the small one; `None` where the row-per-thread kernel runs. For
/// tests and benchmark printouts.
#[doc(hidden)]
pub fn forward_tiles(dev: &Device, d: usize) -> Option<u32> {
    tiled_for(dev, d).ok().flatten().map(|t| t.fwd_keys)
}

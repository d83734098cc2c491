//! Out-of-range ids as errors, without a host read per step (PyTorch raises
//! `IndexError`; CUDA's device-side asserts report at the next sync).
//!
//! Every u32 tensor carries what the host knows of its largest value
//! ([`Tensor::known_max`]): an upload knows it exactly, a gather of ids from another
//! tensor inherits that tensor's bound, a kernel's write forgets it. An index op first
//! asks that: ids proven below the bound cost nothing; an uploaded id at or past it is
//! [`Error::IndexOutOfRange`] at once, naming the op, the value and the bound. Only ids
//! the host knows nothing about (computed on the GPU) get a one-launch check that sets a
//! flag on the device; the flag is read with the next read or [`crate::Device::sync`], which
//! then fails with the same error. The op itself never reads or writes out of bounds
//! (gathers read 0, scatters skip), so nothing is corrupted meanwhile.

use crate::spec::{Slot, Source, Spec, launch_threads, params};
use crate::wgsl::thread_main;
use crate::{DType, Error, Tensor};

params! {
    /// `total` ids to check against `bound`; `ignore` (when `has_ignore` is 1) is
    /// allowed anyway (cross-entropy's `ignore_index`).
    struct CheckIdsParams { total: u32, bound: u32, ignore: u32, has_ignore: u32 }
}

/// `fault[0] = 1` and `fault[1] = max(fault[1], id)` for every id `>= bound` (but the
/// ignored one).
static CHECK_IDS: Spec<CheckIdsParams> = Spec::new(
    "check_ids",
    &[],
    &[
        Slot::Read("ids", "array<u32>"),
        Slot::ReadWrite("fault", "array<atomic<u32>>"),
    ],
    concat!(
        thread_main!(i < "p.total"),
        "    let id = ids[i];
    if (id >= p.bound && !(p.has_ignore == 1u && id == p.ignore)) {
        atomicMax(&fault[0], 1u);
        atomicMax(&fault[1], id);
    }
}
"
    ),
);

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![CHECK_IDS.source()]
}

/// Fails unless every id of the u32 tensor `ids` is below `bound`, as far as the host
/// knows; when it cannot know, launches the GPU check reported at the next read or sync.
/// A non-u32 `ids` passes (the op's own dtype check reports it).
///
/// # Errors
/// [`Error::IndexOutOfRange`] for an uploaded id `>= bound`.
pub(crate) fn check_ids(op: &str, ids: &Tensor, bound: usize) -> Result<(), Error> {
    check_ids_except(op, ids, bound, None)
}

/// Checks that every id of the u32 tensor `ids` is below `bound` (or is `ignore`, an
/// `ignore_index`), the way `embedding`, `cross_entropy`, `index_select` and `gather`
/// check theirs: on the host when the ids came from host data (no read), else by a
/// check on the GPU whose result the next read or [`crate::Device::sync`] reports. For ops
/// built from other ops that must reject ids the inner ops would accept.
///
/// ```
/// # let dev = tang_runtime::Device::new()?;
/// let labels = tang_runtime::Tensor::from_u32(&dev, &[0, 3], &[2])?;
/// let err = tang_runtime::ops::check_index("nll_loss", &labels, 3, None).unwrap_err();
/// assert!(matches!(err, tang_runtime::Error::IndexOutOfRange { value: 3, bound: 3, .. }));
/// # Ok::<(), tang_runtime::Error>(())
/// ```
///
/// # Errors
/// [`Error::IndexOutOfRange`] naming `op`, the largest offending id and `bound`.
pub fn check_index(op: &str, ids: &Tensor, bound: usize, ignore: Option<u32>) -> Result<(), Error> {
    check_ids_except(op, ids, bound, ignore)
}

/// [`check_ids`] allowing the id `ignore` past the bound too (an `ignore_index`).
///
/// # Errors
/// As [`check_ids`].
pub(crate) fn check_ids_except(
    op: &str,
    ids: &Tensor,
    bound: usize,
    ignore: Option<u32>,
) -> Result<(), Error> {
    // An empty table (no rows, no classes) keeps the result its kernels define for it
    // (zero rows, a NaN loss): every id misses it, so there is nothing an error could
    // single out, and the shape checks already let such degenerate layers exist.
    if ids.dtype() != DType::U32 || ids.is_empty() || bound == 0 {
        return Ok(());
    }
    let bound64 = bound as u64;
    match ids.known_max() {
        Some((max, _)) if u64::from(max) < bound64 => Ok(()),
        Some((max, true)) if ignore != Some(max) => Err(Error::IndexOutOfRange {
            op: op.into(),
            value: u64::from(max),
            bound: bound64,
        }),
        _ => launch_check(op, ids, bound, ignore),
    }
}

fn launch_check(op: &str, ids: &Tensor, bound: usize, ignore: Option<u32>) -> Result<(), Error> {
    // A bound past u32 cannot be exceeded by a u32 id.
    let Ok(bound32) = u32::try_from(bound) else {
        return Ok(());
    };
    let dev = ids.device();
    let params = CheckIdsParams {
        total: crate::size::fits_u32(op, "ids", ids.len())?,
        bound: bound32,
        ignore: ignore.unwrap_or(0),
        has_ignore: u32::from(ignore.is_some()),
    };
    let fault = crate::checks::fault_flag(dev, op, bound as u64)?;
    launch_threads(
        "check_ids",
        dev,
        &CHECK_IDS,
        &[],
        &params,
        params.total,
        &[ids, &fault],
    )
}

//! The fast path of the row kernels (softmax, log-softmax, layer norm, RMS norm and
//! cross-entropy, forward and backward): a *team* of subgroup lanes per row, several rows
//! per workgroup, reductions by subgroup shuffles, and the choice between this path and
//! the workgroup-per-row fallback of each module, made here in [`row_path`].
//!
//! Why: with one 256-thread workgroup per 1024-float row every thread holds one `vec4`,
//! and each reduction is a tree of eight barriers in workgroup memory. The GPU then waits
//! on barriers and on one load per thread instead of streaming memory. Here a team of
//! `TEAM` lanes (at most the adapter's smallest subgroup, so a team never spans two
//! subgroups) owns a row: each lane issues all of its `PER_LANE` 16-byte loads back to
//! back, keeps them in registers, and a reduction is `log2(TEAM)` shuffles with no
//! barrier. 1024 floats on NVIDIA: 32 lanes x 8 `vec4`s, 8 rows per 256-thread workgroup.
//!
//! The WGSL is generated per (kernel, unit, team, values per lane) with the per-lane loop
//! fully unrolled into named values: naga does not unroll loops, and an array indexed in
//! a loop may live in local memory rather than registers. Generated kernels live in the
//! one cache of run-time variants (`spec::Variants`: generated and naga-validated once per
//! process, for the variants actually used). Each kind declares the layout of its
//! workgroup fallback (`Layout::declarations` of the fallback module's slots).
//!
//! Teams are formed from `subgroup_id`, `subgroup_size` and `subgroup_invocation_id`, not
//! from `local_invocation_index`, so a team is made of lanes of one subgroup whatever the
//! adapter's lane numbering and whatever subgroup size in `[min, max]` it picks for the
//! pipeline: the team size is a power of two no larger than the smallest.

use std::cell::Cell;

use crate::spec::{Variants, grid};
use crate::{Device, Error, RawKernel};

mod codegen;

use codegen::generate;

/// Largest team: one NVIDIA warp. A 64-lane subgroup (AMD) holds two teams, which keeps
/// at least 8 rows per 256-thread workgroup.
const MAX_TEAM: u32 = 32;

/// Threads per workgroup of the forward kernels (a multiple of every team size).
const WG_FWD: u32 = 256;

/// Threads per workgroup of the norm backward: it holds four row-sized sets of registers
/// per lane (x, grad_out and the weight/bias accumulators), so fewer warps fit on an SM;
/// smaller workgroups fill the register file without rounding waste.
const WG_NORM_BWD: u32 = 128;

/// The row kernels that have a subgroup path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RowOp {
    /// Softmax or log-softmax forward (one row-sized set of registers per lane).
    Softmax,
    /// Softmax or log-softmax backward (two: `y` and `grad_out`).
    SoftmaxBackward,
    /// Layer norm or RMS norm forward (one).
    Norm,
    /// Layer norm or RMS norm backward (four: `x`, `grad_out`, and the weight and bias
    /// gradient accumulators that stay in registers across the rows a team walks).
    NormBackward,
    /// Cross-entropy loss and gradient (one).
    CrossEntropy,
}

impl RowOp {
    /// The most units (`vec4` or `f32`) one lane keeps of a row: 64 floats of row data
    /// per lane at most, so a 256-thread workgroup stays well inside the register file
    /// (255 registers per thread, 64K per SM on NVIDIA) with room for several per SM.
    fn max_per_lane(self) -> u32 {
        match self {
            RowOp::Softmax | RowOp::Norm | RowOp::CrossEntropy => 16,
            RowOp::SoftmaxBackward => 16,
            RowOp::NormBackward => 8,
        }
    }

    fn workgroup_size(self) -> u32 {
        if self == RowOp::NormBackward {
            WG_NORM_BWD
        } else {
            WG_FWD
        }
    }
}

/// Which implementation a row kernel uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowPath {
    /// `team` lanes of one subgroup per row, each holding `per_lane` units of the row in
    /// registers (`vec4` when `vec4` is true, else `f32`); `rows_per_group` rows per
    /// workgroup.
    Subgroup {
        /// Lanes per row (a power of two, at most the adapter's smallest subgroup).
        team: u32,
        /// Units of the row each lane holds.
        per_lane: u32,
        /// Whether a unit is a `vec4<f32>` (row length a multiple of 4) or an `f32`.
        vec4: bool,
        /// Rows per workgroup.
        rows_per_group: u32,
    },
    /// One 256-thread workgroup per row with reductions in workgroup memory: for
    /// adapters without subgroups and rows too long for the registers of one team.
    Workgroup,
}

thread_local! {
    static FORCE_WORKGROUP: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every row kernel launched from this thread on the workgroup fallback
/// path, as on an adapter without subgroups (for tests and comparisons). Launches are
/// recorded on the calling thread, so other threads are unaffected.
pub fn with_workgroup_path<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCE_WORKGROUP.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(FORCE_WORKGROUP.with(|c| c.replace(true)));
    f()
}

/// The path `op` takes for rows of `cols` floats on `dev`: the one place the choice is
/// made. The subgroup path needs `wgpu::Features::SUBGROUP` and a row that fits in the
/// registers of one team (`cols <= 4 * team * max_per_lane`: 2048 floats forward and
/// 1024 for the norm backward with NVIDIA's 32-lane subgroups).
pub fn row_path(dev: &Device, op: RowOp, cols: usize) -> RowPath {
    let info = dev.info();
    if FORCE_WORKGROUP.with(Cell::get)
        || !info.features.contains(wgpu::Features::SUBGROUP)
        || cols == 0
    {
        return RowPath::Workgroup;
    }
    // The largest power of two that every subgroup of the adapter can hold.
    let smin = info.subgroup_min_size.max(1);
    let tmax = (1u32 << smin.ilog2()).min(MAX_TEAM);
    let vec4 = cols.is_multiple_of(4);
    let n = if vec4 { cols / 4 } else { cols };
    let Ok(n) = u32::try_from(n) else {
        return RowPath::Workgroup;
    };
    // Short rows: a smaller team, more rows per workgroup, no idle lanes.
    // `min` first: `next_power_of_two` of a row past 2^31 units would overflow (rows that
    // long fit in an 80 GB GPU's buffers). Same team as rounding up, then capping.
    let team = n.min(tmax).next_power_of_two();
    let per_lane = n.div_ceil(team);
    if per_lane > op.max_per_lane() {
        return RowPath::Workgroup;
    }
    RowPath::Subgroup {
        team,
        per_lane,
        vec4,
        rows_per_group: op.workgroup_size() / team,
    }
}

/// One generated kernel: what it computes and its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    /// `log`: log-softmax.
    SoftmaxFwd {
        log: bool,
    },
    /// `log`: the backward of log-softmax.
    SoftmaxBwd {
        log: bool,
    },
    /// `rms`: RMS norm.
    NormFwd {
        rms: bool,
    },
    /// `rms`: RMS norm (no bias partials).
    NormBwd {
        rms: bool,
    },
    CrossEntropy,
}

impl Kind {
    fn op(self) -> RowOp {
        match self {
            Kind::SoftmaxFwd { .. } => RowOp::Softmax,
            Kind::SoftmaxBwd { .. } => RowOp::SoftmaxBackward,
            Kind::NormFwd { .. } => RowOp::Norm,
            Kind::NormBwd { .. } => RowOp::NormBackward,
            Kind::CrossEntropy => RowOp::CrossEntropy,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::SoftmaxFwd { log: false } => "softmax",
            Kind::SoftmaxFwd { log: true } => "log_softmax",
            Kind::SoftmaxBwd { log: false } => "softmax_backward",
            Kind::SoftmaxBwd { log: true } => "log_softmax_backward",
            Kind::NormFwd { rms: false } => "layer_norm",
            Kind::NormFwd { rms: true } => "rms_norm",
            Kind::NormBwd { rms: false } => "layer_norm_backward",
            Kind::NormBwd { rms: true } => "rms_norm_backward",
            Kind::CrossEntropy => "cross_entropy",
        }
    }

    const ALL: [Kind; 9] = [
        Kind::SoftmaxFwd { log: false },
        Kind::SoftmaxFwd { log: true },
        Kind::SoftmaxBwd { log: false },
        Kind::SoftmaxBwd { log: true },
        Kind::NormFwd { rms: false },
        Kind::NormFwd { rms: true },
        Kind::NormBwd { rms: false },
        Kind::NormBwd { rms: true },
        Kind::CrossEntropy,
    ];
}

/// The generated team kernels, by kind, unit (`vec4` or not), team size and units per
/// lane.
static KERNELS: Variants<(Kind, bool, u32, u32)> = Variants::new();

/// The kernel of `kind` for a team of `team` lanes holding `per_lane` units (`vec4` or
/// `f32`) each, generated and validated on first use.
pub(crate) fn kernel(
    kind: Kind,
    vec4: bool,
    team: u32,
    per_lane: u32,
) -> Result<&'static RawKernel, Error> {
    KERNELS.get(&(kind, vec4, team, per_lane), || {
        generate(kind, vec4, team, per_lane)
    })
}

/// The WGSL of a representative set of generated variants, every kernel kind with both
/// units, every team size and values per lane 1, 3, 8 and the largest, each with its f16
/// form (for validation in tests; the variants in between differ only in how many slots
/// are unrolled).
pub(crate) fn kernels() -> Vec<crate::spec::Source> {
    let mut out = Vec::new();
    for kind in Kind::ALL {
        for vec4 in [true, false] {
            for team in [1, 2, 4, 8, 16, 32] {
                let mut per = vec![1, 3, 8, kind.op().max_per_lane()];
                per.dedup();
                for v in per {
                    let source = generate(kind, vec4, team, v);
                    out.push(crate::ops::rows::half::registry_form(source.clone()));
                    out.push(source);
                }
            }
        }
    }
    out
}

/// The generated kernel of `kind` for rows of `cols` floats and its rows per workgroup,
/// or `None` when [`row_path`] picks the workgroup fallback.
///
/// # Errors
/// [`Error::Shader`] when the generated kernel fails validation (a bug of this crate).
pub(crate) fn team_kernel(
    dev: &Device,
    kind: Kind,
    cols: usize,
) -> Result<Option<(&'static RawKernel, u32)>, Error> {
    Ok(match row_path(dev, kind.op(), cols) {
        RowPath::Subgroup {
            team,
            per_lane,
            vec4,
            rows_per_group,
        } => Some((kernel(kind, vec4, team, per_lane)?, rows_per_group)),
        RowPath::Workgroup => None,
    })
}

/// Pipeline-overridable constants of a dispatch (name, value).
type Constants<'c> = &'c [(&'c str, f64)];

/// The kernel, grid and override constants for `rows` rows of `cols` floats: the team
/// kernel of `kind` where [`row_path`] picks one (several rows per workgroup, no
/// constants), else `fallback` (one workgroup per row) with its `constants`.
///
/// # Errors
/// [`Error::TooLarge`] when the grid exceeds the device's dispatch limits,
/// [`Error::Shader`] as [`team_kernel`].
pub(crate) fn row_kernel<'c>(
    dev: &Device,
    op: &str,
    kind: Kind,
    rows: usize,
    cols: usize,
    fallback: &'static RawKernel,
    constants: Constants<'c>,
) -> Result<(&'static RawKernel, [u32; 3], Constants<'c>), Error> {
    Ok(match team_kernel(dev, kind, cols)? {
        Some((k, rpg)) => (k, grid(dev, op, rows.div_ceil(rpg as usize) as u64)?, &[]),
        None => (fallback, grid(dev, op, rows as u64)?, constants),
    })
}

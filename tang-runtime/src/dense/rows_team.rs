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
//! a loop may live in local memory rather than registers. Generated kernels are cached
//! (one leaked string and [`RawKernel`] per variant actually used, a few per process).
//!
//! Teams are formed from `subgroup_id`, `subgroup_size` and `subgroup_invocation_id`, not
//! from `local_invocation_index`, so a team is made of lanes of one subgroup whatever the
//! adapter's lane numbering and whatever subgroup size in `[min, max]` it picks for the
//! pipeline: the team size is a power of two no larger than the smallest.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use super::reduce::{unit_f1, unit_v4};
use crate::{Device, RawKernel};

/// Largest team: one NVIDIA warp. A 64-lane subgroup (AMD) holds two teams, which keeps
/// at least 8 rows per 256-thread workgroup.
const MAX_TEAM: u32 = 32;

/// Threads per workgroup of the forward kernels (a multiple of every team size).
const WG_FWD: u32 = 256;

/// Threads per workgroup of the norm backward: it holds four row-sized sets of registers
/// per lane (x, grad_y and the weight/bias accumulators), so fewer warps fit on an SM;
/// smaller workgroups fill the register file without rounding waste.
const WG_NORM_BWD: u32 = 128;

/// The row kernels that have a subgroup path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RowOp {
    /// Softmax or log-softmax forward (one row-sized set of registers per lane).
    Softmax,
    /// Softmax or log-softmax backward (two: `y` and `grad_y`).
    SoftmaxBackward,
    /// Layer norm or RMS norm forward (one).
    Norm,
    /// Layer norm or RMS norm backward (four: `x`, `grad_y`, and the weight and bias
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
    let team = n.next_power_of_two().min(tmax);
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

type Key = (Kind, bool, u32, u32);

static CACHE: Mutex<BTreeMap<Key, &'static RawKernel>> = Mutex::new(BTreeMap::new());

/// The kernel of `kind` for a team of `team` lanes holding `per_lane` units (`vec4` or
/// `f32`) each, generated on first use.
pub(crate) fn kernel(kind: Kind, vec4: bool, team: u32, per_lane: u32) -> &'static RawKernel {
    let key = (kind, vec4, team, per_lane);
    // A poisoned lock only means another thread panicked while inserting; the map is
    // still consistent (insertion is the last step).
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    cache.entry(key).or_insert_with(|| {
        let (name, src) = generate(kind, vec4, team, per_lane);
        let name: &'static str = Box::leak(name.into_boxed_str());
        let src: &'static str = Box::leak(src.into_boxed_str());
        Box::leak(Box::new(RawKernel::new(name, src, "main")))
    })
}

/// The WGSL of a representative set of generated variants, every kernel kind with both
/// units, every team size and values per lane 1, 3, 8 and the largest (for validation in
/// tests; the variants in between differ only in how many slots are unrolled).
pub fn shaders() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for kind in Kind::ALL {
        for vec4 in [true, false] {
            for team in [1, 2, 4, 8, 16, 32] {
                let mut per = vec![1, 3, 8, kind.op().max_per_lane()];
                per.dedup();
                for v in per {
                    out.push(generate(kind, vec4, team, v));
                }
            }
        }
    }
    out
}

/// `a op b op c ...` as a balanced tree (independent operations for the scheduler).
fn tree(terms: &[String], op: &dyn Fn(&str, &str) -> String) -> String {
    match terms {
        [] => unreachable!("a row holds at least one unit per lane"),
        [t] => t.clone(),
        _ => {
            let (a, b) = terms.split_at(terms.len() / 2);
            op(&tree(a, op), &tree(b, op))
        }
    }
}

fn add(a: &str, b: &str) -> String {
    format!("({a} + {b})")
}

fn maxf(a: &str, b: &str) -> String {
    format!("max({a}, {b})")
}

/// `name{k}` for every slot, optionally wrapped as `f(name{k})`.
fn each(v: u32, f: impl Fn(u32) -> String) -> Vec<String> {
    (0..v).map(f).collect()
}

/// Text shared by every variant: the unit, the team constants and butterfly reductions
/// (every lane of a team ends with the same bits: `a + b == b + a`).
fn header(kind: Kind, vec4: bool, team: u32) -> String {
    let wg = kind.op().workgroup_size();
    // No `enable subgroups;`: naga 30 rejects the directive and accepts the builtins
    // when the device has the feature (the validator runs with SUBGROUP capabilities).
    let mut s = String::from(if vec4 { unit_v4!() } else { unit_f1!() });
    let _ = writeln!(
        s,
        "const TEAM: u32 = {team}u;\nconst WGS: u32 = {wg}u;\nconst ROWS: u32 = {}u;\n\
         const LOWEST: f32 = -3.4028235e38;",
        wg / team
    );
    let steps = |ty: &str, name: &str, comb: &str| {
        let mut f = format!("fn {name}(v: {ty}) -> {ty} {{\n    var s = v;\n");
        let mut m = team / 2;
        while m > 0 {
            let _ = writeln!(
                f,
                "    s = {};",
                comb.replace("{o}", &format!("subgroupShuffleXor(s, {m}u)"))
            );
            m /= 2;
        }
        f.push_str("    return s;\n}\n");
        f
    };
    s.push_str(&steps("f32", "team_sum", "s + {o}"));
    s.push_str(&steps("vec2<f32>", "team_sum2", "s + {o}"));
    s.push_str(&steps("f32", "team_max", "max(s, {o})"));
    s
}

/// The entry point's signature and the team's place: `slot` (team within the
/// workgroup), `lane` (within the team), `g` (the workgroup's linear index).
fn entry(kind: Kind) -> String {
    format!(
        "@compute @workgroup_size({})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32, @builtin(subgroup_id) sg: u32,
        @builtin(subgroup_size) sgs: u32, @builtin(subgroup_invocation_id) sgi: u32) {{
    let slot = sg * (sgs / TEAM) + sgi / TEAM;
    let lane = sgi % TEAM;
    let g = wid.x + wid.y * nwg.x;
",
        kind.op().workgroup_size()
    )
}

/// The team's row and its bounds, for kernels with one row per team: `n` (units of the
/// row, 0 for a dead team past the last row), `base` (the lane's first unit) and `last`
/// (the last unit of the tensor, which clamps masked loads).
const ROW: &str = "    let row = g * ROWS + slot;
    let live = row < p.rows;
    let n = select(0u, p.n, live);
    let base = row * p.n + lane;
    let last = p.rows * p.n - 1u;
";

/// Slot `k` of buffer `buf` into `buf{k}`, declaring its mask `ok{k}`.
fn load(buf: &str, k: u32, team: u32, fill: &str) -> String {
    load_as(buf, buf, k, team, fill, true)
}

/// `text` with every line indented by `n` spaces.
fn pad(text: &str, n: usize) -> String {
    let sp = " ".repeat(n);
    text.lines()
        .map(|l| format!("{sp}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Slot `k` of buffer `buf` into `{var}{k}`; `mask`: also declare the slot's mask `ok{k}`
/// (once per slot, by its first load). The load is unconditional at an index clamped into the tensor, and a masked
/// slot takes `fill` by `select`: no branch around loads, so the compiler issues every
/// slot's load back to back, and a masked slot never carries another row's inf or NaN
/// into the sums.
fn load_as(buf: &str, var: &str, k: u32, team: u32, fill: &str, mask: bool) -> String {
    let o = k * team;
    let mask = if mask {
        format!("let ok{k} = lane + {o}u < n;\n")
    } else {
        String::new()
    };
    format!("{mask}let {var}{k} = select(T({fill}), {buf}[min(base + {o}u, last)], ok{k});")
}

/// Generates one variant: `(kernel name, WGSL)`. Control flow around every shuffle and
/// barrier is uniform (dead rows compute on masked values and skip only their stores).
fn generate(kind: Kind, vec4: bool, team: u32, v: u32) -> (String, String) {
    let name = format!(
        "{}_team{team}x{v}{}",
        kind.name(),
        if vec4 { "_v4" } else { "" }
    );
    let mut s = header(kind, vec4, team);
    // Offset of slot k from the lane's first unit.
    let off = |k: u32| format!("{}u", k * team);
    match kind {
        Kind::SoftmaxFwd { log } => {
            s.push_str(
                "struct P { rows: u32, n: u32, p0: u32, p1: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<T>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;
",
            );
            s.push_str(&entry(kind));
            s.push_str(ROW);
            for k in 0..v {
                let _ = writeln!(s, "{}", pad(&load("x", k, team, "LOWEST"), 4));
            }
            let _ = writeln!(
                s,
                "    let m = team_max(hmax({}));",
                tree(&each(v, |k| format!("x{k}")), &maxf)
            );
            // Masked slots contribute 0, not exp(LOWEST - m): a row of all -inf has
            // m == LOWEST and must sum to 0 (NaN output, as PyTorch).
            for k in 0..v {
                let _ = writeln!(s, "    let e{k} = select(T(0.0), exp(x{k} - T(m)), ok{k});");
            }
            let _ = writeln!(
                s,
                "    let sum = team_sum(hsum({}));",
                tree(&each(v, |k| format!("e{k}")), &add)
            );
            if log {
                s.push_str("    let lse = T(m + log(sum));\n");
            } else {
                s.push_str("    let inv = 1.0 / sum;\n");
            }
            for k in 0..v {
                let o = off(k);
                let val = if log {
                    format!("x{k} - lse")
                } else {
                    format!("e{k} * inv")
                };
                let _ = writeln!(s, "    if (ok{k}) {{ y[base + {o}] = {val}; }}");
            }
            s.push_str("}\n");
        }
        Kind::SoftmaxBwd { log } => {
            s.push_str(
                "struct P { rows: u32, n: u32, p0: u32, p1: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> y: array<T>;
@group(0) @binding(2) var<storage, read_write> dx: array<T>;
@group(0) @binding(3) var<storage, read> dy: array<T>;
",
            );
            s.push_str(&entry(kind));
            s.push_str(ROW);
            for k in 0..v {
                let _ = writeln!(s, "{}", pad(&load("y", k, team, "0.0"), 4));
                let _ = writeln!(s, "{}", pad(&load_as("dy", "g", k, team, "0.0", false), 4));
            }
            let terms = if log {
                each(v, |k| format!("g{k}"))
            } else {
                each(v, |k| format!("y{k} * g{k}"))
            };
            let _ = writeln!(s, "    let d = team_sum(hsum({}));", tree(&terms, &add));
            for k in 0..v {
                let o = off(k);
                let val = if log {
                    format!("g{k} - exp(y{k}) * d")
                } else {
                    format!("y{k} * (g{k} - T(d))")
                };
                let _ = writeln!(s, "    if (ok{k}) {{ dx[base + {o}] = {val}; }}");
            }
            s.push_str("}\n");
        }
        Kind::NormFwd { rms } => {
            s.push_str(
                "struct P { rows: u32, n: u32, eps: f32, p0: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<T>;
@group(0) @binding(2) var<storage, read_write> y: array<T>;
@group(0) @binding(3) var<storage, read> w: array<T>;
@group(0) @binding(4) var<storage, read> b: array<T>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;
",
            );
            s.push_str(&entry(kind));
            s.push_str(ROW);
            s.push_str("    let cnt = f32(p.n * W);\n");
            for k in 0..v {
                let _ = writeln!(s, "{}", pad(&load("x", k, team, "0.0"), 4));
            }
            if rms {
                s.push_str("    let mean = 0.0;\n");
            } else {
                let _ = writeln!(
                    s,
                    "    let mean = team_sum(hsum({})) / cnt;",
                    tree(&each(v, |k| format!("x{k}")), &add)
                );
            }
            // The variance around the mean from the registers: no E[x^2] - mean^2.
            for k in 0..v {
                let _ = writeln!(s, "    let d{k} = select(T(0.0), x{k} - T(mean), ok{k});");
            }
            let _ = writeln!(
                s,
                "    let rstd = inverseSqrt(team_sum(hsum({})) / cnt + p.eps);",
                tree(&each(v, |k| format!("d{k} * d{k}")), &add)
            );
            // Weight and bias loads outside the store branches (clamped to the row), so
            // they are all in flight before the first store.
            for k in 0..v {
                let o = off(k);
                let _ = writeln!(s, "    let w{k} = w[min(lane + {o}, p.n - 1u)];");
                if !rms {
                    let _ = writeln!(s, "    let b{k} = b[min(lane + {o}, p.n - 1u)];");
                }
            }
            for k in 0..v {
                let o = off(k);
                let bias = if rms {
                    String::new()
                } else {
                    format!(" + b{k}")
                };
                let _ = writeln!(
                    s,
                    "    if (ok{k}) {{ y[base + {o}] = d{k} * rstd * w{k}{bias}; }}"
                );
            }
            s.push_str(
                "    if (lane == 0u && live) {
        stats[2u * row] = mean;
        stats[2u * row + 1u] = rstd;
    }
}
",
            );
        }
        Kind::NormBwd { rms } => {
            s.push_str(
                "struct P { rows: u32, n: u32, rpt: u32, p0: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<T>;
@group(0) @binding(2) var<storage, read> w: array<T>;
@group(0) @binding(3) var<storage, read> stats: array<f32>;
@group(0) @binding(4) var<storage, read> dy: array<T>;
@group(0) @binding(5) var<storage, read_write> dx: array<T>;
// Per workgroup partial sums [groups, n] of grad_y * xhat (weight) and grad_y (bias).
@group(0) @binding(6) var<storage, read_write> pw: array<T>;
@group(0) @binding(7) var<storage, read_write> pb: array<T>;
",
            );
            let _ = writeln!(s, "var<workgroup> acc: array<T, {}>;", team * v);
            s.push_str(&entry(kind));
            s.push_str("    let cnt = f32(p.n * W);\n");
            for k in 0..v {
                let o = off(k);
                let _ = writeln!(
                    s,
                    "    let col{k} = lane + {o} < p.n;\n    var aw{k} = T(0.0);\n    var ab{k} = T(0.0);"
                );
            }
            // Teams walk rows interleaved, so in each step the workgroup's teams read
            // ROWS consecutive rows (one contiguous block). The trip count is uniform.
            s.push_str(
                "    for (var i = 0u; i < p.rpt; i = i + 1u) {
        let row = (g * p.rpt + i) * ROWS + slot;
        let live = row < p.rows;
        let n = select(0u, p.n, live);
        let base = row * p.n + lane;
        let last = p.rows * p.n - 1u;
        let srow = min(row, p.rows - 1u);
        let mean = select(0.0, stats[2u * srow], live);
        let rstd = select(0.0, stats[2u * srow + 1u], live);
",
            );
            for k in 0..v {
                let o = off(k);
                let _ = writeln!(
                    s,
                    "{}\n{}\n        let w{k} = w[min(lane + {o}, p.n - 1u)];\n        \
                     let xh{k} = (x{k} - T(mean)) * rstd;\n        let gw{k} = d{k} * w{k};",
                    pad(&load("x", k, team, "0.0"), 8),
                    pad(&load_as("dy", "d", k, team, "0.0", false), 8)
                );
            }
            // The column sums first: `d` is then dead before the reduction, which keeps
            // fewer registers live across it.
            for k in 0..v {
                let _ = writeln!(s, "        aw{k} = aw{k} + d{k} * xh{k};");
                if !rms {
                    let _ = writeln!(s, "        ab{k} = ab{k} + d{k};");
                }
            }
            let _ = writeln!(
                s,
                "        let r = team_sum2(vec2<f32>(hsum({}), hsum({})));",
                tree(&each(v, |k| format!("gw{k}")), &add),
                tree(&each(v, |k| format!("gw{k} * xh{k}")), &add)
            );
            if rms {
                s.push_str("        let mg = 0.0;\n");
            } else {
                s.push_str("        let mg = r.x / cnt;\n");
            }
            s.push_str("        let mgx = r.y / cnt;\n");
            for k in 0..v {
                let o = off(k);
                let _ = writeln!(
                    s,
                    "        if (ok{k}) {{ dx[base + {o}] = rstd * (gw{k} - T(mg) - xh{k} * mgx); }}"
                );
            }
            s.push_str("    }\n");
            // The teams' partial sums in a fixed order (deterministic, no atomics), then
            // one row of partials per workgroup; a column reduction sums those.
            let mut combine = |acc: &str, out: &str| {
                let _ = writeln!(
                    s,
                    "    for (var u = lid; u < TEAM * {v}u; u = u + WGS) {{ acc[u] = T(0.0); }}
    workgroupBarrier();
    for (var r = 0u; r < ROWS; r = r + 1u) {{
        if (slot == r) {{"
                );
                for k in 0..v {
                    let o = off(k);
                    let _ = writeln!(
                        s,
                        "            if (col{k}) {{ acc[lane + {o}] = acc[lane + {o}] + {acc}{k}; }}"
                    );
                }
                let _ = writeln!(
                    s,
                    "        }}
        workgroupBarrier();
    }}
    for (var u = lid; u < p.n; u = u + WGS) {{ {out}[g * p.n + u] = acc[u]; }}
    workgroupBarrier();"
                );
            };
            combine("aw", "pw");
            if !rms {
                combine("ab", "pb");
            }
            s.push_str("}\n");
        }
        Kind::CrossEntropy => {
            s.push_str(
                "struct P { rows: u32, n: u32, classes: u32, ignore: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<T>;
@group(0) @binding(2) var<storage, read> targets: array<u32>;
@group(0) @binding(3) var<storage, read> cnt: array<f32>;
@group(0) @binding(4) var<storage, read_write> loss: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<T>;
",
            );
            s.push_str(&entry(kind));
            s.push_str(
                "    let row = g * ROWS + slot;
    let live = row < p.rows;
    let n = select(0u, p.n, live);
    let rbase = row * p.n;
    let base = rbase + lane;
    let last = p.rows * p.n - 1u;
    let t = select(p.ignore, targets[min(row, p.rows - 1u)], live);
    let ignored = t == p.ignore;
    let valid = !ignored && t < p.classes;
    // Ignored and invalid rows get a zero gradient.
    let scale = select(0.0, 1.0 / max(cnt[0], 1.0), valid);
    let tu = t / W;
    let hot = onehot(t % W);
",
            );
            for k in 0..v {
                let _ = writeln!(s, "{}", pad(&load("x", k, team, "LOWEST"), 4));
            }
            let _ = writeln!(
                s,
                "    let m = team_max(hmax({}));",
                tree(&each(v, |k| format!("x{k}")), &maxf)
            );
            for k in 0..v {
                let _ = writeln!(s, "    let e{k} = select(T(0.0), exp(x{k} - T(m)), ok{k});");
            }
            let _ = writeln!(
                s,
                "    let sum = team_sum(hsum({}));\n    let inv = 1.0 / sum;",
                tree(&each(v, |k| format!("e{k}")), &add)
            );
            for k in 0..v {
                let o = off(k);
                let _ = writeln!(
                    s,
                    "    if (ok{k}) {{\n        var q = e{k} * inv;\n        \
                     if (lane + {o} == tu) {{ q = q - hot; }}\n        dx[base + {o}] = q * scale;\n    }}"
                );
            }
            s.push_str(
                "    if (lane == 0u && live) {
        var l = 0.0;
        if (valid) {
            l = m + log(sum) - elem(x[rbase + tu], t % W);
        } else if (!ignored) {
            l = bitcast<f32>(0x7fc00000u);
        }
        loss[row] = l;
    }
}
",
            );
        }
    }
    (name, s)
}

/// The generated kernel of `kind` for rows of `cols` floats and its rows per workgroup,
/// or `None` when [`row_path`] picks the workgroup fallback.
pub(crate) fn team_kernel(
    dev: &Device,
    kind: Kind,
    cols: usize,
) -> Option<(&'static RawKernel, u32)> {
    match row_path(dev, kind.op(), cols) {
        RowPath::Subgroup {
            team,
            per_lane,
            vec4,
            rows_per_group,
        } => Some((kernel(kind, vec4, team, per_lane), rows_per_group)),
        RowPath::Workgroup => None,
    }
}

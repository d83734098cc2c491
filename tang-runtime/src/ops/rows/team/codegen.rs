//! WGSL generation for the row kernels of `rows_team.rs`: one kernel per kind, unit
//! (`vec4` or `f32`), team size and values per lane, with every per-lane slot unrolled.

use std::fmt::Write as _;

use super::Kind;
use crate::ops::rows::layout::{
    CROSS_ENTROPY_LOSS, CROSS_ENTROPY_SLOTS, CrossEntropyParams, NORM_BWD_SLOTS, NORM_FWD_SLOTS,
    NormBackwardParams, NormParams, SOFTMAX_BWD_SLOTS, SOFTMAX_FWD_SLOTS, SoftmaxParams,
};
use crate::spec::Layout;
use crate::wgsl::{lowest, row_math, unit_f1, unit_v4};

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
    s.push_str(row_math!());
    let _ = writeln!(
        s,
        "const TEAM: u32 = {team}u;\nconst WGS: u32 = {wg}u;\nconst ROWS: u32 = {}u;\n\
         {}",
        wg / team,
        lowest!().trim_end()
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

/// The start of a kernel with one row per team: its `declarations`, the entry point and
/// the team's [`ROW`].
fn begin_row(s: &mut String, declarations: &str, kind: Kind) {
    s.push_str(declarations);
    s.push_str(&entry(kind));
    s.push_str(ROW);
}

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

/// The unrolled slots of one variant: `v` per lane, `team` units apart.
#[derive(Clone, Copy)]
struct Slots {
    v: u32,
    team: u32,
}

impl Slots {
    /// The offset of slot `k` from the lane's first unit, as WGSL.
    fn off(self, k: u32) -> String {
        format!("{}u", k * self.team)
    }

    /// `term(k)` of every slot, added as a balanced tree.
    fn sum(self, term: impl Fn(u32) -> String) -> String {
        tree(&each(self.v, term), &add)
    }

    /// `term(k)` of every slot, maximised as a balanced tree.
    fn max(self, term: impl Fn(u32) -> String) -> String {
        tree(&each(self.v, term), &maxf)
    }

    /// Every slot of `buf` into `buf{k}` with its mask (see [`load`]), at `indent`.
    fn load_all(self, s: &mut String, buf: &str, fill: &str, indent: usize) {
        for k in 0..self.v {
            let _ = writeln!(s, "{}", pad(&load(buf, k, self.team, fill), indent));
        }
    }

    /// `out[base + off(k)] = value(k, off(k))` for every slot inside the row, at `indent`.
    fn store_all(
        self,
        s: &mut String,
        indent: usize,
        out: &str,
        value: impl Fn(u32, &str) -> String,
    ) {
        for k in 0..self.v {
            let o = self.off(k);
            let _ = writeln!(
                s,
                "{:indent$}if (ok{k}) {{ {out}[base + {o}] = {}; }}",
                "",
                value(k, &o)
            );
        }
    }

    /// The row of `x` loaded (masked slots at the lowest float), its maximum `m`, the
    /// exponentials `e{k}` of `x - m` and their sum `sum`: softmax's statistics.
    fn exp_sum(self, s: &mut String) {
        self.load_all(s, "x", "LOWEST", 4);
        let _ = writeln!(
            s,
            "    let m = team_max(hmax({}));",
            self.max(|k| format!("x{k}"))
        );
        // Masked slots contribute 0, not exp(LOWEST - m): a row of all -inf has
        // m == LOWEST and must sum to 0 (NaN output, as PyTorch).
        for k in 0..self.v {
            let _ = writeln!(s, "    let e{k} = select(T(0.0), exp(x{k} - T(m)), ok{k});");
        }
        let _ = writeln!(
            s,
            "    let sum = team_sum(hsum({}));",
            self.sum(|k| format!("e{k}"))
        );
    }
}

/// Generates one variant: `(kernel name, WGSL)`. Control flow around every shuffle and
/// barrier is uniform (dead rows compute on masked values and skip only their stores).
pub(super) fn generate(kind: Kind, vec4: bool, team: u32, v: u32) -> (String, String) {
    let name = format!(
        "{}_team{team}x{v}{}",
        kind.name(),
        if vec4 { "_v4" } else { "" }
    );
    let mut s = header(kind, vec4, team);
    let slots = Slots { v, team };
    match kind {
        Kind::SoftmaxFwd { log } => softmax_fwd(&mut s, &slots, kind, log),
        Kind::SoftmaxBwd { log } => softmax_bwd(&mut s, &slots, kind, log),
        Kind::NormFwd { rms } => norm_fwd(&mut s, &slots, kind, rms),
        Kind::NormBwd { rms } => norm_bwd(&mut s, &slots, kind, rms),
        Kind::CrossEntropy => cross_entropy(&mut s, &slots, kind),
    }
    // Every kind's entry point ends here.
    s.push_str("}\n");
    (name, s)
}

/// Writes the entry point's body for the softmax (or log-softmax) forward, one row per team.
fn softmax_fwd(s: &mut String, slots: &Slots, kind: Kind, log: bool) {
    let declarations = Layout::<SoftmaxParams>::new(SOFTMAX_FWD_SLOTS).declarations();
    begin_row(s, &declarations, kind);
    slots.exp_sum(s);
    s.push_str("    let lse = m + log(sum);\n    let inv = 1.0 / sum;\n");
    slots.store_all(s, 4, "y", |k, _| {
        format!("softmax_y(x{k}, e{k}, inv, lse, {log})")
    });
}

/// Writes the entry point's body for the softmax (or log-softmax) backward, one row per team.
fn softmax_bwd(s: &mut String, slots: &Slots, kind: Kind, log: bool) {
    let (v, team) = (slots.v, slots.team);
    let declarations = Layout::<SoftmaxParams>::new(SOFTMAX_BWD_SLOTS).declarations();
    begin_row(s, &declarations, kind);
    for k in 0..v {
        let _ = writeln!(s, "{}", pad(&load("y", k, team, "0.0"), 4));
        let _ = writeln!(s, "{}", pad(&load_as("dy", "g", k, team, "0.0", false), 4));
    }
    let d = slots.sum(|k| format!("softmax_bwd_term(y{k}, g{k}, {log})"));
    let _ = writeln!(s, "    let d = team_sum(hsum({d}));");
    slots.store_all(s, 4, "dx", |k, _| {
        format!("softmax_bwd_dx(y{k}, g{k}, d, {log})")
    });
}

/// Writes the entry point's body for the layer (or RMS) norm forward, one row per team,
/// with its stats.
fn norm_fwd(s: &mut String, slots: &Slots, kind: Kind, rms: bool) {
    let v = slots.v;
    let declarations = Layout::<NormParams>::new(NORM_FWD_SLOTS).declarations();
    begin_row(s, &declarations, kind);
    s.push_str("    let cnt = f32(p.n * W);\n");
    slots.load_all(s, "x", "0.0", 4);
    if rms {
        s.push_str("    let mean = 0.0;\n");
    } else {
        let sum = slots.sum(|k| format!("x{k}"));
        let _ = writeln!(s, "    let mean = team_sum(hsum({sum})) / cnt;");
    }
    // The variance around the mean from the registers: no E[x^2] - mean^2.
    for k in 0..v {
        let _ = writeln!(s, "    let d{k} = select(T(0.0), x{k} - T(mean), ok{k});");
    }
    let _ = writeln!(
        s,
        "    let rstd = inverseSqrt(team_sum(hsum({})) / cnt + p.eps);",
        slots.sum(|k| format!("d{k} * d{k}"))
    );
    // Weight and bias loads outside the store branches (clamped to the row), so
    // they are all in flight before the first store.
    for k in 0..v {
        let o = slots.off(k);
        let _ = writeln!(s, "    let w{k} = w[min(lane + {o}, p.n - 1u)];");
        if !rms {
            let _ = writeln!(s, "    let b{k} = b[min(lane + {o}, p.n - 1u)];");
        }
    }
    let bias = |k: u32| {
        if rms {
            String::new()
        } else {
            format!(" + b{k}")
        }
    };
    slots.store_all(s, 4, "y", |k, _| {
        format!("norm_xhat(x{k}, mean, rstd) * w{k}{}", bias(k))
    });
    s.push_str(
        "    if (lane == 0u && live) {
        stats[2u * row] = mean;
        stats[2u * row + 1u] = rstd;
    }
",
    );
}

/// Writes the entry point's body for the norm backward: `dx` per row, the weight and bias
/// partial sums per workgroup.
fn norm_bwd(s: &mut String, slots: &Slots, kind: Kind, rms: bool) {
    let (v, team) = (slots.v, slots.team);
    s.push_str(&Layout::<NormBackwardParams>::new(NORM_BWD_SLOTS).declarations());
    let _ = writeln!(s, "var<workgroup> acc: array<T, {}>;", team * v);
    s.push_str(&entry(kind));
    s.push_str("    let cnt = f32(p.n * W);\n");
    for k in 0..v {
        let o = slots.off(k);
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
        let o = slots.off(k);
        let _ = writeln!(
            s,
            "{}\n{}\n        let w{k} = w[min(lane + {o}, p.n - 1u)];\n        \
                     let xh{k} = norm_xhat(x{k}, mean, rstd);\n        let gw{k} = d{k} * w{k};",
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
        slots.sum(|k| format!("gw{k}")),
        slots.sum(|k| format!("gw{k} * xh{k}"))
    );
    if rms {
        s.push_str("        let mg = 0.0;\n");
    } else {
        s.push_str("        let mg = r.x / cnt;\n");
    }
    s.push_str("        let mgx = r.y / cnt;\n");
    slots.store_all(s, 8, "dx", |k, _| {
        format!("norm_dx(gw{k}, xh{k}, rstd, mg, mgx)")
    });
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
            let o = slots.off(k);
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
}

/// Writes the entry point's body for the cross-entropy loss and logits gradient, one row
/// per team.
fn cross_entropy(s: &mut String, slots: &Slots, kind: Kind) {
    s.push_str(&Layout::<CrossEntropyParams>::new(CROSS_ENTROPY_SLOTS).declarations());
    s.push_str(CROSS_ENTROPY_LOSS);
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
",
    );
    slots.exp_sum(s);
    s.push_str("    let inv = 1.0 / sum;\n    if (p.grad != 0u) {\n");
    slots.store_all(s, 8, "dx", |k, o| {
        format!("cross_entropy_dx(e{k}, inv, lane + {o}, t, scale)")
    });
    s.push_str("    }\n");
    s.push_str(
                "    if (lane == 0u && live) { loss[row] = cross_entropy_loss(m + log(sum), rbase, t, valid, ignored); }
",
            );
}

//! WGSL pieces every row kernel of this crate shares (reductions, softmax, norms,
//! cross-entropy, embedding): the `vec4`/`f32` unit preludes, the workgroup reductions and
//! the lowest finite float. Each is a macro expanding to a string literal, so kernels
//! assemble their text with `concat!` at compile time.

/// The unit of a row kernel when the row length is a multiple of 4: `vec4<f32>` (16-byte
/// loads). `K` vec4s per thread stay in registers: rows up to 4 * 4 * 256 = 4096 floats
/// are read from memory once.
macro_rules! unit_v4 {
    () => {
        "alias T = vec4<f32>;
const W: u32 = 4u;
const K: u32 = 4u;
fn hsum(v: T) -> f32 { return (v.x + v.y) + (v.z + v.w); }
fn hmax(v: T) -> f32 { return max(max(v.x, v.y), max(v.z, v.w)); }
fn elem(v: T, j: u32) -> f32 { return v[min(j, 3u)]; }
fn onehot(j: u32) -> T { return select(T(0.0), T(1.0), vec4<u32>(0u, 1u, 2u, 3u) == vec4<u32>(j)); }
"
    };
}
pub(crate) use unit_v4;

/// The unit of a row kernel for any row length: one `f32`; rows up to 8 * 256 floats stay
/// in registers.
macro_rules! unit_f1 {
    () => {
        "alias T = f32;
const W: u32 = 1u;
const K: u32 = 8u;
fn hsum(v: T) -> f32 { return v; }
fn hmax(v: T) -> f32 { return v; }
fn elem(v: T, j: u32) -> f32 { return v; }
fn onehot(j: u32) -> T { return 1.0; }
"
    };
}
pub(crate) use unit_f1;

/// Workgroup reductions over the 256 threads (tree in workgroup memory; every call is
/// made from uniform control flow) and the workgroup's linear index in a 2-D grid.
macro_rules! wg_common {
    () => {
        "const WG: u32 = 256u;
var<workgroup> red_a: array<f32, 256>;
var<workgroup> red_b: array<f32, 256>;

fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 { return wid.x + wid.y * nwg.x; }

fn wg_sum(v: f32, lid: u32) -> f32 {
    red_a[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) { red_a[lid] = red_a[lid] + red_a[lid + s]; }
        workgroupBarrier();
    }
    let r = red_a[0];
    workgroupBarrier();
    return r;
}

fn wg_sum2(a: f32, b: f32, lid: u32) -> vec2<f32> {
    red_a[lid] = a;
    red_b[lid] = b;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (lid < s) {
            red_a[lid] = red_a[lid] + red_a[lid + s];
            red_b[lid] = red_b[lid] + red_b[lid + s];
        }
        workgroupBarrier();
    }
    let r = vec2<f32>(red_a[0], red_b[0]);
    workgroupBarrier();
    return r;
}

// Combines per-thread (max, sum of exp(x - max)) pairs: the online softmax statistics.
fn wg_max_sumexp(m: f32, s: f32, lid: u32) -> vec2<f32> {
    red_a[lid] = m;
    red_b[lid] = s;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k = k >> 1u) {
        if (lid < k) {
            let ma = red_a[lid];
            let mb = red_a[lid + k];
            let mm = max(ma, mb);
            red_b[lid] = red_b[lid] * exp(ma - mm) + red_b[lid + k] * exp(mb - mm);
            red_a[lid] = mm;
        }
        workgroupBarrier();
    }
    let r = vec2<f32>(red_a[0], red_b[0]);
    workgroupBarrier();
    return r;
}
"
    };
}
pub(crate) use wg_common;

/// The per-unit math of the row ops (softmax, log_softmax and their backward, the
/// norms, cross-entropy's gradient), written once: the workgroup fallback kernels and the
/// subgroup team kernels of `rows_team` differ only in how they load, reduce and store
/// around these functions. Needs a unit prelude ([`unit_v4`] or [`unit_f1`]).
macro_rules! row_math {
    () => {
        "// softmax (`is_log` false) or log_softmax of `v`, given `e = exp(v - max)`, the
// reciprocal of the row's sum of exps and the row's log-sum-exp.
fn softmax_y(v: T, e: T, inv: f32, lse: f32, is_log: bool) -> T {
    if (is_log) { return v - T(lse); }
    return e * inv;
}

// The backward's row sum is the sum of these terms over the row: y * dy (softmax) or
// dy (log_softmax, where y is the log-probability).
fn softmax_bwd_term(y: T, g: T, is_log: bool) -> T {
    if (is_log) { return g; }
    return y * g;
}

// The input gradient from y, dy and the row sum `d` of the terms.
fn softmax_bwd_dx(y: T, g: T, d: f32, is_log: bool) -> T {
    if (is_log) { return g - exp(y) * d; }
    return y * (g - T(d));
}

// The normalised input of layer norm (mean 0 for RMS norm).
fn norm_xhat(v: T, mean: f32, rstd: f32) -> T {
    return (v - T(mean)) * rstd;
}

// The norms' input gradient from gw = dy * w, the normalised input, and the row means
// `mg` of gw (0 for RMS norm) and `mgx` of gw * xhat.
fn norm_dx(gw: T, xh: T, rstd: f32, mg: f32, mgx: f32) -> T {
    return rstd * (gw - T(mg) - xh * mgx);
}

// Cross-entropy's gradient of unit `u` of a row with target `t`: the softmax (`e` times
// the reciprocal sum) minus the one-hot target, times `scale` (1 / count, 0 for ignored
// and invalid rows).
fn cross_entropy_dx(e: T, inv: f32, u: u32, t: u32, scale: f32) -> T {
    var q = e * inv;
    if (u == t / W) { q = q - onehot(t % W); }
    return q * scale;
}

"
    };
}
pub(crate) use row_math;

/// The statistics of softmax and cross-entropy in the workgroup fallback: needs
/// [`wg_common`], [`lowest`] and an `x` binding of `T`.
macro_rules! row_max_sumexp {
    () => {
        "// The row's (max, sum of exp(v - max)) by one workgroup: the thread's first K units of
// the row go to `c` (units lid, lid + WG, ...), the rest stream with an online update.
fn row_max_sumexp(c: ptr<function, array<T, K>>, base: u32, n: u32, lid: u32) -> vec2<f32> {
    var m = LOWEST;
    for (var k = 0u; k < K; k = k + 1u) {
        let u = lid + k * WG;
        if (u < n) { let v = x[base + u]; (*c)[k] = v; m = max(m, hmax(v)); }
    }
    var s = 0.0;
    for (var k = 0u; k < K; k = k + 1u) {
        if (lid + k * WG < n) { s = s + hsum(exp((*c)[k] - T(m))); }
    }
    for (var u = lid + K * WG; u < n; u = u + WG) {
        let v = x[base + u];
        let mn = max(m, hmax(v));
        s = s * exp(m - mn) + hsum(exp(v - T(mn)));
        m = mn;
    }
    return wg_max_sumexp(m, s, lid);
}
"
    };
}
pub(crate) use row_max_sumexp;

/// The entry point of a 256-thread kernel on a 2-D grid of workgroups (any number of
/// them), up to its first statement: `wg_main!(row)` declares `row`, the workgroup's linear
/// index; `lid` is the thread's index within it.
macro_rules! wg_main {
    (@signature) => {
        concat!(
            "@compute @workgroup_size(256)\n",
            "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,\n",
            "        @builtin(local_invocation_index) lid: u32) {\n",
        )
    };
    ($var:ident) => {
        concat!(
            $crate::wgsl::wg_main!(@signature),
            "    let ", stringify!($var), " = wid.x + wid.y * nwg.x;\n",
        )
    };
}
pub(crate) use wg_main;

/// As [`wg_main`], declaring the thread's global index instead (`thread_main!(idx)`);
/// `thread_main!(idx < "p.n")` also returns the threads at or past the bound.
macro_rules! thread_main {
    ($var:ident) => {
        concat!(
            $crate::wgsl::wg_main!(@signature),
            "    let ", stringify!($var), " = (wid.x + wid.y * nwg.x) * 256u + lid;\n",
        )
    };
    ($var:ident < $bound:literal) => {
        concat!(
            $crate::wgsl::thread_main!($var),
            "    if (", stringify!($var), " >= ", $bound, ") { return; }\n",
        )
    };
}
pub(crate) use thread_main;

/// The whole body of a kernel that runs one statement per element: `$stmt` for every
/// thread index `i` below `p.n` (`per_element!("x[i] = p.value;")`).
macro_rules! per_element {
    ($stmt:literal) => {
        concat!(
            $crate::wgsl::thread_main!(i),
            "    if (i < p.n) { ",
            $stmt,
            " }\n}\n",
        )
    };
}
pub(crate) use per_element;

/// The entry point of a reduction along the middle axis of `[outer, axis, inner]` in
/// chunks (params `outer`, `inner`, `chunks`): one thread per (outer, chunk, inner unit),
/// declared as `o`, `c` and `i`; threads past the last return.
macro_rules! chunk_main {
    () => {
        concat!(
            $crate::wgsl::thread_main!(idx < "p.outer * p.chunks * p.inner"),
            "    let i = idx % p.inner;\n",
            "    let t = idx / p.inner;\n",
            "    let c = t % p.chunks;\n",
            "    let o = t / p.chunks;\n",
        )
    };
}
pub(crate) use chunk_main;

/// The most negative finite f32: the starting maximum of online softmax statistics.
/// Finite so that `exp(m_old - m_new)` is never `exp(-inf - -inf) = NaN`; a row of all
/// `-inf` still ends with sum 0 and so NaN probabilities, as in PyTorch.
/// Written in hex, exactly: the shortest decimal, `-3.4028235e38`, lies just outside the
/// f32 range, and Chrome's WGSL compiler rejects it (naga rounds it).
macro_rules! lowest {
    () => {
        "const LOWEST: f32 = -0x1.fffffep+127f;\n"
    };
}
pub(crate) use lowest;

/// Declares the `vec4` and the `f32` form of a row kernel, `<name>_v4` and `<name>`: the
/// same slots and body after the unit prelude ([`unit_v4`] or [`unit_f1`]) and the `more`
/// pieces:
/// `unit_specs!(K_V4, K_F1: SoftmaxParams = "softmax", [wg_common!()], SLOTS, BODY);`.
/// Pieces that differ by unit follow as `v4: PIECE, f1: PIECE` (the reductions' NaN-aware
/// maximum: `[wg_common!()], v4: nan_max_v4!(), f1: nan_max_f1!(), SLOTS, BODY`). A kernel
/// with its own unit preludes lists each form's pieces whole:
/// `unit_specs!(K_V4, K_F1: P = "name", v4: [A, B_V4], f1: [A, B_F1], SLOTS, BODY);`.
macro_rules! unit_specs {
    ($v4:ident, $f1:ident: $p:ty = $name:literal, v4: [$($m4:expr),* $(,)?], f1: [$($m1:expr),* $(,)?], $slots:expr, $body:expr $(,)?) => {
        static $v4: $crate::spec::Spec<$p> =
            $crate::spec::Spec::new(concat!($name, "_v4"), &[$($m4),*], $slots, $body);
        static $f1: $crate::spec::Spec<$p> =
            $crate::spec::Spec::new($name, &[$($m1),*], $slots, $body);
    };
    ($v4:ident, $f1:ident: $p:ty = $name:literal, [$($more:expr),* $(,)?], v4: $m4:expr, f1: $m1:expr, $slots:expr, $body:expr $(,)?) => {
        $crate::wgsl::unit_specs!($v4, $f1: $p = $name,
            v4: [$crate::wgsl::unit_v4!(), $($more,)* $m4],
            f1: [$crate::wgsl::unit_f1!(), $($more,)* $m1],
            $slots, $body);
    };
    ($v4:ident, $f1:ident: $p:ty = $name:literal, [$($more:expr),* $(,)?], $slots:expr, $body:expr $(,)?) => {
        $crate::wgsl::unit_specs!($v4, $f1: $p = $name,
            v4: [$crate::wgsl::unit_v4!(), $($more),*],
            f1: [$crate::wgsl::unit_f1!(), $($more),*],
            $slots, $body);
    };
}
pub(crate) use unit_specs;

/// Whether the f32 with bits `b` is a NaN, tested on the bits: a driver may assume that
/// float comparisons never see NaN.
pub(crate) const IS_NAN_WGSL: &str =
    "fn is_nan(b: u32) -> bool { return (b & 0x7fffffffu) > 0x7f800000u; }\n";

//! WGSL pieces every row kernel of this crate shares (reductions, softmax, norms,
//! cross-entropy, embedding): the `vec4`/`f32` unit preludes, the workgroup reductions and
//! the lowest finite float. Each is a macro expanding to a string literal, so kernels
//! assemble their text with `concat!` at compile time.

/// Threads per workgroup of every row kernel (a multiple of 32, so whole warps).
pub(crate) const WG: u32 = 256;

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
/// maximum: `[wg_common!()], v4: nan_max_v4!(), f1: nan_max_f1!(), SLOTS, BODY`).
macro_rules! unit_specs {
    ($v4:ident, $f1:ident: $p:ty = $name:literal, [$($more:expr),* $(,)?], v4: $m4:expr, f1: $m1:expr, $slots:expr, $body:expr $(,)?) => {
        static $v4: $crate::spec::Spec<$p> = $crate::spec::Spec::new(
            concat!($name, "_v4"),
            &[$crate::dense::wgsl::unit_v4!(), $($more,)* $m4],
            $slots,
            $body,
        );
        static $f1: $crate::spec::Spec<$p> = $crate::spec::Spec::new(
            $name,
            &[$crate::dense::wgsl::unit_f1!(), $($more,)* $m1],
            $slots,
            $body,
        );
    };
    ($v4:ident, $f1:ident: $p:ty = $name:literal, [$($more:expr),* $(,)?], $slots:expr, $body:expr $(,)?) => {
        static $v4: $crate::spec::Spec<$p> = $crate::spec::Spec::new(
            concat!($name, "_v4"),
            &[$crate::dense::wgsl::unit_v4!(), $($more),*],
            $slots,
            $body,
        );
        static $f1: $crate::spec::Spec<$p> = $crate::spec::Spec::new(
            $name,
            &[$crate::dense::wgsl::unit_f1!(), $($more),*],
            $slots,
            $body,
        );
    };
}
pub(crate) use unit_specs;

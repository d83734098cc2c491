// tang kernel `all_ops` (generated)
struct Params {
    n: u32,
    d1: u32,
    d2: u32,
    d3: u32,
    s_x: vec4<u32>,
    s_y: vec4<u32>,
    s_z: vec4<u32>,
    zero: u32,
}

override tang_read0: u32 = 0u;
override tang_read1: u32 = 0u;
override tang_read2: u32 = 0u;
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> in_x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> in_y: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> in_z: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out_neg: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> out_recip: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> out_sqrt: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> out_exp: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> out_ln: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> out_log2: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read_write> out_exp2: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read_write> out_sin: array<vec4<f32>>;
@group(0) @binding(12) var<storage, read_write> out_cos: array<vec4<f32>>;
@group(0) @binding(13) var<storage, read_write> out_tan: array<vec4<f32>>;
@group(0) @binding(14) var<storage, read_write> out_tanh: array<vec4<f32>>;
@group(0) @binding(15) var<storage, read_write> out_abs: array<vec4<f32>>;
@group(0) @binding(16) var<storage, read_write> out_signum: array<vec4<f32>>;
@group(0) @binding(17) var<storage, read_write> out_floor: array<vec4<f32>>;
@group(0) @binding(18) var<storage, read_write> out_ceil: array<vec4<f32>>;
@group(0) @binding(19) var<storage, read_write> out_round: array<vec4<f32>>;
@group(0) @binding(20) var<storage, read_write> out_trunc: array<vec4<f32>>;
@group(0) @binding(21) var<storage, read_write> out_fract: array<vec4<f32>>;
@group(0) @binding(22) var<storage, read_write> out_sigmoid: array<vec4<f32>>;
@group(0) @binding(23) var<storage, read_write> out_softplus: array<vec4<f32>>;
@group(0) @binding(24) var<storage, read_write> out_log_sigmoid: array<vec4<f32>>;
@group(0) @binding(25) var<storage, read_write> out_silu: array<vec4<f32>>;
@group(0) @binding(26) var<storage, read_write> out_gelu_tanh: array<vec4<f32>>;
@group(0) @binding(27) var<storage, read_write> out_stop_gradient: array<vec4<f32>>;
@group(0) @binding(28) var<storage, read_write> out_powi: array<vec4<f32>>;
@group(0) @binding(29) var<storage, read_write> out_add: array<vec4<f32>>;
@group(0) @binding(30) var<storage, read_write> out_sub: array<vec4<f32>>;
@group(0) @binding(31) var<storage, read_write> out_mul: array<vec4<f32>>;
@group(0) @binding(32) var<storage, read_write> out_div: array<vec4<f32>>;
@group(0) @binding(33) var<storage, read_write> out_powf: array<vec4<f32>>;
@group(0) @binding(34) var<storage, read_write> out_min: array<vec4<f32>>;
@group(0) @binding(35) var<storage, read_write> out_max: array<vec4<f32>>;
@group(0) @binding(36) var<storage, read_write> out_logaddexp: array<vec4<f32>>;
@group(0) @binding(37) var<storage, read_write> out_lt: array<vec4<f32>>;
@group(0) @binding(38) var<storage, read_write> out_le: array<vec4<f32>>;
@group(0) @binding(39) var<storage, read_write> out_gt: array<vec4<f32>>;
@group(0) @binding(40) var<storage, read_write> out_ge: array<vec4<f32>>;
@group(0) @binding(41) var<storage, read_write> out_eq: array<vec4<f32>>;
@group(0) @binding(42) var<storage, read_write> out_ne: array<vec4<f32>>;
@group(0) @binding(43) var<storage, read_write> out_and: array<vec4<f32>>;
@group(0) @binding(44) var<storage, read_write> out_or: array<vec4<f32>>;
@group(0) @binding(45) var<storage, read_write> out_not: array<vec4<f32>>;
@group(0) @binding(46) var<storage, read_write> out_select: array<vec4<f32>>;
@group(0) @binding(47) var<storage, read_write> out_mul_add: array<vec4<f32>>;
@group(0) @binding(48) var<storage, read_write> out_clamp: array<vec4<f32>>;
@group(0) @binding(49) var<storage, read_write> out_erf: array<vec4<f32>>;
@group(0) @binding(50) var<storage, read_write> out_erfc: array<vec4<f32>>;
@group(0) @binding(51) var<storage, read_write> out_gelu_erf: array<vec4<f32>>;
@group(0) @binding(52) var<storage, read_write> out_gelu_erf_grad: array<vec4<f32>>;
@group(0) @binding(53) var<storage, read_write> out_atan: array<vec4<f32>>;
@group(0) @binding(54) var<storage, read_write> out_atan2: array<vec4<f32>>;
@group(0) @binding(55) var<storage, read_write> out_asin: array<vec4<f32>>;
@group(0) @binding(56) var<storage, read_write> out_acos: array<vec4<f32>>;
@group(0) @binding(57) var<storage, read_write> out_sinh: array<vec4<f32>>;
@group(0) @binding(58) var<storage, read_write> out_cosh: array<vec4<f32>>;
@group(0) @binding(59) var<storage, read_write> out_asinh: array<vec4<f32>>;
@group(0) @binding(60) var<storage, read_write> out_acosh: array<vec4<f32>>;
@group(0) @binding(61) var<storage, read_write> out_atanh: array<vec4<f32>>;
@group(0) @binding(62) var<storage, read_write> out_exp_m1: array<vec4<f32>>;
@group(0) @binding(63) var<storage, read_write> out_ln_1p: array<vec4<f32>>;
@group(0) @binding(64) var<storage, read_write> out_hypot: array<vec4<f32>>;
@group(0) @binding(65) var<storage, read_write> out_rsqrt: array<vec4<f32>>;
@group(0) @binding(66) var<storage, read_write> out_copysign: array<vec4<f32>>;
@group(0) @binding(67) var<storage, read_write> out_cbrt: array<vec4<f32>>;

fn tang_offset(e: u32, s: vec4<u32>) -> u32 {
    let r1 = e / params.d3;
    let r2 = r1 / params.d2;
    let c0 = r2 / params.d1;
    return c0 * s.x + (r2 - c0 * params.d1) * s.y + (r1 - r2 * params.d2) * s.z + (e - r1 * params.d3) * s.w;
}

fn tang_acos(x: vec4<f32>) -> vec4<f32> {
    // 2 atan(sqrt((1 - x) / (1 + x))): no cancellation at either end
    let r = 2.0f * tang_atan_ratio(sqrt(1.0f - x), sqrt(1.0f + x));
    return select(select(r, bitcast<vec4<f32>>(vec4<u32>(0x7fc00000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), abs(x) > vec4<f32>(1.0f)), x, tang_nan(x));
}

fn tang_acosh(x: vec4<f32>) -> vec4<f32> {
    // ln_1p(t + sqrt(t (x + 1))), t = x - 1 (exact near 1); ln(2x) above 4096; NaN below 1
    // (above f32::MAX / 2 Rust's f32::acosh overflows to inf, and so does this)
    let t = x - 1.0f;
    let big = select(log(x) + 0.6931472f, bitcast<vec4<f32>>(vec4<u32>(0x7f800000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), x > vec4<f32>(1.7014117e38f));
    let r = select(big, tang_ln1p(t + sqrt(t * (x + 1.0f))), x < vec4<f32>(4096.0f));
    return select(r, bitcast<vec4<f32>>(vec4<u32>(0x7fc00000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), x < vec4<f32>(1.0f));
}

fn tang_asin(x: vec4<f32>) -> vec4<f32> {
    // atan(x / sqrt(1 - x^2)), with 1 - a exact near 1
    let a = abs(x);
    return select(select(bitcast<vec4<f32>>(bitcast<vec4<u32>>(tang_atan_ratio(a, sqrt((1.0f - a) * (1.0f + a)))) | (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u))), bitcast<vec4<f32>>(vec4<u32>(0x7fc00000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), a > vec4<f32>(1.0f)), x, tang_nan(x));
}

fn tang_asinh(x: vec4<f32>) -> vec4<f32> {
    // ln_1p(a + a^2 / (1 + sqrt(1 + a^2))) keeps the digits near 0; ln(2a) above 4096,
    // where a^2 would overflow long before f32's range ends
    // (above f32::MAX / 2 Rust's f32::asinh overflows to inf, and so does this)
    let a = abs(x);
    let big = select(log(a) + 0.6931472f, bitcast<vec4<f32>>(vec4<u32>(0x7f800000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), a > vec4<f32>(1.7014117e38f));
    let r = select(big, tang_ln1p(a + a * a / (1.0f + sqrt(1.0f + a * a))), a < vec4<f32>(4096.0f));
    return bitcast<vec4<f32>>(bitcast<vec4<u32>>(r) | (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u)));
}

fn tang_atan(x: vec4<f32>) -> vec4<f32> {
    return select(bitcast<vec4<f32>>(bitcast<vec4<u32>>(tang_atan_ratio(abs(x), vec4<f32>(1.0f))) | (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u))), x, tang_nan(x));
}

fn tang_atan2(y: vec4<f32>, x: vec4<f32>) -> vec4<f32> {
    // IEEE's corners on the bits (WGSL leaves atan2(0, 0) undefined): the angle of
    // (|x|, |y|) in [0, pi/2], reflected for a negative x (-0 included), signed as y
    let ya = bitcast<vec4<u32>>(y) & vec4<u32>(0x7fffffffu);
    let xa = bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu);
    let inf = vec4<u32>(0x7f800000u);
    // subnormal sides count as 0 (as on drivers that flush them: 0/0 would be NaN there)
    let tiny = vec4<u32>(0x00800000u);
    var r = tang_atan_ratio(abs(y), abs(x));
    r = select(r, vec4<f32>(1.5707964f), (xa < tiny) | (ya == inf));
    r = select(r, vec4<f32>(0.0f), (ya < tiny) | ((xa == inf) & (ya != inf)));
    r = select(r, vec4<f32>(0.7853982f), (xa == inf) & (ya == inf));
    r = select(r, 3.1415927f - r, (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u)) != vec4<u32>(0u));
    return select(bitcast<vec4<f32>>(bitcast<vec4<u32>>(r) | (bitcast<vec4<u32>>(y) & vec4<u32>(0x80000000u))), x + y, tang_nan(x) | tang_nan(y));
}

fn tang_atan_ratio(n: vec4<f32>, d: vec4<f32>) -> vec4<f32> {
    // the ratio through an exact power of two where the larger side is above 2^64:
    // drivers divide through the reciprocal and flush subnormals (1/m is one above 2^126)
    let m = max(n, d);
    let sc = bitcast<vec4<f32>>(select(vec4<u32>(0x3f800000u), vec4<u32>(0x1f800000u), bitcast<vec4<u32>>(m) > vec4<u32>(0x5f800000u)));
    let t = (min(n, d) * sc) / (m * sc);
    let s = t * t;
    let r = t + (t * s) * ((-0.3333333f) + s * (0.19999829f + s * ((-0.14280173f) + s * (0.1104548f + s * ((-0.08700121f) + s * (0.06338251f + s * ((-0.03687578f) + s * (0.014108188f + s * ((-0.0025335755f))))))))));
    return select(r, 1.5707964f - r, n > d);
}

fn tang_atanh(x: vec4<f32>) -> vec4<f32> {
    // ln_1p(2a / (1 - a)) / 2 (1 - a is exact near 1); inf at 1, NaN beyond
    let a = abs(x);
    let r = select(select(0.5f * tang_ln1p(2.0f * a / (1.0f - a)), bitcast<vec4<f32>>(vec4<u32>(0x7f800000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), a == vec4<f32>(1.0f)), bitcast<vec4<f32>>(vec4<u32>(0x7fc00000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), a > vec4<f32>(1.0f));
    return bitcast<vec4<f32>>(bitcast<vec4<u32>>(r) | (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u)));
}

fn tang_cbrt(x: vec4<f32>) -> vec4<f32> {
    // exp2(log2(a) / 3) and one Newton step; 0, inf and NaN are their own cube roots. A
    // subnormal a = m 2^-149 is read from its bits as (m / 4) 2^-147, whose cube root is
    // cbrt(m / 4) 2^-49, a normal number: right whether or not the driver flushes
    // subnormals (from a flushed zero, log2 and the Newton step would give 0 / 0 = NaN)
    let b = bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu);
    let sub = b < vec4<u32>(0x00800000u);
    let a = select(abs(x), vec4<f32>(b) * 0.25f, sub);
    let y0 = exp2(log2(a) * 0.33333334f);
    var y = y0 - (y0 - a / (y0 * y0)) * 0.33333334f;
    y = select(y, y * 1.7763568e-15f, sub);
    return select(bitcast<vec4<f32>>(bitcast<vec4<u32>>(y) | (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u))), x, (b == vec4<u32>(0u)) | (b >= vec4<u32>(0x7f800000u)));
}

fn tang_clamp(x: vec4<f32>, lo: vec4<f32>, hi: vec4<f32>) -> vec4<f32> {
    // Rust's order of tests (WGSL's clamp is undefined when lo > hi); NaN stays NaN
    return select(select(select(x, hi, x > hi), lo, x < lo), x, tang_nan(x));
}

fn tang_copysign(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    return bitcast<vec4<f32>>((bitcast<vec4<u32>>(a) & vec4<u32>(0x7fffffffu)) | (bitcast<vec4<u32>>(b) & vec4<u32>(0x80000000u)));
}

fn tang_cos(x: vec4<f32>) -> vec4<f32> {
    let a = abs(x);
    let k = tang_trig_k(a);
    let r = tang_trig_reduce(a, k);
    let q = vec4<u32>(k) & vec4<u32>(3u);
    let s = tang_sin_poly(r);
    let c = tang_cos_poly(r);
    // quadrants 0..3 of |x|: cos r, -sin r, -cos r, sin r
    let q1 = (q + vec4<u32>(1u)) & vec4<u32>(3u);
    var v = select(s, c, (q1 & vec4<u32>(1u)) != vec4<u32>(0u));
    v = select(v, -v, q1 >= vec4<u32>(2u));
    v = select(v, cos(x), a > vec4<f32>(100000.0f));
    return select(v, bitcast<vec4<f32>>(vec4<u32>(0x7fc00000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), (bitcast<vec4<u32>>(x) & vec4<u32>(0x7f800000u)) == vec4<u32>(0x7f800000u));
}

fn tang_cosh(x: vec4<f32>) -> vec4<f32> {
    // exp(a)/2 from 20 on (e^-a is below an ulp of it there)
    let a = abs(x);
    let e = exp(a);
    let r = select(tang_half_exp(a), 0.5f * e + 0.5f / e, a < vec4<f32>(20.0f));
    return select(r, x, tang_nan(x));
}

fn tang_eq(a: vec4<f32>, b: vec4<f32>) -> vec4<bool> {
    return (a == b) & !(tang_nan(a) | tang_nan(b));
}

fn tang_erf(x: vec4<f32>) -> vec4<f32> {
    let a = abs(x);
    let big = bitcast<vec4<f32>>(bitcast<vec4<u32>>(1.0f - tang_erfc_tail(max(a, vec4<f32>(1.0f)))) | (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u)));
    return select(select(big, tang_erf_small(x), a < vec4<f32>(1.0f)), x, tang_nan(x));
}

fn tang_erf_small(x: vec4<f32>) -> vec4<f32> {
    let s = x * x;
    return x + x * (0.12837917f + s * ((-0.3761263f) + s * (0.11283626f + s * ((-0.0268554f) + s * (0.0051912186f + s * ((-0.00080348464f) + s * (7.933494e-5f)))))));
}

fn tang_erfc(x: vec4<f32>) -> vec4<f32> {
    let a = abs(x);
    let tail = tang_erfc_tail(max(a, vec4<f32>(1.0f)));
    let big = select(2.0f - tail, tail, x > vec4<f32>(0.0f));
    return select(select(big, 1.0f - tang_erf_small(x), a < vec4<f32>(1.0f)), x, tang_nan(x));
}

fn tang_erfc_tail(a: vec4<f32>) -> vec4<f32> {
    // erfc(a) = exp(-a^2) R(1 / (1 + a)) for a >= 1, with a^2 split into an exact high
    // part and a small rest so that exp keeps its relative accuracy
    let b = min(a, vec4<f32>(10.5f));
    let t = 1.0f / (1.0f + b);
    let r = 5.7204643e-6f + t * (0.5639254f + t * (0.56936926f + t * (0.22574364f + t * (0.09009947f + t * ((-2.2246668f) + t * (3.487494f + t * ((-2.2564836f) + t * (0.5327875f))))))));
    let bh = bitcast<vec4<f32>>(bitcast<vec4<u32>>(b) & vec4<u32>(0xfffff000u));
    return exp(-bh * bh) * exp((bh - b) * (b + bh)) * r;
}

fn tang_expm1(x: vec4<f32>) -> vec4<f32> {
    let small = select(x + (x * x) * (0.5f + x * (0.16666667f + x * (0.041666668f + x * (0.008333334f + x * (0.0013888889f + x * (0.0001984127f + x * (2.4801588e-5f + x * (2.7557319e-6f)))))))), x, (bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu)) == vec4<u32>(0u));
    return select(exp(x) - 1.0f, small, abs(x) < vec4<f32>(0.5f));
}

fn tang_ge(a: vec4<f32>, b: vec4<f32>) -> vec4<bool> {
    return (a >= b) & !(tang_nan(a) | tang_nan(b));
}

fn tang_gelu_erf(x: vec4<f32>) -> vec4<f32> {
    // x Phi(x) = x/2 erfc(z): erfc in one piece and one exponential, reflected for z < 0
    // (the two-piece erfc computes both pieces where a subgroup's lanes differ)
    let z = tang_gelu_z(x);
    let a = abs(z);
    let t = 1.0f / (1.0f + 0.5f * a);
    let y = t * exp(tang_gelu_tail(t) - a * a);
    return 0.5f * x * select(2.0f - y, y, z >= vec4<f32>(0.0f));
}

fn tang_gelu_erf_grad(x: vec4<f32>) -> vec4<f32> {
    // Phi(x) + x phi(x): exp(-z^2) is the density's exponential and a factor of erfc
    let z = tang_gelu_z(x);
    let a = abs(z);
    let t = 1.0f / (1.0f + 0.5f * a);
    let e = exp(-(a * a));
    let y = t * e * exp(tang_gelu_tail(t));
    return 0.5f * select(2.0f - y, y, z >= vec4<f32>(0.0f)) + x * (e * 0.3989423f);
}

fn tang_gelu_z(x: vec4<f32>) -> vec4<f32> {
    return x * (-0.70710677f);
}

fn tang_gelu_tail(t: vec4<f32>) -> vec4<f32> {
    return (-1.2655123f) + t * (1.0000378f + t * (0.37371483f + t * (0.1006542f + t * ((-0.20613956f) + t * (0.33600646f + t * ((-1.2317615f) + t * (1.5835967f + t * ((-0.8726416f) + t * (0.1820451f)))))))));
}

fn tang_gelu_tanh(x: vec4<f32>) -> vec4<f32> {
    let u = clamp(0.7978846f * (x + 0.044715f * x * x * x), vec4<f32>((-15.0f)), vec4<f32>(15.0f));
    return select(0.5f * x * (1.0f + tanh(u)), x, tang_nan(x));
}

fn tang_gt(a: vec4<f32>, b: vec4<f32>) -> vec4<bool> {
    return (a > b) & !(tang_nan(a) | tang_nan(b));
}

fn tang_half_exp(a: vec4<f32>) -> vec4<f32> {
    // 2^(n-1) exp(a - n ln2) with n = round(a / ln2) <= 128: exp sees a small argument,
    // and the power of two is built on the bits, so nothing overflows before the product
    // (a driver that reassociated (exp(a/2) / 2) exp(a/2) overflowed at 89); n ln2 is
    // split so that its products are exact, fused or not. Above 89.5 sinh and cosh are
    // inf anyway.
    let b = min(a, vec4<f32>(89.5f));
    let n = min(round(b * 1.442695f), vec4<f32>(128.0f));
    let r = (b - n * 0.69314575f) - n * 1.4286068e-6f;
    return exp(r) * bitcast<vec4<f32>>((vec4<u32>(n) + vec4<u32>(126u)) << vec4<u32>(23u));
}

fn tang_hypot(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    // m sqrt(1 + (n/m)^2) cannot overflow before the result does. m is first scaled into
    // [2^-64, 2^64] by an exact power of two (picked on the bits): drivers divide through
    // the reciprocal and flush subnormals, and 1/m is subnormal for m above 2^126 (NVIDIA
    // gave hypot(3e38, 3e38) = 3e38); at the other end a subnormal m becomes normal where
    // the driver keeps subnormals. An infinite side wins over NaN, as in Rust.
    let x = abs(a);
    let y = abs(b);
    let m = max(x, y);
    let mb = bitcast<vec4<u32>>(m);
    let down = mb > vec4<u32>(0x5f800000u);
    let up = mb < vec4<u32>(0x1f800000u);
    let s = bitcast<vec4<f32>>(select(select(vec4<u32>(0x3f800000u), vec4<u32>(0x5f800000u), up), vec4<u32>(0x1f800000u), down));
    let back = bitcast<vec4<f32>>(select(select(vec4<u32>(0x3f800000u), vec4<u32>(0x1f800000u), up), vec4<u32>(0x5f800000u), down));
    let ms = m * s;
    let q = (min(x, y) * s) / ms;
    let r = select((ms * sqrt(1.0f + q * q)) * back, vec4<f32>(0.0f), ms == vec4<f32>(0.0f));
    let inf = vec4<u32>(0x7f800000u);
    let v = select(r, a + b, tang_nan(a) | tang_nan(b));
    return select(v, bitcast<vec4<f32>>(vec4<u32>(0x7f800000u) | (bitcast<vec4<u32>>(a) & vec4<u32>(0u))), (bitcast<vec4<u32>>(x) == inf) | (bitcast<vec4<u32>>(y) == inf));
}

fn tang_le(a: vec4<f32>, b: vec4<f32>) -> vec4<bool> {
    return (a <= b) & !(tang_nan(a) | tang_nan(b));
}

fn tang_ln(x: vec4<f32>) -> vec4<f32> {
    let sub = x < vec4<f32>(1.1754944e-38f);
    return log(select(x, x * 8388608.0f, sub)) - select(vec4<f32>(0.0f), vec4<f32>(15.942385f), sub);
}

fn tang_ln1p(x: vec4<f32>) -> vec4<f32> {
    let s = x / (2.0f + x);
    let s2 = s * s;
    let small = 2.0f * (s + (s * s2) * (0.33333334f + s2 * (0.2f + s2 * (0.14285715f + s2 * (0.11111111f + s2 * (0.09090909f))))));
    let r = select(log(1.0f + x), small, abs(x) < vec4<f32>(0.3f));
    // log is undefined at 0 and below: Rust gives -inf at -1 and NaN below
    return select(select(r, bitcast<vec4<f32>>(vec4<u32>(0x7fc00000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), x < vec4<f32>(-1.0f)), bitcast<vec4<f32>>(vec4<u32>(0xff800000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), x == vec4<f32>(-1.0f));
}

fn tang_log2(x: vec4<f32>) -> vec4<f32> {
    let sub = x < vec4<f32>(1.1754944e-38f);
    return log2(select(x, x * 8388608.0f, sub)) - select(vec4<f32>(0.0f), vec4<f32>(23.0f), sub);
}

fn tang_log_sigmoid(x: vec4<f32>) -> vec4<f32> {
    return select(min(x, vec4<f32>(0.0f)) - log(1.0f + exp(-abs(x))), x, tang_nan(x));
}

fn tang_logaddexp(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    // equal arguments (also both infinite) would give inf - inf = NaN below
    let r = select(max(a, b) + log(1.0f + exp(-abs(a - b))), a + 0.6931472f, a == b);
    return select(r, a + b, tang_nan(a) | tang_nan(b));
}

fn tang_lt(a: vec4<f32>, b: vec4<f32>) -> vec4<bool> {
    return (a < b) & !(tang_nan(a) | tang_nan(b));
}

fn tang_max(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    // Rust's max: the other argument where one is NaN
    return select(select(max(a, b), b, tang_nan(a)), a, tang_nan(b));
}

fn tang_min(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
    // Rust's min: the other argument where one is NaN
    return select(select(min(a, b), b, tang_nan(a)), a, tang_nan(b));
}

fn tang_nan(x: vec4<f32>) -> vec4<bool> {
    // on the bits: drivers may fold `x != x` to false
    return (bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu)) > vec4<u32>(0x7f800000u);
}

fn tang_ne(a: vec4<f32>, b: vec4<f32>) -> vec4<bool> {
    return (a != b) | (tang_nan(a) | tang_nan(b));
}

fn tang_powf(x: vec4<f32>, y: vec4<f32>) -> vec4<f32> {
    // Rust's powf, decided on the bits where WGSL's pow is undefined (x < 0, x = 0 with
    // y <= 0) or drivers differ (|x| = 1 with an infinite y, infinite x)
    let ax = abs(x);
    let xb = bitcast<vec4<u32>>(ax);
    // a subnormal base counts as 0 (as on drivers that flush it), so every adapter
    // agrees with the flushed result
    let zero = xb < vec4<u32>(0x00800000u);
    let xinf = xb == vec4<u32>(0x7f800000u);
    let yint = trunc(y) == y;
    let yodd = yint & (trunc(y * 0.5f) * 2.0f != y);
    // |x|^y
    var m = pow(ax, y);
    m = select(m, select(vec4<f32>(0.0f), bitcast<vec4<f32>>(vec4<u32>(0x7f800000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), y < vec4<f32>(0.0f)), zero);
    m = select(m, select(vec4<f32>(0.0f), bitcast<vec4<f32>>(vec4<u32>(0x7f800000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), y > vec4<f32>(0.0f)), xinf);
    m = select(m, vec4<f32>(1.0f), xb == vec4<u32>(0x3f800000u));
    // a negative base: an odd integer y flips the sign, another integer keeps it, and a
    // non-integer y gives NaN except at -0 and -inf
    let negative = select(select(bitcast<vec4<f32>>(vec4<u32>(0x7fc00000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), m, zero | xinf), select(m, -m, yodd), yint);
    let r = select(m, negative, (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u)) != vec4<u32>(0u));
    // NaN in, NaN out, except that x^0 = 1 (a subnormal y counts as 0) and 1^y = 1
    let one = ((bitcast<vec4<u32>>(y) & vec4<u32>(0x7fffffffu)) < vec4<u32>(0x00800000u)) | (bitcast<vec4<u32>>(x) == vec4<u32>(0x3f800000u));
    return select(select(r, x + y, tang_nan(x) | tang_nan(y)), vec4<f32>(1.0f), one);
}

fn tang_powi(x: vec4<f32>, n: i32) -> vec4<f32> {
    // square-and-multiply: exact sign for negative bases, like Rust's powi
    // the exponent's magnitude as u32: abs(i32::MIN) is i32::MIN, whose bits are 2^31
    var base = x;
    var e = bitcast<u32>(abs(n));
    var r = vec4<f32>(1.0f);
    loop {
        if (e == 0u) { break; }
        if ((e & 1u) == 1u) { r = r * base; }
        base = base * base;
        e = e >> 1u;
    }
    return select(r, 1.0f / r, n < 0);
}

fn tang_round(x: vec4<f32>) -> vec4<f32> {
    // halves away from zero, as Rust's round (WGSL's round goes to even)
    let t = trunc(x);
    return select(t, t + select(vec4<f32>(1.0f), vec4<f32>(-1.0f), x < vec4<f32>(0.0f)), abs(x - t) >= vec4<f32>(0.5f));
}

fn tang_rsqrt(x: vec4<f32>) -> vec4<f32> {
    // inverseSqrt is undefined at 0 and below; 1 / sqrt(x) gives ±inf at ±0, NaN below 0
    // and 0 at inf
    let b = bitcast<vec4<u32>>(x);
    var r = select(inverseSqrt(x), bitcast<vec4<f32>>(vec4<u32>(0x7fc00000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), (b & vec4<u32>(0x80000000u)) != vec4<u32>(0u));
    r = select(r, bitcast<vec4<f32>>(b | vec4<u32>(0x7f800000u)), (b & vec4<u32>(0x7fffffffu)) == vec4<u32>(0u));
    r = select(r, vec4<f32>(0.0f), b == vec4<u32>(0x7f800000u));
    return select(r, x, tang_nan(x));
}

fn tang_sigmoid(x: vec4<f32>) -> vec4<f32> {
    // exp of a non-positive number only: no overflow
    let e = exp(-abs(x));
    return select(select(e / (1.0f + e), 1.0f / (1.0f + e), x >= vec4<f32>(0.0f)), x, tang_nan(x));
}

fn tang_signum(x: vec4<f32>) -> vec4<f32> {
    // Rust's signum: 1 for +0, -1 for -0, NaN stays NaN
    let s = select(vec4<f32>(1.0f), vec4<f32>(-1.0f), (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u)) != vec4<u32>(0u));
    return select(s, x, tang_nan(x));
}

fn tang_sin(x: vec4<f32>) -> vec4<f32> {
    let a = abs(x);
    let k = tang_trig_k(a);
    let r = tang_trig_reduce(a, k);
    let q = vec4<u32>(k) & vec4<u32>(3u);
    let s = tang_sin_poly(r);
    let c = tang_cos_poly(r);
    // quadrants 0..3 of |x|: sin r, cos r, -sin r, -cos r
    var v = select(s, c, (q & vec4<u32>(1u)) != vec4<u32>(0u));
    v = select(v, -v, q >= vec4<u32>(2u));
    v = bitcast<vec4<f32>>(bitcast<vec4<u32>>(v) ^ (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u)));
    v = select(v, sin(x), a > vec4<f32>(100000.0f));
    return select(v, bitcast<vec4<f32>>(vec4<u32>(0x7fc00000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), (bitcast<vec4<u32>>(x) & vec4<u32>(0x7f800000u)) == vec4<u32>(0x7f800000u));
}

fn tang_sinh(x: vec4<f32>) -> vec4<f32> {
    // through expm1 near 0 (e^a - e^-a cancels); exp(a)/2 from 20 on (e^-a is below an
    // ulp of it there)
    let a = abs(x);
    let t = tang_expm1(a);
    let r = select(tang_half_exp(a), 0.5f * (t + t / (t + 1.0f)), a < vec4<f32>(20.0f));
    return select(bitcast<vec4<f32>>(bitcast<vec4<u32>>(r) | (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u))), x, tang_nan(x));
}

fn tang_softplus(x: vec4<f32>) -> vec4<f32> {
    return select(max(x, vec4<f32>(0.0f)) + log(1.0f + exp(-abs(x))), x, tang_nan(x));
}

fn tang_tan(x: vec4<f32>) -> vec4<f32> {
    let a = abs(x);
    let k = tang_trig_k(a);
    let r = tang_trig_reduce(a, k);
    let q = vec4<u32>(k) & vec4<u32>(3u);
    let s = tang_sin_poly(r);
    let c = tang_cos_poly(r);
    // even quadrants: sin r / cos r; odd ones: -cos r / sin r (r is never 0 there)
    var v = select(s / c, -c / s, (q & vec4<u32>(1u)) != vec4<u32>(0u));
    v = bitcast<vec4<f32>>(bitcast<vec4<u32>>(v) ^ (bitcast<vec4<u32>>(x) & vec4<u32>(0x80000000u)));
    v = select(v, tan(x), a > vec4<f32>(100000.0f));
    return select(v, bitcast<vec4<f32>>(vec4<u32>(0x7fc00000u) | (bitcast<vec4<u32>>(x) & vec4<u32>(0u))), (bitcast<vec4<u32>>(x) & vec4<u32>(0x7f800000u)) == vec4<u32>(0x7f800000u));
}

fn tang_tanh(x: vec4<f32>) -> vec4<f32> {
    // tanh(±15) is ±1 in f32; some drivers compute tanh through exp, which overflows
    return select(tanh(clamp(x, vec4<f32>((-15.0f)), vec4<f32>(15.0f))), x, tang_nan(x));
}

fn tang_sin_poly(r: vec4<f32>) -> vec4<f32> {
    let s = r * r;
    return r + (r * s) * ((-0.16666655f) + s * (0.008332161f + s * ((-0.00019515291f))));
}
fn tang_cos_poly(r: vec4<f32>) -> vec4<f32> {
    let s = r * r;
    return (1.0f - 0.5f * s) + (s * s) * (0.041666646f + s * ((-0.0013887316f) + s * (2.443315e-5f)));
}

fn tang_trig_k(a: vec4<f32>) -> vec4<f32> {
    return select(round(a * 0.63661975f), vec4<f32>(0.0f), a > vec4<f32>(100000.0f));
}
fn tang_trig_reduce(a: vec4<f32>, k: vec4<f32>) -> vec4<f32> {
    // k * part is exact for the first two parts: fused or not, r is the same
    return ((a - k * 1.5703125f) - k * 0.00048446655f) - k * (-6.3975784e-7f);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // thread q computes elements i .. i + 4
    let q = gid.x + gid.y * nwg.x * 256u;
    let i = q * 4u;
    if (i >= params.n) { return; }
    var x_x: vec4<f32>;
    switch tang_read0 {
        case 0u: { x_x = in_x[q]; }
        case 1u: { x_x = vec4<f32>(in_x[0][0]); }
        case 2u: {
            // the four lanes share a row of the launch: one offset, then the row's stride
            let o = tang_offset(i, params.s_x);
            let s = params.s_x.w;
            if (s == 1u && (o & 3u) == 0u) { x_x = in_x[o >> 2u]; }
            else if (s == 0u) { x_x = vec4<f32>(in_x[o >> 2u][o & 3u]); }
            else { for (var l = 0u; l < 4u; l++) { let j = o + l * s; x_x[l] = in_x[j >> 2u][j & 3u]; } }
        }
        default: {
            for (var l = 0u; l < 4u; l++) { let j = tang_offset(min(i + l, params.n - 1u), params.s_x); x_x[l] = in_x[j >> 2u][j & 3u]; }
        }
    }
    var x_y: vec4<f32>;
    switch tang_read1 {
        case 0u: { x_y = in_y[q]; }
        case 1u: { x_y = vec4<f32>(in_y[0][0]); }
        case 2u: {
            // the four lanes share a row of the launch: one offset, then the row's stride
            let o = tang_offset(i, params.s_y);
            let s = params.s_y.w;
            if (s == 1u && (o & 3u) == 0u) { x_y = in_y[o >> 2u]; }
            else if (s == 0u) { x_y = vec4<f32>(in_y[o >> 2u][o & 3u]); }
            else { for (var l = 0u; l < 4u; l++) { let j = o + l * s; x_y[l] = in_y[j >> 2u][j & 3u]; } }
        }
        default: {
            for (var l = 0u; l < 4u; l++) { let j = tang_offset(min(i + l, params.n - 1u), params.s_y); x_y[l] = in_y[j >> 2u][j & 3u]; }
        }
    }
    var x_z: vec4<f32>;
    switch tang_read2 {
        case 0u: { x_z = in_z[q]; }
        case 1u: { x_z = vec4<f32>(in_z[0][0]); }
        case 2u: {
            // the four lanes share a row of the launch: one offset, then the row's stride
            let o = tang_offset(i, params.s_z);
            let s = params.s_z.w;
            if (s == 1u && (o & 3u) == 0u) { x_z = in_z[o >> 2u]; }
            else if (s == 0u) { x_z = vec4<f32>(in_z[o >> 2u][o & 3u]); }
            else { for (var l = 0u; l < 4u; l++) { let j = o + l * s; x_z[l] = in_z[j >> 2u][j & 3u]; } }
        }
        default: {
            for (var l = 0u; l < 4u; l++) { let j = tang_offset(min(i + l, params.n - 1u), params.s_z); x_z[l] = in_z[j >> 2u][j & 3u]; }
        }
    }
    let v3 = tang_gt(x_x, x_y);
    let v4 = (-x_x);
    let v5 = (1.0f / x_x);
    let v6 = sqrt(x_x);
    let v7 = exp(x_x);
    let v8 = tang_ln(x_x);
    let v9 = tang_log2(x_x);
    let v10 = exp2(x_x);
    let v11 = tang_sin(x_x);
    let v12 = tang_cos(x_x);
    let v13 = tang_tan(x_x);
    let v14 = tang_tanh(x_x);
    let v15 = abs(x_x);
    let v16 = tang_signum(x_x);
    let v17 = floor(x_x);
    let v18 = ceil(x_x);
    let v19 = tang_round(x_x);
    let v20 = trunc(x_x);
    let v21 = (x_x - trunc(x_x));
    let v22 = tang_sigmoid(x_x);
    let v23 = tang_softplus(x_x);
    let v24 = tang_log_sigmoid(x_x);
    let v25 = (x_x * tang_sigmoid(x_x));
    let v26 = tang_gelu_tanh(x_x);
    let v27 = x_x;
    let v28 = tang_powi(x_x, 3i);
    let v29 = (x_x + x_y);
    let v30 = (x_x - x_y);
    let v31 = (x_x * x_y);
    let v32 = (x_x / x_y);
    let v33 = tang_powf(x_x, x_y);
    let v34 = tang_min(x_x, x_y);
    let v35 = tang_max(x_x, x_y);
    let v36 = tang_logaddexp(x_x, x_y);
    let v37 = tang_lt(x_x, x_y);
    let v38 = select(x_y, x_x, v37);
    let v39 = tang_le(x_x, x_y);
    let v40 = select(x_y, x_x, v39);
    let v41 = select(x_y, x_x, v3);
    let v42 = tang_ge(x_x, x_y);
    let v43 = select(x_y, x_x, v42);
    let v44 = tang_eq(x_x, x_y);
    let v45 = select(x_y, x_x, v44);
    let v46 = tang_ne(x_x, x_y);
    let v47 = select(x_y, x_x, v46);
    let v48 = (v3 & v3);
    let v49 = select(x_y, x_x, v48);
    let v50 = (v3 | v3);
    let v51 = select(x_y, x_x, v50);
    let v52 = (!v3);
    let v53 = select(x_y, x_x, v52);
    let v54 = select(x_z, x_y, v3);
    let v55 = fma(x_x, x_y, x_z);
    let v56 = tang_clamp(x_x, x_y, x_z);
    let v57 = tang_erf(x_x);
    let v58 = tang_erfc(x_x);
    let v59 = tang_gelu_erf(x_x);
    let v60 = tang_gelu_erf_grad(x_x);
    let v61 = tang_atan(x_x);
    let v62 = tang_atan2(x_x, x_y);
    let v63 = tang_asin(x_x);
    let v64 = tang_acos(x_x);
    let v65 = tang_sinh(x_x);
    let v66 = tang_cosh(x_x);
    let v67 = tang_asinh(x_x);
    let v68 = tang_acosh(x_x);
    let v69 = tang_atanh(x_x);
    let v70 = tang_expm1(x_x);
    let v71 = tang_ln1p(x_x);
    let v72 = tang_hypot(x_x, x_y);
    let v73 = tang_rsqrt(x_x);
    let v74 = tang_copysign(x_x, x_y);
    let v75 = tang_cbrt(x_x);
    if (i + 4u <= params.n) {
        out_neg[q] = v4;
        out_recip[q] = v5;
        out_sqrt[q] = v6;
        out_exp[q] = v7;
        out_ln[q] = v8;
        out_log2[q] = v9;
        out_exp2[q] = v10;
        out_sin[q] = v11;
        out_cos[q] = v12;
        out_tan[q] = v13;
        out_tanh[q] = v14;
        out_abs[q] = v15;
        out_signum[q] = v16;
        out_floor[q] = v17;
        out_ceil[q] = v18;
        out_round[q] = v19;
        out_trunc[q] = v20;
        out_fract[q] = v21;
        out_sigmoid[q] = v22;
        out_softplus[q] = v23;
        out_log_sigmoid[q] = v24;
        out_silu[q] = v25;
        out_gelu_tanh[q] = v26;
        out_stop_gradient[q] = v27;
        out_powi[q] = v28;
        out_add[q] = v29;
        out_sub[q] = v30;
        out_mul[q] = v31;
        out_div[q] = v32;
        out_powf[q] = v33;
        out_min[q] = v34;
        out_max[q] = v35;
        out_logaddexp[q] = v36;
        out_lt[q] = v38;
        out_le[q] = v40;
        out_gt[q] = v41;
        out_ge[q] = v43;
        out_eq[q] = v45;
        out_ne[q] = v47;
        out_and[q] = v49;
        out_or[q] = v51;
        out_not[q] = v53;
        out_select[q] = v54;
        out_mul_add[q] = v55;
        out_clamp[q] = v56;
        out_erf[q] = v57;
        out_erfc[q] = v58;
        out_gelu_erf[q] = v59;
        out_gelu_erf_grad[q] = v60;
        out_atan[q] = v61;
        out_atan2[q] = v62;
        out_asin[q] = v63;
        out_acos[q] = v64;
        out_sinh[q] = v65;
        out_cosh[q] = v66;
        out_asinh[q] = v67;
        out_acosh[q] = v68;
        out_atanh[q] = v69;
        out_exp_m1[q] = v70;
        out_ln_1p[q] = v71;
        out_hypot[q] = v72;
        out_rsqrt[q] = v73;
        out_copysign[q] = v74;
        out_cbrt[q] = v75;
    } else {
        for (var l = 0u; l < 4u; l++) {
            if (i + l < params.n) {
                out_neg[q][l] = v4[l];
                out_recip[q][l] = v5[l];
                out_sqrt[q][l] = v6[l];
                out_exp[q][l] = v7[l];
                out_ln[q][l] = v8[l];
                out_log2[q][l] = v9[l];
                out_exp2[q][l] = v10[l];
                out_sin[q][l] = v11[l];
                out_cos[q][l] = v12[l];
                out_tan[q][l] = v13[l];
                out_tanh[q][l] = v14[l];
                out_abs[q][l] = v15[l];
                out_signum[q][l] = v16[l];
                out_floor[q][l] = v17[l];
                out_ceil[q][l] = v18[l];
                out_round[q][l] = v19[l];
                out_trunc[q][l] = v20[l];
                out_fract[q][l] = v21[l];
                out_sigmoid[q][l] = v22[l];
                out_softplus[q][l] = v23[l];
                out_log_sigmoid[q][l] = v24[l];
                out_silu[q][l] = v25[l];
                out_gelu_tanh[q][l] = v26[l];
                out_stop_gradient[q][l] = v27[l];
                out_powi[q][l] = v28[l];
                out_add[q][l] = v29[l];
                out_sub[q][l] = v30[l];
                out_mul[q][l] = v31[l];
                out_div[q][l] = v32[l];
                out_powf[q][l] = v33[l];
                out_min[q][l] = v34[l];
                out_max[q][l] = v35[l];
                out_logaddexp[q][l] = v36[l];
                out_lt[q][l] = v38[l];
                out_le[q][l] = v40[l];
                out_gt[q][l] = v41[l];
                out_ge[q][l] = v43[l];
                out_eq[q][l] = v45[l];
                out_ne[q][l] = v47[l];
                out_and[q][l] = v49[l];
                out_or[q][l] = v51[l];
                out_not[q][l] = v53[l];
                out_select[q][l] = v54[l];
                out_mul_add[q][l] = v55[l];
                out_clamp[q][l] = v56[l];
                out_erf[q][l] = v57[l];
                out_erfc[q][l] = v58[l];
                out_gelu_erf[q][l] = v59[l];
                out_gelu_erf_grad[q][l] = v60[l];
                out_atan[q][l] = v61[l];
                out_atan2[q][l] = v62[l];
                out_asin[q][l] = v63[l];
                out_acos[q][l] = v64[l];
                out_sinh[q][l] = v65[l];
                out_cosh[q][l] = v66[l];
                out_asinh[q][l] = v67[l];
                out_acosh[q][l] = v68[l];
                out_atanh[q][l] = v69[l];
                out_exp_m1[q][l] = v70[l];
                out_ln_1p[q][l] = v71[l];
                out_hypot[q][l] = v72[l];
                out_rsqrt[q][l] = v73[l];
                out_copysign[q][l] = v74[l];
                out_cbrt[q][l] = v75[l];
            }
        }
    }
}

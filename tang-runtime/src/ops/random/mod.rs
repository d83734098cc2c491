//! Random numbers on the GPU from Philox4x32-10 ([`crate::ops::random::philox`]): `rand_bits`, `rand`,
//! `randn` and `dropout`.
//!
//! What is bit-identical on every adapter and to the CPU twin ([`PhiloxStream`]): the
//! words of `rand_bits`, the uniform numbers of `rand` (`(bits >> 8) * 2^-24`: an exact
//! integer-to-float conversion and an exact scaling) and dropout's keep/drop decisions
//! (an integer comparison of 16 bits, [`dropout_block`](crate::ops::dropout_block)),
//! hence its mask: dropout's backward regenerates the mask from a [`DropoutState`] of 20
//! bytes instead of storing it.
//! `randn` (Box-Muller) goes through `log`, `sqrt`, `cos` and `sin`, which GPUs do not
//! round correctly: its values agree with the CPU twin's f64 formula within the Vulkan
//! precision bounds (absolute error 2^-11 of `cos`/`sin` on `[-pi, pi]`, times a radius of
//! at most 5.8), not bit for bit.

pub(super) mod philox;

use crate::cast::{F16_BITS_TO_F32_WGSL, F32_TO_F16_BITS_WGSL};
use crate::ops::check;
use crate::ops::random::philox::{PhiloxStream, dropout_threshold};
use crate::ops::to_dtype;
use crate::spec::{F32_X_TO_OUT, Slot, Source, Spec, grid, params};
use crate::wgsl::thread_main;
use crate::{DType, Device, Error, Tensor};

/// Threads per workgroup; each thread makes one block of four numbers.
const WG: usize = 256;

/// Hands out one [`PhiloxStream`] per draw (PyTorch's `torch.Generator`): the seed is the
/// key and the offset counts draws, so two draws never share a counter and a run can be
/// resumed from `(seed, offset)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generator {
    seed: u64,
    offset: u64,
}

impl Generator {
    /// A generator at the start of `seed`'s sequence.
    pub fn new(seed: u64) -> Generator {
        Generator { seed, offset: 0 }
    }

    /// Restarts at the beginning of `seed`'s sequence (PyTorch's `manual_seed`).
    pub fn manual_seed(&mut self, seed: u64) {
        *self = Generator::new(seed);
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// How many streams were handed out since the seed was set.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Continues from a saved `(seed, offset)`.
    pub fn set_offset(&mut self, offset: u64) {
        self.offset = offset;
    }

    /// The stream of the next draw (and advances past it).
    pub fn next_stream(&mut self) -> PhiloxStream {
        let s = PhiloxStream {
            seed: self.seed,
            offset: self.offset,
        };
        self.offset = self.offset.wrapping_add(1);
        s
    }
}

params! {
    /// `n` elements from the Philox stream `(key, offset)`;
    /// dropout drops the elements whose 16 bits are below `threshold` and scales the
    /// others by `scale`, in the patches of rows of `cols` elements that
    /// [`dropout_block`](crate::ops::dropout_block) describes.
    struct RandomParams {
        n: u32, key0: u32, key1: u32, offset0: u32, offset1: u32,
        threshold: u32, scale: f32, cols: u32,
    }
}

/// Philox4x32-10 in WGSL on a full 128-bit counter (the CPU twin is `philox4x32_10`), for
/// every kernel that draws from a stream: the ones here and the fused attention dropout.
/// Written with the portable product; [`crate::wide_mul::for_device`] specialises it.
pub(crate) const PHILOX_WGSL: &str = concat!(
    crate::wide_mul::mulhilo_wgsl!(),
    "
// Counter: (block low, block high, offset low, offset high).
fn philox(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = counter;
    var k = key;
    for (var r = 0u; r < 10u; r = r + 1u) {
        if (r > 0u) { k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u); }
        let h0 = mulhilo(0xD2511F53u, c.x);
        let h1 = mulhilo(0xCD9E8D57u, c.z);
        c = vec4<u32>(h1.x ^ c.y ^ k.x, h1.y, h0.x ^ c.w ^ k.y, h0.y);
    }
    return c;
}
"
);

/// The stream of one dispatch of the kernels here: its key and offset in `p`.
const STREAM_WGSL: &str = "
// The four words of block `t` of this dispatch's stream.
fn stream_block(t: u32) -> vec4<u32> {
    return philox(vec4<u32>(t, 0u, p.offset0, p.offset1), vec2<u32>(p.key0, p.key1));
}

// Exact: a 24-bit integer converts exactly and 2^-24 scales exactly.
fn uniform01(b: u32) -> f32 { return f32(b >> 8u) * 0x1p-24f; }
";

/// `MODE` 0: raw words (u32), 1: uniform `[0, 1)`, 2: normal (Box-Muller on word pairs,
/// angle in `[-pi, pi)` where the Vulkan bounds on `cos`/`sin` hold).
static RANDOM: Spec<RandomParams> = Spec::new(
    "random",
    &[PHILOX_WGSL, STREAM_WGSL],
    &[Slot::ReadWrite("out", "array<u32>")],
    concat!(
        "override MODE: u32 = 0u;
const PI: f32 = 3.14159265358979;

fn normal_pair(b1: u32, b2: u32) -> vec2<f32> {
    let u1 = f32((b1 >> 8u) + 1u) * 0x1p-24f;
    let theta = PI * (2.0 * uniform01(b2) - 1.0);
    let r = sqrt(-2.0 * log(u1));
    return vec2<f32>(r * cos(theta), r * sin(theta));
}

",
        thread_main!(t),
        "    // Compared before multiplying: `t * 4` wraps for the threads past the last block.
    if (t > (p.n - 1u) / 4u) { return; }
    let base = t * 4u;
    let w = stream_block(t);
    var v = w;
    if (MODE == 1u) {
        v = vec4<u32>(bitcast<u32>(uniform01(w.x)), bitcast<u32>(uniform01(w.y)),
                      bitcast<u32>(uniform01(w.z)), bitcast<u32>(uniform01(w.w)));
    } else if (MODE == 2u) {
        let a = normal_pair(w.x, w.y);
        let b = normal_pair(w.z, w.w);
        v = bitcast<vec4<u32>>(vec4<f32>(a, b));
    }
    for (var j = 0u; j < 4u; j = j + 1u) {
        if (base + j < p.n) { out[base + j] = v[j]; }
    }
}
"
    ),
);

/// `out[i] = x[i] * (keep(i) ? scale : 0)`: a dropped NaN or infinity stays NaN, as in
/// PyTorch, which multiplies by the mask. Thread `t` makes block `t`, the decisions of the
/// patch of rows `2 (t / groups)` and the next by columns `4 (t % groups) ..` (`groups`
/// patches per row pair; [`dropout_block`](crate::ops::dropout_block)).
static DROPOUT: Spec<RandomParams> = Spec::new(
    "dropout",
    &[PHILOX_WGSL, STREAM_WGSL],
    F32_X_TO_OUT,
    concat!(
        thread_main!(t),
        "    let groups = (p.cols + 3u) / 4u;
    let rows = p.n / p.cols;
    if (t >= (rows / 2u + rows % 2u) * groups) { return; }
    let row = 2u * (t / groups);
    let col = 4u * (t % groups);
    let w = stream_block(t);
    for (var r = 0u; r < 2u; r = r + 1u) {
        for (var c = 0u; c < 4u; c = c + 1u) {
            if (row + r < rows && col + c < p.cols) {
                let i = (row + r) * p.cols + col + c;
                let bits = (w[2u * r + c / 2u] >> (16u * (c % 2u))) & 0xFFFFu;
                out[i] = x[i] * select(0.0, p.scale, bits >= p.threshold);
            }
        }
    }
}
"
    ),
);

/// The start of the dropout kernels over rows of a multiple of 4 elements, in units of
/// four (a `vec4` of f32, or two words of f16): thread `t`'s patch (`a`, its even row's
/// unit; `has_odd`, whether the odd row exists) and its decisions (`even`, `odd`).
macro_rules! patch_head {
    () => {
        "    let groups = p.cols / 4u;
    let rows = p.n / p.cols;
    if (t >= (rows / 2u + rows % 2u) * groups) { return; }
    let a = (t / groups) * 2u * groups + t % groups;
    let has_odd = 2u * (t / groups) + 1u < rows;
    let w = stream_block(t);
    let even = halves(w.xy) >= vec4<u32>(p.threshold);
    let odd = halves(w.zw) >= vec4<u32>(p.threshold);
"
    };
}

/// The 16-bit halves of two words, low half first (one row's four decisions).
const HALVES_WGSL: &str = "
fn halves(w: vec2<u32>) -> vec4<u32> {
    return vec4<u32>(w.x & 0xFFFFu, w.x >> 16u, w.y & 0xFFFFu, w.y >> 16u);
}
";

/// [`DROPOUT`] for rows whose length is a multiple of 4: a patch is one `vec4` of each of
/// its two rows (a quarter of the loads and stores, no per-element bounds).
static DROPOUT_V4: Spec<RandomParams> = Spec::new(
    "dropout_v4",
    &[PHILOX_WGSL, STREAM_WGSL, HALVES_WGSL],
    crate::spec::VEC4_X_TO_OUT,
    concat!(
        thread_main!(t),
        patch_head!(),
        "    out[a] = x[a] * select(vec4<f32>(0.0), vec4<f32>(p.scale), even);
    if (has_odd) {
        let b = a + groups;
        out[b] = x[b] * select(vec4<f32>(0.0), vec4<f32>(p.scale), odd);
    }
}
"
    ),
);

/// [`DROPOUT_V4`] of an f16 tensor: a patch is one pair of words (four halves) of each of
/// its two rows, computed in f32 and rounded once to f16 (nearest even), as PyTorch's
/// f16 dropout rounds its f32 product.
static DROPOUT_F16: Spec<RandomParams> = Spec::new(
    "dropout_f16",
    &[
        PHILOX_WGSL,
        STREAM_WGSL,
        HALVES_WGSL,
        F32_TO_F16_BITS_WGSL,
        F16_BITS_TO_F32_WGSL,
    ],
    crate::spec::VEC2U_X_TO_OUT,
    concat!(
        "// The two halves of `word`, each times its factor, rounded back to f16.
fn scaled(word: u32, keep: vec2<bool>) -> u32 {
    let lo = bitcast<f32>(f16_bits_to_f32(word & 0xFFFFu)) * select(0.0, p.scale, keep.x);
    let hi = bitcast<f32>(f16_bits_to_f32(word >> 16u)) * select(0.0, p.scale, keep.y);
    return f32_to_f16_bits(bitcast<u32>(lo)) | (f32_to_f16_bits(bitcast<u32>(hi)) << 16u);
}

",
        thread_main!(t),
        patch_head!(),
        "    out[a] = vec2<u32>(scaled(x[a].x, even.xy), scaled(x[a].y, even.zw));
    if (has_odd) {
        let b = a + groups;
        out[b] = vec2<u32>(scaled(x[b].x, odd.xy), scaled(x[b].y, odd.zw));
    }
}
"
    ),
);

/// Every kernel of this file, for the registry.
pub(crate) fn kernels() -> Vec<Source> {
    vec![
        RANDOM.source(),
        DROPOUT.source(),
        DROPOUT_V4.source(),
        DROPOUT_F16.source(),
    ]
}

/// The uniform block and grid for `n` elements of `stream`, one thread per Philox block of
/// `blocks`.
fn params(
    dev: &Device,
    op: &str,
    n: usize,
    blocks: usize,
    stream: &PhiloxStream,
) -> Result<(RandomParams, [u32; 3]), Error> {
    let n32 = crate::size::fits_u32(op, "elements", n)?;
    let groups = grid(dev, op, blocks.div_ceil(WG) as u64)?;
    let p = RandomParams {
        n: n32,
        key0: stream.seed as u32,
        key1: (stream.seed >> 32) as u32,
        offset0: stream.offset as u32,
        offset1: (stream.offset >> 32) as u32,
        threshold: 0,
        scale: 0.0,
        cols: 1,
    };
    Ok((p, groups))
}

fn draw(
    dev: &Device,
    op: &str,
    shape: &[usize],
    dtype: DType,
    mode: f64,
    stream: &PhiloxStream,
) -> Result<Tensor, Error> {
    let out = dev.empty(shape, dtype)?;
    if out.is_empty() {
        return Ok(out);
    }
    let (p, groups) = params(dev, op, out.len(), out.len().div_ceil(4), stream)?;
    RANDOM.dispatch(&[("MODE", mode)], &p, &[&out], groups)?;
    Ok(out)
}

/// A u32 tensor of raw Philox words (word `i` is [`PhiloxStream::bits`]`(i)` of the
/// generator's next stream).
///
/// # Errors
/// [`Error::TooLarge`] past 2^32 - 1 elements, [`Error::DeviceLost`].
pub fn rand_bits(
    dev: &Device,
    shape: &[usize],
    generator: &mut Generator,
) -> Result<Tensor, Error> {
    draw(
        dev,
        "rand_bits",
        shape,
        DType::U32,
        0.0,
        &generator.next_stream(),
    )
}

/// Uniform numbers in `[0, 1)` on a grid of 2^-24 (PyTorch's `rand`), bit-identical to
/// [`PhiloxStream::uniform`] of the generator's next stream.
///
/// # Errors
/// As [`rand_bits`].
pub fn rand(dev: &Device, shape: &[usize], generator: &mut Generator) -> Result<Tensor, Error> {
    draw(
        dev,
        "rand",
        shape,
        DType::F32,
        1.0,
        &generator.next_stream(),
    )
}

/// Standard normal numbers (PyTorch's `randn`), by Box-Muller: close to
/// [`PhiloxStream::normal`] of the generator's next stream (see the module doc for how
/// close).
///
/// # Errors
/// As [`rand_bits`].
pub fn randn(dev: &Device, shape: &[usize], generator: &mut Generator) -> Result<Tensor, Error> {
    draw(
        dev,
        "randn",
        shape,
        DType::F32,
        2.0,
        &generator.next_stream(),
    )
}

/// What [`dropout_backward`] needs to regenerate the mask: the stream and the probability.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DropoutState {
    /// The stream whose words decided which elements were kept.
    pub stream: PhiloxStream,
    /// The drop probability.
    pub p: f32,
}

impl DropoutState {
    /// Whether element `i` of a tensor whose last dimension is `row_len` was kept (the CPU
    /// twin of the GPU's decision; [`dropout_block`](crate::ops::dropout_block) says which
    /// bits decide it). The attention weights of row `(b * heads + h) * t + i` and key `j`
    /// are element `row * t + j` of `[batch, heads, t, t]`.
    pub fn keeps(&self, row_len: u64, i: u64) -> bool {
        self.stream.keeps(row_len, i, dropout_threshold(self.p))
    }

    /// The scale of kept elements, `1 / (1 - p)` (0 for `p = 1`).
    pub fn scale(&self) -> f32 {
        if self.p >= 1.0 {
            0.0
        } else {
            1.0 / (1.0 - self.p)
        }
    }
}

fn apply_mask(op: &str, x: &Tensor, state: &DropoutState) -> Result<Tensor, Error> {
    // A 0-d tensor is one row of one element.
    let cols = x.shape().last().copied().unwrap_or(1);
    if x.dtype() == DType::F16 && !cols.is_multiple_of(4) {
        // Rows that are not whole pairs of words: through f32, rounded back once.
        return to_dtype(
            &apply_mask(op, &to_dtype(x, DType::F32)?, state)?,
            DType::F16,
        );
    }
    if x.dtype() != DType::F16 {
        check::dtype(op, x, DType::F32)?;
    }
    let dev = x.device();
    let out = dev.empty(x.shape(), x.dtype())?;
    if out.is_empty() {
        return Ok(out);
    }
    let blocks = (x.len() / cols).div_ceil(2) * cols.div_ceil(4);
    let (mut p, groups) = params(dev, op, x.len(), blocks, &state.stream)?;
    p.threshold = dropout_threshold(state.p);
    p.scale = state.scale();
    p.cols = cols as u32;
    let kernel = if x.dtype() == DType::F16 {
        &DROPOUT_F16
    } else if cols.is_multiple_of(4) {
        &DROPOUT_V4
    } else {
        &DROPOUT
    };
    kernel.dispatch(&[], &p, &[x, &out], groups)?;
    Ok(out)
}

/// Zeroes each element with probability `p` and scales the rest by `1 / (1 - p)`
/// (PyTorch's `dropout` in training mode; in evaluation, do not call it). Returns the
/// output and the state [`dropout_backward`] regenerates the mask from. Each decision
/// compares 16 random bits with `round(p * 2^16)`
/// ([`dropout_block`](crate::ops::dropout_block)), so the drop rate is `p` rounded to a
/// multiple of 2^-16.
///
/// An f16 tensor gives an f16 result (each product rounded once).
///
/// # Errors
/// [`Error::InvalidArgument`] unless `0 <= p <= 1`, [`Error::DType`] for a u32 tensor,
/// [`Error::TooLarge`].
pub fn dropout(
    x: &Tensor,
    p: f32,
    generator: &mut Generator,
) -> Result<(Tensor, DropoutState), Error> {
    if !(0.0..=1.0).contains(&p) {
        return Err(check::invalid(
            "dropout",
            format!("the drop probability must be in [0, 1], got {p}"),
        ));
    }
    let state = DropoutState {
        stream: generator.next_stream(),
        p,
    };
    Ok((apply_mask("dropout", x, &state)?, state))
}

/// The gradient of [`dropout`]: `grad_out` through the same mask and scale, regenerated
/// from `state`.
///
/// # Errors
/// [`Error::DType`] for a u32 tensor, [`Error::TooLarge`].
pub fn dropout_backward(grad_out: &Tensor, state: &DropoutState) -> Result<Tensor, Error> {
    apply_mask("dropout_backward", grad_out, state)
}

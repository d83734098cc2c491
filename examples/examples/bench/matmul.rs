//! Matmul cases: square fp32 at 1024/2048/4096 and 4096x4096x1024 with each operand
//! stored transposed (names as in `torch_anchors.py`: NT means B is stored `[n, k]`, TN
//! means A is stored `[k, m]`). TFLOP/s = 2mnk / time.
//!
//! PyTorch times one launch with CUDA events (GPU time only); here each repeat records
//! enough launches to keep the GPU busy for a few milliseconds, waits for completion
//! and divides, so the per-submit cost of the host does not count against the kernel
//! either. Every case first checks a sample of C against a CPU dot product, so a fast
//! wrong kernel is reported as a failure, not a speed. Without `--quick`, every tile
//! preset is also timed at 1024 and 4096 (`..._tile<bm>x<bn>x<bk>_<tm>x<tn>`) to tune
//! the automatic choice, and at the character GPT's Linear shapes (`matmul_gpt_...`).

use tang_runtime::ops::{
    CoopTile, Epilogue, MatmulOptions, TileConfig, matmul_tn_split, matmul_with,
};
use tang_runtime::{DType, Device, Error, Tensor};

use super::Report;
use super::elementwise::{random, rounded_f16, time};

/// One problem: op(A) is [m, k], op(B) is [k, n].
struct Case {
    m: usize,
    n: usize,
    k: usize,
    ta: bool,
    tb: bool,
    half: Half,
}

/// How a case's operands are multiplied.
#[derive(Clone, Copy, Default, PartialEq)]
enum Half {
    /// f32 tensors, f32 products.
    #[default]
    No,
    /// f16 tensors (f16 products, f32 accumulate and result): PyTorch's fp16 `a @ b`.
    Tensors,
    /// f32 tensors with `f16_inputs` (rounded to f16 on load): what tang's autocast runs.
    Autocast,
}

fn run_case(
    dev: &Device,
    c: &Case,
    tile: Option<TileConfig>,
    epi: Option<&Epilogue>,
    quick: bool,
) -> Result<(f64, f64), Error> {
    // f16 cases draw f16 values, so the f64 check below is exact up to f32 accumulation.
    let round = |v: Vec<f32>| -> Vec<f32> {
        if c.half == Half::No {
            v
        } else {
            rounded_f16(v)
        }
    };
    let a = round(random(c.m * c.k, 11));
    let b = round(random(c.k * c.n, 12));
    let upload = |x: &[f32], shape: [usize; 2]| -> Result<Tensor, Error> {
        let t = Tensor::from_slice(dev, x, &shape)?;
        if c.half == Half::Tensors {
            tang_runtime::ops::to_dtype(&t, DType::F16)
        } else {
            Ok(t)
        }
    };
    let at = upload(&a, if c.ta { [c.k, c.m] } else { [c.m, c.k] })?;
    let bt = upload(&b, if c.tb { [c.n, c.k] } else { [c.k, c.n] })?;
    let o = MatmulOptions {
        transpose_a: c.ta,
        transpose_b: c.tb,
        tile,
        epilogue: epi,
        f16_inputs: c.half == Half::Autocast,
        ..Default::default()
    };
    // Correctness on a sample of elements (rows and columns spread over the matrix).
    let out = matmul_with(&at, &bt, &o)?.to_vec()?;
    for s in 0..16usize {
        let (i, j) = ((s * 7919) % c.m, (s * 104_729) % c.n);
        let mut want = 0.0f64;
        for p in 0..c.k {
            let x = a[if c.ta { p * c.m + i } else { i * c.k + p }] as f64;
            let y = b[if c.tb { j * c.k + p } else { p * c.n + j }] as f64;
            want += x * y;
        }
        if let Some(e) = epi {
            want = e.eval_f64(want)?;
        }
        let got = out[i * c.n + j] as f64;
        if (got - want).abs() > 1e-3 * (1.0 + want.abs()) * (c.k as f64).sqrt() {
            return Err(Error::ShapeMismatch {
                op: "bench matmul".into(),
                detail: format!("wrong result at [{i}, {j}]: {got} vs {want}"),
            });
        }
    }
    let flops = 2.0 * (c.m * c.n * c.k) as f64;
    // ~4 ms of work per repeat at 40 TFLOP/s.
    let per_rep = ((160e9 / flops) as usize).clamp(1, 64);
    let reps = if quick { 3 } else { 10 };
    // Drawing and checking large operands leaves the GPU idle long enough to clock down
    // (GPT-2's LM-head cases, 45M elements, read 2-4x slow when run alone: BENCHMARKS.md,
    // 2026-11-29 (eighth session)); busy it again before timing.
    if c.m * c.k + c.k * c.n > 1 << 24 {
        super::elementwise::warm_up(dev, if quick { 0.1 } else { 0.5 })?;
    }
    let ms = time(dev, 2, reps, || {
        for _ in 0..per_rep {
            matmul_with(&at, &bt, &o)?;
        }
        Ok(())
    })? / per_rep as f64;
    Ok((ms, flops / ms / 1e9))
}

fn case(
    dev: &Device,
    report: &mut Report,
    name: &str,
    c: &Case,
    tile: Option<TileConfig>,
    epi: Option<&Epilogue>,
    quick: bool,
) {
    if !report.wants(name) {
        return;
    }
    match run_case(dev, c, tile, epi, quick) {
        Ok((ms, tflops)) => report.add_rate(name, ms, tflops, "TFLOP/s"),
        Err(e) => report.fail(name, &e),
    }
}

/// Runs the matmul cases.
pub fn run(dev: &Device, quick: bool, report: &mut Report) {
    let sizes: &[usize] = if quick { &[2048] } else { &[1024, 2048, 4096] };
    for &s in sizes {
        let c = Case {
            m: s,
            n: s,
            k: s,
            ta: false,
            tb: false,
            half: Half::No,
        };
        case(
            dev,
            report,
            &format!("matmul_fp32_{s}"),
            &c,
            None,
            None,
            quick,
        );
    }
    for (tag, ta, tb) in [
        ("NN", false, false),
        ("NT", false, true),
        ("TN", true, false),
    ] {
        let c = Case {
            m: 4096,
            n: 4096,
            k: 1024,
            ta,
            tb,
            half: Half::No,
        };
        case(
            dev,
            report,
            &format!("matmul_fp32_4096x4096x1024_{tag}"),
            &c,
            None,
            None,
            quick,
        );
    }
    if quick {
        return;
    }
    // Fused epilogue: the store applies GELU (the cost of the epilogue over plain).
    match Epilogue::from_traced(&tang_runtime::tang_expr::trace(1, |v| v[0].gelu_tanh())) {
        Ok(gelu) => {
            let c = Case {
                m: 4096,
                n: 4096,
                k: 1024,
                ta: false,
                tb: false,
                half: Half::No,
            };
            case(
                dev,
                report,
                "matmul_fp32_4096x4096x1024_NN_gelu",
                &c,
                None,
                Some(&gelu),
                quick,
            );
        }
        Err(e) => report.fail("matmul_fp32_4096x4096x1024_NN_gelu", &e),
    }
    half_cases(dev, report, quick);
    gpt_shapes(dev, report, quick);
    for s in [1024, 4096] {
        for t in TileConfig::PRESETS.into_iter().filter(|t| t.fits(dev)) {
            let name = format!(
                "matmul_fp32_{s}_tile{}x{}x{}_{}x{}",
                t.bm, t.bn, t.bk, t.tm, t.tn
            );
            let c = Case {
                m: s,
                n: s,
                k: s,
                ta: false,
                tb: false,
                half: Half::No,
            };
            case(dev, report, &name, &c, Some(t), None, quick);
        }
    }
}

/// f16 products (tensor cores where the device has them): `matmul_f16_*` multiplies f16
/// tensors (PyTorch's fp16 `a @ b` in `torch_amp_anchors.py`, and
/// `examples/scripts/torch_matmul_f16.py` at the other shapes); `matmul_autocast_*`
/// multiplies f32 tensors rounded on load, as tang's autocast does. 4096³, the three
/// layouts at 4096x4096x1024, the character GPT's and GPT-2 small's Linear products, and
/// GPT-2's LM head (f16 only).
fn half_cases(dev: &Device, report: &mut Report, quick: bool) {
    const TOKENS: usize = 16384;
    let mut cases = vec![("4096".to_string(), 4096, 4096, 4096, false, false)];
    for (tag, ta, tb) in [
        ("NN", false, false),
        ("NT", false, true),
        ("TN", true, false),
    ] {
        cases.push((format!("4096x4096x1024_{tag}"), 4096, 4096, 1024, ta, tb));
    }
    for (out, inp) in [(1152, 384), (384, 384), (1536, 384), (384, 1536)] {
        cases.push((
            format!("gpt_{TOKENS}x{out}x{inp}_NT"),
            TOKENS,
            out,
            inp,
            false,
            true,
        ));
        cases.push((
            format!("gpt_{TOKENS}x{inp}x{out}_NN"),
            TOKENS,
            inp,
            out,
            false,
            false,
        ));
        cases.push((
            format!("gpt_{out}x{inp}x{TOKENS}_TN"),
            out,
            inp,
            TOKENS,
            true,
            false,
        ));
    }
    // GPT-2 small's Linear products (8 x 1024 tokens, width 768).
    for (out, inp) in [(2304, 768), (768, 3072), (3072, 768)] {
        cases.push((
            format!("gpt2_8192x{out}x{inp}_NT"),
            8192,
            out,
            inp,
            false,
            true,
        ));
    }
    // GPT-2 small's LM head over 8 x 1024 tokens (logits, the input's gradient, the
    // weight's), at its vocabulary of 50,257 (odd: rows of f16 logits are not 8-byte
    // aligned, so those loads and stores go one element at a time) and at nanoGPT's
    // padded 50,304; f16 tensors only (the f32 operands would take 1.6 GB each).
    let mut runs = Vec::new();
    for vocab in [50257, 50304] {
        for (tag, m, n, k, ta, tb) in [
            (
                format!("8192x{vocab}x768_NT"),
                8192,
                vocab,
                768,
                false,
                true,
            ),
            (
                format!("8192x768x{vocab}_NN"),
                8192,
                768,
                vocab,
                false,
                false,
            ),
            (
                format!("{vocab}x768x8192_TN"),
                vocab,
                768,
                8192,
                true,
                false,
            ),
        ] {
            let half = Half::Tensors;
            let c = Case {
                m,
                n,
                k,
                ta,
                tb,
                half,
            };
            runs.push((format!("matmul_f16_gpt2_{tag}"), c));
        }
    }
    for (half, prefix) in [(Half::Tensors, "f16"), (Half::Autocast, "autocast")] {
        for (tag, m, n, k, ta, tb) in &cases {
            let c = Case {
                m: *m,
                n: *n,
                k: *k,
                ta: *ta,
                tb: *tb,
                half,
            };
            runs.push((format!("matmul_{prefix}_{tag}"), c));
        }
    }
    if dev.info().tensor_cores {
        for (name, c) in &runs {
            coop_sweep(dev, report, name, c, quick);
        }
    }
    for (name, c) in &runs {
        case(dev, report, name, c, None, None, quick);
    }
}

/// Every tensor-core tile preset that fits the device, forced on case `c`
/// (`<base>_coop<bm>x<bn>x<bk>_sg<m>x<n>_f<m>x<n>_s<stages>_st<store_frags>`), to tune the
/// automatic choice. The operands are drawn once; each preset's whole result must equal
/// the automatic choice's within f32 accumulation-order rounding before it is timed.
fn coop_sweep(dev: &Device, report: &mut Report, base: &str, c: &Case, quick: bool) {
    let tiles: Vec<CoopTile> = CoopTile::PRESETS
        .into_iter()
        .chain(extra_coop_tiles())
        .filter(|t| t.fits(dev))
        .collect();
    let name = |t: &CoopTile| {
        // The k groups show only where there are two, so the other names stay as before.
        let kg = if t.kgroups > 1 {
            format!("_kg{}", t.kgroups)
        } else {
            String::new()
        };
        format!(
            "{base}_coop{}x{}x{}_sg{}x{}_f{}x{}_s{}_st{}{kg}",
            t.block_m(),
            t.block_n(),
            t.bk,
            t.sg_m,
            t.sg_n,
            t.frag_m,
            t.frag_n,
            t.stages,
            t.store_frags
        )
    };
    if !tiles.iter().any(|t| report.wants(&name(t))) {
        return;
    }
    let run = || -> Result<Vec<(CoopTile, f64)>, Error> {
        let draw = |len: usize, seed: u64, shape: [usize; 2]| -> Result<Tensor, Error> {
            let t = Tensor::from_slice(dev, &random(len, seed), &shape)?;
            if c.half == Half::Tensors {
                tang_runtime::ops::to_dtype(&t, DType::F16)
            } else {
                Ok(t)
            }
        };
        let a = draw(c.m * c.k, 31, if c.ta { [c.k, c.m] } else { [c.m, c.k] })?;
        let b = draw(c.k * c.n, 32, if c.tb { [c.n, c.k] } else { [c.k, c.n] })?;
        let options = |coop_tile| MatmulOptions {
            transpose_a: c.ta,
            transpose_b: c.tb,
            f16_inputs: c.half == Half::Autocast,
            coop_tile,
            ..Default::default()
        };
        let want = matmul_with(&a, &b, &options(None))?.to_vec()?;
        let flops = 2.0 * (c.m * c.n * c.k) as f64;
        let per_rep = ((1e12 / flops) as usize).clamp(1, 64);
        let mut out = Vec::new();
        for t in &tiles {
            if !report.wants(&name(t)) {
                continue;
            }
            let o = options(Some(*t));
            let got = matmul_with(&a, &b, &o)?.to_vec()?;
            // The same f16 products summed in another order: f32 rounding of k terms, which
            // grows as k where partial sums grow (GPT-2's LM head: k = 50,257, the two k
            // groups' sums against one differed by 3e-3 in a result of 0.22).
            let tol = 1e-5 * (c.k as f32).sqrt() + 1e-7 * c.k as f32;
            if let Some((i, (g, w))) = got
                .iter()
                .zip(&want)
                .enumerate()
                .find(|(_, (g, w))| (**g - **w).abs() > tol * (1.0 + w.abs()) || !g.is_finite())
            {
                return Err(Error::ShapeMismatch {
                    op: format!("bench coop sweep {t:?}"),
                    detail: format!("wrong result at {i}: {g} vs {w}"),
                });
            }
            // The whole result's check idles the GPU (as `run_case`'s draw does).
            if c.m * c.n > 1 << 24 {
                super::elementwise::warm_up(dev, if quick { 0.1 } else { 0.5 })?;
            }
            let ms = time(dev, 2, if quick { 3 } else { 10 }, || {
                for _ in 0..per_rep {
                    matmul_with(&a, &b, &o)?;
                }
                Ok(())
            })? / per_rep as f64;
            out.push((*t, ms));
        }
        Ok(out)
    };
    match run() {
        Ok(rows) => {
            let flops = 2.0 * (c.m * c.n * c.k) as f64;
            for (t, ms) in rows {
                report.add_rate(&name(&t), ms, flops / ms / 1e9, "TFLOP/s");
            }
        }
        Err(e) => report.fail(&format!("{base}_coop"), &e),
    }
}

/// Tiles to sweep beside the presets, from `TANG_BENCH_COOP_TILES`: `;`-separated lists of
/// `sg_m,sg_n,frag_m,frag_n,bk,stages,store_frags[,kgroups]` (e.g. `2,2,4,3,32,1,1` for
/// 128 x 96 blocks), for trying a block shape without rebuilding. A list that does not parse, or
/// a tile the generator refuses, is reported on stderr and left out.
fn extra_coop_tiles() -> Vec<CoopTile> {
    let Ok(spec) = std::env::var("TANG_BENCH_COOP_TILES") else {
        return Vec::new();
    };
    let mut tiles = Vec::new();
    for item in spec.split(';').filter(|s| !s.trim().is_empty()) {
        let v: Vec<u32> = item
            .split(',')
            .filter_map(|x| x.trim().parse().ok())
            .collect();
        let (fields, kgroups) = match v.as_slice() {
            [head @ .., k] if head.len() == 7 => (head, *k),
            all => (all, 1),
        };
        let &[sg_m, sg_n, frag_m, frag_n, bk, stages, store_frags] = fields else {
            eprintln!("TANG_BENCH_COOP_TILES: `{item}` is not seven or eight numbers; left out");
            continue;
        };
        let t = CoopTile {
            sg_m,
            sg_n,
            frag_m,
            frag_n,
            bk,
            stages,
            store_frags,
            kgroups,
        };
        if t.is_valid() {
            tiles.push(t);
        } else {
            eprintln!(
                "TANG_BENCH_COOP_TILES: {t:?} is not a tile the generator supports; left out"
            );
        }
    }
    tiles
}

/// The character GPT's Linear products (16,384 tokens, width 384, `torch_anchors.py`'s
/// model) with the automatic choice and every tile preset, to tune the choice where a
/// training step spends its time: forward `X·Wᵀ` (NT), input gradient `G·W` (NN) and
/// weight gradient `Gᵀ·X` (TN, where the automatic choice splits the reduction; a forced
/// tile does not split).
fn gpt_shapes(dev: &Device, report: &mut Report, quick: bool) {
    gpt_weight_gradient_splits(dev, report, quick);
    const TOKENS: usize = 16384;
    let widths = [(1152, 384), (384, 384), (1536, 384), (384, 1536)];
    let mut cases = Vec::new();
    for (out, inp) in widths {
        cases.push(("NT", TOKENS, out, inp, false, true));
        cases.push(("NN", TOKENS, inp, out, false, false));
        cases.push(("TN", out, inp, TOKENS, true, false));
    }
    for (tag, m, n, k, ta, tb) in cases {
        let c = Case {
            m,
            n,
            k,
            ta,
            tb,
            half: Half::No,
        };
        let base = format!("matmul_gpt_{m}x{n}x{k}_{tag}");
        case(dev, report, &base, &c, None, None, quick);
        for t in TileConfig::PRESETS.into_iter().filter(|t| t.fits(dev)) {
            let name = format!("{base}_tile{}x{}x{}_{}x{}", t.bm, t.bn, t.bk, t.tm, t.tn);
            case(dev, report, &name, &c, Some(t), None, quick);
        }
    }
}

/// The GPT's weight gradients `Gᵀ·X` (TN, k = 16,384 tokens) split into `s` slices of the
/// reduction as the automatic choice splits them (`matmul_tn_split`: a batched product of
/// the slices, then a column sum), for every power-of-two `s` the automatic choice could pick
/// (`..._TN_split<s>`): the tuning table for its slice count. Each is checked against the
/// automatic product first.
fn gpt_weight_gradient_splits(dev: &Device, report: &mut Report, quick: bool) {
    const TOKENS: usize = 16384;
    // f16 tensors run on the tensor cores where the device has them (`_f16`).
    let dtypes: &[(DType, &str)] = if dev.info().tensor_cores {
        &[(DType::F32, ""), (DType::F16, "_f16")]
    } else {
        &[(DType::F32, "")]
    };
    for &(dtype, suffix) in dtypes {
        for (m, n) in [(1152, 384), (384, 384), (1536, 384), (384, 1536)] {
            for s in [2usize, 4, 8, 16, 32] {
                let name = format!("matmul_gpt_{m}x{n}x{TOKENS}_TN_split{s}{suffix}");
                if !report.wants(&name) {
                    continue;
                }
                let r = split_case(dev, m, n, TOKENS, s, dtype, quick);
                match r {
                    Ok(ms) => {
                        let tflops = 2.0 * (m * n * TOKENS) as f64 / ms / 1e9;
                        report.add_rate(&name, ms, tflops, "TFLOP/s");
                    }
                    Err(e) => report.fail(&name, &e),
                }
            }
        }
    }
}

/// Milliseconds of `Aᵀ·B` (A `[k, m]`, B `[k, n]`) in `s` slices.
fn split_case(
    dev: &Device,
    m: usize,
    n: usize,
    k: usize,
    s: usize,
    dtype: DType,
    quick: bool,
) -> Result<f64, Error> {
    let draw = |len: usize, seed: u64, shape: [usize; 2]| {
        tang_runtime::ops::to_dtype(&Tensor::from_slice(dev, &random(len, seed), &shape)?, dtype)
    };
    let a = draw(k * m, 21, [k, m])?;
    let b = draw(k * n, 22, [k, n])?;
    let o = MatmulOptions {
        transpose_a: true,
        ..Default::default()
    };
    let split = || matmul_tn_split(&a, &b, s);
    let want = matmul_with(&a, &b, &o)?.to_vec()?;
    let got = split()?.to_vec()?;
    if let Some((i, (g, w))) = got
        .iter()
        .zip(&want)
        .enumerate()
        .find(|(_, (g, w))| (**g - **w).abs() > 1e-3 * (1.0 + w.abs()) * (k as f32).sqrt())
    {
        return Err(Error::ShapeMismatch {
            op: "bench split matmul".into(),
            detail: format!("wrong result at {i}: {g} vs {w}"),
        });
    }
    let reps = if quick { 3 } else { 10 };
    time(dev, 2, reps, || split().map(drop))
}

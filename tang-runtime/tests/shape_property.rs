//! Property test: random shapes holding 0, 1, small, huge and overflowing dimensions fed
//! to every public operation that takes a shape or a size. The only allowed outcomes are
//! `Ok` with the right shape and values (against a CPU reference) or a typed error where
//! the reference says the request cannot be served; a panic, a wrong `Ok` or an error
//! on a request that fits all fail.
//!
//! Seeded and small enough for CI on lavapipe; it prints how many cases ended in each
//! outcome. More cases: `TANG_PROPERTY_CASES=5000 cargo test -p tang-runtime --test
//! shape_property -- --nocapture`.

#[allow(unused_imports)]
mod runtime_support;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use tang_runtime::ops;
use tang_runtime::{DType, Device, Error, Tensor};
use tang_testing::{Rng, device};

/// Inputs with more elements than this are not built with data (the reference would be
/// slow on the CPU and the kernels on lavapipe).
const MAX_DATA: usize = 512;

/// A dimension: mostly 0, 1 or small, sometimes huge or at the edge of `usize`.
fn dim(rng: &mut Rng) -> usize {
    match rng.below(20) {
        0..=2 => 0,
        3..=5 => 1,
        6..=15 => 2 + rng.below(5),
        16 => 1 << 31,
        17 => 1 << 40,
        18 => (1 << 62) - 1,
        _ => [usize::MAX, usize::MAX / 2 + 1][rng.below(2)],
    }
}

fn shape(rng: &mut Rng, lo: usize, hi: usize) -> Vec<usize> {
    let rank = lo + rng.below(hi - lo + 1);
    (0..rank).map(|_| dim(rng)).collect()
}

/// The element count of `shape`, `None` when it overflows (zero-aware).
fn numel(shape: &[usize]) -> Option<usize> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}

/// What a case expects: a result of this shape and these values (`None`: any values, for
/// empty or unchecked outputs), or an error.
enum Want {
    Ok(Vec<usize>, Option<Vec<f64>>),
    Err,
}

/// Whether `shape` can be allocated on `dev` (the constructors' contract).
fn fits(dev: &Device, shape: &[usize]) -> bool {
    numel(shape)
        .and_then(|n| n.checked_mul(4))
        .is_some_and(|b| b as u64 <= dev.info().limits.max_buffer_size)
}

/// An f32 tensor of `shape` with seeded data, and the data; `None` when it cannot or
/// should not be built (too large for the device or for the reference).
fn input(dev: &Device, rng: &mut Rng, shape: &[usize]) -> Option<(Tensor, Vec<f32>)> {
    let n = numel(shape).filter(|&n| n <= MAX_DATA)?;
    let data = rng.vec(n, 2.0);
    Some((Tensor::from_slice(dev, &data, shape).unwrap(), data))
}

/// `(outer, len, inner)` around `axis` of a non-empty shape.
fn around(s: &[usize], axis: usize) -> (usize, usize, usize) {
    let p = |d: &[usize]| d.iter().product::<usize>();
    (p(&s[..axis]), s[axis], p(&s[axis + 1..]))
}

/// One random case: the operation's name, what the reference expects and what tang did.
type Case = (&'static str, Want, Result<Tensor, Error>);

fn constructor(dev: &Device, rng: &mut Rng) -> Case {
    let s = shape(rng, 0, 3);
    let ok = fits(dev, &s);
    let n = numel(&s).unwrap_or(0);
    let kind = rng.below(4);
    let want = |v: f64| match ok {
        true => Want::Ok(s.clone(), Some(vec![v; n])),
        false => Want::Err,
    };
    match kind {
        0 => ("empty", want_shape(ok, &s), dev.empty(&s, DType::F32)),
        1 => ("zeros", want(0.0), Tensor::zeros(dev, &s)),
        2 => ("full", want(1.5), Tensor::full(dev, &s, 1.5)),
        _ => {
            // from_slice with a short slice: right only when it fills the shape.
            let len = rng.below(5);
            let w = if ok && n == len {
                Want::Ok(s.clone(), Some(vec![0.25; len]))
            } else {
                Want::Err
            };
            (
                "from_slice",
                w,
                Tensor::from_slice(dev, &vec![0.25; len], &s),
            )
        }
    }
}

fn want_shape(ok: bool, s: &[usize]) -> Want {
    if ok {
        Want::Ok(s.to_vec(), None)
    } else {
        Want::Err
    }
}

/// A tensor for shape-only operations: data when small, else an empty allocation.
fn any_input(dev: &Device, rng: &mut Rng, s: &[usize]) -> Option<(Tensor, Vec<f32>)> {
    if numel(s) == Some(0) {
        return Some((dev.empty(s, DType::F32).unwrap(), Vec::new()));
    }
    input(dev, rng, s)
}

fn reshape(dev: &Device, rng: &mut Rng) -> Option<Case> {
    let s = shape(rng, 1, 3);
    let (x, data) = any_input(dev, rng, &s)?;
    let mut t = shape(rng, 1, 3);
    if rng.below(2) == 0 {
        t = s.iter().rev().copied().collect();
    }
    let w = if numel(&t) == Some(x.len()) {
        Want::Ok(t.clone(), Some(data.iter().map(|&v| v as f64).collect()))
    } else {
        Want::Err
    };
    Some(("reshape", w, x.reshape(&t)))
}

fn reduction(dev: &Device, rng: &mut Rng) -> Option<Case> {
    let s = shape(rng, 1, 3);
    let (x, data) = any_input(dev, rng, &s)?;
    let op = rng.below(3);
    let axis = rng.below(s.len() + 1);
    let name = ["sum", "mean", "max"][op];
    let got = match op {
        0 => ops::sum(&x, axis),
        1 => ops::mean(&x, axis),
        _ => ops::max(&x, axis),
    };
    if axis >= s.len() {
        return Some((name, Want::Err, got));
    }
    let mut out: Vec<usize> = s
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != axis)
        .map(|(_, &d)| d)
        .collect();
    if out.is_empty() {
        out.push(1);
    }
    let w = if !fits(dev, &out) {
        Want::Err
    } else if numel(&out) == Some(0) {
        Want::Ok(out, None)
    } else if s[axis] == 0 {
        // Sum of nothing is 0; mean and max of nothing are undefined (an error).
        if op == 0 {
            Want::Ok(out.clone(), Some(vec![0.0; numel(&out).unwrap()]))
        } else {
            Want::Err
        }
    } else {
        let (outer, len, inner) = around(&s, axis);
        let mut v = Vec::new();
        for o in 0..outer {
            for i in 0..inner {
                let it = (0..len).map(|a| data[(o * len + a) * inner + i] as f64);
                v.push(match op {
                    0 => it.sum(),
                    1 => it.sum::<f64>() / len as f64,
                    _ => it.fold(f64::MIN, f64::max),
                });
            }
        }
        Want::Ok(out, Some(v))
    };
    Some((name, w, got))
}

fn rows_of(data: &[f32], cols: usize) -> Vec<&[f32]> {
    if cols == 0 {
        return Vec::new();
    }
    data.chunks(cols).collect()
}

fn row_op(dev: &Device, rng: &mut Rng) -> Option<Case> {
    let s = shape(rng, 1, 3);
    let (x, data) = any_input(dev, rng, &s)?;
    let cols = *s.last().unwrap();
    if cols > MAX_DATA {
        return None;
    }
    let op = rng.below(3);
    let eps = 1e-5;
    let norm_row = |r: &[f32], rms: bool| -> Vec<f64> {
        let n = r.len() as f64;
        let mean = if rms {
            0.0
        } else {
            r.iter().map(|&v| v as f64).sum::<f64>() / n
        };
        let var = r.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
        r.iter()
            .map(|&v| (v as f64 - mean) / (var + eps).sqrt())
            .collect()
    };
    let (name, got, rows): (_, _, Vec<Vec<f64>>) = match op {
        0 => {
            let y = ops::softmax(&x);
            let rows = rows_of(&data, cols)
                .into_iter()
                .map(|r| {
                    let m = r.iter().fold(f32::MIN, |a, &b| a.max(b)) as f64;
                    let e: Vec<f64> = r.iter().map(|&v| (v as f64 - m).exp()).collect();
                    let z: f64 = e.iter().sum();
                    e.iter().map(|v| v / z).collect()
                })
                .collect();
            ("softmax", y, rows)
        }
        _ => {
            let rms = op == 2;
            let w = Tensor::full(dev, &[cols.min(MAX_DATA)], 1.0);
            let b = Tensor::zeros(dev, &[cols.min(MAX_DATA)]);
            let (Ok(w), Ok(b)) = (w, b) else {
                return None;
            };
            let y = if rms {
                ops::rms_norm(&x, &w, eps as f32)
            } else {
                ops::layer_norm(&x, &w, &b, eps as f32)
            };
            let rows = rows_of(&data, cols)
                .into_iter()
                .map(|r| norm_row(r, rms))
                .collect();
            let name = if rms { "rms_norm" } else { "layer_norm" };
            (name, y.map(|o| o.y), rows)
        }
    };
    let w = if x.is_empty() {
        // Rows of a shape whose leading product overflows cannot be counted; the norms'
        // statistics `[rows, 2]` (NaN for empty rows) must fit the device.
        match numel(&s[..s.len() - 1]) {
            Some(rows) if op == 0 || fits(dev, &[rows, 2]) => Want::Ok(s.clone(), None),
            _ => Want::Err,
        }
    } else {
        Want::Ok(s.clone(), Some(rows.concat()))
    };
    Some((name, w, got))
}

fn cat_split(dev: &Device, rng: &mut Rng) -> Option<Case> {
    let s = shape(rng, 1, 3);
    let axis = rng.below(s.len());
    let mut s2 = s.clone();
    s2[axis] = dim(rng);
    let (a, da) = any_input(dev, rng, &s)?;
    let (b, db) = any_input(dev, rng, &s2)?;
    if rng.below(2) == 0 {
        let mut out = s.clone();
        let Some(total) = s[axis].checked_add(s2[axis]) else {
            return Some(("cat", Want::Err, ops::cat(&[&a, &b], axis)));
        };
        out[axis] = total;
        let w = if !fits(dev, &out) {
            Want::Err
        } else if a.is_empty() && b.is_empty() {
            Want::Ok(out, None)
        } else {
            let (outer, _, inner) = around(&out, axis);
            let (pa, pb) = (s[axis] * inner, s2[axis] * inner);
            let mut v = Vec::new();
            for o in 0..outer {
                v.extend(da[o * pa..(o + 1) * pa].iter().map(|&x| x as f64));
                v.extend(db[o * pb..(o + 1) * pb].iter().map(|&x| x as f64));
            }
            Want::Ok(out, Some(v))
        };
        return Some(("cat", w, ops::cat(&[&a, &b], axis)));
    }
    // Split `a` into two pieces whose sizes may not sum (or may wrap around).
    let first = if rng.below(3) == 0 {
        dim(rng)
    } else {
        rng.below(s[axis].saturating_add(1).min(8))
    };
    let second = s[axis].wrapping_sub(first);
    let got = ops::split(&a, axis, &[first, second]);
    let got = got.map(|mut p| p.pop().expect("two pieces"));
    let mut out = s.clone();
    out[axis] = second;
    let w = if first.checked_add(second) != Some(s[axis]) {
        Want::Err
    } else if a.is_empty() {
        Want::Ok(out, None)
    } else {
        let (outer, len, inner) = around(&s, axis);
        let mut v = Vec::new();
        for o in 0..outer {
            let row = &da[o * len * inner..(o + 1) * len * inner];
            v.extend(row[first * inner..].iter().map(|&x| x as f64));
        }
        Want::Ok(out, Some(v))
    };
    Some(("split", w, got))
}

fn matmul_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
    let batch: Vec<usize> = shape(rng, 0, 1);
    let (m, k, n) = (dim(rng), dim(rng), dim(rng));
    let mut sa = batch.clone();
    sa.extend([m, k]);
    let sb = if rng.below(2) == 0 {
        vec![k, n]
    } else {
        let mut v = batch.clone();
        v.extend([k, n]);
        v
    };
    let (a, da) = any_input(dev, rng, &sa)?;
    let (b, db) = any_input(dev, rng, &sb)?;
    let got = ops::matmul(&a, &b);
    let mut out = batch.clone();
    out.extend([m, n]);
    let fits32 = |s: &[usize]| numel(s).is_some_and(|e| e <= u32::MAX as usize);
    let w = if !fits(dev, &out) || !fits32(&out) {
        Want::Err
    } else if numel(&out) == Some(0) {
        Want::Ok(out, None)
    } else {
        let nb = numel(&batch).unwrap();
        let b_batched = sb.len() > 2;
        let mut v = Vec::new();
        for bi in 0..nb {
            for i in 0..m {
                for j in 0..n {
                    let bo = if b_batched { bi * k * n } else { 0 };
                    v.push(
                        (0..k)
                            .map(|p| da[bi * m * k + i * k + p] as f64 * db[bo + p * n + j] as f64)
                            .sum(),
                    );
                }
            }
        }
        Want::Ok(out, Some(v))
    };
    Some(("matmul", w, got))
}

fn embedding_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
    let ids_shape = shape(rng, 1, 2);
    let (vocab, width) = (dim(rng), dim(rng));
    let n = numel(&ids_shape).filter(|&n| n <= MAX_DATA)?;
    let (w, dw) = any_input(dev, rng, &[vocab, width])?;
    let ids: Vec<u32> = (0..n)
        .map(|_| rng.below(vocab.clamp(1, 1 << 20)) as u32)
        .collect();
    let t = Tensor::from_u32(dev, &ids, &ids_shape).unwrap();
    let got = ops::embedding(&t, &w);
    let mut out = ids_shape.clone();
    out.push(width);
    let w = if !fits(dev, &out) || (n > 0 && vocab == 0) {
        // An id with no row to read: tang's contract is an error or zeros; only the
        // shape is checked then.
        if fits(dev, &out) {
            Want::Ok(out, None)
        } else {
            Want::Err
        }
    } else if numel(&out) == Some(0) {
        Want::Ok(out, None)
    } else {
        let v = ids
            .iter()
            .flat_map(|&i| dw[i as usize * width..(i as usize + 1) * width].iter())
            .map(|&x| x as f64)
            .collect();
        Want::Ok(out, Some(v))
    };
    Some(("embedding", w, got))
}

fn embedding_backward_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
    let n = dim(rng).min(8);
    let (vocab, width) = (dim(rng), dim(rng));
    let (g, dg) = any_input(dev, rng, &[n, width])?;
    let ids: Vec<u32> = (0..n)
        .map(|_| rng.below(vocab.clamp(1, 8)) as u32)
        .collect();
    let t = Tensor::from_u32(dev, &ids, &[n]).unwrap();
    let got = ops::embedding_backward(&g, &t, vocab);
    let out = vec![vocab, width];
    let w = match numel(&out) {
        Some(e) if fits(dev, &out) && e <= u32::MAX as usize => {
            // Row v: the sum of the gradient rows whose id is v (ids >= vocab add nothing).
            let mut v = vec![0.0; e];
            for (row, &id) in ids.iter().enumerate() {
                if (id as usize) < vocab {
                    for c in 0..width {
                        v[id as usize * width + c] += dg[row * width + c] as f64;
                    }
                }
            }
            Want::Ok(out, Some(v))
        }
        _ => Want::Err,
    };
    Some(("embedding_backward", w, got))
}

fn transpose_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
    let s = shape(rng, 1, 3);
    let (x, dx) = any_input(dev, rng, &s)?;
    // The last two dimensions swapped (the tiled transpose kernel); a vector has none.
    let r = s.len();
    let dims: Vec<usize> = if r >= 2 {
        let mut d: Vec<usize> = (0..r).collect();
        d.swap(r - 2, r - 1);
        d
    } else {
        vec![1, 0]
    };
    let got = ops::permute(&x, &dims);
    let w = if s.len() < 2 {
        Want::Err
    } else {
        let r = s.len();
        let mut out = s.clone();
        out.swap(r - 2, r - 1);
        if x.is_empty() {
            Want::Ok(out, None)
        } else {
            let (rows, cols) = (s[r - 2], s[r - 1]);
            let mut v = Vec::new();
            for b in 0..x.len() / (rows * cols) {
                for c in 0..cols {
                    for i in 0..rows {
                        v.push(dx[b * rows * cols + i * cols + c] as f64);
                    }
                }
            }
            Want::Ok(out, Some(v))
        }
    };
    Some(("transpose", w, got))
}

fn cross_entropy_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
    let rows = dim(rng);
    let classes = dim(rng);
    let (x, dx) = any_input(dev, rng, &[rows, classes])?;
    let n = rows.min(MAX_DATA);
    if n != rows {
        return None;
    }
    let t: Vec<u32> = (0..rows)
        .map(|_| rng.below(classes.clamp(1, 1 << 20)) as u32)
        .collect();
    let targets = Tensor::from_u32(dev, &t, &[rows]).unwrap();
    let got = ops::cross_entropy(&x, &targets, None).map(|c| c.loss);
    // PyTorch: the mean of logsumexp - x[target] (NaN for no rows or no classes).
    let loss = if rows == 0 || classes == 0 {
        f64::NAN
    } else {
        rows_of(&dx, classes)
            .iter()
            .zip(&t)
            .map(|(r, &ti)| {
                let m = r.iter().fold(f32::MIN, |a, &b| a.max(b)) as f64;
                let z: f64 = r.iter().map(|&v| (v as f64 - m).exp()).sum();
                m + z.ln() - r[ti as usize] as f64
            })
            .sum::<f64>()
            / rows as f64
    };
    let w = if classes > u32::MAX as usize {
        Want::Err
    } else {
        Want::Ok(vec![1], Some(vec![loss]))
    };
    Some(("cross_entropy", w, got))
}

fn attention_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
    // Mostly small dims (0 to 4), sometimes huge ones.
    let s: Vec<usize> = (0..4)
        .map(|_| {
            let d = dim(rng);
            if rng.below(4) == 0 { d } else { d.min(4) }
        })
        .collect();
    let decode = rng.below(2) == 0;
    let mut ks = s.clone();
    let past = if decode {
        ks[2] = dim(rng).min(8);
        [0, 1, 3, usize::MAX, usize::MAX - 1, 1 << 40][rng.below(6)]
    } else {
        0
    };
    let (q, _) = any_input(dev, rng, &s)?;
    let kv_n = numel(&ks).filter(|&n| n <= MAX_DATA)?;
    // Constant values: every output row is that constant whatever the scores.
    let kv = Tensor::from_slice(dev, &vec![0.75; kv_n], &ks).unwrap();
    let got = if decode {
        ops::attention_decode(&q, &kv, &kv, past, None)
    } else {
        ops::attention(&q, &kv, &kv, &ops::AttentionOptions::CAUSAL).map(|(o, _)| o)
    };
    let valid = s.iter().all(|&d| d > 0)
        && ks.iter().all(|&d| d > 0)
        && s[3] <= 128
        && past.checked_add(s[2]).is_some_and(|e| e <= ks[2]);
    let w = if valid {
        Want::Ok(s.clone(), Some(vec![0.75; q.len()]))
    } else {
        Want::Err
    };
    Some((
        if decode {
            "attention_decode"
        } else {
            "attention"
        },
        w,
        got,
    ))
}

fn launch_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
    let s = shape(rng, 1, 3);
    let (x, dx) = any_input(dev, rng, &s)?;
    let got = dev.launch(runtime_support::add(), &[&x, &x], &[], &[]);
    let got = got.map(|mut v| v.pop().expect("one output"));
    let w = Want::Ok(
        s.clone(),
        Some(dx.iter().map(|&v| 2.0 * v as f64).collect()),
    );
    Some(("launch", w, got))
}

fn sum_backward_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
    let s = shape(rng, 1, 3);
    let axis = rng.below(s.len());
    let dy = Tensor::from_slice(dev, &[1.0], &[1]).unwrap();
    let got = ops::sum_backward(&dy, &s, axis);
    // dy must have the forward output's shape (the input's without the axis, `[1]` for
    // rank 1): `[1]` here.
    let mut out: Vec<usize> = s.clone();
    out.remove(axis);
    let dy_fits = out.is_empty() || out == [1];
    let w = match numel(&s) {
        Some(n) if dy_fits && fits(dev, &s) && n <= u32::MAX as usize => {
            Want::Ok(s.clone(), Some(vec![1.0; n]))
        }
        _ => Want::Err,
    };
    Some(("sum_backward", w, got))
}

/// Compares one case; `Err(reason)` when tang's outcome is wrong.
fn judge(want: Want, got: Result<Tensor, Error>) -> Result<&'static str, String> {
    match (want, got) {
        (Want::Ok(shape, values), Ok(t)) => {
            if t.shape() != shape.as_slice() {
                return Err(format!("shape {:?}, expected {shape:?}", t.shape()));
            }
            if let Some(v) = values {
                let g = t.to_vec().map_err(|e| format!("read failed: {e}"))?;
                for (i, (&a, &b)) in g.iter().zip(&v).enumerate() {
                    let same_nan = a.is_nan() && b.is_nan();
                    if !same_nan && (a as f64 - b).abs() > 1e-3 * (1.0 + b.abs()) {
                        return Err(format!("element {i} is {a}, expected {b}"));
                    }
                }
                if g.len() != v.len() {
                    return Err(format!("{} values, expected {}", g.len(), v.len()));
                }
            }
            Ok("ok")
        }
        (Want::Err, Err(e)) => Ok(match e {
            Error::TooLarge { .. } => "TooLarge",
            Error::ShapeMismatch { .. } => "ShapeMismatch",
            Error::DType { .. } => "DType",
            Error::Arity { .. } => "Arity",
            _ => return Err(format!("unexpected error kind: {e}")),
        }),
        (Want::Ok(shape, _), Err(e)) => Err(format!("error {e}, expected Ok of {shape:?}")),
        (Want::Err, Ok(t)) => Err(format!("Ok of {:?}, expected an error", t.shape())),
    }
}

#[test]
fn random_shapes_give_a_right_result_or_a_typed_error() {
    let dev = device();
    let cases: usize = std::env::var("TANG_PROPERTY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    type Gen = fn(&Device, &mut Rng) -> Option<Case>;
    let gens: [Gen; 13] = [
        |d, r| Some(constructor(d, r)),
        reshape,
        reduction,
        row_op,
        cat_split,
        matmul_case,
        embedding_case,
        embedding_backward_case,
        transpose_case,
        cross_entropy_case,
        attention_case,
        launch_case,
        sum_backward_case,
    ];
    let mut rng = Rng::new(0x7a6e_5eed);
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in 0..cases {
        let g = gens[case % gens.len()];
        let mut case_rng = Rng::new(rng.next_u64());
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let Some((name, want, got)) = g(&dev, &mut case_rng) else {
                return ("(input not built)", Ok("skipped"));
            };
            let shown = format!("{:?}", got.as_ref().map(|t| t.shape().to_vec()));
            (
                name,
                judge(want, got).map_err(|e| format!("{e} (got {shown})")),
            )
        }));
        match outcome {
            Ok((name, Ok(kind))) => *counts.entry((name, kind)).or_default() += 1,
            Ok((name, Err(e))) => failures.push(format!("case {case} ({name}): {e}")),
            Err(_) => failures.push(format!("case {case}: panicked")),
        }
    }
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    for ((name, kind), n) in &counts {
        println!("{name:>18} {kind:<14} {n}");
        *totals.entry(kind).or_default() += n;
    }
    println!("{cases} cases: {totals:?}, {} failures", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        totals.get("ok").copied().unwrap_or(0) > cases / 4,
        "too few Ok cases"
    );
    assert!(totals.get("TooLarge").copied().unwrap_or(0) > cases / 50);
}

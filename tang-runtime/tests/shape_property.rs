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
// The operation-specific generators; the shared ones and the judge stay here.
mod shape_property_cases;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use tang_runtime::ops;
use tang_runtime::{DType, Device, Error, Tensor};
use tang_testing::{Rng, device};

use shape_property_cases::{
    attention_case, cross_entropy_case, embedding_backward_case, embedding_case, launch_case,
    matmul_case, sum_backward_case, transpose_case,
};

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

//! The operation-specific case generators of `shape_property.rs` (matmul, embedding,
//! transpose, cross-entropy, attention, the elementwise launch, the sum's backward): each
//! builds random inputs, calls tang and says what the CPU reference expects.

use super::*;

pub(super) fn matmul_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
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

pub(super) fn embedding_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
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

pub(super) fn embedding_backward_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
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

pub(super) fn transpose_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
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

pub(super) fn cross_entropy_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
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

pub(super) fn attention_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
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

pub(super) fn launch_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
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

pub(super) fn sum_backward_case(dev: &Device, rng: &mut Rng) -> Option<Case> {
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

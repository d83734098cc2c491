//! Broadcasting, layout and indexing ops on the GPU against f64 CPU references, on shapes
//! with 0-sized, 1, 3, 17 and 257 dimensions, and their backwards against f64 finite
//! differences of the forward.

mod ops_support;

use ops_support::{coords, f64s, finite_diff, flat};
use tang_runtime::{DType, Error, Tensor, ops};
use tang_testing::{assert_close, devices, random};

/// CPU `expand`: `out[c] = x[c with broadcast dims at 0]`.
fn cpu_expand(x: &[f64], xs: &[usize], shape: &[usize]) -> Vec<f64> {
    let n: usize = shape.iter().product();
    let lead = shape.len() - xs.len();
    (0..n)
        .map(|i| {
            let c = coords(i, shape);
            let src: Vec<usize> = (0..xs.len())
                .map(|d| if xs[d] == 1 { 0 } else { c[d + lead] })
                .collect();
            x[flat(&src, xs)]
        })
        .collect()
}

/// CPU `permute`.
fn cpu_permute(x: &[f64], xs: &[usize], dims: &[usize]) -> Vec<f64> {
    let out_shape: Vec<usize> = dims.iter().map(|&d| xs[d]).collect();
    let n: usize = xs.iter().product();
    (0..n)
        .map(|i| {
            let c = coords(i, &out_shape);
            let mut src = vec![0; xs.len()];
            for (o, &d) in dims.iter().enumerate() {
                src[d] = c[o];
            }
            x[flat(&src, xs)]
        })
        .collect()
}

/// CPU `narrow`.
fn cpu_narrow(x: &[f64], xs: &[usize], dim: usize, start: usize, len: usize) -> Vec<f64> {
    let mut shape = xs.to_vec();
    shape[dim] = len;
    let n: usize = shape.iter().product();
    (0..n)
        .map(|i| {
            let mut c = coords(i, &shape);
            c[dim] += start;
            x[flat(&c, xs)]
        })
        .collect()
}

#[test]
fn broadcast_shapes_follow_numpy() {
    assert_eq!(
        ops::broadcast_shapes(&[&[4, 1], &[4, 5]]).unwrap(),
        vec![4, 5]
    );
    assert_eq!(
        ops::broadcast_shapes(&[&[2, 1, 7], &[2, 3, 7]]).unwrap(),
        vec![2, 3, 7]
    );
    assert_eq!(
        ops::broadcast_shapes(&[&[5], &[3, 1], &[]]).unwrap(),
        vec![3, 5]
    );
    assert_eq!(
        ops::broadcast_shapes(&[&[0, 1], &[1, 3]]).unwrap(),
        vec![0, 3]
    );
    assert_eq!(ops::broadcast_shapes(&[]).unwrap(), Vec::<usize>::new());
    let e = ops::broadcast_shapes(&[&[2, 3], &[3, 2]]).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e:?}");
    assert!(e.to_string().contains("equal or 1"), "{e}");
    assert!(ops::broadcast_shapes(&[&[0], &[2]]).is_err());
}

#[test]
fn expand_and_sum_to_shape_match_the_cpu_and_finite_differences() {
    let cases: [(&[usize], &[usize]); 7] = [
        (&[3, 1], &[3, 17]),
        (&[257], &[3, 257]),
        (&[1, 3, 1], &[2, 3, 17]),
        (&[1], &[3, 17]),
        (&[17, 1], &[17, 0]),
        (&[0, 1], &[2, 0, 3]),
        (&[2, 3], &[2, 3]),
    ];
    for dev in devices() {
        for (seed, &(xs, shape)) in cases.iter().enumerate() {
            let n: usize = xs.iter().product();
            let xv = random(n, seed as u64);
            let x = Tensor::from_slice(&dev, &xv, xs).unwrap();
            let y = ops::expand(&x, shape).unwrap();
            assert_eq!(y.shape(), shape);
            let want = cpu_expand(&f64s(&xv), xs, shape);
            assert_close("expand", &y.to_vec().unwrap(), &want, 0.0, 0.0);

            let m: usize = shape.iter().product();
            let wv = random(m, 100 + seed as u64);
            let w = Tensor::from_slice(&dev, &wv, shape).unwrap();
            let g = ops::expand_backward(&w, xs).unwrap();
            assert_eq!(g.shape(), xs);
            let fd = finite_diff(|x| cpu_expand(x, xs, shape), &f64s(&xv), &f64s(&wv), 1e-3);
            assert_close("expand_backward", &g.to_vec().unwrap(), &fd, 1e-4, 1e-5);
        }
        let x = Tensor::from_slice(&dev, &[1.0; 6], &[2, 3]).unwrap();
        for bad in [&[3, 2][..], &[3][..], &[2, 3, 1][..]] {
            let e = ops::expand(&x, bad).unwrap_err();
            assert!(matches!(e, Error::ShapeMismatch { .. }), "{bad:?}: {e:?}");
        }
        for bad in [&[3, 2][..], &[2][..], &[1, 2, 3][..]] {
            let e = ops::sum_to_shape(&x, bad).unwrap_err();
            assert!(matches!(e, Error::ShapeMismatch { .. }), "{bad:?}: {e:?}");
        }
        assert_eq!(
            ops::sum_to_shape(&x, &[3]).unwrap().to_vec().unwrap(),
            vec![2.0; 3]
        );
        let ids = Tensor::from_u32(&dev, &[1, 2], &[2]).unwrap();
        let u = ops::expand(&ids, &[3, 2]).unwrap();
        assert_eq!(u.to_vec_u32().unwrap(), vec![1, 2, 1, 2, 1, 2]);
        let e = ops::sum_to_shape(&ids, &[1]).unwrap_err();
        assert!(
            matches!(
                e,
                Error::DType {
                    expected: DType::F32,
                    ..
                }
            ),
            "{e:?}"
        );
    }
}

#[test]
fn permute_matches_the_cpu_and_its_backward_is_the_inverse() {
    let cases: [(&[usize], &[usize]); 8] = [
        (&[2, 3, 5, 4], &[0, 2, 1, 3]),
        (&[2, 3, 17], &[0, 2, 1]),
        (&[2, 3, 2, 4], &[0, 2, 3, 1]),
        (&[2, 5, 3, 4], &[0, 2, 1, 3]),
        (&[3, 17], &[1, 0]),
        (&[257, 3], &[1, 0]),
        (&[2, 3, 4, 5, 1], &[4, 3, 0, 2, 1]),
        (&[2, 0, 3], &[2, 0, 1]),
    ];
    for dev in devices() {
        for (seed, &(xs, dims)) in cases.iter().enumerate() {
            let n: usize = xs.iter().product();
            let xv = random(n, seed as u64);
            let x = Tensor::from_slice(&dev, &xv, xs).unwrap();
            let y = ops::permute(&x, dims).unwrap();
            let want = cpu_permute(&f64s(&xv), xs, dims);
            assert_close("permute", &y.to_vec().unwrap(), &want, 0.0, 0.0);
            let wv = random(n, 50 + seed as u64);
            let w = Tensor::from_slice(&dev, &wv, y.shape()).unwrap();
            let g = ops::permute_backward(&w, dims).unwrap();
            assert_eq!(g.shape(), xs);
            let fd = finite_diff(|x| cpu_permute(x, xs, dims), &f64s(&xv), &f64s(&wv), 1e-3);
            assert_close("permute_backward", &g.to_vec().unwrap(), &fd, 1e-4, 1e-5);
        }
        let x = Tensor::from_slice(&dev, &[0.0; 6], &[2, 3]).unwrap();
        for bad in [&[0, 0][..], &[0][..], &[1, 2][..]] {
            let e = ops::permute(&x, bad).unwrap_err();
            assert!(matches!(e, Error::ShapeMismatch { .. }), "{bad:?}: {e:?}");
        }
    }
}

#[test]
fn narrow_slice_scatter_cat_stack() {
    for dev in devices() {
        let cases: [(&[usize], usize, usize, usize); 5] = [
            (&[3, 17], 1, 4, 9),
            (&[257, 3], 0, 250, 7),
            (&[2, 3, 17], 1, 1, 2),
            (&[4, 5], 0, 2, 0),
            (&[0, 5], 1, 1, 3),
        ];
        for (seed, &(xs, dim, start, len)) in cases.iter().enumerate() {
            let n: usize = xs.iter().product();
            let xv = random(n, seed as u64);
            let x = Tensor::from_slice(&dev, &xv, xs).unwrap();
            let y = ops::narrow(&x, dim, start, len).unwrap();
            let want = cpu_narrow(&f64s(&xv), xs, dim, start, len);
            assert_close("narrow", &y.to_vec().unwrap(), &want, 0.0, 0.0);
            let wv = random(y.len(), 70 + seed as u64);
            let w = Tensor::from_slice(&dev, &wv, y.shape()).unwrap();
            let g = ops::narrow_backward(&w, xs, dim, start).unwrap();
            let fd = finite_diff(
                |x| cpu_narrow(x, xs, dim, start, len),
                &f64s(&xv),
                &f64s(&wv),
                1e-3,
            );
            assert_close("narrow_backward", &g.to_vec().unwrap(), &fd, 1e-4, 1e-5);
        }
        let x = Tensor::from_slice(&dev, &[0.0; 6], &[2, 3]).unwrap();
        assert!(matches!(
            ops::narrow(&x, 1, 2, 2),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(
            ops::narrow(&x, 2, 0, 1),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(
            ops::narrow(&x, 1, usize::MAX, 2),
            Err(Error::ShapeMismatch { .. })
        ));

        // A KV cache of [heads = 2, positions = 5, dim = 3] filled one position at a time.
        let cache = Tensor::zeros(&dev, &[2, 5, 3]).unwrap();
        let mut want = vec![0.0f32; 30];
        for pos in 0..4 {
            let step: Vec<f32> = (0..6).map(|i| (pos * 10 + i) as f32).collect();
            let s = Tensor::from_slice(&dev, &step, &[2, 1, 3]).unwrap();
            ops::slice_scatter_(&cache, &s, 1, pos).unwrap();
            for h in 0..2 {
                for d in 0..3 {
                    want[h * 15 + pos * 3 + d] = step[h * 3 + d];
                }
            }
        }
        assert_eq!(cache.to_vec().unwrap(), want);
        let s = Tensor::from_slice(&dev, &[0.0; 12], &[2, 2, 3]).unwrap();
        assert!(matches!(
            ops::slice_scatter_(&cache, &s, 1, 4),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(
            ops::slice_scatter_(&cache, &cache, 1, 0),
            Err(Error::Aliasing { .. })
        ));
        let out = ops::slice_scatter(&cache, &s, 1, 3).unwrap();
        assert_eq!(
            cache.to_vec().unwrap(),
            want,
            "slice_scatter leaves its input alone"
        );
        assert_eq!(out.to_vec().unwrap()[9..15], [0.0; 6]);

        let a = Tensor::from_slice(&dev, &random(6, 1), &[2, 3]).unwrap();
        let b = Tensor::from_slice(&dev, &random(6, 2), &[2, 3]).unwrap();
        let st = ops::stack(&[&a, &b], 1).unwrap();
        assert_eq!(st.shape(), &[2, 2, 3]);
        let (av, bv) = (a.to_vec().unwrap(), b.to_vec().unwrap());
        let sv = st.to_vec().unwrap();
        assert_eq!(&sv[0..3], &av[0..3]);
        assert_eq!(&sv[3..6], &bv[0..3]);
        assert_eq!(&sv[6..9], &av[3..6]);
        let back = ops::stack_backward(&st, 1).unwrap();
        assert_eq!(back[0].to_vec().unwrap(), av);
        assert_eq!(back[1].to_vec().unwrap(), bv);
        let c = ops::cat(&[&a, &b], 0).unwrap();
        let parts = ops::cat_backward(&c, &[2, 2], 0).unwrap();
        assert_eq!(parts[1].to_vec().unwrap(), bv);
        assert!(matches!(
            ops::stack(&[&a, &c], 0),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(matches!(
            ops::stack(&[&a, &b], 3),
            Err(Error::ShapeMismatch { .. })
        ));
    }
}

/// CPU `index_select` (0 for an out-of-range index).
fn cpu_index_select(x: &[f64], xs: &[usize], dim: usize, idx: &[u32]) -> Vec<f64> {
    let mut shape = xs.to_vec();
    shape[dim] = idx.len();
    let n: usize = shape.iter().product();
    (0..n)
        .map(|i| {
            let mut c = coords(i, &shape);
            let id = idx[c[dim]] as usize;
            if id >= xs[dim] {
                return 0.0;
            }
            c[dim] = id;
            x[flat(&c, xs)]
        })
        .collect()
}

/// CPU `gather` (0 for an out-of-range index).
fn cpu_gather(x: &[f64], xs: &[usize], dim: usize, idx: &[u32], is: &[usize]) -> Vec<f64> {
    (0..idx.len())
        .map(|i| {
            let mut c = coords(i, is);
            let id = idx[i] as usize;
            if id >= xs[dim] {
                return 0.0;
            }
            c[dim] = id;
            x[flat(&c, xs)]
        })
        .collect()
}

/// Seeded indices below `bound` (some past it when `bound` exceeds the true length).
fn indices(n: usize, bound: u32, seed: u64) -> Vec<u32> {
    random(n, seed)
        .iter()
        .map(|v| ((v + 1.0) * 0.5 * bound as f32) as u32 % bound.max(1))
        .collect()
}

#[test]
fn index_select_and_its_index_add_backward() {
    let cases: [(&[usize], usize, usize); 5] = [
        (&[17, 3], 0, 40),
        (&[3, 257], 1, 5),
        (&[2, 5, 3], 1, 7),
        (&[4, 0], 0, 3),
        (&[5, 2], 0, 0),
    ];
    for dev in devices() {
        for (seed, &(xs, dim, k)) in cases.iter().enumerate() {
            let n: usize = xs.iter().product();
            let xv = random(n, seed as u64);
            // Some indices past the end: uploaded, they are an error at once; made on the
            // GPU (a copy the host knows nothing of), they read 0, get no gradient, and
            // the next read reports them.
            let idx = indices(k, xs[dim] as u32 + 1, 30 + seed as u64);
            let past_end = idx.iter().any(|&i| i as usize >= xs[dim]);
            let x = Tensor::from_slice(&dev, &xv, xs).unwrap();
            let it = Tensor::from_u32(&dev, &idx, &[k]).unwrap();
            let r = ops::index_select(&x, dim, &it);
            assert_eq!(matches!(r, Err(Error::IndexOutOfRange { .. })), past_end);
            let it = ops::clone(&it).unwrap();
            let y = ops::index_select(&x, dim, &it).unwrap();
            if past_end {
                assert!(matches!(y.to_vec(), Err(Error::IndexOutOfRange { .. })));
            }
            let want = cpu_index_select(&f64s(&xv), xs, dim, &idx);
            assert_close("index_select", &y.to_vec().unwrap(), &want, 0.0, 0.0);
            let wv = random(y.len(), 60 + seed as u64);
            let w = Tensor::from_slice(&dev, &wv, y.shape()).unwrap();
            let g = ops::index_select_backward(&w, xs, dim, &it).unwrap();
            let fd = finite_diff(
                |x| cpu_index_select(x, xs, dim, &idx),
                &f64s(&xv),
                &f64s(&wv),
                1e-3,
            );
            assert_close(
                "index_select_backward",
                &g.to_vec().unwrap(),
                &fd,
                1e-4,
                1e-5,
            );
        }
        let x = Tensor::from_slice(&dev, &[0.0; 6], &[2, 3]).unwrap();
        let f = Tensor::from_slice(&dev, &[0.0; 2], &[2]).unwrap();
        assert!(matches!(
            ops::index_select(&x, 0, &f),
            Err(Error::DType {
                expected: DType::U32,
                ..
            })
        ));
        let i2 = Tensor::from_u32(&dev, &[0; 4], &[2, 2]).unwrap();
        assert!(matches!(
            ops::index_select(&x, 0, &i2),
            Err(Error::ShapeMismatch { .. })
        ));
    }
}

#[test]
fn gather_and_its_scatter_add_backward() {
    let cases: [(&[usize], usize, &[usize]); 4] = [
        (&[3, 17], 1, &[3, 5]),
        (&[17, 3], 0, &[40, 2]),
        (&[2, 3, 4], 2, &[2, 2, 9]),
        (&[3, 4], 1, &[0, 4]),
    ];
    for dev in devices() {
        for (seed, &(xs, dim, is)) in cases.iter().enumerate() {
            let n: usize = xs.iter().product();
            let m: usize = is.iter().product();
            let xv = random(n, seed as u64);
            let idx = indices(m, xs[dim] as u32 + 1, 40 + seed as u64);
            let past_end = idx.iter().any(|&i| i as usize >= xs[dim]);
            let x = Tensor::from_slice(&dev, &xv, xs).unwrap();
            let it = Tensor::from_u32(&dev, &idx, is).unwrap();
            let r = ops::gather(&x, dim, &it);
            assert_eq!(matches!(r, Err(Error::IndexOutOfRange { .. })), past_end);
            // As index_select: GPU-made indices read 0 and report at the next read.
            let it = ops::clone(&it).unwrap();
            let y = ops::gather(&x, dim, &it).unwrap();
            if past_end {
                assert!(matches!(y.to_vec(), Err(Error::IndexOutOfRange { .. })));
            }
            let want = cpu_gather(&f64s(&xv), xs, dim, &idx, is);
            assert_close("gather", &y.to_vec().unwrap(), &want, 0.0, 0.0);
            let wv = random(m, 80 + seed as u64);
            let w = Tensor::from_slice(&dev, &wv, is).unwrap();
            let g = ops::gather_backward(&w, xs, dim, &it).unwrap();
            let fd = finite_diff(
                |x| cpu_gather(x, xs, dim, &idx, is),
                &f64s(&xv),
                &f64s(&wv),
                1e-3,
            );
            assert_close("gather_backward", &g.to_vec().unwrap(), &fd, 1e-4, 1e-5);
            // Deterministic: a second run gives the same bits.
            let again = ops::gather_backward(&w, xs, dim, &it).unwrap();
            assert_eq!(g.to_vec().unwrap(), again.to_vec().unwrap());
        }
        let x = Tensor::from_slice(&dev, &[0.0; 6], &[2, 3]).unwrap();
        let wide = Tensor::from_u32(&dev, &[0; 8], &[2, 4]).unwrap();
        assert!(matches!(
            ops::gather(&x, 0, &wide),
            Err(Error::ShapeMismatch { .. })
        ));
    }
}

#[test]
fn index_copy_writes_rows_in_place() {
    for dev in devices() {
        let x = Tensor::from_slice(&dev, &[0.0; 12], &[3, 4]).unwrap();
        let src = Tensor::from_slice(&dev, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).unwrap();
        // Index 9 is past the end: skipped.
        let idx = Tensor::from_u32(&dev, &[3, 9], &[2]).unwrap();
        ops::index_copy_(&x, 1, &idx, &src).unwrap();
        assert_eq!(
            x.to_vec().unwrap(),
            vec![0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 5.0]
        );
        let bad = Tensor::from_slice(&dev, &[0.0; 4], &[2, 2]).unwrap();
        assert!(matches!(
            ops::index_copy_(&x, 1, &idx, &bad),
            Err(Error::ShapeMismatch { .. })
        ));
        let other = tang_testing::device();
        let far = Tensor::from_slice(&other, &[0.0; 6], &[3, 2]).unwrap();
        let e = ops::index_copy_(&x, 1, &idx, &far).unwrap_err();
        assert!(matches!(e, Error::DeviceMismatch { .. }), "{e:?}");
        assert!(e.to_string().contains("expected one of device"), "{e}");
        // Kernels without their own device check fail the same way at dispatch.
        let w = Tensor::from_slice(&other, &[0.0; 8], &[4, 2]).unwrap();
        let e = ops::matmul(&x, &w).unwrap_err();
        assert!(matches!(e, Error::DeviceMismatch { .. }), "{e:?}");
    }
}

/// `split_heads` equals narrow + reshape + permute on the CPU, for grouped-query packing
/// (3 query heads, 1 kv head each side), so does `split_qkv_heads` (one launch at D = 4,
/// three copies at D = 3); `merge_heads` of all parts gives the packed tensor back (one
/// launch for three parts at D = 4); bad shapes are errors that say what was expected.
#[test]
fn packed_heads_split_and_merge_match_the_cpu() {
    for (dev, d) in devices()
        .into_iter()
        .flat_map(|dev| [(dev.clone(), 3), (dev.clone(), 4), (dev, 6)])
    {
        let (b, t) = (2, 17);
        let (hq, hkv) = (3, 1);
        let n = (hq + 2 * hkv) * d;
        let xs = [b, t, n];
        let x = random(b * t * n, 21);
        let packed = Tensor::from_slice(&dev, &x, &xs).unwrap();
        let xf = f64s(&x);
        let mut parts = Vec::new();
        for (first, heads) in [(0, hq), (hq, hkv), (hq + hkv, hkv)] {
            let got = ops::split_heads(&packed, first, heads, d).unwrap();
            assert_eq!(got.shape(), &[b, heads, t, d]);
            let slice = cpu_narrow(&xf, &xs, 2, first * d, heads * d);
            let want = cpu_permute(&slice, &[b, t, heads, d], &[0, 2, 1, 3]);
            assert_close("split_heads", &got.to_vec().unwrap(), &want, 0.0, 0.0);
            parts.push(got);
        }
        let (q, k, v) = ops::split_qkv_heads(&packed, hq, hkv, d).unwrap();
        for (got, want) in [q, k, v].iter().zip(&parts) {
            assert_eq!(got.shape(), want.shape());
            assert_eq!(got.to_vec().unwrap(), want.to_vec().unwrap());
        }
        let e = ops::split_qkv_heads(&packed, hq, hkv + 1, d).unwrap_err();
        assert!(e.to_string().contains("(3 + 2 * 2)"), "{e}");
        let refs: Vec<&Tensor> = parts.iter().collect();
        dev.sync().unwrap();
        let before = dev.stats().launches;
        let merged = ops::merge_heads(&refs).unwrap();
        dev.sync().unwrap();
        let launches = if d == 4 { 1 } else { 3 };
        assert_eq!(dev.stats().launches - before, launches);
        assert_eq!(merged.shape(), &xs);
        assert_eq!(merged.to_vec().unwrap(), x);
        // f16 tensors split and merge the same way (one launch each way at D = 4): the f32
        // results rounded to f16, which the copies move unchanged.
        let p16 = ops::to_dtype(&packed, DType::F16).unwrap();
        let (q16, k16, v16) = ops::split_qkv_heads(&p16, hq, hkv, d).unwrap();
        for (got, want) in [&q16, &k16, &v16].into_iter().zip(&parts) {
            assert_eq!(got.dtype(), DType::F16);
            let want16 = ops::to_dtype(want, DType::F16).unwrap();
            assert_eq!(got.to_vec().unwrap(), want16.to_vec().unwrap(), "D = {d}");
        }
        let merged16 = ops::merge_heads(&[&q16, &k16, &v16]).unwrap();
        assert_eq!(merged16.to_vec().unwrap(), p16.to_vec().unwrap(), "D = {d}");

        let e = ops::split_heads(&packed, 4, 2, d).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
        let e = ops::merge_heads(&[&parts[0], &packed]).unwrap_err();
        let want = format!("[B = 2, H, T = 17, D = {d}]");
        assert!(e.to_string().contains(&want), "{e}");
        assert!(matches!(ops::merge_heads(&[]), Err(Error::Arity { .. })));
    }
}

/// `pack` copies 70 parts of assorted lengths (empty, one word, several workgroups) into
/// their segments of one flat tensor, over several launches where a device binds fewer
/// parts, leaving the gaps alone; `unpack` copies them back; bad arguments are errors.
#[test]
fn pack_and_unpack_many_parts() {
    for dev in devices() {
        let mut rng = tang_testing::Rng::new(5);
        // A workgroup copies 4096 words: 4096 fills one, 9000 spans three.
        let lens: Vec<usize> = (0..70)
            .map(|i| [0, 1, 3, 256, 257, 700, 4096, 9000][i % 8])
            .collect();
        let mut offsets = Vec::new();
        let mut end = 0;
        for &n in &lens {
            end += 5; // a gap before each part
            offsets.push(end);
            end += n;
        }
        let parts: Vec<Vec<f32>> = lens.iter().map(|&n| rng.vec(n, 1.0)).collect();
        let tensors: Vec<Tensor> = parts
            .iter()
            .map(|p| Tensor::from_slice(&dev, p, &[p.len()]).unwrap())
            .collect();
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let flat = Tensor::full(&dev, &[end], -7.0).unwrap();
        ops::pack(&refs, &flat, &offsets).unwrap();
        let mut want = vec![-7.0; end];
        for (p, &at) in parts.iter().zip(&offsets) {
            want[at..at + p.len()].copy_from_slice(p);
        }
        assert_eq!(flat.to_vec().unwrap(), want);

        let back: Vec<Tensor> = lens
            .iter()
            .map(|&n| Tensor::zeros(&dev, &[n]).unwrap())
            .collect();
        let back_refs: Vec<&Tensor> = back.iter().collect();
        ops::unpack(&flat, &offsets, &back_refs).unwrap();
        for (b, p) in back.iter().zip(&parts) {
            assert_eq!(&b.to_vec().unwrap(), p);
        }

        let e = ops::pack(&refs, &flat, &offsets[1..]).unwrap_err();
        assert!(matches!(e, Error::Arity { .. }), "{e}");
        let e = ops::pack(&refs[1..2], &flat, &[end]).unwrap_err();
        assert!(e.to_string().contains("does not fit"), "{e}");
        let e = ops::unpack(&flat, &[0], &[&flat.reshape(&[end]).unwrap()]).unwrap_err();
        assert!(matches!(e, Error::Aliasing { .. }), "{e}");
    }
}
